// The descriptor copies of the copy kernels (DescCopier in ops_impl/kernels/desc_copier.cpp): every
// descriptor holds fewer than 2^32 bytes. aclrtSetMemcpyDesc accepts exactly 4 GiB but stores the count
// in 32 bits (CANN's rtMemcpyAddrInfo::len), so a 4 GiB descriptor would copy nothing; copies of 4 GiB
// and 4 GiB + 1 must be split into chunks that each stay below 2^32, cover the copy once, in order.
//
// The program records aclrtSetMemcpyDesc by defining it itself and forwarding to the runtime library
// (the kernel sources are linked into this program, so their calls bind here first); the runtime still
// checks every descriptor. The large copies use address space reserved with PROT_NONE and registered
// as device memory, and their aclrtMemcpyAsyncWithDesc calls are counted but not forwarded: nothing
// touches those bytes. A small copy is forwarded and its bytes checked.
#include <sys/mman.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../cpp/check.h"
#include "acl/acl.h"
#include "acl_host/acl_host_ext.h"
#include "copy_launch.h"
#include "forward.h"

namespace {

using test::Expect;
using test::Next;
using test::Require;

struct DescSet {
  uintptr_t src;
  uintptr_t dst;
  size_t count;
};

std::vector<DescSet> sets;
size_t desc_copies = 0;
bool forward_copies = true;

}  // namespace

extern "C" aclError aclrtSetMemcpyDesc(void *desc, aclrtMemcpyKind kind, void *srcAddr, void *dstAddr, size_t count,
                                       void *config) {
  using Fn = aclError (*)(void *, aclrtMemcpyKind, void *, void *, size_t, void *);
  static const Fn next = Next<Fn>("aclrtSetMemcpyDesc");
  sets.push_back({reinterpret_cast<uintptr_t>(srcAddr), reinterpret_cast<uintptr_t>(dstAddr), count});
  return next(desc, kind, srcAddr, dstAddr, count, config);
}

extern "C" aclError aclrtMemcpyAsyncWithDesc(void *desc, aclrtMemcpyKind kind, aclrtStream stream) {
  using Fn = aclError (*)(void *, aclrtMemcpyKind, aclrtStream);
  static const Fn next = Next<Fn>("aclrtMemcpyAsyncWithDesc");
  ++desc_copies;
  return forward_copies ? next(desc, kind, stream) : ACL_SUCCESS;
}

namespace {

constexpr size_t kFourGiB = size_t{4} << 30;
constexpr size_t kLargest = kFourGiB + 1;

// Address space for a source and a destination of kLargest bytes each, registered as device memory of
// the current device and never touched.
class ReservedDeviceRange {
 public:
  ReservedDeviceRange() {
    base_ = mmap(nullptr, kBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base_ == MAP_FAILED) {
      std::printf("FATAL: cannot reserve %zu bytes of address space\n", kBytes);
      std::exit(1);
    }
    Require(aclhostRegisterDeviceMemory(base_, kBytes), "aclhostRegisterDeviceMemory");
  }
  ~ReservedDeviceRange() {
    (void)aclhostUnregisterDeviceMemory(base_);
    (void)munmap(base_, kBytes);
  }
  ReservedDeviceRange(const ReservedDeviceRange &) = delete;
  ReservedDeviceRange &operator=(const ReservedDeviceRange &) = delete;

  char *src() const { return static_cast<char *>(base_); }
  char *dst() const { return static_cast<char *>(base_) + kStride; }

