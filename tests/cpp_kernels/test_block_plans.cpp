// The block bodies of the copy kernels (swap_blocks_d2h/h2d, copy_blocks in ops_impl/kernels/bodies/blocks.cpp):
// all L x n copies of a call go through one aclrtMemcpyBatchAsync per 4096 items (blocks adjacent on
// both sides merged first), device-to-device block copies through one descriptor copy each, and a bad
// mapping is refused before any ACL copy call. The program counts the ACL calls by defining them
// itself and forwarding to the runtime library (the kernel sources are linked into this program, so
// their calls bind here first).

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../cpp/check.h"
#include "acl/acl.h"
#include "forward.h"
#include "host_buffers.h"
#include "kernel_error.h"
#include "op_bodies.h"

namespace {

using test::Expect;
using test::Next;
using test::Require;

size_t batch_calls = 0;
size_t batch_items = 0;
size_t desc_copies = 0;
size_t async_copies = 0;

// True when run() throws the InputError of refused input and its text has `needle`.
template <typename Run>
bool RefusedWith(const char *needle, Run run) {
  try {
    run();
  } catch (const msmc::InputError &e) {
    return std::strstr(e.what(), needle) != nullptr;
  }
  return false;
}

void ResetCounts() { batch_calls = batch_items = desc_copies = async_copies = 0; }

}  // namespace

extern "C" aclError aclrtMemcpyBatchAsync(void **dsts, size_t *destMaxs, void **srcs, size_t *sizes, size_t numBatches,
                                          aclrtMemcpyBatchAttr *attrs, size_t *attrsIndexes, size_t numAttrs,
                                          size_t *failIndex, aclrtStream stream) {
  using Fn = aclError (*)(void **, size_t *, void **, size_t *, size_t, aclrtMemcpyBatchAttr *, size_t *, size_t,
                          size_t *, aclrtStream);
  static const Fn next = Next<Fn>("aclrtMemcpyBatchAsync");
  ++batch_calls;
  batch_items += numBatches;
  return next(dsts, destMaxs, srcs, sizes, numBatches, attrs, attrsIndexes, numAttrs, failIndex, stream);
}

extern "C" aclError aclrtMemcpyAsyncWithDesc(void *desc, aclrtMemcpyKind kind, aclrtStream stream) {
  using Fn = aclError (*)(void *, aclrtMemcpyKind, aclrtStream);
  static const Fn next = Next<Fn>("aclrtMemcpyAsyncWithDesc");
  ++desc_copies;
  return next(desc, kind, stream);
}

extern "C" aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind,
                                     aclrtStream stream) {
  using Fn = aclError (*)(void *, size_t, const void *, size_t, aclrtMemcpyKind, aclrtStream);
  static const Fn next = Next<Fn>("aclrtMemcpyAsync");
  if (kind != ACL_MEMCPY_HOST_TO_DEVICE || count != sizeof(int64_t)) {
    ++async_copies;  // not counted: the one int64 result the bodies write
  }
  return next(dst, destMax, src, count, kind, stream);
}

namespace {

constexpr size_t kCaches = 2;
constexpr size_t kBlocks = 2600;
constexpr int64_t kBlockShape[] = {kBlocks, 2};  // blocks of 2 float32 values: 8 bytes
constexpr size_t kBlockBytes = 8;
constexpr size_t kHostBlocks = 2500;

struct Fixture {
  void *caches[kCaches] = {};
  void *host = nullptr;
  void *mapping = nullptr;
  void *out = nullptr;
  int64_t buffer_id = 0;
  aclrtStream stream = nullptr;
  int64_t mapping_shape[2] = {0, 2};
  int64_t out_shape[1] = {1};

