// End-to-end test of the host ACL runtime through its public C API only.
//
// Build: g++ -std=c++17 -I<include dir> test_acl_host.cpp -L<lib dir> -lascendcl -Wl,-rpath,<lib dir>
// Prints "ALL PASSED" and exits 0, or lists the failed checks and exits 1.
// Expects the default environment: MS_MEMCOPY_SOC and MS_MEMCOPY_DEVICE_COUNT unset.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "acl_host/acl_host_ext.h"
#include "check.h"

namespace {

// C callers (and ctypes) may pass any int as an enum argument; build such values without a C++ enum load.
__attribute__((no_sanitize("enum"))) aclrtMemcpyKind KindOf(int value) {
  aclrtMemcpyKind kind;
  std::memcpy(&kind, &value, sizeof(kind));
  return kind;
}

// Holds a stream busy: a host function that blocks until Open().
class Gate {
 public:
  static void Wait(void *self) { static_cast<Gate *>(self)->Block(); }

  void Open() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      open_ = true;
    }
    cv_.notify_all();
  }

  // Opens the gate from another thread after `ms` milliseconds.
  std::thread OpenLater(int ms) {
    return std::thread([this, ms] {
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      Open();
    });
  }

 private:
  void Block() {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [this] { return open_; });
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
};

void Fill(void *p, size_t n, uint32_t seed) {
  auto *bytes = static_cast<unsigned char *>(p);
  for (size_t i = 0; i < n; ++i) {
    bytes[i] = static_cast<unsigned char>((i * 131u + seed * 7919u + (i >> 8)) & 0xFFu);
  }
}

bool Same(const void *a, const void *b, size_t n) { return std::memcmp(a, b, n) == 0; }

// Whether the runtime's strict ordering check is on (ACLHOST_ENV_STRICT_ORDER, docs/host_runtime.md).
bool StrictOrder() {
  const char *value = std::getenv(ACLHOST_ENV_STRICT_ORDER);
  return value != nullptr && std::strcmp(value, "1") == 0;
}

bool AllBytes(const void *p, size_t n, unsigned char value) {
  const auto *bytes = static_cast<const unsigned char *>(p);
  for (size_t i = 0; i < n; ++i) {
    if (bytes[i] != value) {
      return false;
    }
  }
  return true;
}

