// Threads-by-streams stress test of the host ACL runtime through its public C API.
//
// kThreads threads each run kIterations rounds. A round picks its own stream or one of two streams
// shared by every thread, and moves a pattern through every copy kind: H2D, D2D, D2H and DEFAULT
// between pinned and device memory (asynchronous), HOST_TO_BUF_TO_DEVICE, a pageable source (the
// drain path), a 2D copy with pitch gaps, an asynchronous batch over device memory and framework memory
// registered for the round, memset, and synchronous H2H/D2D copies. Every byte of every destination
// is checked against the pattern. Meanwhile the threads allocate and free (aclrtFree drains every
// stream, the shared ones included, while other threads enqueue on them) and destroy and re-create
// their own streams. Built and run like the other programs (and under ASan/UBSan and ThreadSanitizer
// by ops_impl/tools/run_sanitizers.py). Prints "ALL PASSED" and exits 0, or lists failures, exits 1.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "acl_host/acl_host_ext.h"
#include "check.h"

namespace {

constexpr int kThreads = 6;
constexpr int kIterations = 120;
constexpr int kStreamLifetime = 7;  // rounds between re-creations of a thread's own stream

// A small deterministic generator per thread.
struct Lcg {
  uint64_t state;
  uint32_t Next() {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<uint32_t>(state >> 33);
  }
  size_t Below(size_t n) { return Next() % n; }
};

void Pattern(unsigned char *p, size_t n, uint32_t seed) {
  for (size_t i = 0; i < n; ++i) {
    p[i] = static_cast<unsigned char>((i * 2654435761u + seed * 40503u) >> 7);
  }
}

class Worker {
 public:
  Worker(int thread, aclrtStream shared_a, aclrtStream shared_b)
      : thread_(thread), shared_{shared_a, shared_b}, rng_{0x9E3779B97F4A7C15ULL * (thread + 1)} {}

  void Run() {
    const test::Context label("thread " + std::to_string(thread_));
    CHECK_OK(aclrtSetDevice(0));
    CHECK_OK(aclrtCreateStream(&own_));
    for (int round = 0; round < kIterations; ++round) {
      if (round % kStreamLifetime == kStreamLifetime - 1) {
        CHECK_OK(aclrtDestroyStream(own_));  // queued work drains first
        CHECK_OK(aclrtCreateStream(&own_));
      }
      const size_t pick = rng_.Below(3);
      aclrtStream stream = pick == 0 ? own_ : shared_[pick - 1];
      Round(round, stream);
    }
    CHECK_OK(aclrtDestroyStream(own_));
    CHECK_OK(aclrtResetDevice(0));
  }

 private:
  void *Device(size_t n) {
    void *p = nullptr;
    CHECK_OK(aclrtMalloc(&p, n, ACL_MEM_MALLOC_HUGE_FIRST));
    return p;
  }
  void *Pinned(size_t n) {
    void *p = nullptr;
    CHECK_OK(aclrtMallocHost(&p, n));
    return p;
  }