  Fixture() {
    Require(aclrtSetDevice(0), "aclrtSetDevice");
    for (void *&c : caches) {
      Require(aclrtMalloc(&c, kBlocks * kBlockBytes, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
    }
    Require(aclrtMallocHost(&host, kCaches * kHostBlocks * kBlockBytes), "aclrtMallocHost");
    Require(aclrtMalloc(&mapping, kBlocks * 2 * sizeof(int64_t), ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
    Require(aclrtMalloc(&out, sizeof(int64_t), ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
    Require(aclrtCreateStream(&stream), "aclrtCreateStream");
    buffer_id = 1;
    if (msmc_hostbuffer_open(buffer_id, host, kCaches * kHostBlocks * kBlockBytes, 1) != 0) {
      throw std::runtime_error("msmc_hostbuffer_open refused id 1");
    }
    // Block b of cache l holds the bytes l * 100 + b, as two uint32 values.
    std::vector<uint32_t> values(kBlocks * 2);
    for (size_t l = 0; l < kCaches; ++l) {
      for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<uint32_t>(l * 100000 + i / 2);
      Require(aclrtMemcpy(caches[l], values.size() * 4, values.data(), values.size() * 4, ACL_MEMCPY_HOST_TO_DEVICE),
              "upload");
    }
  }
  ~Fixture() {
    msmc_hostbuffer_close(buffer_id);
    aclrtDestroyStream(stream);
    aclrtFree(out);
    aclrtFree(mapping);
    aclrtFreeHost(host);
    for (void *c : caches) aclrtFree(c);
  }

  std::vector<msmc::TensorArg> Caches() const {
    std::vector<msmc::TensorArg> args;
    for (void *c : caches) args.push_back(msmc::TensorArg{c, kBlockShape, 2, "float32"});
    return args;
  }
  msmc::TensorArg Mapping(const std::vector<int64_t> &pairs) {
    mapping_shape[0] = static_cast<int64_t>(pairs.size() / 2);
    if (!pairs.empty()) {
      Require(aclrtMemcpy(mapping, pairs.size() * 8, pairs.data(), pairs.size() * 8, ACL_MEMCPY_HOST_TO_DEVICE),
              "mapping");
    }
    return msmc::TensorArg{mapping, mapping_shape, 2, "int64"};
  }
  msmc::TensorArg Out() { return msmc::TensorArg{out, out_shape, 1, "int64"}; }
  // Runs the body of op (swap_blocks_d2h, swap_blocks_h2d, copy_blocks) on the caches, mapping and Out().
  void Run(const char *op, msmc::KernelState &s, const msmc::TensorArg &block_mapping) {
    std::vector<msmc::TensorArg> args = Caches();
    args.push_back(block_mapping);
    args.push_back(Out());
    msmc::FindOpBody(op)->run(s, args.data(), args.size(), stream);
  }
  int64_t Result() {
    int64_t n = -1;
    Require(aclrtSynchronizeStream(stream), "aclrtSynchronizeStream");
    Require(aclrtMemcpy(&n, 8, out, 8, ACL_MEMCPY_DEVICE_TO_HOST), "result");
    return n;
  }
  uint32_t DeviceValue(size_t l, size_t block) {
    uint32_t v = 0;
    Require(aclrtMemcpy(&v, 4, static_cast<char *>(caches[l]) + block * kBlockBytes, 4, ACL_MEMCPY_DEVICE_TO_HOST),
            "read");
    return v;
  }
  uint32_t HostValue(size_t l, size_t block) const {
    return static_cast<const uint32_t *>(host)[(l * kHostBlocks + block) * 2];
  }
};

void TestSwapOutChunksAndMerges(Fixture &f) {
  msmc::KernelState s;
  msmc::SetAttr(s, "buffer_id", f.buffer_id);
  msmc::SetAttr(s, "blocks_per_host_block", 1);
  std::vector<int64_t> pairs;
  for (int64_t i = 0; i < 2500; ++i) {  // reversed: no two items adjacent on both sides
    pairs.push_back(2499 - i);
    pairs.push_back(i);
  }
  ResetCounts();
  f.Run("swap_blocks_d2h", s, f.Mapping(pairs));
  Expect(f.Result() == static_cast<int64_t>(kCaches * 2500 * kBlockBytes), "d2h returns the bytes moved");
  Expect(batch_calls == 2 && batch_items == 5000,
         "5000 items in two batch calls, got " + std::to_string(batch_calls) + " / " + std::to_string(batch_items));
  Expect(async_copies == 0, "no per-item copies on a SoC with the batch call");
  Expect(f.HostValue(0, 0) == 2499 && f.HostValue(1, 2499) == 100000 && f.HostValue(1, 7) == 102492,
         "host blocks hold the mapped device blocks, cache-major");

  pairs.clear();
  for (int64_t i = 0; i < 100; ++i) {  // consecutive on both sides: one item per cache
    pairs.push_back(i + 10);
    pairs.push_back(i);
  }
  ResetCounts();
  f.Run("swap_blocks_d2h", s, f.Mapping(pairs));
  f.Result();
  Expect(batch_calls == 1 && batch_items == 2, "adjacent blocks merge: 1 call of 2 items, got " +
                                                   std::to_string(batch_calls) + " / " + std::to_string(batch_items));
  Expect(f.HostValue(1, 99) == 100109, "merged copy lands");
}

void TestSwapInAndCopy(Fixture &f) {
  msmc::KernelState s;
  msmc::SetAttr(s, "buffer_id", f.buffer_id);
  msmc::SetAttr(s, "blocks_per_host_block", 1);
  ResetCounts();
  f.Run("swap_blocks_h2d", s, f.Mapping({0, 2599, 5, 2598}));
  Expect(f.Result() == static_cast<int64_t>(kCaches * 2 * kBlockBytes), "h2d returns the bytes moved");
  Expect(batch_calls == 1 && batch_items == 4, "h2d: one batch call of 4 items");
  Expect(f.DeviceValue(1, 2599) == f.HostValue(1, 0) && f.DeviceValue(0, 2598) == f.HostValue(0, 5),
         "h2d writes the device blocks");

  ResetCounts();
  std::vector<int64_t> pairs;
  for (int64_t i = 0; i < 50; ++i) {
    pairs.push_back(2 * i);
    pairs.push_back(1001 + 2 * i);
  }
  f.Run("copy_blocks", s, f.Mapping(pairs));
  f.Result();
  Expect(batch_calls == 0 && desc_copies == 100 && async_copies == 0,
         "copy: one descriptor copy per block, got " + std::to_string(desc_copies));
  Expect(f.DeviceValue(0, 1001) == 0 && f.DeviceValue(1, 1099) == 100098, "copied blocks land");
}

void TestBadMappingMovesNothing(Fixture &f) {
  msmc::KernelState s;
  msmc::SetAttr(s, "buffer_id", f.buffer_id);
  msmc::SetAttr(s, "blocks_per_host_block", 1);
  const std::vector<std::vector<int64_t>> bad = {{0, 1, 2600, 2}, {0, 2500}, {0, 1, 2, 1}, {-1, 0}};
  for (const auto &pairs : bad) {
    ResetCounts();
    const bool refused =
        RefusedWith("ValueError: block_mapping", [&] { f.Run("swap_blocks_d2h", s, f.Mapping(pairs)); });
    Expect(refused && batch_calls == 0 && async_copies == 0, "bad mapping refused before any copy");
  }
  ResetCounts();
  const bool refused = RefusedWith("block 4 is read by pair 1 and written by pair 0",
                                   [&] { f.Run("copy_blocks", s, f.Mapping({3, 4, 4, 5})); });
  Expect(refused && desc_copies == 0 && async_copies == 0, "a block both read and written is refused");
}

// The op_def route hands block_mapping over as host values (TensorArg::host_values): the bodies read
// the pairs from there, in a kernel state that has never read a mapping back from device memory.
void TestHostValuesMapping(Fixture &f) {
  std::vector<int64_t> pairs = {7, 3, 2590, 4};
  int64_t shape[2] = {2, 2};
  const msmc::TensorArg mapping{pairs.data(), shape, 2, "int64", true};
  {
    msmc::KernelState s;
    msmc::SetAttr(s, "buffer_id", f.buffer_id);
    msmc::SetAttr(s, "blocks_per_host_block", 1);
    f.Run("swap_blocks_d2h", s, mapping);
    Expect(f.Result() == static_cast<int64_t>(kCaches * 2 * kBlockBytes), "d2h from host values: bytes moved");
    Expect(f.HostValue(0, 3) == 7 && f.HostValue(1, 4) == 102590, "d2h from host values: blocks land");
  }
  {
    msmc::KernelState s;
    pairs = {7, 2000, 2590, 2001};
    f.Run("copy_blocks", s, mapping);
    f.Result();
    Expect(f.DeviceValue(1, 2000) == 100007 && f.DeviceValue(0, 2001) == 2590, "copy from host values: blocks land");
  }
  {
    msmc::KernelState s;
    msmc::SetAttr(s, "buffer_id", f.buffer_id);
    msmc::SetAttr(s, "blocks_per_host_block", 1);
    pairs = {0, 2599, 1, 2599};
    const bool refused =
        RefusedWith("device block 2599 is written twice", [&] { f.Run("swap_blocks_h2d", s, mapping); });
    Expect(refused, "h2d from host values: a destination twice is refused");
  }
}

// A HostChunks (msmc_hostbuffer_open_chunks): host blocks numbered across two chunks of 3 and 2 host
// blocks, each chunk cache-major alone; a swap touching both is one batch call, a host block past the
// last chunk is refused before any copy, and no other op may lease the group.
void TestSwapAcrossHostChunks(Fixture &f) {
  constexpr size_t kHostBlockBytes = kCaches * kBlockBytes;
  void *chunks[2] = {};
  Require(aclrtMallocHost(&chunks[0], 3 * kHostBlockBytes), "aclrtMallocHost");
  Require(aclrtMallocHost(&chunks[1], 2 * kHostBlockBytes + 5), "aclrtMallocHost");  // 5 bytes never touched
  std::memset(chunks[1], 0x5a, 2 * kHostBlockBytes + 5);
  const int64_t ids[2] = {11, 12};
  Expect(msmc_hostbuffer_open(ids[0], chunks[0], 3 * kHostBlockBytes, 1) == 0 &&
             msmc_hostbuffer_open(ids[1], chunks[1], 2 * kHostBlockBytes + 5, 1) == 0,
         "chunks registered");
  Expect(msmc_hostbuffer_open_chunks(13, ids, 2) == 0, "group registered");
  const int64_t unknown[2] = {11, 99};
  Expect(msmc_hostbuffer_open_chunks(14, unknown, 2) == -1 && msmc_hostbuffer_open_chunks(13, ids, 2) == -1 &&
             msmc_hostbuffer_open_chunks(15, ids, 0) == -1,
         "a group of an unknown chunk, an id in use, no chunk: refused");
  const int64_t nested[1] = {13};
  Expect(msmc_hostbuffer_open_chunks(16, nested, 1) == -1, "a group of a group is refused");
  {
    msmc::KernelState s;
    msmc::SetAttr(s, "buffer_id", 13);
    msmc::SetAttr(s, "blocks_per_host_block", 1);
    ResetCounts();
    f.Run("swap_blocks_d2h", s, f.Mapping({10, 0, 20, 2, 30, 3, 40, 4}));
    Expect(f.Result() == static_cast<int64_t>(4 * kHostBlockBytes), "d2h over two chunks: bytes moved");
    Expect(batch_calls == 1 && batch_items == 8, "two chunks, one batch call of 8 items, got " +
                                                     std::to_string(batch_calls) + " / " + std::to_string(batch_items));
    const auto *first = static_cast<const uint32_t *>(chunks[0]);
    const auto *second = static_cast<const uint32_t *>(chunks[1]);
    // chunk 0: host block h of cache l at (l * 3 + h) * 8 bytes; chunk 1: (l * 2 + h - 3) * 8
    Expect(first[0] == 10 && first[2 * 2] == 20 && first[(3 + 2) * 2] == 100020 && second[0] == 30 &&
               second[1 * 2] == 40 && second[(2 + 1) * 2] == 100040,
           "each chunk cache-major alone, host blocks numbered across them");
    Expect(static_cast<const uint8_t *>(chunks[1])[2 * kHostBlockBytes + 4] == 0x5a, "bytes past the blocks untouched");

    ResetCounts();
    f.Run("swap_blocks_h2d", s, f.Mapping({4, 1, 0, 2}));
    Expect(f.Result() == static_cast<int64_t>(2 * kHostBlockBytes) && batch_calls == 1,
           "h2d over two chunks: one batch call");
    Expect(f.DeviceValue(0, 1) == 40 && f.DeviceValue(1, 2) == 100010, "h2d from both chunks lands");

    ResetCounts();
    const bool refused = RefusedWith("block_mapping[1][1] = 5: host block out of range [0, 5)",
                                     [&] { f.Run("swap_blocks_d2h", s, f.Mapping({1, 0, 2, 5})); });
    Expect(refused && batch_calls == 0, "a host block past the chunks is refused before any copy");
  }
  const bool refused =
      RefusedWith("read by SwapBlocks only", [&] { msmc::HostBufferLease lease(13, "host_buffer", f.stream); });
  Expect(refused, "a group is leased chunk by chunk only");
  Expect(msmc_hostbuffer_close(13) == 0 && msmc_hostbuffer_close(11) == 0 && msmc_hostbuffer_close(12) == 0,
         "group and chunks closed");
  aclrtFreeHost(chunks[0]);
  aclrtFreeHost(chunks[1]);
}

}  // namespace

int main() {
  {
    Fixture f;
    TestSwapOutChunksAndMerges(f);
    TestSwapInAndCopy(f);
    TestBadMappingMovesNothing(f);
    TestHostValuesMapping(f);
    TestSwapAcrossHostChunks(f);
  }
  return test::Finish();
}