void *DeviceAlloc(size_t n) {
  void *p = nullptr;
  CHECK_RET(aclrtMalloc(&p, n, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  return p;
}

void *PinnedAlloc(size_t n) {
  void *p = nullptr;
  CHECK_RET(aclrtMallocHost(&p, n), ACL_SUCCESS);
  return p;
}

// ---------------------------------------------------------------------------------------------------------

void TestBeforeAnyDevice() {
  void *p = nullptr;
  CHECK_RET(aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_CONTEXT_NULL);
  CHECK_MSG("aclrtSetDevice");
  int32_t device = -1;
  CHECK_RET(aclrtGetDevice(&device), ACL_ERROR_RT_CONTEXT_NULL);
  aclrtStream stream = nullptr;
  CHECK_RET(aclrtCreateStream(&stream), ACL_ERROR_RT_CONTEXT_NULL);
  CHECK_RET(aclrtSynchronizeStream(nullptr), ACL_ERROR_RT_CONTEXT_NULL);
  // Pinned host memory needs a context (CANN's ApiImpl::HostMalloc), after the ACL layer's NULL and
  // size-0 checks; aclrtFreeHost needs none (unknown memory: 107000, not 107002).
  void *host = nullptr;
  CHECK_RET(aclrtMallocHost(&host, 16), ACL_ERROR_RT_CONTEXT_NULL);
  CHECK_MSG("aclrtSetDevice");
  CHECK(host == nullptr);
  CHECK_RET(aclrtMallocHost(nullptr, 16), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtMallocHost(&host, 0), ACL_ERROR_INVALID_PARAM);
  unsigned char pageable[16] = {};
  unsigned char other[16] = {};
  CHECK_RET(aclrtFreeHost(nullptr), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtFreeHost(pageable), ACL_ERROR_RT_PARAM_INVALID);
  // aclrtMemcpy2dAsync's NULL stream without a device is CANN's NULL current stream: 107000, not 107002.
  CHECK_RET(aclrtMemcpy2dAsync(other, 4, pageable, 4, 4, 4, ACL_MEMCPY_HOST_TO_DEVICE, nullptr),
            ACL_ERROR_RT_PARAM_INVALID);
  CHECK_MSG("no device is set");
  CHECK_RET(aclrtMemcpyAsync(other, 16, pageable, 16, ACL_MEMCPY_HOST_TO_DEVICE, nullptr), ACL_ERROR_RT_CONTEXT_NULL);
  // A device never set has no reference to release: CANN's 507007.
  CHECK_RET(aclrtResetDevice(0), ACL_ERROR_RT_CONTEXT_RELEASE_ERROR);
  CHECK_MSG("no reference");
}

void TestInitFinalize() {
  CHECK_RET(aclFinalize(), ACL_SUCCESS);  // as CANN: finalizing without aclInit succeeds once
  CHECK_RET(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
  CHECK_RET(aclInit("/nonexistent/acl.json"), ACL_ERROR_INVALID_FILE);
  CHECK_MSG("/nonexistent/acl.json");
  CHECK_MSG("/nonexistent/acl.json");  // reading does not clear the text
  CHECK_RET(aclInit(nullptr), ACL_SUCCESS);
  CHECK_RET(aclInit(nullptr), ACL_ERROR_REPEAT_INITIALIZE);
  CHECK_RET(aclFinalize(), ACL_SUCCESS);
  CHECK_RET(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
  CHECK_RET(aclInit(""), ACL_SUCCESS);  // empty path: no config file, initialized again after finalize
  const char *soc = aclrtGetSocName();
  CHECK(soc != nullptr && std::strcmp(soc, "Ascend910B") == 0);
  CHECK(aclhostGetSocProfile() != nullptr && soc != nullptr && std::strcmp(aclhostGetSocProfile(), soc) == 0);
}

void TestDevices() {
  uint32_t count = 0;
  CHECK_RET(aclrtGetDeviceCount(&count), ACL_SUCCESS);
  CHECK(count == 8);
  CHECK_RET(aclrtGetDeviceCount(nullptr), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtSetDevice(-1), ACL_ERROR_RT_INVALID_DEVICEID);
  CHECK_MSG("deviceId -1");
  CHECK_RET(aclrtSetDevice(static_cast<int32_t>(count)), ACL_ERROR_RT_INVALID_DEVICEID);
  CHECK_RET(aclrtSetDevice(0), ACL_SUCCESS);
  int32_t device = -1;
  CHECK_RET(aclrtGetDevice(&device), ACL_SUCCESS);
  CHECK(device == 0);
  CHECK_RET(aclrtGetDevice(nullptr), ACL_ERROR_INVALID_PARAM);
  // A thread that never called aclrtSetDevice uses the process default (the first device set).
  int32_t seen = -1;
  aclError seen_ret = -1;
  std::thread([&] { seen_ret = aclrtGetDevice(&seen); }).join();
  CHECK(seen_ret == ACL_SUCCESS && seen == 0);
}

void TestMallocFree() {
  void *p = nullptr;
  CHECK_RET(aclrtMalloc(nullptr, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtMalloc(&p, SIZE_MAX - 8, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtMallocHost(nullptr, 64), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtMallocHost(&p, 0), ACL_ERROR_INVALID_PARAM);

  void *dev = DeviceAlloc(100);
  CHECK(reinterpret_cast<uintptr_t>(dev) % 64 == 0);
  int32_t type = -1;
  int32_t id = -2;
  void *base = nullptr;
  size_t size = 0;
  CHECK_RET(aclhostGetMemLocation(static_cast<char *>(dev) + 10, &type, &id, &base, &size), ACL_SUCCESS);
  CHECK(type == ACL_MEM_LOCATION_TYPE_DEVICE && id == 0 && base == dev);
  CHECK(size == 160);  // 100 rounded up to 128, plus the Ascend910B padding of 32

  void *host = PinnedAlloc(100);
  CHECK(reinterpret_cast<uintptr_t>(host) % 64 == 0);
  CHECK_RET(aclhostGetMemLocation(host, &type, &id, nullptr, nullptr), ACL_SUCCESS);
  CHECK(type == ACL_MEM_LOCATION_TYPE_HOST && id == -1);
  int local = 0;
  CHECK_RET(aclhostGetMemLocation(&local, &type, &id, &base, &size), ACL_SUCCESS);
  CHECK(type == ACL_MEM_LOCATION_TYPE_UNREGISTERED && base == nullptr && size == 0);

  CHECK_RET(aclrtFree(nullptr), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtFreeHost(nullptr), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtFree(static_cast<char *>(dev) + 32), ACL_ERROR_RT_PARAM_INVALID);
  CHECK_MSG("bytes into the allocation");
  CHECK_RET(aclrtFree(host), ACL_ERROR_RT_PARAM_INVALID);
  CHECK_RET(aclrtFreeHost(dev), ACL_ERROR_RT_PARAM_INVALID);
  CHECK_RET(aclrtFree(&local), ACL_ERROR_RT_PARAM_INVALID);
  CHECK_RET(aclrtFree(dev), ACL_SUCCESS);
  CHECK_RET(aclrtFree(dev), ACL_ERROR_RT_PARAM_INVALID);
  CHECK_RET(aclrtFreeHost(host), ACL_SUCCESS);
}

void TestRoundTrips(aclrtStream stream) {
  constexpr size_t n = 1 << 20;
  std::vector<unsigned char> pageable_src(n);
  std::vector<unsigned char> pageable_dst(n, 0);
  Fill(pageable_src.data(), n, 1);
  void *pinned_src = PinnedAlloc(n);
  void *pinned_dst = PinnedAlloc(n);
  void *dev_a = DeviceAlloc(n);
  void *dev_b = DeviceAlloc(n);
  Fill(pinned_src, n, 2);
  std::memset(pinned_dst, 0, n);

  // Pinned: asynchronous until the stream is synchronized.
  CHECK_RET(aclrtMemcpyAsync(dev_a, n, pinned_src, n, ACL_MEMCPY_HOST_TO_DEVICE, stream), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpyAsync(dev_b, n, dev_a, n, ACL_MEMCPY_DEVICE_TO_DEVICE, stream), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpyAsync(pinned_dst, n, dev_b, n, ACL_MEMCPY_DEFAULT, stream), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  CHECK(Same(pinned_dst, pinned_src, n));

  // Pageable: the call returns after the copy.
  CHECK_RET(aclrtMemcpyAsync(dev_a, n, pageable_src.data(), n, ACL_MEMCPY_HOST_TO_DEVICE, stream), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpyAsync(pageable_dst.data(), n, dev_a, n, ACL_MEMCPY_DEVICE_TO_HOST, stream), ACL_SUCCESS);
  CHECK(Same(pageable_dst.data(), pageable_src.data(), n));

  // A pageable copy first drains the stream: the queued pinned copy is done when it returns.
  Gate gate;
  CHECK_RET(aclhostLaunchHostFunc(stream, Gate::Wait, &gate), ACL_SUCCESS);
  Fill(pinned_src, n, 3);
  CHECK_RET(aclrtMemcpyAsync(dev_b, n, pinned_src, n, ACL_MEMCPY_HOST_TO_DEVICE, stream), ACL_SUCCESS);
  std::thread opener = gate.OpenLater(20);
  CHECK_RET(aclrtMemcpyAsync(pageable_dst.data(), n, dev_b, n, ACL_MEMCPY_DEVICE_TO_HOST, stream), ACL_SUCCESS);
  opener.join();
  CHECK(Same(pageable_dst.data(), pinned_src, n));

  // Synchronous copies, the default stream, and the deprecated WithCondition form.
  Fill(pageable_src.data(), n, 4);
  CHECK_RET(aclrtMemcpy(dev_a, n, pageable_src.data(), n, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(pinned_dst, n, dev_a, n, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  CHECK(Same(pinned_dst, pageable_src.data(), n));
  CHECK_RET(aclrtMemcpy(pageable_dst.data(), n, pageable_src.data(), n, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);
  Fill(pinned_src, n, 5);
  CHECK_RET(aclrtMemcpyAsync(dev_a, n, pinned_src, n, ACL_MEMCPY_HOST_TO_DEVICE, nullptr), ACL_SUCCESS);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  CHECK_RET(aclrtMemcpyAsyncWithCondition(pinned_dst, n, dev_a, n, ACL_MEMCPY_DEVICE_TO_HOST, nullptr), ACL_SUCCESS);
#pragma GCC diagnostic pop
  CHECK_RET(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  CHECK(Same(pinned_dst, pinned_src, n));

  // HOST_TO_BUF_TO_DEVICE stages the source at call time: changing it afterwards does not matter.
  Gate hold;
  CHECK_RET(aclhostLaunchHostFunc(stream, Gate::Wait, &hold), ACL_SUCCESS);
  Fill(pageable_src.data(), n, 6);
  std::vector<unsigned char> expected(pageable_src);
  CHECK_RET(aclrtMemcpyAsync(dev_a, n, pageable_src.data(), n, ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE, stream), ACL_SUCCESS);
  Fill(pageable_src.data(), n, 7);
  hold.Open();
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(pageable_dst.data(), n, dev_a, n, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  CHECK(Same(pageable_dst.data(), expected.data(), n));

  CHECK_RET(aclrtFree(dev_a), ACL_SUCCESS);
  CHECK_RET(aclrtFree(dev_b), ACL_SUCCESS);
  CHECK_RET(aclrtFreeHost(pinned_src), ACL_SUCCESS);
  CHECK_RET(aclrtFreeHost(pinned_dst), ACL_SUCCESS);
}

void TestOrdering(aclrtStream stream) {
  // Dependent copies on one stream, no synchronization in between: each reads what the previous wrote.
  constexpr size_t n = 4 << 20;
  void *a = PinnedAlloc(n);
  void *d = PinnedAlloc(n);
  void *b = DeviceAlloc(n);
  void *c = DeviceAlloc(n);
  for (uint32_t round = 0; round < 3; ++round) {
    Fill(a, n, 100 + round);
    std::memset(d, 0, n);
    CHECK_RET(aclrtMemcpyAsync(b, n, a, n, ACL_MEMCPY_HOST_TO_DEVICE, stream), ACL_SUCCESS);
    CHECK_RET(aclrtMemcpyAsync(c, n, b, n, ACL_MEMCPY_DEVICE_TO_DEVICE, stream), ACL_SUCCESS);
    CHECK_RET(aclrtMemcpyAsync(b, n / 2, static_cast<char *>(c) + n / 2, n / 2, ACL_MEMCPY_DEVICE_TO_DEVICE, stream),
              ACL_SUCCESS);
    CHECK_RET(aclrtMemcpyAsync(d, n, b, n, ACL_MEMCPY_DEVICE_TO_HOST, stream), ACL_SUCCESS);
    CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
    CHECK(Same(d, static_cast<char *>(a) + n / 2, n / 2));
    CHECK(Same(static_cast<char *>(d) + n / 2, static_cast<char *>(a) + n / 2, n / 2));
  }
  CHECK_RET(aclrtFree(b), ACL_SUCCESS);
  CHECK_RET(aclrtFree(c), ACL_SUCCESS);
  CHECK_RET(aclrtFreeHost(a), ACL_SUCCESS);
  CHECK_RET(aclrtFreeHost(d), ACL_SUCCESS);
}

void Test2D(aclrtStream stream) {
  constexpr size_t width = 40;
  constexpr size_t height = 7;
  constexpr size_t spitch = 48;
  constexpr size_t dpitch = 64;
  void *src = PinnedAlloc(spitch * height);
  void *dev = DeviceAlloc(dpitch * height);
  void *back = PinnedAlloc(dpitch * height);
  Fill(src, spitch * height, 9);
  std::memset(back, 0xEE, dpitch * height);
  CHECK_RET(aclrtMemcpy(dev, dpitch * height, back, dpitch * height, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);

  CHECK_RET(aclrtMemcpy2dAsync(dev, dpitch, src, spitch, width, height, ACL_MEMCPY_HOST_TO_DEVICE, stream),
            ACL_SUCCESS);
  CHECK_RET(aclrtMemcpyAsync(back, dpitch * height, dev, dpitch * height, ACL_MEMCPY_DEVICE_TO_HOST, stream),
            ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  for (size_t r = 0; r < height; ++r) {
    const auto *row = static_cast<const unsigned char *>(back) + r * dpitch;
    CHECK(Same(row, static_cast<const unsigned char *>(src) + r * spitch, width));
    CHECK(AllBytes(row + width, dpitch - width, 0xEE));  // the pitch gap is untouched
  }

  // Synchronous 2D D2H into pageable memory with its own pitch gaps.
  std::vector<unsigned char> out(spitch * height, 0x5A);
  CHECK_RET(aclrtMemcpy2d(out.data(), spitch, dev, dpitch, width, height, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  for (size_t r = 0; r < height; ++r) {
    CHECK(Same(out.data() + r * spitch, static_cast<const unsigned char *>(src) + r * spitch, width));
    CHECK(AllBytes(out.data() + r * spitch + width, spitch - width, 0x5A));
  }

  // 2dAsync D2D (supported on Ascend910B) and a pageable D2H that returns after the copy.
  void *dev2 = DeviceAlloc(dpitch * height);
  CHECK_RET(aclrtMemcpy2dAsync(dev2, dpitch, dev, dpitch, width, height, ACL_MEMCPY_DEVICE_TO_DEVICE, stream),
            ACL_SUCCESS);
  std::vector<unsigned char> out2(width * height, 0);
  CHECK_RET(aclrtMemcpy2dAsync(out2.data(), width, dev2, dpitch, width, height, ACL_MEMCPY_DEFAULT, stream),
            ACL_SUCCESS);
  for (size_t r = 0; r < height; ++r) {
    CHECK(Same(out2.data() + r * width, static_cast<const unsigned char *>(src) + r * spitch, width));
  }

  // Error codes.
  CHECK_RET(aclrtMemcpy2dAsync(nullptr, dpitch, nullptr, spitch, 0, height, ACL_MEMCPY_HOST_TO_DEVICE, stream),
            ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy2dAsync(dev, dpitch, nullptr, spitch, width, height, ACL_MEMCPY_HOST_TO_DEVICE, stream),
            ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtMemcpy2dAsync(dev, dpitch, src, 8, width, height, ACL_MEMCPY_HOST_TO_DEVICE, stream),
            ACL_ERROR_INVALID_PARAM);
  CHECK_MSG("width 40 exceeds spitch 8");
  CHECK_RET(aclrtMemcpy2dAsync(dev, dpitch, src, spitch, width, height, ACL_MEMCPY_HOST_TO_HOST, stream),
            ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtMemcpy2dAsync(dev, dpitch, src, spitch, width, 5242881, ACL_MEMCPY_HOST_TO_DEVICE, stream),
            ACL_ERROR_RT_PARAM_INVALID);
  CHECK_RET(aclrtMemcpy2dAsync(dev, 6000000, src, 6000000, 5000001, 1, ACL_MEMCPY_HOST_TO_DEVICE, stream),
            ACL_ERROR_RT_PARAM_INVALID);
  CHECK_RET(aclrtMemcpy2d(dev2, dpitch, dev, dpitch, width, height, ACL_MEMCPY_DEVICE_TO_DEVICE),
            ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
  // Only an explicit D2D kind is 207000; DEFAULT or a kind corrected to D2D is 107000 (as CANN).
  CHECK_RET(aclrtMemcpy2d(dev2, dpitch, dev, dpitch, width, height, ACL_MEMCPY_DEFAULT), ACL_ERROR_RT_PARAM_INVALID);
  CHECK_MSG("resolves to device-to-device");
  CHECK_RET(aclrtMemcpy2d(dev2, dpitch, dev, dpitch, width, height, ACL_MEMCPY_HOST_TO_DEVICE),
            ACL_ERROR_RT_PARAM_INVALID);
  // Rows past the end of the destination allocation (host-runtime memory safety).
  CHECK_RET(aclrtMemcpy2dAsync(dev, dpitch * 2, src, spitch, width, height, ACL_MEMCPY_HOST_TO_DEVICE, stream),
            ACL_ERROR_RT_PARAM_INVALID);
  CHECK_MSG("past the end of its allocation");

  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  CHECK_RET(aclrtFree(dev), ACL_SUCCESS);
  CHECK_RET(aclrtFree(dev2), ACL_SUCCESS);
  CHECK_RET(aclrtFreeHost(src), ACL_SUCCESS);
  CHECK_RET(aclrtFreeHost(back), ACL_SUCCESS);
}

void TestBatch(aclrtStream stream) {
  constexpr size_t n = 6;
  constexpr size_t item = 4096;
  void *dev = DeviceAlloc(n * item);
  void *pinned = PinnedAlloc(3 * item);
  std::vector<unsigned char> pageable(3 * item);
  std::vector<unsigned char> expected(n * item);
  Fill(pinned, 3 * item, 20);
  Fill(pageable.data(), 3 * item, 21);

  // Group 0 (items 0..3): H2D, host side alternating pinned and pageable memory, both declared HOST.
  // Group 1 (items 4..5): D2H back into the pageable buffer.
  void *dsts[n];
  void *srcs[n];
  size_t sizes[n];
  size_t dest_maxs[n];
  for (size_t i = 0; i < 4; ++i) {
    dsts[i] = static_cast<char *>(dev) + i * item;
    unsigned char *host = (i % 2 == 0) ? static_cast<unsigned char *>(pinned) : pageable.data();
    srcs[i] = host + (i / 2) * item;
    sizes[i] = item;
    dest_maxs[i] = item;
    std::memcpy(expected.data() + i * item, srcs[i], item);
  }
  std::vector<unsigned char> readback(2 * item, 0);
  for (size_t i = 4; i < n; ++i) {
    dsts[i] = readback.data() + (i - 4) * item;
    srcs[i] = static_cast<char *>(dev) + (i - 4) * item;
    sizes[i] = item;
    dest_maxs[i] = item;
  }
  aclrtMemcpyBatchAttr attrs[2] = {};
  attrs[0].srcLoc = {0, ACL_MEM_LOCATION_TYPE_HOST};
  attrs[0].dstLoc = {0, ACL_MEM_LOCATION_TYPE_DEVICE};
  attrs[1].srcLoc = {0, ACL_MEM_LOCATION_TYPE_DEVICE};
  attrs[1].dstLoc = {0, ACL_MEM_LOCATION_TYPE_HOST_NUMA};  // counts as HOST
  size_t attrs_indexes[2] = {0, 4};
  size_t fail_index = 0;
  CHECK_RET(aclrtMemcpyBatchAsync(dsts, dest_maxs, srcs, sizes, 4, attrs, attrs_indexes, 1, &fail_index, stream),
            ACL_SUCCESS);
  CHECK(fail_index == SIZE_MAX);
  // Items 4..5 read what items 0..1 write. Copies within a batch are unordered, but the previous batch
  // already wrote the same bytes there, so the result does not depend on the order.
  CHECK_RET(aclrtMemcpyBatchAsync(dsts, dest_maxs, srcs, sizes, n, attrs, attrs_indexes, 2, &fail_index, stream),
            ACL_SUCCESS);
  CHECK(fail_index == SIZE_MAX);
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  std::vector<unsigned char> all(n * item);
  CHECK_RET(aclrtMemcpy(all.data(), n * item, dev, 4 * item, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  CHECK(Same(all.data(), expected.data(), 4 * item));
  CHECK(Same(readback.data(), expected.data(), 2 * item));

  // Item 2 declares its pageable source as UNREGISTERED: 107000, failIndex 2, items 0..1 already copied.
  void *dev2 = DeviceAlloc(n * item);
  aclrtMemcpyBatchAttr bad[3] = {};
  bad[0] = attrs[0];
  bad[1] = attrs[0];
  bad[1].srcLoc.type = ACL_MEM_LOCATION_TYPE_UNREGISTERED;
  bad[2] = attrs[0];
  size_t bad_indexes[3] = {0, 2, 3};
  void *dsts2[4];
  for (size_t i = 0; i < 4; ++i) {
    dsts2[i] = static_cast<char *>(dev2) + i * item;
  }
  CHECK_RET(aclrtMemcpy(dev2, n * item, all.data(), n * item, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  std::vector<unsigned char> before(all);
  CHECK_RET(aclrtMemcpyBatchAsync(dsts2, dest_maxs, srcs, sizes, 4, bad, bad_indexes, 3, &fail_index, stream),
            ACL_ERROR_RT_PARAM_INVALID);
  CHECK(fail_index == 2);
  CHECK_MSG("item 2");
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  std::vector<unsigned char> after(n * item);
  CHECK_RET(aclrtMemcpy(after.data(), n * item, dev2, n * item, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  CHECK(Same(after.data(), expected.data(), 2 * item));                      // items 0, 1 copied
  CHECK(Same(after.data() + 2 * item, before.data() + 2 * item, 4 * item));  // the rest untouched

  // The synchronous batch validates every item first: a failing item leaves everything untouched.
  CHECK_RET(aclrtMemcpy(dev2, n * item, before.data(), n * item, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpyBatch(dsts2, dest_maxs, srcs, sizes, 4, bad, bad_indexes, 3, &fail_index),
            ACL_ERROR_RT_PARAM_INVALID);
  CHECK(fail_index == 2);
  CHECK_RET(aclrtMemcpy(after.data(), n * item, dev2, n * item, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  CHECK(Same(after.data(), before.data(), n * item));
  CHECK_RET(aclrtMemcpyBatchV2(dsts2, dest_maxs, srcs, sizes, 4, attrs, attrs_indexes, 1), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(after.data(), n * item, dev2, n * item, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  CHECK(Same(after.data(), expected.data(), 4 * item));
  CHECK_RET(aclrtMemcpyBatchAsyncV2(dsts2, dest_maxs, srcs, sizes, 4, attrs, attrs_indexes, 1, nullptr), ACL_SUCCESS);

  // Argument errors, in CANN's order.
  size_t zeros[n] = {};
  CHECK_RET(aclrtMemcpyBatchAsync(dsts, dest_maxs, srcs, sizes, n, attrs, attrs_indexes, 2, nullptr, stream),
            ACL_ERROR_INVALID_PARAM);
  fail_index = 7;
  CHECK_RET(aclrtMemcpyBatchAsync(nullptr, nullptr, nullptr, zeros, n, nullptr, nullptr, 0, &fail_index, stream),
            ACL_SUCCESS);
  CHECK(fail_index == SIZE_MAX);
  CHECK_RET(aclrtMemcpyBatchAsync(dsts, dest_maxs, srcs, sizes, 0, attrs, attrs_indexes, 2, &fail_index, stream),
            ACL_ERROR_INVALID_PARAM);
  size_t small_max[n] = {item, item, item - 1, item, item, item};
  fail_index = 7;
  CHECK_RET(aclrtMemcpyBatchAsync(dsts, small_max, srcs, sizes, n, attrs, attrs_indexes, 2, &fail_index, stream),
            ACL_ERROR_INVALID_PARAM);
  CHECK(fail_index == 7);  // ACL-layer errors leave failIndex alone
  aclrtMemcpyBatchAttr rsv = attrs[0];
  rsv.rsv[3] = 1;
  CHECK_RET(aclrtMemcpyBatchAsync(dsts, dest_maxs, srcs, sizes, 4, &rsv, attrs_indexes, 1, &fail_index, stream),
            ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtMemcpyBatchAsync(dsts, dest_maxs, srcs, sizes, 4, attrs, attrs_indexes, 0, &fail_index, stream),
            ACL_ERROR_RT_PARAM_INVALID);
  CHECK(fail_index == SIZE_MAX);
  size_t shifted[2] = {1, 4};
  CHECK_RET(aclrtMemcpyBatchAsync(dsts, dest_maxs, srcs, sizes, n, attrs, shifted, 2, &fail_index, stream),
            ACL_ERROR_RT_PARAM_INVALID);
  size_t beyond[2] = {0, n};
  CHECK_RET(aclrtMemcpyBatchAsync(dsts, dest_maxs, srcs, sizes, n, attrs, beyond, 2, &fail_index, stream),
            ACL_ERROR_RT_PARAM_INVALID);
  size_t mixed_sizes[n] = {item, 0, item, item, item, item};
  CHECK_RET(aclrtMemcpyBatchAsync(dsts, dest_maxs, srcs, mixed_sizes, 4, attrs, attrs_indexes, 1, &fail_index, stream),
            ACL_ERROR_RT_PARAM_INVALID);
  CHECK(fail_index == 1);
  // Host to host is not a batch direction.
  void *h2h_dsts[1] = {pageable.data()};
  void *h2h_srcs[1] = {pinned};
  aclrtMemcpyBatchAttr host_host = {};
  host_host.srcLoc = {0, ACL_MEM_LOCATION_TYPE_HOST};
  host_host.dstLoc = {0, ACL_MEM_LOCATION_TYPE_HOST};
  CHECK_RET(
      aclrtMemcpyBatchAsync(h2h_dsts, dest_maxs, h2h_srcs, sizes, 1, &host_host, attrs_indexes, 1, &fail_index, stream),
      ACL_ERROR_RT_PARAM_INVALID);
  CHECK(fail_index == 0);
  // Unknown stream handle.
  CHECK_RET(aclrtMemcpyBatchAsync(dsts, dest_maxs, srcs, sizes, 4, attrs, attrs_indexes, 1, &fail_index,
                                  reinterpret_cast<aclrtStream>(0x12345)),
            ACL_ERROR_RT_INVALID_HANDLE);
  // The synchronous batch takes at most 4096 items.
  std::vector<void *> many_dsts(4097, dsts[0]);
  std::vector<void *> many_srcs(4097, srcs[0]);
  std::vector<size_t> many_sizes(4097, 16);
  CHECK_RET(aclrtMemcpyBatch(many_dsts.data(), many_sizes.data(), many_srcs.data(), many_sizes.data(), 4097, attrs,
                             attrs_indexes, 1, &fail_index),
            ACL_ERROR_RT_PARAM_INVALID);
  CHECK_MSG("4096");
  CHECK(fail_index == SIZE_MAX);

  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  CHECK_RET(aclrtFree(dev), ACL_SUCCESS);
  CHECK_RET(aclrtFree(dev2), ACL_SUCCESS);
  CHECK_RET(aclrtFreeHost(pinned), ACL_SUCCESS);
}

void TestDescriptor(aclrtStream stream) {
  size_t desc_size = 0;
  CHECK_RET(aclrtGetMemcpyDescSize(ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, &desc_size), ACL_SUCCESS);
  CHECK(desc_size == 32);
  CHECK_RET(aclrtGetMemcpyDescSize(ACL_MEMCPY_DEVICE_TO_DEVICE, &desc_size), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
  CHECK_RET(aclrtGetMemcpyDescSize(KindOf(8), &desc_size), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtGetMemcpyDescSize(ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, nullptr), ACL_ERROR_INVALID_PARAM);

  constexpr size_t n = 1 << 16;
  void *desc = DeviceAlloc(desc_size);
  void *a = DeviceAlloc(n);
  void *b = DeviceAlloc(n);
  void *c = DeviceAlloc(n);
  void *d = DeviceAlloc(n);
  std::vector<unsigned char> pattern_a(n);
  std::vector<unsigned char> pattern_c(n);
  std::vector<unsigned char> zeros(n, 0);
  std::vector<unsigned char> out(n);
  Fill(pattern_a.data(), n, 30);
  Fill(pattern_c.data(), n, 31);
  CHECK_RET(aclrtMemcpy(a, n, pattern_a.data(), n, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(c, n, pattern_c.data(), n, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(b, n, zeros.data(), n, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(d, n, zeros.data(), n, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);

  // Plain descriptor copy a -> b.
  CHECK_RET(aclrtSetMemcpyDesc(desc, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, a, b, n, nullptr), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpyAsyncWithDesc(desc, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, stream), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(out.data(), n, b, n, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  CHECK(Same(out.data(), pattern_a.data(), n));

  // Deferred read: the task reads the descriptor when it executes. With the stream held by a gate,
  // enqueue the copy (descriptor says a -> b), then rewrite the descriptor (c -> d) before it runs:
  // the copy performed is c -> d, and b keeps its old content.
  CHECK_RET(aclrtMemcpy(b, n, zeros.data(), n, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  Gate gate;
  CHECK_RET(aclhostLaunchHostFunc(stream, Gate::Wait, &gate), ACL_SUCCESS);
  CHECK_RET(aclrtSetMemcpyDesc(desc, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, a, b, n, nullptr), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpyAsyncWithDesc(desc, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, stream), ACL_SUCCESS);
  // Rewriting the descriptor under the queued copy is a race by design; strict ordering refuses it, and
  // the copy then makes a -> b.
  const bool strict_order = StrictOrder();
  CHECK_RET(aclrtSetMemcpyDesc(desc, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, c, d, n, nullptr),
            strict_order ? ACL_ERROR_RT_PARAM_INVALID : ACL_SUCCESS);
  gate.Open();
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(out.data(), n, d, n, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  CHECK(Same(out.data(), strict_order ? zeros.data() : pattern_c.data(), n));
  CHECK_RET(aclrtMemcpy(out.data(), n, b, n, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  CHECK(Same(out.data(), strict_order ? pattern_a.data() : zeros.data(), n));

  // A descriptor that aclrtSetMemcpyDesc never wrote: the enqueue succeeds, the task fails, and the next
  // synchronize reports 507000 once.
  void *blank = DeviceAlloc(desc_size);
  CHECK_RET(aclrtMemcpy(blank, desc_size, zeros.data(), desc_size, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpyAsyncWithDesc(blank, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, stream), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_ERROR_RT_INTERNAL_ERROR);
  CHECK_MSG("magic");
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);

  // Error codes.
  CHECK_RET(aclrtSetMemcpyDesc(nullptr, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, a, b, n, nullptr), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtSetMemcpyDesc(desc, KindOf(9), a, b, n, nullptr), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtSetMemcpyDesc(desc, ACL_MEMCPY_DEVICE_TO_DEVICE, a, b, n, nullptr), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
  CHECK_RET(aclrtSetMemcpyDesc(desc, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, a, b, 0, nullptr), ACL_ERROR_INVALID_PARAM);
  int config = 0;
  CHECK_RET(aclrtSetMemcpyDesc(desc, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, a, b, n, &config), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtSetMemcpyDesc(static_cast<char *>(desc) + 8, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, a, b, n, nullptr),
            ACL_ERROR_RT_PARAM_INVALID);
  CHECK_MSG("64-byte aligned");
  CHECK_RET(aclrtSetMemcpyDesc(desc, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, a, b, (4ULL << 30) + 1, nullptr),
            ACL_ERROR_RT_PARAM_INVALID);
  CHECK_RET(aclrtSetMemcpyDesc(desc, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, a, zeros.data(), n, nullptr),
            ACL_ERROR_RT_PARAM_INVALID);
  std::vector<unsigned char> host_desc(128);
  const uintptr_t host_desc_address = reinterpret_cast<uintptr_t>(host_desc.data());
  void *host_desc_aligned = reinterpret_cast<void *>((host_desc_address + 63) & ~uintptr_t{63});
  CHECK_RET(aclrtSetMemcpyDesc(host_desc_aligned, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, a, b, n, nullptr),
            ACL_ERROR_RT_PARAM_INVALID);
  CHECK_RET(aclrtSetMemcpyDesc(desc, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, a, b, n + 4096, nullptr),
            ACL_ERROR_RT_PARAM_INVALID);
  CHECK_RET(aclrtMemcpyAsyncWithDesc(desc, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, nullptr), ACL_ERROR_INVALID_PARAM);
  CHECK_MSG("stream is NULL");
  CHECK_RET(aclrtMemcpyAsyncWithDesc(desc, ACL_MEMCPY_DEVICE_TO_DEVICE, stream), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
  CHECK_RET(aclrtMemcpyAsyncWithDesc(desc, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, reinterpret_cast<aclrtStream>(0x99)),
            ACL_ERROR_RT_INVALID_HANDLE);
  // A descriptor address that is not 64-byte aligned is rejected at the call (nothing is enqueued).
  CHECK_RET(aclrtMemcpyAsyncWithDesc(static_cast<char *>(desc) + 8, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, stream),
            ACL_ERROR_RT_PARAM_INVALID);
  CHECK_MSG("64-byte aligned");
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);

  for (void *p : {desc, blank, a, b, c, d}) {
    CHECK_RET(aclrtFree(p), ACL_SUCCESS);
  }
}

void TestCopyErrors(aclrtStream stream) {
  void *dev = DeviceAlloc(1024);
  void *pinned = PinnedAlloc(4096);
  void *pinned2 = PinnedAlloc(4096);
  std::vector<unsigned char> pageable(4096);

  CHECK_RET(aclrtMemcpyAsync(nullptr, 0, nullptr, 0, ACL_MEMCPY_HOST_TO_DEVICE, stream), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpyAsync(nullptr, 16, pinned, 16, ACL_MEMCPY_HOST_TO_DEVICE, stream), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtMemcpyAsync(dev, 16, pinned, 16, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, stream), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtMemcpyAsync(dev, 16, pinned, 16, KindOf(8), stream), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtMemcpyAsync(dev, 16, pinned, 16, KindOf(-1), stream), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtMemcpyAsync(dev, 1024, pinned, 4096, ACL_MEMCPY_HOST_TO_DEVICE, stream), ACL_ERROR_RT_PARAM_INVALID);
  CHECK_MSG("aclrtMemcpyAsync: count 4096 exceeds destMax 1024");
  CHECK_RET(aclrtMemcpy(dev, 0, pinned, 16, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_RT_PARAM_INVALID);
  CHECK_RET(aclrtMemcpyAsync(pinned2, 4096, pinned, 4096, ACL_MEMCPY_HOST_TO_HOST, stream),
            ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
  CHECK_RET(aclrtMemcpyAsync(pinned2, 4096, pinned, 4096, ACL_MEMCPY_DEFAULT, stream),
            ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
  // A pinned/device pair forces the kind; a pageable endpoint must fit it.
  CHECK_RET(aclrtMemcpyAsync(dev, 1024, pinned, 1024, ACL_MEMCPY_DEVICE_TO_HOST, stream), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpyAsync(dev, 1024, pageable.data(), 1024, ACL_MEMCPY_DEVICE_TO_HOST, stream),
            ACL_ERROR_RT_PARAM_INVALID);
  CHECK_RET(aclrtMemcpyAsync(dev, 1024, pageable.data(), 1024, ACL_MEMCPY_DEVICE_TO_DEVICE, stream), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpyAsync(dev, 1024, dev, 1024, ACL_MEMCPY_DEVICE_TO_DEVICE, stream), ACL_SUCCESS);
  // HOST_TO_BUF_TO_DEVICE needs a device destination.
  CHECK_RET(aclrtMemcpyAsync(pinned2, 16, pinned, 16, ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE, stream),
            ACL_ERROR_RT_PARAM_INVALID);
  // Unknown stream.
  CHECK_RET(aclrtMemcpyAsync(dev, 16, pinned, 16, ACL_MEMCPY_HOST_TO_DEVICE, reinterpret_cast<aclrtStream>(0x777)),
            ACL_ERROR_RT_INVALID_HANDLE);
  CHECK_MSG("not a live stream");
  // A stream created on another device: 107003 where the copy would be put on it.
  CHECK_RET(aclrtSetDevice(1), ACL_SUCCESS);
  aclrtStream other = nullptr;
  CHECK_RET(aclrtCreateStream(&other), ACL_SUCCESS);
  CHECK_RET(aclrtSetDevice(0), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpyAsync(dev, 16, pinned, 16, ACL_MEMCPY_HOST_TO_DEVICE, other), ACL_ERROR_RT_STREAM_CONTEXT);
  CHECK_MSG("another context (on device 1)");
  CHECK_RET(aclrtMemcpy2dAsync(dev, 16, pinned, 16, 16, 2, ACL_MEMCPY_HOST_TO_DEVICE, other),
            ACL_ERROR_RT_STREAM_CONTEXT);
  // A stream is destroyed with its context current (CANN's ApiImpl::StreamDestroy).
  CHECK_RET(aclrtDestroyStream(other), ACL_ERROR_RT_STREAM_CONTEXT);
  CHECK_MSG("make its context current");
  CHECK_RET(aclrtSetDevice(1), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyStream(other), ACL_SUCCESS);
  CHECK_RET(aclrtSetDevice(0), ACL_SUCCESS);
  CHECK_RET(aclrtResetDevice(1), ACL_SUCCESS);
  CHECK_RET(aclrtResetDevice(1), ACL_SUCCESS);
  CHECK_RET(aclrtResetDevice(0), ACL_SUCCESS);  // the second and third aclrtSetDevice(0) above
  CHECK_RET(aclrtResetDevice(0), ACL_SUCCESS);
  // Host-runtime memory safety: 1024 requested bytes are 1056 usable; 2048 run past the allocation.
  CHECK_RET(aclrtMemcpyAsync(dev, 4096, pinned, 2048, ACL_MEMCPY_HOST_TO_DEVICE, stream), ACL_ERROR_RT_PARAM_INVALID);
  CHECK_MSG("past the end of its allocation");
  CHECK_RET(aclrtMemcpy(pinned, 4096, static_cast<char *>(dev) + 1000, 100, ACL_MEMCPY_DEVICE_TO_HOST),
            ACL_ERROR_RT_PARAM_INVALID);
  CHECK_RET(aclrtMemcpy(pinned, 4096, static_cast<char *>(dev) + 1000, 56, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);

  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  CHECK_RET(aclrtFree(dev), ACL_SUCCESS);
  CHECK_RET(aclrtFreeHost(pinned), ACL_SUCCESS);
  CHECK_RET(aclrtFreeHost(pinned2), ACL_SUCCESS);
}

void TestStreams() {
  CHECK_RET(aclrtCreateStream(nullptr), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtDestroyStream(nullptr), ACL_ERROR_INVALID_PARAM);
  aclrtStream stream = nullptr;
  CHECK_RET(aclrtCreateStream(&stream), ACL_SUCCESS);

  // Timeout on a busy stream.
  Gate gate;
  CHECK_RET(aclhostLaunchHostFunc(stream, Gate::Wait, &gate), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStreamWithTimeout(stream, 10), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
  CHECK_MSG("timeout 10");
  CHECK_RET(aclrtSynchronizeStreamWithTimeout(stream, 0), ACL_ERROR_RT_PARAM_INVALID);  // 0 is not "poll"
  CHECK_MSG("timeout 0");
  CHECK_RET(aclrtSynchronizeStreamWithTimeout(stream, -2), ACL_ERROR_RT_PARAM_INVALID);
  gate.Open();
  CHECK_RET(aclrtSynchronizeStreamWithTimeout(stream, -1), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStreamWithTimeout(stream, 0), ACL_ERROR_RT_PARAM_INVALID);
  CHECK_RET(aclhostLaunchHostFunc(stream, nullptr, nullptr), ACL_ERROR_INVALID_PARAM);

  // Destroy waits for pending work; the handle is then unknown.
  void *dev = DeviceAlloc(1 << 20);
  void *pinned = PinnedAlloc(1 << 20);
  Fill(pinned, 1 << 20, 40);
  std::vector<unsigned char> expected(static_cast<unsigned char *>(pinned),
                                      static_cast<unsigned char *>(pinned) + (1 << 20));
  Gate hold;
  CHECK_RET(aclhostLaunchHostFunc(stream, Gate::Wait, &hold), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpyAsync(dev, 1 << 20, pinned, 1 << 20, ACL_MEMCPY_HOST_TO_DEVICE, stream), ACL_SUCCESS);
  std::thread opener = hold.OpenLater(10);
  CHECK_RET(aclrtDestroyStream(stream), ACL_SUCCESS);
  opener.join();
  CHECK_RET(aclrtDestroyStream(stream), ACL_ERROR_RT_INVALID_HANDLE);
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_ERROR_RT_INVALID_HANDLE);
  CHECK_RET(aclrtSynchronizeStreamWithTimeout(stream, 10), ACL_ERROR_RT_INVALID_HANDLE);
  CHECK_RET(aclrtMemcpyAsync(dev, 16, pinned, 16, ACL_MEMCPY_HOST_TO_DEVICE, stream), ACL_ERROR_RT_INVALID_HANDLE);
  CHECK_RET(aclrtMemcpy2dAsync(dev, 16, pinned, 16, 16, 1, ACL_MEMCPY_HOST_TO_DEVICE, stream),
            ACL_ERROR_RT_INVALID_HANDLE);
  CHECK_RET(aclhostLaunchHostFunc(stream, Gate::Wait, &hold), ACL_ERROR_RT_INVALID_HANDLE);
  std::vector<unsigned char> out(1 << 20);
  CHECK_RET(aclrtMemcpy(out.data(), out.size(), dev, out.size(), ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  CHECK(out == expected);

  // aclrtFree waits for every stream: a copy queued behind a gate completes before the memory goes.
  aclrtStream other = nullptr;
  CHECK_RET(aclrtCreateStream(&other), ACL_SUCCESS);
  Gate late;
  CHECK_RET(aclhostLaunchHostFunc(other, Gate::Wait, &late), ACL_SUCCESS);
  std::memset(pinned, 0, 1 << 20);
  CHECK_RET(aclrtMemcpyAsync(pinned, 1 << 20, dev, 1 << 20, ACL_MEMCPY_DEVICE_TO_HOST, other), ACL_SUCCESS);
  std::thread late_opener = late.OpenLater(10);
  CHECK_RET(aclrtFree(dev), ACL_SUCCESS);
  late_opener.join();
  CHECK(std::memcmp(pinned, expected.data(), expected.size()) == 0);
  CHECK_RET(aclrtDestroyStream(other), ACL_SUCCESS);
  CHECK_RET(aclrtFreeHost(pinned), ACL_SUCCESS);
}

void TestFrameworkRegistration(aclrtStream stream) {
  std::vector<unsigned char> tensor(4096);
  std::vector<unsigned char> host(4096);
  Fill(tensor.data(), tensor.size(), 50);
  CHECK_RET(aclhostRegisterDeviceMemory(nullptr, 16), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclhostRegisterDeviceMemory(tensor.data(), 0), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclhostRegisterDeviceMemory(tensor.data(), tensor.size()), ACL_SUCCESS);
  CHECK_RET(aclhostRegisterDeviceMemory(tensor.data(), tensor.size()), ACL_SUCCESS);  // one more reference
  int32_t type = -1;
  int32_t id = -1;
  CHECK_RET(aclhostGetMemLocation(tensor.data() + 100, &type, &id, nullptr, nullptr), ACL_SUCCESS);
  CHECK(type == ACL_MEM_LOCATION_TYPE_DEVICE && id == 0);

  // Registered memory is the device side of a copy: D2H into pageable memory is synchronous.
  CHECK_RET(aclrtMemcpyAsync(host.data(), host.size(), tensor.data(), tensor.size(), ACL_MEMCPY_DEVICE_TO_HOST, stream),
            ACL_SUCCESS);
  CHECK(host == tensor);
  CHECK_RET(aclrtFree(tensor.data()), ACL_ERROR_RT_PARAM_INVALID);  // not an aclrtMalloc allocation

  CHECK_RET(aclhostUnregisterDeviceMemory(tensor.data()), ACL_SUCCESS);
  CHECK_RET(aclhostUnregisterDeviceMemory(tensor.data()), ACL_SUCCESS);
  CHECK_RET(aclhostUnregisterDeviceMemory(tensor.data()), ACL_ERROR_RT_PARAM_INVALID);
  CHECK_RET(aclhostGetMemLocation(tensor.data(), &type, &id, nullptr, nullptr), ACL_SUCCESS);
  CHECK(type == ACL_MEM_LOCATION_TYPE_UNREGISTERED);
}

// True when p is registered device memory whose recorded extent covers [from, to).
bool Covers(const unsigned char *p, const unsigned char *from, const unsigned char *to) {
  const test::MemLocation loc = test::LocationOf(p);
  return loc.type == ACL_MEM_LOCATION_TYPE_DEVICE && loc.base <= reinterpret_cast<uintptr_t>(from) &&
         reinterpret_cast<uintptr_t>(to) <= loc.base + loc.size;
}

bool Pageable(const void *p) { return test::LocationOf(p).type == ACL_MEM_LOCATION_TYPE_UNREGISTERED; }

void TestOverlappingRegistrations() {
  // Framework registrations of one device may overlap in any way, registered and released in any order.
  std::vector<unsigned char> tensor(8192);
  std::vector<unsigned char> host(8192);
  Fill(tensor.data(), tensor.size(), 77);
  unsigned char *const t = tensor.data();

  // Partial overlap, both orders of release; a copy may span both registrations while both live.
  CHECK_RET(aclhostRegisterDeviceMemory(t, 4096), ACL_SUCCESS);
  CHECK_RET(aclhostRegisterDeviceMemory(t + 2048, 4096), ACL_SUCCESS);
  CHECK(Covers(t + 5000, t, t + 6144));
  CHECK_RET(aclrtMemcpy(host.data(), host.size(), t + 1000, 5000, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  CHECK(Same(host.data(), t + 1000, 5000));
  CHECK_RET(aclhostUnregisterDeviceMemory(t), ACL_SUCCESS);
  CHECK(Pageable(t + 1000) && Covers(t + 3000, t + 2048, t + 6144) && Pageable(t + 6144));
  CHECK_RET(aclrtMemcpy(host.data(), host.size(), t + 2048, 5000, ACL_MEMCPY_DEVICE_TO_HOST),
            ACL_ERROR_RT_PARAM_INVALID);  // runs past the registration that remains
  CHECK_RET(aclhostUnregisterDeviceMemory(t + 2048), ACL_SUCCESS);
  CHECK(Pageable(t + 3000));

  // A containing range after a contained one, and the reverse; either may be released first.
  for (int order = 0; order < 4; ++order) {
    unsigned char *const outer = t;
    unsigned char *const inner = t + 1024;
    const bool outer_first = (order & 1) != 0;
    const bool release_outer_first = (order & 2) != 0;
    CHECK_RET(aclhostRegisterDeviceMemory(outer_first ? outer : inner, outer_first ? 8192 : 1024), ACL_SUCCESS);
    CHECK_RET(aclhostRegisterDeviceMemory(outer_first ? inner : outer, outer_first ? 1024 : 8192), ACL_SUCCESS);
    CHECK(Covers(t + 1500, t, t + 8192));
    CHECK_RET(aclhostUnregisterDeviceMemory(release_outer_first ? outer : inner), ACL_SUCCESS);
    if (release_outer_first) {
      CHECK(Pageable(t + 500) && Covers(t + 1500, inner, inner + 1024) && Pageable(t + 2048));
    } else {
      CHECK(Covers(t + 1500, t, t + 8192));
    }
    CHECK_RET(aclhostUnregisterDeviceMemory(release_outer_first ? inner : outer), ACL_SUCCESS);
    CHECK(Pageable(t) && Pageable(t + 1500) && Pageable(t + 8191));
  }

  // A range bridging two disjoint ones joins them; releasing it splits them again. Touching ranges
  // stay separate.
  CHECK_RET(aclhostRegisterDeviceMemory(t, 1024), ACL_SUCCESS);
  CHECK_RET(aclhostRegisterDeviceMemory(t + 2048, 1024), ACL_SUCCESS);
  CHECK_RET(aclhostRegisterDeviceMemory(t + 3072, 1024), ACL_SUCCESS);
  CHECK(Covers(t + 3072, t + 3072, t + 4096) && !Covers(t + 3072, t + 2048, t + 4096));
  CHECK_RET(aclhostRegisterDeviceMemory(t + 512, 2048), ACL_SUCCESS);
  CHECK(Covers(t + 1500, t, t + 3072));
  CHECK_RET(aclhostUnregisterDeviceMemory(t + 512), ACL_SUCCESS);
  CHECK(Covers(t + 100, t, t + 1024) && Pageable(t + 1500) && Covers(t + 2100, t + 2048, t + 3072));
  void *const three[] = {t, t + 2048, t + 3072};
  CHECK_RET(aclhostUnregisterDeviceMemoryBatch(three, 3), ACL_SUCCESS);
  CHECK(Pageable(t) && Pageable(t + 2100) && Pageable(t + 3100));

  // The batch form accepts overlapping items; a refused item still leaves nothing registered.
  void *const overlapping[] = {t, t + 100};
  const size_t sizes[] = {1000, 2000};
  CHECK_RET(aclhostRegisterDeviceMemoryBatch(overlapping, sizes, 2), ACL_SUCCESS);
  CHECK(Covers(t + 1500, t, t + 2100));
  CHECK_RET(aclhostUnregisterDeviceMemoryBatch(overlapping, 2), ACL_SUCCESS);
  void *pinned = PinnedAlloc(4096);
  void *const refused[] = {t, static_cast<unsigned char *>(pinned) + 64};
  const size_t refused_sizes[] = {1000, 64};
  CHECK_RET(aclhostRegisterDeviceMemoryBatch(refused, refused_sizes, 2), ACL_ERROR_RT_PARAM_INVALID);
  CHECK_MSG("item 1: ");
  CHECK(Pageable(t));
  // Overlaps with allocations keep their rules: inside aclrtMalloc memory is nested, pinned is refused.
  CHECK_RET(aclhostRegisterDeviceMemory(pinned, 64), ACL_ERROR_RT_PARAM_INVALID);
  auto *dev = static_cast<unsigned char *>(DeviceAlloc(4096));
  CHECK_RET(aclhostRegisterDeviceMemory(dev + 64, 128), ACL_SUCCESS);
  CHECK_RET(aclhostRegisterDeviceMemory(dev + 4000, 1024), ACL_ERROR_RT_PARAM_INVALID);
  CHECK_RET(aclhostUnregisterDeviceMemory(dev + 64), ACL_SUCCESS);
  CHECK_RET(aclrtFree(dev), ACL_SUCCESS);
  CHECK_RET(aclrtFreeHost(pinned), ACL_SUCCESS);
}

void TestConcurrentRegistration() {
  // Two threads register and release overlapping ranges of one tensor at the same time, as two kernels
  // launched at once do; each must see its own range as device memory, whole, while it holds it.
  std::vector<unsigned char> tensor(8192);
  Fill(tensor.data(), tensor.size(), 91);
  std::atomic<int> failures{0};
  std::atomic<int> ready{0};
  auto worker = [&](size_t offset, size_t size) {
    if (aclrtSetDevice(0) != ACL_SUCCESS) {
      ++failures;
      return;
    }
    std::vector<unsigned char> host(size);
    unsigned char *const p = tensor.data() + offset;
    ++ready;
    while (ready.load() < 2) {
    }
    for (int i = 0; i < 2000; ++i) {
      const bool ok = aclhostRegisterDeviceMemory(p, size) == ACL_SUCCESS && Covers(p + size / 2, p, p + size) &&
                      aclrtMemcpy(host.data(), size, p, size, ACL_MEMCPY_DEVICE_TO_HOST) == ACL_SUCCESS &&
                      Same(host.data(), p, size) && aclhostUnregisterDeviceMemory(p) == ACL_SUCCESS;
      if (!ok) {
        ++failures;
      }
    }
    if (aclrtResetDevice(0) != ACL_SUCCESS) {
      ++failures;
    }
  };
  std::thread a(worker, 0, 6000);
  std::thread b(worker, 2000, 6000);
  a.join();
  b.join();
  CHECK(failures.load() == 0);
  CHECK(Pageable(tensor.data()) && Pageable(tensor.data() + 4000) && Pageable(tensor.data() + 7999));
}

// One async batch of `count` 4-byte items from pinned to device memory; true when the call succeeded.
bool LongBatch(aclrtStream stream, unsigned char *dev, const unsigned char *pinned, size_t count,
               std::chrono::steady_clock::time_point *begin, std::chrono::steady_clock::time_point *end) {
  std::vector<void *> dsts(count);
  std::vector<void *> srcs(count);
  std::vector<size_t> sizes(count, 4);
  for (size_t i = 0; i < count; ++i) {
    dsts[i] = dev + 4 * i;
    srcs[i] = const_cast<unsigned char *>(pinned) + 4 * i;
  }
  aclrtMemcpyBatchAttr attr = {};
  attr.srcLoc = {0, ACL_MEM_LOCATION_TYPE_HOST};
  attr.dstLoc = {0, ACL_MEM_LOCATION_TYPE_DEVICE};
  size_t index = 0;
  size_t fail_index = 0;
  *begin = std::chrono::steady_clock::now();
  const aclError ret = aclrtMemcpyBatchAsync(dsts.data(), sizes.data(), srcs.data(), sizes.data(), count, &attr, &index,
                                             1, &fail_index, stream);
  *end = std::chrono::steady_clock::now();
  return ret == ACL_SUCCESS && fail_index == SIZE_MAX;
}

void TestLongBatchLetsRegistryWritersIn(aclrtStream stream) {
  // A batch of many items does not hold the memory registry for its whole item loop: registrations
  // (and frees) made by another thread complete while it runs. Each attempt counts the registrations
  // that completed in the middle half of the call; a loaded machine may starve the other thread for
  // one attempt, not for all of them.
  constexpr size_t count = 1 << 20;
  auto *pinned = static_cast<unsigned char *>(PinnedAlloc(4 * count));
  auto *dev = static_cast<unsigned char *>(DeviceAlloc(4 * count));
  Fill(pinned, 4 * count, 5);
  std::vector<unsigned char> tensor(256);
  bool let_in = false;
  for (int attempt = 0; attempt < 4 && !let_in; ++attempt) {
    std::atomic<bool> stop{false};
    std::mutex times_mutex;
    std::vector<std::chrono::steady_clock::time_point> done;
    std::thread writer([&] {
      (void)aclrtSetDevice(0);
      while (!stop.load()) {
        if (aclhostRegisterDeviceMemory(tensor.data(), tensor.size()) == ACL_SUCCESS &&
            aclhostUnregisterDeviceMemory(tensor.data()) == ACL_SUCCESS) {
          std::lock_guard<std::mutex> lock(times_mutex);
          done.push_back(std::chrono::steady_clock::now());
        }
      }
      (void)aclrtResetDevice(0);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::chrono::steady_clock::time_point begin;
    std::chrono::steady_clock::time_point end;
    CHECK(LongBatch(stream, dev, pinned, count, &begin, &end));
    stop = true;
    writer.join();
    const auto quarter = (end - begin) / 4;
    size_t inside = 0;
    for (const auto &t : done) {
      inside += (t > begin + quarter && t < end - quarter) ? 1 : 0;
    }
    let_in = inside > 0;
  }
  CHECK(let_in);
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  std::vector<unsigned char> back(4 * count);
  CHECK_RET(aclrtMemcpy(back.data(), back.size(), dev, back.size(), ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  CHECK(Same(back.data(), pinned, back.size()));
  CHECK_RET(aclrtFree(dev), ACL_SUCCESS);
  CHECK_RET(aclrtFreeHost(pinned), ACL_SUCCESS);
}

struct SelfDestroy {
  Gate gate;
  aclrtStream stream = nullptr;
  aclError sync_code = -1;
  aclError destroy_code = -1;
  std::atomic<bool> last_ran{false};

  static void Run(void *self) {
    auto *me = static_cast<SelfDestroy *>(self);
    me->gate.Wait(&me->gate);
    me->sync_code = aclrtSynchronizeStream(me->stream);  // its own stream: returns at once
    me->destroy_code = aclrtDestroyStream(me->stream);   // the last reference drops on this worker
  }
  static void MarkLast(void *self) { static_cast<SelfDestroy *>(self)->last_ran = true; }
};

void TestHostFunctionDestroysItsStream() {
  // A host function may synchronize and destroy its own stream: the process goes on, and the tasks
  // queued after the function still run, in order, before the stream's thread ends.
  constexpr size_t n = 64 * 1024;
  auto *pinned = static_cast<unsigned char *>(PinnedAlloc(n));
  auto *dev = static_cast<unsigned char *>(DeviceAlloc(n));
  Fill(pinned, n, 17);
  SelfDestroy state;
  CHECK_RET(aclrtCreateStream(&state.stream), ACL_SUCCESS);
  CHECK_RET(aclhostLaunchHostFunc(state.stream, SelfDestroy::Run, &state), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpyAsync(dev, n, pinned, n, ACL_MEMCPY_HOST_TO_DEVICE, state.stream), ACL_SUCCESS);
  CHECK_RET(aclhostLaunchHostFunc(state.stream, SelfDestroy::MarkLast, &state), ACL_SUCCESS);
  state.gate.Open();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!state.last_ran.load() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  CHECK(state.last_ran.load());
  CHECK(state.sync_code == ACL_SUCCESS && state.destroy_code == ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(state.stream), ACL_ERROR_RT_INVALID_HANDLE);
  std::vector<unsigned char> back(n);
  CHECK_RET(aclrtMemcpy(back.data(), n, dev, n, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  CHECK(Same(back.data(), pinned, n));
  CHECK_RET(aclrtFree(dev), ACL_SUCCESS);
  CHECK_RET(aclrtFreeHost(pinned), ACL_SUCCESS);
}

void TestFreeDuringBatch(aclrtStream stream) {
  // aclrtFree of a batch's destination while another thread runs the batch: the batch either enqueued
  // an item before the memory left the registry (the free waits for it) or sees the memory gone and
  // fails there (107000, failIndex); no copy ever writes freed memory (the sanitizer passes check that).
  constexpr size_t count = 1 << 18;
  auto *pinned = static_cast<unsigned char *>(PinnedAlloc(4 * count));
  auto *dev = static_cast<unsigned char *>(DeviceAlloc(4 * count));
  Fill(pinned, 4 * count, 23);
  std::vector<void *> dsts(count);
  std::vector<void *> srcs(count);
  std::vector<size_t> sizes(count, 4);
  for (size_t i = 0; i < count; ++i) {
    dsts[i] = dev + 4 * i;
    srcs[i] = pinned + 4 * i;
  }
  aclrtMemcpyBatchAttr attr = {};
  attr.srcLoc = {0, ACL_MEM_LOCATION_TYPE_HOST};
  attr.dstLoc = {0, ACL_MEM_LOCATION_TYPE_DEVICE};
  size_t index = 0;
  size_t fail_index = 0;
  aclError batch_ret = -1;
  std::atomic<bool> started{false};
  std::thread batcher([&] {
    (void)aclrtSetDevice(0);
    started = true;
    batch_ret = aclrtMemcpyBatchAsync(dsts.data(), sizes.data(), srcs.data(), sizes.data(), count, &attr, &index, 1,
                                      &fail_index, stream);
    (void)aclrtResetDevice(0);
  });
  while (!started.load()) {
    std::this_thread::yield();
  }
  CHECK_RET(aclrtFree(dev), ACL_SUCCESS);
  batcher.join();
  CHECK(batch_ret == ACL_SUCCESS || (batch_ret == ACL_ERROR_RT_PARAM_INVALID && fail_index < count));
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  CHECK_RET(aclrtFreeHost(pinned), ACL_SUCCESS);
}

void ThreadWorker(int index, std::atomic<int> *failures) {
  const bool set_device = index % 2 == 0;  // odd threads rely on the process default device
  if (set_device && aclrtSetDevice(0) != ACL_SUCCESS) {
    ++*failures;
    return;
  }
  aclrtStream stream = nullptr;
  if (aclrtCreateStream(&stream) != ACL_SUCCESS) {
    ++*failures;
    return;
  }
  constexpr size_t n = 256 * 1024;
  void *src = nullptr;
  void *dst = nullptr;
  void *dev_a = nullptr;
  void *dev_b = nullptr;
  if (aclrtMallocHost(&src, n) != ACL_SUCCESS || aclrtMallocHost(&dst, n) != ACL_SUCCESS ||
      aclrtMalloc(&dev_a, n, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS ||
      aclrtMalloc(&dev_b, n, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
    ++*failures;
    return;
  }
  for (uint32_t iter = 0; iter < 20; ++iter) {
    Fill(src, n, static_cast<uint32_t>(index) * 1000u + iter);
    std::memset(dst, 0, n);
    const bool ok = aclrtMemcpyAsync(dev_a, n, src, n, ACL_MEMCPY_HOST_TO_DEVICE, stream) == ACL_SUCCESS &&
                    aclrtMemcpyAsync(dev_b, n, dev_a, n, ACL_MEMCPY_DEVICE_TO_DEVICE, stream) == ACL_SUCCESS &&
                    aclrtMemcpyAsync(dst, n, dev_b, n, ACL_MEMCPY_DEVICE_TO_HOST, stream) == ACL_SUCCESS &&
                    aclrtSynchronizeStream(stream) == ACL_SUCCESS;
    if (!ok || std::memcmp(src, dst, n) != 0) {
      ++*failures;
    }
  }
  if (aclrtFree(dev_a) != ACL_SUCCESS || aclrtFree(dev_b) != ACL_SUCCESS || aclrtFreeHost(src) != ACL_SUCCESS ||
      aclrtFreeHost(dst) != ACL_SUCCESS || aclrtDestroyStream(stream) != ACL_SUCCESS) {
    ++*failures;
  }
  if (set_device && aclrtResetDevice(0) != ACL_SUCCESS) {
    ++*failures;
  }
}

void TestThreads() {
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back(ThreadWorker, i, &failures);
  }
  for (std::thread &t : threads) {
    t.join();
  }
  CHECK(failures.load() == 0);
}

void TestRecentErrorMessages() {
  // As CANN's source: per thread, not cleared by reading, newer message in front (new + "\n" + old).
  std::string first;
  std::thread([&] {
    const char *none = aclGetRecentErrMsg();
    CHECK(none == nullptr);  // a fresh thread has no text
    CHECK_RET(aclrtMalloc(nullptr, 1, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
    const char *text = aclGetRecentErrMsg();
    first = text != nullptr ? text : "NULL";
    const char *again = aclGetRecentErrMsg();
    CHECK(again != nullptr && first == again);  // a second read returns it again
    CHECK_RET(aclrtFree(nullptr), ACL_ERROR_INVALID_PARAM);
    const char *both = aclGetRecentErrMsg();
    CHECK(both != nullptr && std::string(both) ==
                                 "aclrtFree: devPtr is NULL; expected an address returned by "
                                 "aclrtMalloc\n" +
                                     first);
    CHECK_RET(aclrtSetDevice(0), ACL_SUCCESS);  // success leaves the text alone
    const char *after_success = aclGetRecentErrMsg();
    CHECK(after_success != nullptr && std::string(after_success) == both);
    CHECK_RET(aclrtResetDevice(0), ACL_SUCCESS);
  }).join();
  CHECK(first.rfind("aclrtMalloc: devPtr is NULL", 0) == 0);
  // Messages are per thread: the other thread's failures are not in this thread's text.
  const char *mine = aclGetRecentErrMsg();
  CHECK(mine == nullptr || std::strstr(mine, "aclrtFree: devPtr is NULL") == nullptr);
}

void TestResetDevice() {
  CHECK_RET(aclrtResetDevice(0), ACL_SUCCESS);  // drops the last reference of device 0
  void *p = nullptr;
  CHECK_RET(aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_CONTEXT_NULL);
  CHECK_MSG("reset");
  CHECK_RET(aclrtResetDevice(0), ACL_ERROR_RT_CONTEXT_RELEASE_ERROR);  // nothing left to release
  CHECK_RET(aclrtResetDevice(99), ACL_ERROR_RT_INVALID_DEVICEID);
  CHECK_RET(aclrtSetDevice(0), ACL_SUCCESS);
  p = DeviceAlloc(64);
  void *pinned = PinnedAlloc(64);
  Fill(pinned, 64, 60);
  CHECK_RET(aclrtMemcpyAsync(p, 64, pinned, 64, ACL_MEMCPY_HOST_TO_DEVICE, nullptr), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpyAsync(static_cast<char *>(p) + 64, 32, p, 32, ACL_MEMCPY_DEVICE_TO_DEVICE, nullptr),
            ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);  // the new default stream
  std::vector<unsigned char> out(96);
  CHECK_RET(aclrtMemcpy(out.data(), out.size(), p, out.size(), ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  CHECK(Same(out.data(), pinned, 64) && Same(out.data() + 64, pinned, 32));
  CHECK_RET(aclrtFreeHost(pinned), ACL_SUCCESS);
  CHECK_RET(aclrtFree(p), ACL_SUCCESS);
  CHECK_RET(aclrtResetDevice(0), ACL_SUCCESS);
}

// Releasing a device or context that is not the newest one keeps the others working (a default stream
// that was not the last one registered used to be read after std::remove_if had moved it away).
void TestReleaseInAnyOrder() {
  std::thread([] {
    // Two devices, the older released first.
    CHECK_RET(aclrtSetDevice(0), ACL_SUCCESS);
    CHECK_RET(aclrtSetDevice(1), ACL_SUCCESS);
    CHECK_RET(aclrtResetDevice(0), ACL_SUCCESS);
    void *p = DeviceAlloc(64);  // device 1 is still current and usable
    CHECK_RET(aclrtMemsetAsync(p, 64, 7, 64, nullptr), ACL_SUCCESS);
    CHECK_RET(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
    CHECK_RET(aclrtFree(p), ACL_SUCCESS);
    CHECK_RET(aclrtResetDevice(1), ACL_SUCCESS);

    // A device whose primary context is older than a created one.
    CHECK_RET(aclrtSetDevice(0), ACL_SUCCESS);
    aclrtContext created = nullptr;
    CHECK_RET(aclrtCreateContext(&created, 0), ACL_SUCCESS);
    CHECK_RET(aclrtResetDevice(0), ACL_SUCCESS);
    aclrtStream s = nullptr;
    CHECK_RET(aclrtCreateStream(&s), ACL_SUCCESS);  // in the created context, still live
    CHECK_RET(aclrtDestroyStream(s), ACL_SUCCESS);
    CHECK_RET(aclrtDestroyContext(created), ACL_SUCCESS);

    // Two contexts on one device, the older destroyed first; then contexts on two devices, each
    // destroyed while the other lives.
    aclrtContext first = nullptr;
    aclrtContext second = nullptr;
    CHECK_RET(aclrtCreateContext(&first, 0), ACL_SUCCESS);
    CHECK_RET(aclrtCreateContext(&second, 0), ACL_SUCCESS);
    CHECK_RET(aclrtDestroyContext(first), ACL_SUCCESS);
    CHECK_RET(aclrtSetCurrentContext(second), ACL_SUCCESS);
    p = DeviceAlloc(64);
    CHECK_RET(aclrtMemsetAsync(p, 64, 1, 64, nullptr), ACL_SUCCESS);
    CHECK_RET(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
    CHECK_RET(aclrtFree(p), ACL_SUCCESS);
    CHECK_RET(aclrtDestroyContext(second), ACL_SUCCESS);
    aclrtContext on0 = nullptr;
    aclrtContext on1 = nullptr;
    CHECK_RET(aclrtCreateContext(&on0, 0), ACL_SUCCESS);
    CHECK_RET(aclrtCreateContext(&on1, 1), ACL_SUCCESS);
    CHECK_RET(aclrtDestroyContext(on0), ACL_SUCCESS);
    CHECK_RET(aclrtSetCurrentContext(on1), ACL_SUCCESS);
    CHECK_RET(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
    CHECK_RET(aclrtDestroyContext(on1), ACL_SUCCESS);
  }).join();
}

// As CANN's ApiImpl::StreamDestroy, ApiImpl::StreamSynchronize and ApiImpl::MemcpyBatchAsync: they need a
// current context whatever the stream; a stream is destroyed only with its own context current, and
// synchronized from any.
void TestStreamCallsNeedAContext() {
  std::thread([] {
    aclrtContext ctx0 = nullptr;
    aclrtContext ctx1 = nullptr;
    CHECK_RET(aclrtCreateContext(&ctx1, 1), ACL_SUCCESS);
    aclrtStream on1 = nullptr;
    CHECK_RET(aclrtCreateStream(&on1), ACL_SUCCESS);
    void *dev = DeviceAlloc(64);
    void *pinned = PinnedAlloc(64);
    Fill(pinned, 64, 3);
    aclrtMemcpyBatchAttr h2d = {};
    h2d.srcLoc = {0, ACL_MEM_LOCATION_TYPE_HOST};
    h2d.dstLoc = {1, ACL_MEM_LOCATION_TYPE_DEVICE};
    void *dsts[1] = {dev};
    void *srcs[1] = {pinned};
    size_t sizes[1] = {64};
    size_t first = 0;
    size_t fail_index = 0;
    CHECK_RET(aclrtCreateContext(&ctx0, 0), ACL_SUCCESS);
    CHECK_RET(aclrtSynchronizeStream(on1), ACL_SUCCESS);  // another context's stream: synchronized
    CHECK_RET(aclrtSynchronizeStreamWithTimeout(on1, 1000), ACL_SUCCESS);
    CHECK_RET(aclrtDestroyStream(on1), ACL_ERROR_RT_STREAM_CONTEXT);
    CHECK_MSG("another context (on device 1)");

    CHECK_RET(aclrtDestroyContext(ctx0), ACL_SUCCESS);  // the thread now has no context
    CHECK_RET(aclrtSynchronizeStream(on1), ACL_ERROR_RT_CONTEXT_NULL);
    CHECK_RET(aclrtSynchronizeStreamWithTimeout(on1, 1000), ACL_ERROR_RT_CONTEXT_NULL);
    CHECK_RET(aclrtDestroyStream(on1), ACL_ERROR_RT_CONTEXT_NULL);
    // ApiImpl::MemcpyBatchAsync checks the context whatever the stream, after the argument checks.
    CHECK_RET(aclrtMemcpyBatchAsync(dsts, sizes, srcs, sizes, 1, &h2d, &first, 1, &fail_index, on1),
              ACL_ERROR_RT_CONTEXT_NULL);
    CHECK(fail_index == SIZE_MAX);
    // Order: a timeout below -1 (the ACL layer), the handle, a timeout of 0, the context.
    aclrtStream dead = nullptr;
    CHECK_RET(aclrtSetCurrentContext(ctx1), ACL_SUCCESS);
    CHECK_RET(aclrtCreateStream(&dead), ACL_SUCCESS);
    CHECK_RET(aclrtDestroyStream(dead), ACL_SUCCESS);
    CHECK_RET(aclrtSynchronizeStreamWithTimeout(dead, -2), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_RET(aclrtSynchronizeStreamWithTimeout(dead, 0), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_RET(aclrtSynchronizeStreamWithTimeout(on1, 0), ACL_ERROR_RT_PARAM_INVALID);
    CHECK_RET(aclrtDestroyStream(dead), ACL_ERROR_RT_INVALID_HANDLE);
    CHECK_RET(aclrtMemcpyBatchAsync(dsts, sizes, srcs, sizes, 1, &h2d, &first, 1, &fail_index, on1), ACL_SUCCESS);
    CHECK_RET(aclrtSynchronizeStream(on1), ACL_SUCCESS);
    std::vector<unsigned char> back(64);
    CHECK_RET(aclrtMemcpy(back.data(), 64, dev, 64, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    CHECK(Same(back.data(), pinned, 64));
    CHECK_RET(aclrtDestroyStream(on1), ACL_SUCCESS);
    CHECK_RET(aclrtFree(dev), ACL_SUCCESS);
    CHECK_RET(aclrtFreeHost(pinned), ACL_SUCCESS);
    CHECK_RET(aclrtDestroyContext(ctx1), ACL_SUCCESS);
  }).join();
}

// Contexts are bound to devices and threads as CANN binds them.
void TestContexts() {
  aclrtContext primary = nullptr;
  CHECK_RET(aclrtGetCurrentContext(&primary), ACL_SUCCESS);  // device 0's primary context
  CHECK(primary != nullptr);
  CHECK_RET(aclrtGetCurrentContext(nullptr), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtCreateContext(nullptr, 0), ACL_ERROR_INVALID_PARAM);
  aclrtContext bad = nullptr;
  CHECK_RET(aclrtCreateContext(&bad, 99), ACL_ERROR_RT_INVALID_DEVICEID);
  CHECK_RET(aclrtDestroyContext(primary), ACL_ERROR_RT_CONTEXT_NULL);  // only aclrtResetDevice releases it
  CHECK_MSG("primary context");

  // A created context becomes the thread's current one, with its device.
  aclrtContext ctx = nullptr;
  CHECK_RET(aclrtCreateContext(&ctx, 1), ACL_SUCCESS);
  aclrtContext current = nullptr;
  CHECK_RET(aclrtGetCurrentContext(&current), ACL_SUCCESS);
  CHECK(current == ctx && ctx != primary);
  int32_t device = -1;
  CHECK_RET(aclrtGetDevice(&device), ACL_SUCCESS);
  CHECK(device == 1);
  void *dev = DeviceAlloc(256);
  void *dev_default = DeviceAlloc(256);  // written on the context's default stream
  CHECK(test::LocationOf(dev).device == 1);
  void *pinned = PinnedAlloc(256);
  Fill(pinned, 256, 70);
  aclrtStream stream = nullptr;
  CHECK_RET(aclrtCreateStream(&stream), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpyAsync(dev, 256, pinned, 256, ACL_MEMCPY_HOST_TO_DEVICE, stream), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpyAsync(dev_default, 256, pinned, 256, ACL_MEMCPY_HOST_TO_DEVICE, nullptr), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeDevice(), ACL_SUCCESS);  // both streams of the context
  std::vector<unsigned char> out(256);
  CHECK_RET(aclrtMemcpy(out.data(), 256, dev_default, 256, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  CHECK(Same(out.data(), pinned, 256));

  // Another thread does not see this thread's context; setting it there binds it there too.
  aclError other_get = -1;
  aclError other_copy = -1;
  std::thread([&] {
    aclrtContext seen = nullptr;
    (void)aclrtGetCurrentContext(&seen);  // the process default's primary context (host runtime)
    other_get = aclrtSetCurrentContext(ctx);
    other_copy = aclrtMemcpyAsync(dev, 256, pinned, 256, ACL_MEMCPY_HOST_TO_DEVICE, stream);
    (void)aclrtSynchronizeStream(stream);
  }).join();
  CHECK(other_get == ACL_SUCCESS && other_copy == ACL_SUCCESS);

  // Back to device 0's primary context: the stream of ctx is now a stream of another context.
  CHECK_RET(aclrtSetCurrentContext(primary), ACL_SUCCESS);
  CHECK_RET(aclrtGetDevice(&device), ACL_SUCCESS);
  CHECK(device == 0);
  CHECK_RET(aclrtMemcpyAsync(dev, 256, pinned, 256, ACL_MEMCPY_HOST_TO_DEVICE, stream), ACL_ERROR_RT_STREAM_CONTEXT);
  CHECK_RET(aclrtMemsetAsync(dev, 256, 1, 256, stream), ACL_ERROR_RT_STREAM_CONTEXT);
  CHECK_RET(aclrtSetCurrentContext(ctx), ACL_SUCCESS);

  // Destroying it destroys its streams and leaves this thread without a context (Context::TearDown; CANN's
  // RunDestroyedContextHandleRejectedCase): no fallback to the device it set before.
  aclrtEvent event = nullptr;
  CHECK_RET(aclrtCreateEvent(&event), ACL_SUCCESS);
  CHECK_RET(aclrtRecordEvent(event, stream), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyContext(ctx), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_ERROR_RT_INVALID_HANDLE);
  CHECK_RET(aclrtGetCurrentContext(&current), ACL_ERROR_RT_CONTEXT_NULL);
  CHECK_MSG("destroyed");
  aclrtEvent no_event = nullptr;
  CHECK_RET(aclrtCreateEvent(&no_event), ACL_ERROR_RT_CONTEXT_NULL);
  CHECK_RET(aclrtGetDevice(&device), ACL_ERROR_RT_CONTEXT_NULL);
  CHECK_RET(aclrtSynchronizeEvent(event), ACL_SUCCESS);  // needs no context
  CHECK_RET(aclrtDestroyEvent(event), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyContext(ctx), ACL_ERROR_RT_CONTEXT_NULL);
  CHECK_RET(aclrtSetCurrentContext(ctx), ACL_ERROR_RT_PARAM_INVALID);      // ApiErrorDecorator::ContextSetCurrent
  CHECK_RET(aclrtGetCurrentContext(&current), ACL_ERROR_RT_CONTEXT_NULL);  // the failed set changed nothing
  CHECK_RET(aclrtSetCurrentContext(reinterpret_cast<aclrtContext>(0x7654320)), ACL_ERROR_RT_PARAM_INVALID);
  CHECK_RET(aclrtSetCurrentContext(nullptr), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtDestroyContext(nullptr), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtSetCurrentContext(primary), ACL_SUCCESS);  // device 0 again, for the tests after this one
  CHECK_RET(aclrtGetDevice(&device), ACL_SUCCESS);
  CHECK(device == 0);
  // A thread whose current context was destroyed elsewhere has no context (no fallback to a device).
  aclrtContext doomed = nullptr;
  aclError after_destroy = -1;
  std::thread([&] {
    (void)aclrtCreateContext(&doomed, 0);
    std::thread([&] { (void)aclrtDestroyContext(doomed); }).join();
    void *p = nullptr;
    after_destroy = aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST);
  }).join();
  CHECK(after_destroy == ACL_ERROR_RT_CONTEXT_NULL);
  CHECK_RET(aclrtFree(dev), ACL_SUCCESS);
  CHECK_RET(aclrtFree(dev_default), ACL_SUCCESS);
  CHECK_RET(aclrtFreeHost(pinned), ACL_SUCCESS);
}

void TestMemsetAndInfo(aclrtStream stream) {
  aclrtRunMode mode = ACL_DEVICE;
  CHECK_RET(aclrtGetRunMode(&mode), ACL_SUCCESS);
  CHECK(mode == ACL_HOST);
  CHECK_RET(aclrtGetRunMode(nullptr), ACL_ERROR_INVALID_PARAM);

  size_t free_before = 0;
  size_t total = 0;
  CHECK_RET(aclrtGetMemInfo(ACL_HBM_MEM, &free_before, &total), ACL_SUCCESS);
  CHECK(total > 0 && free_before <= total);
  void *dev = DeviceAlloc(1 << 20);
  size_t free_after = 0;
  CHECK_RET(aclrtGetMemInfo(ACL_HBM_MEM, &free_after, &total), ACL_SUCCESS);
  CHECK(free_before - free_after == (1 << 20) + 32);  // the allocation's recorded (padded) size
  CHECK_RET(aclrtGetMemInfo(ACL_HBM_MEM, nullptr, &total), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtGetMemInfo(static_cast<aclrtMemAttr>(18), &free_after, &total), ACL_ERROR_RT_INVALID_MEMORY_TYPE);

  // Memset: the low byte of value, count bytes, nothing past them.
  std::vector<unsigned char> out(64);
  CHECK_RET(aclrtMemset(dev, 64, 0, 64), ACL_SUCCESS);
  CHECK_RET(aclrtMemset(dev, 64, 0x1AB, 32), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(out.data(), 64, dev, 64, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  CHECK(out[0] == 0xAB && out[31] == 0xAB && out[32] == 0 && out[63] == 0);
  CHECK_RET(aclrtMemset(dev, 16, 1, 32), ACL_ERROR_RT_PARAM_INVALID);
  CHECK_MSG("count 32 exceeds maxCount 16");
  CHECK_RET(aclrtMemset(nullptr, 16, 1, 16), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtMemset(nullptr, 16, 1, 0), ACL_SUCCESS);                     // count 0 first
  CHECK_RET(aclrtMemset(out.data(), 64, 1, 64), ACL_ERROR_RT_PARAM_INVALID);  // pageable memory
  CHECK_RET(aclrtMemset(static_cast<char *>(dev) + (1 << 20), 64, 1, 64), ACL_ERROR_RT_PARAM_INVALID);  // past the end

  Gate gate;
  CHECK_RET(aclhostLaunchHostFunc(stream, Gate::Wait, &gate), ACL_SUCCESS);
  CHECK_RET(aclrtMemsetAsync(dev, 64, 7, 64, stream), ACL_SUCCESS);
  // Not run yet: the stream is held. (Reading the bytes under the queued memset is a race by design,
  // which strict ordering refuses.)
  CHECK_RET(aclrtMemcpy(out.data(), 64, dev, 64, ACL_MEMCPY_DEVICE_TO_HOST),
            StrictOrder() ? ACL_ERROR_RT_PARAM_INVALID : ACL_SUCCESS);
  CHECK(out[0] == 0xAB);
  // Host memory, pageable or pinned, is set on the calling thread at once, as CANN's MemSetAsync
  // (memset_s for RT_MEMORY_LOC_HOST / RT_MEMORY_LOC_UNREGISTERED): the held stream does not delay it.
  std::vector<unsigned char> pageable(64, 0);
  CHECK_RET(aclrtMemsetAsync(pageable.data(), 64, 0x155, 48, stream), ACL_SUCCESS);
  CHECK(pageable[0] == 0x55 && pageable[47] == 0x55 && pageable[48] == 0);
  void *pinned = PinnedAlloc(64);
  CHECK_RET(aclrtMemsetAsync(pinned, 64, 3, 64, stream), ACL_SUCCESS);
  CHECK(static_cast<unsigned char *>(pinned)[63] == 3);
  CHECK_RET(aclrtMemsetAsync(pinned, 128, 3, 128, stream), ACL_ERROR_RT_PARAM_INVALID);         // past the allocation
  CHECK_RET(aclrtMemsetAsync(pageable.data(), 16, 3, 64, stream), ACL_ERROR_RT_PARAM_INVALID);  // count > maxCount
  gate.Open();
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(out.data(), 64, dev, 64, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  CHECK(out == std::vector<unsigned char>(64, 7));
  CHECK_RET(aclrtMemsetAsync(dev, 64, 9, 64, nullptr), ACL_SUCCESS);  // the default stream
  CHECK_RET(aclrtSynchronizeDevice(), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(out.data(), 64, dev, 64, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  CHECK(out == std::vector<unsigned char>(64, 9));
  CHECK_RET(aclrtMemsetAsync(dev, 8, 9, 64, stream), ACL_ERROR_RT_PARAM_INVALID);
  CHECK_RET(aclrtMemsetAsync(dev, 64, 9, 64, reinterpret_cast<aclrtStream>(0x4321)), ACL_ERROR_RT_INVALID_HANDLE);
  CHECK_RET(aclrtFree(dev), ACL_SUCCESS);
  CHECK_RET(aclrtFreeHost(pinned), ACL_SUCCESS);
}

// Events: CANN's flag rules (ApiErrorDecorator::EventCreate: a bit of 0x3F and none above it; device-only
// and external events only alone), what the external and device-only events refuse, and the live counts.
void TestEvents(aclrtStream stream) {
  uint64_t events0 = 0;
  uint64_t pinned0 = 0;
  CHECK_RET(aclhostGetLiveResourceCounts(&events0, &pinned0), ACL_SUCCESS);
  CHECK_RET(aclhostGetLiveResourceCounts(nullptr, &pinned0), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclhostGetLiveResourceCounts(&events0, nullptr), ACL_ERROR_INVALID_PARAM);
  aclrtEvent event = nullptr;
  for (const uint32_t flag :
       {0x0U, ACL_EVENT_IPC, 0x80U, ACL_EVENT_DEVICE_USE_ONLY | ACL_EVENT_SYNC,
        ACL_EVENT_EXTERNAL | ACL_EVENT_TIME_LINE, ACL_EVENT_DEVICE_USE_ONLY | ACL_EVENT_EXTERNAL}) {
    CHECK_RET(aclrtCreateEventWithFlag(&event, flag), ACL_ERROR_RT_PARAM_INVALID);
  }
  CHECK_RET(aclrtCreateEventWithFlag(nullptr, ACL_EVENT_SYNC), ACL_ERROR_INVALID_PARAM);
  std::vector<aclrtEvent> created;
  for (const uint32_t flag : {ACL_EVENT_SYNC, ACL_EVENT_CAPTURE_STREAM_PROGRESS, 0x4U, ACL_EVENT_TIME_LINE, 0xFU,
                              ACL_EVENT_DEVICE_USE_ONLY, ACL_EVENT_EXTERNAL}) {
    CHECK_RET(aclrtCreateEventWithFlag(&event, flag), ACL_SUCCESS);
    created.push_back(event);
  }
  CHECK_RET(aclrtCreateEvent(&event), ACL_SUCCESS);
  created.push_back(event);
  void *pinned = PinnedAlloc(64);
  uint64_t events1 = 0;
  uint64_t pinned1 = 0;
  CHECK_RET(aclhostGetLiveResourceCounts(&events1, &pinned1), ACL_SUCCESS);
  CHECK(events1 == events0 + created.size() && pinned1 == pinned0 + 1);

  aclrtEvent device_only = created[5];
  aclrtEvent external = created[6];
  CHECK_RET(aclrtRecordEvent(device_only, stream), ACL_ERROR_RT_PARAM_INVALID);
  CHECK_MSG("ACL_EVENT_DEVICE_USE_ONLY");
  CHECK_RET(aclrtRecordEvent(external, stream), ACL_SUCCESS);
  aclrtEventRecordedStatus status = ACL_EVENT_RECORDED_STATUS_NOT_READY;
  CHECK_RET(aclrtQueryEventStatus(external, &status), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
  CHECK_RET(aclrtSynchronizeEvent(external), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
  CHECK_RET(aclrtRecordEvent(created[0], stream), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeEvent(created[0]), ACL_SUCCESS);
  CHECK_RET(aclrtQueryEventStatus(created[0], &status), ACL_SUCCESS);
  CHECK(status == ACL_EVENT_RECORDED_STATUS_COMPLETE);
  for (aclrtEvent e : created) {
    CHECK_RET(aclrtDestroyEvent(e), ACL_SUCCESS);
  }
  CHECK_RET(aclrtFreeHost(pinned), ACL_SUCCESS);
  CHECK_RET(aclhostGetLiveResourceCounts(&events1, &pinned1), ACL_SUCCESS);
  CHECK(events1 == events0 && pinned1 == pinned0);
}

// aclrtStreamWaitEvent: a download on a second stream that waits for an event recorded after an upload held
// on the first stream runs after the upload, and strict ordering (when on) counts no race; the codes.
void TestStreamWaitEvent(aclrtStream stream) {
  constexpr size_t n = 4096;
  aclrtStream second = nullptr;
  CHECK_RET(aclrtCreateStream(&second), ACL_SUCCESS);
  aclrtEvent uploaded = nullptr;
  CHECK_RET(aclrtCreateEvent(&uploaded), ACL_SUCCESS);
  auto *src = static_cast<unsigned char *>(PinnedAlloc(n));
  auto *out = static_cast<unsigned char *>(PinnedAlloc(n));
  void *dev = DeviceAlloc(n);
  Fill(src, n, 11);
  std::memset(out, 0, n);
  CHECK_RET(aclrtMemset(dev, n, 0, n), ACL_SUCCESS);
  uint64_t queued = 0;
  uint64_t races = 0;
  CHECK_RET(aclhostGetOrderCheckCounts(&queued, &races), ACL_SUCCESS);
  const uint64_t races_before = races;
  Gate gate;
  CHECK_RET(aclhostLaunchHostFunc(stream, Gate::Wait, &gate), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpyAsync(dev, n, src, n, ACL_MEMCPY_HOST_TO_DEVICE, stream), ACL_SUCCESS);
  CHECK_RET(aclrtRecordEvent(uploaded, stream), ACL_SUCCESS);
  CHECK_RET(aclrtStreamWaitEvent(second, uploaded), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpyAsync(out, n, dev, n, ACL_MEMCPY_DEVICE_TO_HOST, second), ACL_SUCCESS);
  CHECK_RET(aclhostGetOrderCheckCounts(&queued, &races), ACL_SUCCESS);
  CHECK(queued == (StrictOrder() ? 2U : 0U));
  gate.Open();
  CHECK_RET(aclrtSynchronizeStream(second), ACL_SUCCESS);
  CHECK(Same(out, src, n));
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  CHECK_RET(aclhostGetOrderCheckCounts(&queued, &races), ACL_SUCCESS);
  CHECK(queued == 0 && races == races_before);
  CHECK_RET(aclrtStreamWaitEvent(second, nullptr), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtStreamWaitEvent(reinterpret_cast<aclrtStream>(0xDEAD), uploaded), ACL_ERROR_RT_INVALID_HANDLE);
  CHECK_RET(aclrtStreamWaitEvent(second, reinterpret_cast<aclrtEvent>(0xDEAD)), ACL_ERROR_RT_INVALID_HANDLE);
  CHECK_RET(aclhostGetOrderCheckCounts(nullptr, &races), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclhostCheckHostAccess(nullptr, 1, 0), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclhostCheckHostAccess(dev, n, 1), ACL_SUCCESS);  // nothing queued
  CHECK_RET(aclrtDestroyEvent(uploaded), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyStream(second), ACL_SUCCESS);
  CHECK_RET(aclrtFree(dev), ACL_SUCCESS);
  CHECK_RET(aclrtFreeHost(src), ACL_SUCCESS);
  CHECK_RET(aclrtFreeHost(out), ACL_SUCCESS);
}

// Peer devices: the three peer-access calls and a device-to-device copy between devices 0 and 1, which runs
// only once each device has enabled the other (507013 otherwise: at the call for aclrtMemcpy, at the next
// synchronize for aclrtMemcpyAsync).
void TestPeerAccess(aclrtStream stream) {
  int32_t can = -1;
  CHECK_RET(aclrtDeviceCanAccessPeer(&can, 0, 1), ACL_SUCCESS);
  CHECK(can == 1);
  CHECK_RET(aclrtDeviceCanAccessPeer(&can, 1, 1), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtDeviceCanAccessPeer(nullptr, 0, 1), ACL_ERROR_RT_PARAM_INVALID);
  CHECK_RET(aclrtDeviceCanAccessPeer(&can, 0, 8), ACL_ERROR_RT_INVALID_DEVICEID);
  CHECK_RET(aclrtDeviceEnablePeerAccess(1, 1), ACL_ERROR_FEATURE_UNSUPPORTED);
  CHECK_RET(aclrtDeviceEnablePeerAccess(0, 0), ACL_ERROR_INVALID_PARAM);

  std::vector<unsigned char> data(256);
  for (size_t i = 0; i < data.size(); ++i) {
    data[i] = static_cast<unsigned char>(i * 7 + 1);
  }
  void *src = nullptr;
  CHECK_RET(aclrtMalloc(&src, 256, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(src, 256, data.data(), 256, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  CHECK_RET(aclrtSetDevice(1), ACL_SUCCESS);
  void *dst = nullptr;
  CHECK_RET(aclrtMalloc(&dst, 256, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  CHECK_RET(aclrtMemset(dst, 256, 0, 256), ACL_SUCCESS);
  CHECK_RET(aclrtDeviceEnablePeerAccess(0, 0), ACL_SUCCESS);  // device 1 -> device 0 only
  CHECK_RET(aclrtSetDevice(0), ACL_SUCCESS);
  std::vector<unsigned char> out(256, 0xEE);

  CHECK_RET(aclrtMemcpy(dst, 256, src, 256, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_ERROR_RT_SYS_DMA);
  CHECK_MSG("not enabled in both directions");
  CHECK_RET(aclrtMemcpy(dst, 256, src, 256, ACL_MEMCPY_INTER_DEVICE_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtMemcpyAsync(dst, 256, src, 256, ACL_MEMCPY_DEFAULT, stream), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_ERROR_RT_SYS_DMA);
  CHECK_RET(aclrtMemcpy(out.data(), 256, dst, 256, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  CHECK(out == std::vector<unsigned char>(256, 0));

  int32_t status = -1;
  CHECK_RET(aclrtDevicePeerAccessStatus(0, 1, &status), ACL_SUCCESS);
  CHECK(status == 0);
  CHECK_RET(aclrtDeviceEnablePeerAccess(1, 0), ACL_SUCCESS);  // now both ways
  CHECK_RET(aclrtDevicePeerAccessStatus(0, 1, &status), ACL_SUCCESS);
  CHECK(status == 1);
  CHECK_RET(aclrtDevicePeerAccessStatus(0, 1, nullptr), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtMemcpyAsync(dst, 256, src, 256, ACL_MEMCPY_DEVICE_TO_DEVICE, stream), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(out.data(), 256, dst, 256, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  CHECK(out == data);

  // A batch never copies device to device, peer access or not.
  void *dsts[1] = {dst};
  void *srcs[1] = {src};
  size_t sizes[1] = {256};
  size_t dest_maxs[1] = {256};
  aclrtMemcpyBatchAttr attr{};
  attr.dstLoc = {1, ACL_MEM_LOCATION_TYPE_DEVICE};
  attr.srcLoc = {0, ACL_MEM_LOCATION_TYPE_DEVICE};
  size_t attr_index = 0;
  size_t fail = 0;
  CHECK_RET(aclrtMemcpyBatch(dsts, dest_maxs, srcs, sizes, 1, &attr, &attr_index, 1, &fail),
            ACL_ERROR_RT_PARAM_INVALID);
  CHECK(fail == 0);

  CHECK_RET(aclrtDeviceDisablePeerAccess(1), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(dst, 256, src, 256, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_ERROR_RT_SYS_DMA);
  CHECK_RET(aclrtSetDevice(1), ACL_SUCCESS);
  CHECK_RET(aclrtDeviceDisablePeerAccess(0), ACL_SUCCESS);
  CHECK_RET(aclrtFree(dst), ACL_SUCCESS);
  CHECK_RET(aclrtResetDevice(1), ACL_SUCCESS);  // the two aclrtSetDevice(1) above
  CHECK_RET(aclrtResetDevice(1), ACL_SUCCESS);
  CHECK_RET(aclrtSetDevice(0), ACL_SUCCESS);
  CHECK_RET(aclrtResetDevice(0), ACL_SUCCESS);  // the two aclrtSetDevice(0) of this test
  CHECK_RET(aclrtResetDevice(0), ACL_SUCCESS);
  CHECK_RET(aclrtFree(src), ACL_SUCCESS);
}

}  // namespace

int main() {
  TestBeforeAnyDevice();
  TestInitFinalize();
  TestDevices();
  TestRecentErrorMessages();
  TestMallocFree();
  aclrtStream stream = nullptr;
  CHECK_RET(aclrtCreateStream(&stream), ACL_SUCCESS);
  TestRoundTrips(stream);
  TestOrdering(stream);
  Test2D(stream);
  TestBatch(stream);
  TestDescriptor(stream);
  TestCopyErrors(stream);
  TestFrameworkRegistration(stream);
  TestOverlappingRegistrations();
  TestConcurrentRegistration();
  TestLongBatchLetsRegistryWritersIn(stream);
  TestHostFunctionDestroysItsStream();
  TestFreeDuringBatch(stream);
  TestMemsetAndInfo(stream);
  TestEvents(stream);
  TestStreamWaitEvent(stream);
  TestPeerAccess(stream);
  CHECK_RET(aclrtDestroyStream(stream), ACL_SUCCESS);
  TestContexts();
  TestStreamCallsNeedAContext();
  TestReleaseInAnyOrder();
  TestStreams();
  TestThreads();
  TestResetDevice();
  CHECK_RET(aclFinalize(), ACL_SUCCESS);

  return test::Finish();
}
