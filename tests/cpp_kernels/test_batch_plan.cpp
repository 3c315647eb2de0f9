// The batch planner of the copy kernels (ops_impl/kernels/batch_copier.cpp): zero-size items are
// dropped, adjacent items merged, chunks of 4096 items sent, overlapping destinations rejected
// before any copy, and a failing ACL item reported by the caller's own index, with the text the
// Python layer gives the same failure.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../cpp/check.h"
#include "acl/acl.h"
#include "copy_launch.h"
#include "kernel_error.h"

namespace {

using test::Expect;
using test::Require;

struct Fixture {
  static constexpr size_t kItems = 4200;
  static constexpr size_t kItemBytes = 24;
  static constexpr size_t kStride = 32;  // gaps between items, so nothing merges unless a test wants it
  void *device = nullptr;
  void *host = nullptr;
  aclrtStream stream = nullptr;

  Fixture() {
    Require(aclrtSetDevice(0), "aclrtSetDevice");
    Require(aclrtMalloc(&device, kItems * kStride, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
    Require(aclrtMallocHost(&host, kItems * kStride), "aclrtMallocHost");
    Require(aclrtCreateStream(&stream), "aclrtCreateStream");
    std::vector<unsigned char> pattern(kItems * kStride);
    for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<unsigned char>(i * 7 + 3);
    Require(aclrtMemcpy(device, pattern.size(), pattern.data(), pattern.size(), ACL_MEMCPY_HOST_TO_DEVICE), "upload");
  }
  ~Fixture() {
    aclrtDestroyStream(stream);
    aclrtFreeHost(host);
    aclrtFree(device);
  }
  char *Dev(size_t i) const { return static_cast<char *>(device) + i * kStride; }
  char *Host(size_t i) const { return static_cast<char *>(host) + i * kStride; }
};

void TestChunkedCopyWithZeroSizeItems(Fixture &f) {
  std::memset(f.host, 0, Fixture::kItems * Fixture::kStride);
  std::vector<msmc::BatchItem> items;
  for (size_t i = 0; i < Fixture::kItems; ++i) {
    items.push_back({f.Host(i), f.Dev(i), i % 97 == 5 ? 0 : Fixture::kItemBytes});
  }
  msmc::BatchCopier copier;
  copier.Run(items.data(), items.size(), ACL_MEMCPY_DEVICE_TO_HOST, 0, "offsets", f.stream);
  Require(aclrtSynchronizeStream(f.stream), "sync");
  bool ok = true;
  for (size_t i = 0; i < Fixture::kItems; ++i) {
    const size_t n = items[i].size;
    for (size_t b = 0; b < Fixture::kStride; ++b) {
      const unsigned char want = b < n ? static_cast<unsigned char>((i * Fixture::kStride + b) * 7 + 3) : 0;
      ok = ok && static_cast<unsigned char>(f.Host(i)[b]) == want;
    }
  }
  Expect(ok, "4200 items (two chunks, zero-size items dropped) land exactly, gaps untouched");
}

void TestFailIndexIsTheCallersIndex(Fixture &f) {
  std::vector<char> pageable(64, 1);
  std::vector<msmc::BatchItem> items;
  for (size_t i = 0; i < Fixture::kItems; ++i) {
    items.push_back({f.Host(i), f.Dev(i), i % 97 == 5 ? 0 : Fixture::kItemBytes});
  }
  // Item 4150 (in the second chunk, after 43 zero-size items were dropped) claims device memory as its
  // source but reads pageable memory: the runtime rejects it with failIndex relative to its chunk.
  items[4150].src = pageable.data();
  msmc::BatchCopier copier;
  try {
    copier.Run(items.data(), items.size(), ACL_MEMCPY_DEVICE_TO_HOST, 0, "offsets", f.stream);
    Expect(false, "a bad item raises AclCallError");
  } catch (const msmc::AclCallError &e) {
    Expect(e.code() == ACL_ERROR_RT_PARAM_INVALID, "code 107000, got " + std::to_string(e.code()));
    Expect(e.fail_index() == 4150, "fail index 4150, got " + std::to_string(e.fail_index()));
    const std::string text = e.what();
    Expect(text.find("aclrtMemcpyBatchAsync failed: ACL_ERROR_RT_PARAM_INVALID (107000) [fail index 4150]: ") !=
               std::string::npos,
           "error text: " + text);
  }
  aclrtSynchronizeStream(f.stream);
}

void TestMergedItemsReportTheirFirstIndex(Fixture &f) {
  // Items 1 and 2 are adjacent on both sides and merge into one ACL item, whose destination is
  // device memory (a device-to-device item in a device-to-host batch): it fails as a whole.
  std::vector<msmc::BatchItem> items = {
      {f.Host(0), f.Dev(0), 8},
      {f.Dev(10), f.Dev(1), 8},  // dst is device memory: a D2D item in a D2H batch
      {f.Dev(10) + 8, f.Dev(1) + 8, 8},
      {f.Host(5), f.Dev(5), 8},
  };
  msmc::BatchCopier copier;
  try {
    copier.Run(items.data(), items.size(), ACL_MEMCPY_DEVICE_TO_HOST, 0, "offsets", f.stream);
    Expect(false, "a D2D item in a batch raises AclCallError");
  } catch (const msmc::AclCallError &e) {
    Expect(e.fail_index() == 1,
           "merged item reported by its first caller index 1, got " + std::to_string(e.fail_index()));
  }
  aclrtSynchronizeStream(f.stream);
}

void TestOverlapRejectedBeforeAnyCopy(Fixture &f) {
  std::memset(f.host, 0, 256);
  std::vector<msmc::BatchItem> items = {
      {f.Host(0), f.Dev(0), 16},
      {f.Host(4), f.Dev(4), 16},
      {f.Host(0) + 8, f.Dev(2), 16},  // overlaps item 0's destination
  };
  msmc::BatchCopier copier;
  try {
    copier.Run(items.data(), items.size(), ACL_MEMCPY_DEVICE_TO_HOST, 0, "offsets", f.stream);
    Expect(false, "overlapping destinations raise InputError");
  } catch (const msmc::InputError &e) {
    Expect(std::string(e.what()).find("ValueError: offsets: items 0 and 2 write overlapping bytes") == 0,
           std::string("message: ") + e.what());
  }
  aclrtSynchronizeStream(f.stream);
  bool untouched = true;
  for (size_t b = 0; b < 256; ++b) untouched = untouched && static_cast<char *>(f.host)[b] == 0;
  Expect(untouched, "nothing copied when destinations overlap");
}

// The text of a failed call names the code as ms_memcopy.AclError does, unknown codes included.
void TestAclErrorTexts() {
  const std::string known = msmc::AclCallError(107000, "aclrtMemcpyAsync", msmc::kNoFailIndex, "count 9").what();
  Expect(known == "AclError: aclrtMemcpyAsync failed: ACL_ERROR_RT_PARAM_INVALID (107000): count 9", known);
  const std::string unknown = msmc::AclCallError(107999, "aclrtMemcpy", 2, "").what();
  Expect(unknown == "AclError: aclrtMemcpy failed: ACL_ERROR_UNKNOWN_107999 (107999) [fail index 2]", unknown);
  Expect(std::string(msmc::KnownAclErrorName(0)) == "ACL_SUCCESS", "0 is ACL_SUCCESS");
}

}  // namespace

int main() {
  TestAclErrorTexts();
  {
    Fixture f;
    TestChunkedCopyWithZeroSizeItems(f);
    TestFailIndexIsTheCallersIndex(f);
    TestMergedItemsReportTheirFirstIndex(f);
    TestOverlapRejectedBeforeAnyCopy(f);
  }
  return test::Finish();
}
