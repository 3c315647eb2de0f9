// The checks of the op bodies (OpBody::check, op_bodies.h) as the infer functions and the eager entry
// run them: every tensor's data is nullptr, ACL is never initialised, an int64 input's values are
// given as host values or not known at all. A check refuses a bad known value with the launch's text,
// skips what depends on an unknown one, and never touches tensor data or ACL (either would crash or
// fail this program).
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "../cpp/check.h"
#include "host_buffers.h"
#include "kernel_error.h"
#include "op_bodies.h"

namespace {

using test::Expect;

constexpr int64_t kBufferId = 7;
constexpr size_t kBufferBytes = 64;

msmc::TensorArg Tensor(const std::vector<int64_t> &shape, const char *dtype) {
  return msmc::TensorArg{nullptr, shape.data(), static_cast<int>(shape.size()), dtype, false};
}

msmc::TensorArg Values(const std::vector<int64_t> &shape, const std::vector<int64_t> &values) {
  return msmc::TensorArg{const_cast<int64_t *>(values.data()), shape.data(), static_cast<int>(shape.size()), "int64",
                         true};
}

// The text the check throws (without its "ValueError: "), or "" when it accepts the arguments.
std::string CheckText(const char *op, msmc::KernelState &s, const std::vector<msmc::TensorArg> &args) {
  const msmc::OpBody *body = msmc::FindOpBody(op);
  if (body == nullptr || body->check == nullptr) {
    return std::string("no check registered for ") + op;
  }
  try {
    body->check(s, args.data(), args.size());
  } catch (const msmc::InputError &e) {
    const std::string what = e.what();
    return what.rfind("ValueError: ", 0) == 0 ? what.substr(12) : "unprefixed: " + what;
  } catch (const std::exception &e) {
    return std::string("not an InputError: ") + e.what();
  }
  return "";
}

void ExpectText(const std::string &got, const std::string &want, const std::string &what) {
  Expect(got == want, what + ": got \"" + got + "\"");
}

void TestBatch() {
  msmc::KernelState s;
  msmc::SetAttr(s, "buffer_id", kBufferId);
  const std::vector<int64_t> four = {4};
  const std::vector<int64_t> two = {2};
  const std::vector<int64_t> past_end = {0, 50};
  const std::vector<int64_t> overlapping = {8, 20};
  const std::vector<int64_t> fitting = {0, 16};
  const msmc::TensorArg x = Tensor(four, "float32");
  const msmc::TensorArg out = Tensor(two, "int64");
  ExpectText(CheckText("memcpy_batch_d2h", s, {x, x, Values(two, past_end), out}),
             "offsets[1] = 50: tensor 1 (16 bytes) would end at byte 66, past the end of the HostBuffer (64 bytes); "
             "nothing was copied",
             "batch d2h: an offset past the end");
  ExpectText(CheckText("memcpy_batch_d2h", s, {x, x, Values(two, overlapping), out}),
             "offsets: items 0 and 1 write overlapping bytes (copies within a batch run in no order, so the result "
             "would be undefined); nothing was copied",
             "batch d2h: overlapping destinations");
  ExpectText(CheckText("memcpy_batch_d2h", s, {x, x, Values(two, fitting), out}), "", "batch d2h: offsets that fit");
  ExpectText(CheckText("memcpy_batch_d2h", s, {x, x, Tensor(two, "int64"), out}), "",
             "batch d2h: unknown offsets are left to the launch");
  ExpectText(CheckText("memcpy_batch_h2d", s, {Values(two, past_end), x, x}),
             "offsets[1] = 50: tensor 1 (16 bytes) would end at byte 66, past the end of the HostBuffer (64 bytes); "
             "nothing was copied",
             "batch h2d: an offset past the end");
  msmc::KernelState closed;
  msmc::SetAttr(closed, "buffer_id", kBufferId + 1);
  ExpectText(CheckText("memcpy_batch_h2d", closed, {Tensor(two, "int64"), x, x}),
             "host_buffer: the HostBuffer is closed", "batch h2d: a HostBuffer that is not open");
}

void TestMemcpy2D() {
  msmc::KernelState s;
  msmc::SetAttr(s, "height", 2);
  msmc::SetAttr(s, "width", 1);
  const std::vector<int64_t> matrix = {4, 5};
  const std::vector<int64_t> region = {2, 1};
  const std::vector<int64_t> one = {1};
  const std::vector<int64_t> three = {3};
  const std::vector<int64_t> zero = {0};
  const msmc::TensorArg x = Tensor(matrix, "float32");
  const msmc::TensorArg y = Tensor(region, "float32");
  ExpectText(CheckText("memcpy2d_extract", s, {x, Values(one, three), Tensor(one, "int64"), y}),
             "row = 3: the region [3, 3 + 2) leaves the 4 rows of the tensor; nothing was copied",
             "extract: a known row outside, the column unknown");
  ExpectText(CheckText("memcpy2d_extract", s, {x, Tensor(one, "int64"), Values(one, zero), y}), "",
             "extract: the row unknown");
  ExpectText(CheckText("memcpy2d_extract", s, {x, Tensor(three, "int64"), Values(one, zero), y}),
             "row must hold 1 value(s), got 3", "extract: a row of three values, its values unknown");
  msmc::KernelState tall;
  msmc::SetAttr(tall, "height", 5);
  msmc::SetAttr(tall, "width", 1);
  const std::vector<int64_t> tall_region = {5, 1};
  ExpectText(CheckText("memcpy2d_extract", tall,
                       {x, Tensor(one, "int64"), Tensor(one, "int64"), Tensor(tall_region, "float32")}),
             "height 5 exceeds the 4 rows of x", "extract: a region taller than x, whatever the corner");
  msmc::KernelState pitched;
  msmc::SetAttr(pitched, "buffer_id", kBufferId);
  msmc::SetAttr(pitched, "pitch", 8);
  ExpectText(CheckText("memcpy2d_d2h", pitched, {x, Tensor(one, "int64"), Tensor(one, "int64")}),
             "pitch 8 is smaller than a row (20 bytes)", "d2h: the pitch, whatever the offset");
}

void TestDescAndCondition() {
  msmc::KernelState s;
  msmc::SetAttr(s, "count", 3);
  msmc::SetAttr(s, "buffer_id", kBufferId);
  const std::vector<int64_t> ten = {10};
  const std::vector<int64_t> window = {3};
  const std::vector<int64_t> one = {1};
  const std::vector<int64_t> eight = {8};
  const std::vector<int64_t> thirty = {30};
  ExpectText(CheckText("memcpy_desc_window", s, {Tensor(ten, "int32"), Values(one, eight), Tensor(window, "int32")}),
             "start = 8: the region [8, 8 + 3) leaves the 10 elements of the tensor; nothing was copied",
             "desc window: a start outside");
  ExpectText(CheckText("memcpy_cond_d2h", s, {Tensor(ten, "float32"), Values(one, thirty), Tensor(one, "int64")}),
             "offset = 30: x (40 bytes) would end at byte 70, past the end of the HostBuffer (64 bytes); nothing was "
             "copied",
             "condition d2h: an offset past the end");
  ExpectText(CheckText("memcpy_cond_d2d", s, {Tensor(ten, "float32"), Tensor(window, "float32")}),
             "x: has 40 bytes but the output has 12", "condition d2d: sizes differ");
}

void TestBlocks() {
  msmc::KernelState s;
  msmc::SetAttr(s, "buffer_id", kBufferId);
  msmc::SetAttr(s, "blocks_per_host_block", 1);
  const std::vector<int64_t> cache = {6, 2};  // 6 blocks of 8 bytes; the HostBuffer holds 4 per cache
  const std::vector<int64_t> pairs = {1, 2};
  const std::vector<int64_t> one = {1};
  const std::vector<int64_t> read_and_written = {0, 1, 1, 2};
  const std::vector<int64_t> two_pairs = {2, 2};
  const std::vector<int64_t> host_too_far = {0, 4};
  const msmc::TensorArg c = Tensor(cache, "float32");
  const msmc::TensorArg out = Tensor(one, "int64");
  ExpectText(CheckText("copy_blocks", s, {c, c, Values(two_pairs, read_and_written), out}),
             "block_mapping: block 1 is read by pair 1 and written by pair 0 (copies run in no order); nothing was "
             "copied",
             "copy blocks: a block read and written");
  ExpectText(CheckText("copy_blocks", s, {c, c, Tensor(two_pairs, "int64"), out}), "",
             "copy blocks: an unknown mapping");
  ExpectText(CheckText("swap_blocks_d2h", s, {c, c, Values({1, 2}, host_too_far), out}),
             "block_mapping[0][1] = 4: host block out of range [0, 4); nothing was copied",
             "swap d2h: a host block outside the HostBuffer");
  const std::vector<int64_t> big = {2, 64};  // blocks of 256 bytes: none fits
  ExpectText(CheckText("swap_blocks_h2d", s, {Tensor(big, "float32"), Tensor(pairs, "int64"), out}),
             "host_buffer: its 64 bytes hold no host block: each of the 1 host caches needs at least one block of "
             "256 bytes; give a HostBuffer of at least 256 bytes (num_caches x host blocks x block bytes)",
             "swap h2d: no host block, whatever the mapping");
  // Caches of other block shapes and dtypes: one number of blocks; a host block holds a block of each.
  const std::vector<int64_t> small = {6, 4};  // 6 blocks of 4 bytes (int8): a host block of 8 + 4 bytes, 5 of them
  const std::vector<int64_t> fewer = {5, 2};
  const std::vector<int64_t> host_five = {0, 5};
  ExpectText(CheckText("swap_blocks_d2h", s, {c, Tensor(small, "int8"), Values({1, 2}, host_five), out}),
             "block_mapping[0][1] = 5: host block out of range [0, 5); nothing was copied",
             "swap d2h: host blocks sized by every cache's block");
  ExpectText(CheckText("copy_blocks", s, {c, Tensor(fewer, "float32"), Tensor(pairs, "int64"), out}),
             "caches[1] has shape [5, 2] but caches[0] has [6, 2]; all caches of one call have the same number of "
             "blocks (first dimension)",
             "copy blocks: another number of blocks");
  msmc::KernelState wide;
  msmc::SetAttr(wide, "buffer_id", kBufferId);
  msmc::SetAttr(wide, "host_layout", 1);
  msmc::SetAttr(wide, "blocks_per_host_block", 2);  // 2 host blocks of 2 x 16 bytes: slots [0, 4)
  const std::vector<int64_t> host_four = {4, 0};    // (host slot, device block)
  ExpectText(CheckText("swap_blocks_h2d", wide, {c, c, Values({1, 2}, host_four), out}),
             "block_mapping[0][0] = 4: host block out of range [0, 4); nothing was copied",
             "swap h2d: slots of host blocks holding 2 device blocks");
  msmc::SetAttr(wide, "blocks_per_host_block", 6);  // a host block of 6 x (8 + 4) bytes: none fits
  ExpectText(CheckText("swap_blocks_h2d", wide, {c, Tensor(small, "int8"), Tensor(pairs, "int64"), out}),
             "host_buffer: its 64 bytes hold no host block: a host block holds 6 block(s) of each of the 2 caches; "
             "give a HostBuffer of at least 72 bytes (host blocks x blocks_per_host_block x the caches' block bytes)",
             "swap h2d: no host block of mixed caches");
}

}  // namespace

int main() {
  std::vector<uint8_t> buffer(kBufferBytes);
  if (msmc_hostbuffer_open(kBufferId, buffer.data(), buffer.size(), 0) != 0) {
    std::printf("FATAL: msmc_hostbuffer_open\n");
    return 1;
  }
  TestBatch();
  TestMemcpy2D();
  TestDescAndCondition();
  TestBlocks();
  msmc_hostbuffer_close(kBufferId);
  return test::Finish();
}
