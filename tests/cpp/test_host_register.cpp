// Registered host memory through the host runtime's public C API: the registry's bookkeeping under the
// sanitizers (registrations racing with copies and with aclrtFreeHost, stale registrations replaced by a new
// allocation). The rules and codes one by one are tests/test_runtime_host_register.py's.
//
// Prints "ALL PASSED" and exits 0, or lists the failed checks and exits 1.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "acl_host/acl_host_ext.h"
#include "check.h"

namespace {

constexpr size_t kPage = 4096;

// Page-aligned pageable memory, freed on scope exit.
struct PageBuffer {
  explicit PageBuffer(size_t n) : size(n), data(static_cast<uint8_t *>(std::aligned_alloc(kPage, n))) {}
  ~PageBuffer() { std::free(data); }
  PageBuffer(const PageBuffer &) = delete;
  PageBuffer &operator=(const PageBuffer &) = delete;
  size_t size;
  uint8_t *data;
};

void TestRegisterCopyUnregister(aclrtStream stream) {
  PageBuffer host(4 * kPage);
  void *dev = nullptr;
  test::Require(aclrtMalloc(&dev, host.size, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
  std::vector<uint8_t> data(host.size);
  for (size_t i = 0; i < data.size(); ++i) {
    data[i] = static_cast<uint8_t>(i * 7 + 3);
  }
  CHECK_OK(aclrtMemcpy(dev, host.size, data.data(), data.size(), ACL_MEMCPY_HOST_TO_DEVICE));
  void *mapped = nullptr;
  CHECK_OK(aclrtHostRegister(host.data, host.size, ACL_HOST_REGISTER_MAPPED, &mapped));
  CHECK(mapped == host.data);
  CHECK(test::LocationOf(host.data + host.size - 1).type == ACL_MEM_LOCATION_TYPE_HOST);
  std::memset(host.data, 0, host.size);
  CHECK_OK(aclrtMemcpyAsync(host.data, host.size, dev, host.size, ACL_MEMCPY_DEVICE_TO_HOST, stream));
  CHECK_OK(aclrtSynchronizeStream(stream));
  CHECK(std::memcmp(host.data, data.data(), host.size) == 0);
  void *again = nullptr;
  CHECK_OK(aclrtHostGetDevicePointer(host.data, &again, 0));
  CHECK(again == host.data);
  CHECK_RET(aclrtHostRegisterV2(host.data + kPage, kPage, ACL_HOST_REG_PINNED),
            ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  CHECK_MSG("overlaps the host memory registered at");
  CHECK_OK(aclrtHostUnregister(host.data));
  CHECK_RET(aclrtHostUnregister(host.data), ACL_ERROR_HOST_MEMORY_NOT_REGISTERED);
  CHECK(test::LocationOf(host.data).type == ACL_MEM_LOCATION_TYPE_UNREGISTERED);
  CHECK_OK(aclrtFree(dev));
}

// Threads register, copy into and unregister their own pages while others do the same next to them.
void TestConcurrentRegistrations() {
  constexpr int kThreads = 4;
  constexpr int kRounds = 200;
  PageBuffer host(kThreads * kPage);
  void *dev = nullptr;
  test::Require(aclrtMalloc(&dev, kPage, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
  CHECK_OK(aclrtMemset(dev, kPage, 0x5A, kPage));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      test::Context label("thread " + std::to_string(t));
      aclrtStream stream = nullptr;
      CHECK_OK(aclrtSetDevice(0));
      CHECK_OK(aclrtCreateStream(&stream));
      uint8_t *page = host.data + t * kPage;
      for (int round = 0; round < kRounds; ++round) {
        CHECK_OK(aclrtHostRegisterV2(page, kPage, round % 2 == 0 ? ACL_HOST_REG_PINNED : ACL_HOST_REG_MAPPED));
        page[0] = 0;
        CHECK_OK(aclrtMemcpyAsync(page, kPage, dev, kPage, ACL_MEMCPY_DEVICE_TO_HOST, stream));
        CHECK_OK(aclrtSynchronizeStream(stream));
        CHECK(page[0] == 0x5A && page[kPage - 1] == 0x5A);
        CHECK_OK(aclrtHostUnregister(page));
      }
      CHECK_OK(aclrtDestroyStream(stream));
    });
  }
  for (std::thread &thread : threads) {
    thread.join();
  }
  CHECK_OK(aclrtFree(dev));
}

void TestPinnedAllocationEndsItsRegistrations() {
  void *pinned = nullptr;
  test::Require(aclrtMallocHost(&pinned, 3 * kPage), "aclrtMallocHost");
  const uintptr_t base = reinterpret_cast<uintptr_t>(pinned);
  void *inside = reinterpret_cast<void *>((base + kPage - 1) / kPage * kPage);
  void *mapped = nullptr;
  CHECK_RET(aclrtHostRegisterV2(inside, kPage, ACL_HOST_REG_PINNED), ACL_ERROR_RT_PARAM_INVALID);
  CHECK_MSG("already is pinned memory");
  CHECK_OK(aclrtHostRegister(inside, kPage, ACL_HOST_REGISTER_MAPPED, &mapped));
  CHECK(test::LocationOf(inside).base == base);
  CHECK_OK(aclrtFreeHost(pinned));
  CHECK_RET(aclrtHostUnregister(inside), ACL_ERROR_HOST_MEMORY_NOT_REGISTERED);
}

// Memory freed without aclrtHostUnregister: an allocation the heap places there replaces the registration.
void TestStaleRegistrationIsReplaced() {
  constexpr size_t kSize = 64 * kPage;
  void *first = nullptr;
  test::Require(aclrtMallocHost(&first, kSize), "aclrtMallocHost");
  const uintptr_t base = reinterpret_cast<uintptr_t>(first);
  CHECK_OK(aclrtFreeHost(first));
  void *page = reinterpret_cast<void *>((base + kPage - 1) / kPage * kPage);
  CHECK_OK(aclrtHostRegisterV2(page, kPage, ACL_HOST_REG_PINNED));  // the address is pageable again
  void *second = nullptr;
  test::Require(aclrtMallocHost(&second, kSize), "aclrtMallocHost");
  const uintptr_t second_base = reinterpret_cast<uintptr_t>(second);
  const uintptr_t p = reinterpret_cast<uintptr_t>(page);
  if (second_base <= p && p < second_base + kSize) {
    CHECK(test::LocationOf(page).base == second_base);
    CHECK_RET(aclrtHostUnregister(page), ACL_ERROR_HOST_MEMORY_NOT_REGISTERED);
  } else {
    CHECK_OK(aclrtHostUnregister(page));  // the heap chose another address: nothing to replace
  }
  CHECK_OK(aclrtFreeHost(second));
}

}  // namespace

int main() {
  aclrtStream stream = test::StreamOnDevice0();
  TestRegisterCopyUnregister(stream);
  TestConcurrentRegistrations();
  TestPinnedAllocationEndsItsRegistrations();
  TestStaleRegistrationIsReplaced();
  CHECK_OK(aclrtDestroyStream(stream));
  CHECK_OK(aclFinalize());
  return test::Finish();
}