 private:
  static constexpr size_t kStride = kLargest + 4095 - (kLargest + 4095) % 4096;
  static constexpr size_t kBytes = 2 * kStride;
  void *base_ = nullptr;
};

// The descriptors recorded since `first` cover [src, src + count) -> [dst, dst + count) in order, each
// below 2^32 bytes.
void ExpectChunks(size_t first, const char *src, const char *dst, size_t count, const std::vector<size_t> &expected,
                  const std::string &what) {
  std::vector<size_t> counts;
  size_t done = 0;
  bool contiguous = true;
  for (size_t i = first; i < sets.size(); ++i) {
    contiguous = contiguous && sets[i].src == reinterpret_cast<uintptr_t>(src) + done &&
                 sets[i].dst == reinterpret_cast<uintptr_t>(dst) + done;
    Expect(sets[i].count < (uint64_t{1} << 32),
           what + ": a descriptor of " + std::to_string(sets[i].count) + " bytes (the 32-bit count would wrap)");
    counts.push_back(sets[i].count);
    done += sets[i].count;
  }
  Expect(contiguous && done == count, what + ": the chunks do not cover the copy once, in order");
  Expect(counts == expected, what + ": unexpected chunk sizes");
  Expect(desc_copies == counts.size(), what + ": one aclrtMemcpyAsyncWithDesc per descriptor");
}

void TestLargeCopiesAreChunkedBelow4GiB(aclrtStream stream) {
  constexpr size_t kChunk = size_t{2} << 30;
  Expect(msmc::kMaxDescChunk == kChunk, "the descriptor chunk is 2 GiB");
  ReservedDeviceRange range;
  msmc::DescCopier copier;
  forward_copies = false;
  const struct {
    size_t count;
    std::vector<size_t> chunks;
  } cases[] = {{kFourGiB, {kChunk, kChunk}}, {kLargest, {kChunk, kChunk, 1}}, {kChunk + 64, {kChunk, 64}}};
  for (const auto &c : cases) {
    const std::string what = "Copy of " + std::to_string(c.count) + " bytes";
    const size_t first = sets.size();
    desc_copies = 0;
    copier.Copy(range.dst(), range.src(), c.count, stream);
    ExpectChunks(first, range.src(), range.dst(), c.count, c.chunks, what);
  }
  // CopyItems plans each item the same way.
  const size_t first = sets.size();
  desc_copies = 0;
  const msmc::BatchItem item{range.dst(), range.src(), kLargest};
  copier.CopyItems(&item, 1, stream);
  ExpectChunks(first, range.src(), range.dst(), kLargest, {kChunk, kChunk, 1}, "CopyItems of 4 GiB + 1 bytes");
  forward_copies = true;
  Require(aclrtSynchronizeStream(stream), "aclrtSynchronizeStream");
}

void TestSmallCopyMovesTheBytes(aclrtStream stream) {
  constexpr size_t kBytes = 1 << 20;
  void *src = nullptr;
  void *dst = nullptr;
  Require(aclrtMalloc(&src, kBytes, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
  Require(aclrtMalloc(&dst, kBytes, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
  std::vector<unsigned char> pattern(kBytes);
  for (size_t i = 0; i < kBytes; ++i) pattern[i] = static_cast<unsigned char>(i * 13 + 1);
  Require(aclrtMemcpy(src, kBytes, pattern.data(), kBytes, ACL_MEMCPY_HOST_TO_DEVICE), "upload");
  {
    msmc::DescCopier copier;
    const size_t first = sets.size();
    desc_copies = 0;
    copier.Copy(dst, src, kBytes, stream);
    Require(aclrtSynchronizeStream(stream), "aclrtSynchronizeStream");
    ExpectChunks(first, static_cast<char *>(src), static_cast<char *>(dst), kBytes, {kBytes}, "Copy of 1 MiB");
  }
  std::vector<unsigned char> out(kBytes);
  Require(aclrtMemcpy(out.data(), kBytes, dst, kBytes, ACL_MEMCPY_DEVICE_TO_HOST), "download");
  Expect(out == pattern, "the 1 MiB descriptor copy moved the bytes");
  Require(aclrtFree(src), "aclrtFree");
  Require(aclrtFree(dst), "aclrtFree");
}

}  // namespace

int main() {
  Require(aclrtSetDevice(0), "aclrtSetDevice");
  aclrtStream stream = nullptr;
  Require(aclrtCreateStream(&stream), "aclrtCreateStream");
  TestLargeCopiesAreChunkedBelow4GiB(stream);
  TestSmallCopyMovesTheBytes(stream);
  Require(aclrtDestroyStream(stream), "aclrtDestroyStream");
  Require(aclrtResetDevice(0), "aclrtResetDevice");
  return test::Finish();
}