  void Round(int round, aclrtStream stream) {
    const size_t n = 1 + rng_.Below(64 * 1024);
    const uint32_t seed = static_cast<uint32_t>(thread_ * 100000 + round);
    auto *src = static_cast<unsigned char *>(Pinned(n));
    auto *dev_a = static_cast<unsigned char *>(Device(n));
    auto *dev_b = static_cast<unsigned char *>(Device(n));
    auto *back = static_cast<unsigned char *>(Pinned(n));
    if (src == nullptr || dev_a == nullptr || dev_b == nullptr || back == nullptr) {
      return;
    }
    std::vector<unsigned char> expected(n);
    Pattern(expected.data(), n, seed);
    std::memcpy(src, expected.data(), n);

    // H2D, D2D, D2H and DEFAULT, queued back to back.
    CHECK_OK(aclrtMemcpyAsync(dev_a, n, src, n, ACL_MEMCPY_HOST_TO_DEVICE, stream));
    CHECK_OK(aclrtMemcpyAsync(dev_b, n, dev_a, n, ACL_MEMCPY_DEVICE_TO_DEVICE, stream));
    CHECK_OK(aclrtMemcpyAsync(back, n, dev_b, n, ACL_MEMCPY_DEVICE_TO_HOST, stream));
    std::vector<unsigned char> via_default(n, 0);
    CHECK_OK(aclrtMemcpyAsync(via_default.data(), n, dev_b, n, ACL_MEMCPY_DEFAULT, stream));  // pageable: drains
    CHECK(std::memcmp(via_default.data(), expected.data(), n) == 0);
    CHECK_OK(aclrtSynchronizeStream(stream));
    CHECK(std::memcmp(back, expected.data(), n) == 0);

    // HOST_TO_BUF_TO_DEVICE from a pageable buffer overwritten right after the call.
    std::vector<unsigned char> staged(expected);
    CHECK_OK(aclrtMemcpyAsync(dev_b, n, staged.data(), n, ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE, stream));
    std::memset(staged.data(), 0xEE, n);
    // A pageable source: the stream drains, then the copy runs on this thread.
    std::vector<unsigned char> pageable(n);
    Pattern(pageable.data(), n, seed + 1);
    CHECK_OK(aclrtMemcpyAsync(dev_a, n, pageable.data(), n, ACL_MEMCPY_HOST_TO_DEVICE, stream));
    std::memset(back, 0, n);
    CHECK_OK(aclrtMemcpyAsync(back, n, dev_b, n, ACL_MEMCPY_DEVICE_TO_HOST, stream));
    CHECK_OK(aclrtSynchronizeStream(stream));
    CHECK(std::memcmp(back, expected.data(), n) == 0);
    std::vector<unsigned char> check(n);
    CHECK_OK(aclrtMemcpy(check.data(), n, dev_a, n, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(std::memcmp(check.data(), pageable.data(), n) == 0);

    TwoD(stream, src, dev_a, back, n);
    Batch(stream, src, dev_b, back, n, seed);

    // memset, then synchronous D2D and H2H.
    const size_t half = n / 2;
    std::vector<unsigned char> unset(n);
    CHECK_OK(aclrtMemcpy(unset.data(), n, dev_a, n, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK_OK(aclrtMemsetAsync(dev_a, n, 0x5A, half, stream));
    CHECK_OK(aclrtSynchronizeStream(stream));
    CHECK_OK(aclrtMemcpy(dev_b, n, dev_a, n, ACL_MEMCPY_DEVICE_TO_DEVICE));
    CHECK_OK(aclrtMemcpy(check.data(), n, dev_b, n, ACL_MEMCPY_DEVICE_TO_HOST));
    bool memset_ok = true;
    for (size_t i = 0; i < n; ++i) {
      memset_ok = memset_ok && check[i] == (i < half ? 0x5A : unset[i]);
    }
    CHECK(memset_ok);
    CHECK_OK(aclrtMemcpy(back, n, src, n, ACL_MEMCPY_HOST_TO_HOST));
    CHECK(std::memcmp(back, expected.data(), n) == 0);

    // Freed while other threads keep their copies going on the shared streams.
    CHECK_OK(aclrtFree(dev_a));
    CHECK_OK(aclrtFree(dev_b));
    CHECK_OK(aclrtFreeHost(src));
    CHECK_OK(aclrtFreeHost(back));
  }

  void TwoD(aclrtStream stream, const unsigned char *src, unsigned char *dev, unsigned char *back, size_t n) {
    const size_t width = 1 + rng_.Below(96);
    const size_t spitch = width + rng_.Below(32);
    const size_t dpitch = width + rng_.Below(32);
    const size_t rows_fit = n / (spitch > dpitch ? spitch : dpitch);
    if (rows_fit < 2) {
      return;
    }
    const size_t height = 1 + rng_.Below(rows_fit - 1);
    std::vector<unsigned char> before(n);
    CHECK_OK(aclrtMemcpy(before.data(), n, dev, n, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK_OK(aclrtMemcpy2dAsync(dev, dpitch, src, spitch, width, height, ACL_MEMCPY_HOST_TO_DEVICE, stream));
    CHECK_OK(aclrtMemcpy2dAsync(back, dpitch, dev, dpitch, width, height, ACL_MEMCPY_DEVICE_TO_HOST, stream));
    CHECK_OK(aclrtSynchronizeStream(stream));
    std::vector<unsigned char> after(n);
    CHECK_OK(aclrtMemcpy(after.data(), n, dev, n, ACL_MEMCPY_DEVICE_TO_HOST));
    bool ok = true;
    for (size_t i = 0; i < n; ++i) {
      const size_t row = i / dpitch;
      const size_t col = i % dpitch;
      const bool written = row < height && col < width;
      ok = ok && after[i] == (written ? src[row * spitch + col] : before[i]);
      ok = ok && (!written || back[i] == after[i]);
    }
    CHECK(ok);
  }

  void Batch(aclrtStream stream, const unsigned char *src, unsigned char *dev, unsigned char *back, size_t n,
             uint32_t seed) {
    // Four items: pinned -> device, device -> pinned, pageable -> framework memory (registered for the
    // round, as device memory), framework memory -> pinned.
    const size_t q = n / 4;
    if (q == 0) {
      return;
    }
    std::vector<unsigned char> framework(q);
    std::vector<unsigned char> pageable(q);
    Pattern(pageable.data(), q, seed + 2);
    CHECK_OK(aclhostRegisterDeviceMemory(framework.data(), q));
    std::vector<unsigned char> out(q, 0);
    void *dsts[4] = {dev, back + q, framework.data(), back + 2 * q};
    void *srcs[4] = {const_cast<unsigned char *>(src), dev, pageable.data(), framework.data()};
    size_t sizes[4] = {q, q, q, q};
    // Item 3 reads what item 2 writes; items of a batch run in no order, so it runs in a second batch.
    aclrtMemcpyBatchAttr attrs[3] = {};
    attrs[0].srcLoc = {0, ACL_MEM_LOCATION_TYPE_HOST};
    attrs[0].dstLoc = {0, ACL_MEM_LOCATION_TYPE_DEVICE};
    attrs[1].srcLoc = {0, ACL_MEM_LOCATION_TYPE_DEVICE};
    attrs[1].dstLoc = {0, ACL_MEM_LOCATION_TYPE_HOST};
    attrs[2] = attrs[0];
    size_t indexes[3] = {0, 1, 2};
    size_t fail_index = 0;
    CHECK_OK(aclrtMemcpyBatchAsync(dsts, sizes, srcs, sizes, 1, attrs, indexes, 1, &fail_index, stream));
    CHECK_OK(aclrtSynchronizeStream(stream));
    CHECK_OK(aclrtMemcpyBatchAsync(dsts + 1, sizes, srcs + 1, sizes, 2, attrs + 1, indexes, 2, &fail_index, stream));
    CHECK(fail_index == SIZE_MAX);
    CHECK_OK(aclrtSynchronizeStream(stream));
    CHECK_OK(aclrtMemcpyBatchAsync(dsts + 3, sizes, srcs + 3, sizes, 1, attrs + 1, indexes, 1, &fail_index, stream));
    CHECK_OK(aclrtSynchronizeStream(stream));
    CHECK(std::memcmp(back + q, src, q) == 0);
    CHECK(std::memcmp(framework.data(), pageable.data(), q) == 0);
    CHECK(std::memcmp(back + 2 * q, pageable.data(), q) == 0);
    CHECK_OK(aclhostUnregisterDeviceMemory(framework.data()));
  }

  const int thread_;
  aclrtStream shared_[2];
  aclrtStream own_ = nullptr;
  Lcg rng_;
};

}  // namespace

int main() {
  CHECK_OK(aclrtSetDevice(0));
  aclrtStream shared_a = nullptr;
  aclrtStream shared_b = nullptr;
  CHECK_OK(aclrtCreateStream(&shared_a));
  CHECK_OK(aclrtCreateStream(&shared_b));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, shared_a, shared_b] { Worker(t, shared_a, shared_b).Run(); });
  }
  for (std::thread &t : threads) {
    t.join();
  }
  CHECK_OK(aclrtDestroyStream(shared_a));
  CHECK_OK(aclrtDestroyStream(shared_b));
  CHECK_OK(aclrtResetDevice(0));
  return test::Finish();
}
