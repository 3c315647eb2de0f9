// The copy engine through the public C API: every row loop of 2D copies (widths 1..600, gaps between
// rows never written), copies large enough to be split across the copy pool (1D, 2D, batches, sync and
// async, from several threads at once), a synchronize that runs queued copies itself, deferred
// streams (aclhostSetStreamDeferred), and copies belonging to a whole large enough for streaming
// stores where the copy strategy uses them (copy_strategy.h), with unaligned ends; a synchronize that runs
// queued copies together keeps the order wherever one copy depends on another (a copy of a copy, two copies to one
// place, a copy that rewrites a queued copy's descriptor) and reports a failing copy in the middle; copies
// whose destination starts just past the source modulo 4 KiB (copied from the end).
//
// Build: g++ -std=c++17 -I<include dir> test_copy_engine.cpp -L<lib dir> -lascendcl -Wl,-rpath,<lib dir>
// Prints "ALL PASSED" and exits 0, or lists the failed checks and exits 1.
#include <atomic>
#include <chrono>
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

constexpr size_t kMiB = size_t{1} << 20;

unsigned char Pattern(size_t i, unsigned seed) { return static_cast<unsigned char>((i * 131u + seed * 7u) >> 1); }

void Fill(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; ++i) {
    p[i] = Pattern(i, seed);
  }
}

// Pinned source, device destination, each n bytes. The device bytes are set and read only through the
// runtime (aclrtMemset, a D2H copy into `seen`), as on an NPU: MS_MEMCOPY_STRICT_DEVICE=1 runs this
// program with device memory the host cannot access.
struct Pair {
  unsigned char *host = nullptr;
  unsigned char *dev = nullptr;
  std::vector<unsigned char> seen;
  explicit Pair(size_t n) : seen(n) {
    void *h = nullptr;
    void *d = nullptr;
    CHECK_OK(aclrtMallocHost(&h, n));
    CHECK_OK(aclrtMalloc(&d, n, ACL_MEM_MALLOC_HUGE_FIRST));
    host = static_cast<unsigned char *>(h);
    dev = static_cast<unsigned char *>(d);
  }
  ~Pair() {
    (void)aclrtFreeHost(host);
    (void)aclrtFree(dev);
  }
  void SetDevice(unsigned char value, size_t n) { CHECK_OK(aclrtMemset(dev, n, value, n)); }
  // The device bytes, copied to the host.
  const unsigned char *Device() {
    CHECK_OK(aclrtMemcpy(seen.data(), seen.size(), dev, seen.size(), ACL_MEMCPY_DEVICE_TO_HOST));
    return seen.data();
  }
};

// The attributes of a batch from host memory to device 0.
aclrtMemcpyBatchAttr HostToDeviceAttr() {
  aclrtMemcpyBatchAttr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.dstLoc = {0, ACL_MEM_LOCATION_TYPE_DEVICE};
  attr.srcLoc = {0, ACL_MEM_LOCATION_TYPE_HOST};
  return attr;
}

// Every width from 1 to 600 bytes (each row loop and each tail case), pitches with odd gaps; the
// destination's gaps keep their fill.
void TestRowLoops(aclrtStream stream) {
  constexpr size_t kHeight = 9;
  for (size_t width = 1; width <= 600; width += (width < 80 ? 1 : 37)) {
    const size_t spitch = width + 3;
    const size_t dpitch = width + 5;
    Pair pair(kHeight * (spitch + dpitch));
    Fill(pair.host, kHeight * spitch, static_cast<unsigned>(width));
    for (int async = 0; async < 2; ++async) {
      pair.SetDevice(0xEE, kHeight * dpitch);
      if (async != 0) {
        CHECK_OK(
            aclrtMemcpy2dAsync(pair.dev, dpitch, pair.host, spitch, width, kHeight, ACL_MEMCPY_HOST_TO_DEVICE, stream));
        CHECK_OK(aclrtSynchronizeStream(stream));
      } else {
        CHECK_OK(aclrtMemcpy2d(pair.dev, dpitch, pair.host, spitch, width, kHeight, ACL_MEMCPY_HOST_TO_DEVICE));
      }
      const unsigned char *dev = pair.Device();
      bool rows_ok = true;
      bool gaps_ok = true;
      for (size_t r = 0; r < kHeight; ++r) {
        rows_ok = rows_ok && std::memcmp(dev + r * dpitch, pair.host + r * spitch, width) == 0;
        for (size_t b = width; b < dpitch; ++b) {
          gaps_ok = gaps_ok && dev[r * dpitch + b] == 0xEE;
        }
      }
      if (!rows_ok || !gaps_ok) {
        test::Expect(false, "width " + std::to_string(width) + " async " + std::to_string(async) + ": rows " +
                                std::to_string(rows_ok) + " gaps " + std::to_string(gaps_ok));
      }
    }
  }
}

// Copies past the split threshold: 1D (odd size), 2D of narrow and wide rows, a batch whose items add up
// past it; sync and async.
void TestLargeCopies(aclrtStream stream, unsigned seed) {
  const size_t n = 9 * kMiB + 123;
  Pair one(n);
  Fill(one.host, n, seed);
  CHECK_OK(aclrtMemcpy(one.dev, n, one.host, n, ACL_MEMCPY_HOST_TO_DEVICE));
  CHECK(std::memcmp(one.Device(), one.host, n) == 0);
  one.SetDevice(0, n);
  CHECK_OK(aclrtMemcpyAsync(one.dev, n, one.host, n, ACL_MEMCPY_HOST_TO_DEVICE, stream));
  CHECK_OK(aclrtSynchronizeStream(stream));
  CHECK(std::memcmp(one.Device(), one.host, n) == 0);

  for (size_t width : {size_t{4}, size_t{64}, size_t{100}, size_t{3000}}) {
    const size_t height = 6 * kMiB / width + 7;
    const size_t spitch = 2 * width;
    Pair rows(height * spitch);
    Fill(rows.host, height * spitch, seed + static_cast<unsigned>(width));
    rows.SetDevice(0xEE, height * spitch);
    CHECK_OK(aclrtMemcpy2dAsync(rows.dev, spitch, rows.host, spitch, width, height, ACL_MEMCPY_HOST_TO_DEVICE, stream));
    CHECK_OK(aclrtSynchronizeStream(stream));
    const unsigned char *dev = rows.Device();
    bool ok = true;
    for (size_t r = 0; r < height && ok; ++r) {
      ok = std::memcmp(dev + r * spitch, rows.host + r * spitch, width) == 0 && dev[r * spitch + width] == 0xEE;
    }
    CHECK(ok);
  }

  const size_t count = 300;
  const size_t item = 40 * 1024 + 13;
  const size_t stride = item + 51;
  Pair batch(count * stride);
  Fill(batch.host, count * stride, seed + 1);
  batch.SetDevice(0xEE, count * stride);
  std::vector<void *> dsts(count);
  std::vector<void *> srcs(count);
  std::vector<size_t> sizes(count, item);
  for (size_t i = 0; i < count; ++i) {
    dsts[i] = batch.dev + i * stride;
    srcs[i] = batch.host + i * stride;
  }
  aclrtMemcpyBatchAttr attr = HostToDeviceAttr();
  size_t index = 0;
  size_t fail_index = 0;
  for (int async = 0; async < 2; ++async) {
    if (async != 0) {
      batch.SetDevice(0xEE, count * stride);
      CHECK_OK(aclrtMemcpyBatchAsync(dsts.data(), sizes.data(), srcs.data(), sizes.data(), count, &attr, &index, 1,
                                     &fail_index, stream));
      CHECK_OK(aclrtSynchronizeStream(stream));
    } else {
      CHECK_OK(
          aclrtMemcpyBatch(dsts.data(), sizes.data(), srcs.data(), sizes.data(), count, &attr, &index, 1, &fail_index));
    }
    const unsigned char *dev = batch.Device();
    bool ok = true;
    for (size_t i = 0; i < count && ok; ++i) {
      ok = std::memcmp(dev + i * stride, batch.host + i * stride, item) == 0 && dev[i * stride + item] == 0xEE;
    }
    CHECK(ok);
  }
}

// A host function holds the worker; the copy queued behind it runs after it, and a synchronize returns
// only when both ran (the waiting thread does not run a host function nor jump the queue).
void TestWaiterKeepsOrder(aclrtStream stream) {
  Pair pair(4096);
  Fill(pair.host, 4096, 5);
  pair.SetDevice(0, 4096);
  struct Gate {
    unsigned char *dev;
    bool saw_zero;
  } gate{pair.dev, false};
  CHECK_OK(aclhostLaunchHostFunc(
      stream,
      [](void *user) {
        auto *g = static_cast<Gate *>(user);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        unsigned char first = 1;
        unsigned char last = 1;
        g->saw_zero = aclrtMemcpy(&first, 1, g->dev, 1, ACL_MEMCPY_DEVICE_TO_HOST) == ACL_SUCCESS &&
                      aclrtMemcpy(&last, 1, g->dev + 4095, 1, ACL_MEMCPY_DEVICE_TO_HOST) == ACL_SUCCESS && first == 0 &&
                      last == 0;
      },
      &gate));
  CHECK_OK(aclrtMemcpyAsync(pair.dev, 4096, pair.host, 4096, ACL_MEMCPY_HOST_TO_DEVICE, stream));
  CHECK_OK(aclrtSynchronizeStream(stream));
  CHECK(gate.saw_zero);
  CHECK(std::memcmp(pair.Device(), pair.host, 4096) == 0);
}

// Deferred streams: queued copies run at a synchronize (plain or timed), host functions on the worker,
// and turning deferral off lets queued tasks run in the background.
void TestDeferredStream() {
  aclrtStream stream = nullptr;
  CHECK_OK(aclrtCreateStream(&stream));
  CHECK(aclhostSetStreamDeferred(nullptr, 1) == ACL_ERROR_INVALID_PARAM);
  (void)aclGetRecentErrMsg();
  CHECK_OK(aclhostSetStreamDeferred(stream, 1));
  Pair pair(8192);
  Fill(pair.host, 8192, 9);
  pair.SetDevice(0, 8192);
  CHECK_OK(aclrtMemcpyAsync(pair.dev, 4096, pair.host, 4096, ACL_MEMCPY_HOST_TO_DEVICE, stream));
  CHECK_OK(aclrtSynchronizeStream(stream));
  CHECK(std::memcmp(pair.Device(), pair.host, 4096) == 0);
  CHECK_OK(aclrtMemcpyAsync(pair.dev + 4096, 4096, pair.host + 4096, 4096, ACL_MEMCPY_HOST_TO_DEVICE, stream));
  CHECK_OK(aclrtSynchronizeStreamWithTimeout(stream, 10000));
  CHECK(std::memcmp(pair.Device() + 4096, pair.host + 4096, 4096) == 0);
  struct Where {
    std::thread::id id;
  } where;
  CHECK_OK(aclhostLaunchHostFunc(
      stream, [](void *user) { static_cast<Where *>(user)->id = std::this_thread::get_id(); }, &where));
  CHECK_OK(aclrtSynchronizeStream(stream));
  CHECK(where.id != std::thread::id() && where.id != std::this_thread::get_id());
  pair.SetDevice(0, 8192);
  CHECK_OK(aclrtMemcpyAsync(pair.dev, 8192, pair.host, 8192, ACL_MEMCPY_HOST_TO_DEVICE, stream));
  CHECK_OK(aclhostSetStreamDeferred(stream, 0));
  aclError polled = ACL_ERROR_RT_STREAM_SYNC_TIMEOUT;
  for (int i = 0; i < 10000 && polled == ACL_ERROR_RT_STREAM_SYNC_TIMEOUT; ++i) {
    polled = aclrtSynchronizeStreamWithTimeout(stream, 1);  // a timed wait: the worker runs the copy
    if (polled == ACL_ERROR_RT_STREAM_SYNC_TIMEOUT) {
      (void)aclGetRecentErrMsg();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  CHECK(polled == ACL_SUCCESS);
  CHECK(std::memcmp(pair.Device(), pair.host, 8192) == 0);
  CHECK_OK(aclrtDestroyStream(stream));
  CHECK(aclhostSetStreamDeferred(stream, 1) == ACL_ERROR_RT_INVALID_HANDLE);
  (void)aclGetRecentErrMsg();
}

// Past the streaming threshold (the last-level cache, 32 MiB on the VMs this runs on): one copy with both ends
// unaligned, a batch of odd-sized items, and many small copies queued on a deferred stream (then run by the
// synchronizing thread as one whole), plain and through descriptors. The bytes between the items keep their fill.
void TestStreamingCopies(unsigned seed) {
  const size_t n = 33 * kMiB + 77;
  Pair one(n + 64);
  Fill(one.host, n + 64, seed);
  one.SetDevice(0xEE, n + 64);
  CHECK_OK(aclrtMemcpy(one.dev + 5, n, one.host + 3, n, ACL_MEMCPY_HOST_TO_DEVICE));
  const unsigned char *dev = one.Device();
  CHECK(std::memcmp(dev + 5, one.host + 3, n) == 0);
  CHECK(dev[4] == 0xEE && dev[5 + n] == 0xEE);

  constexpr size_t kCount = 600;
  constexpr size_t kItem = 60 * 1024 + 13;  // items of 60 KiB and a bit: 35 MiB in all
  constexpr size_t kStride = kItem + 51;
  Pair items(kCount * kStride + 64);
  Fill(items.host, kCount * kStride + 64, seed + 1);
  std::vector<void *> dsts(kCount);
  std::vector<void *> srcs(kCount);
  std::vector<size_t> sizes(kCount, kItem);
  for (size_t i = 0; i < kCount; ++i) {
    dsts[i] = items.dev + i * kStride + 1 + i % 7;  // unaligned destinations
    srcs[i] = items.host + i * kStride + i % 5;
  }
  const auto items_ok = [&](const char *what) {
    const unsigned char *d = items.Device();
    bool ok = true;
    for (size_t i = 0; i < kCount && ok; ++i) {
      const size_t at = i * kStride + 1 + i % 7;
      ok = std::memcmp(d + at, items.host + i * kStride + i % 5, kItem) == 0 && d[at - 1] == 0xEE &&
           d[at + kItem] == 0xEE;
    }
    test::Expect(ok, std::string("streaming copies: ") + what);
  };
  aclrtMemcpyBatchAttr attr = HostToDeviceAttr();
  size_t index = 0;
  size_t fail_index = 0;
  items.SetDevice(0xEE, kCount * kStride + 64);
  CHECK_OK(
      aclrtMemcpyBatch(dsts.data(), sizes.data(), srcs.data(), sizes.data(), kCount, &attr, &index, 1, &fail_index));
  items_ok("aclrtMemcpyBatch");

  aclrtStream stream = nullptr;
  CHECK_OK(aclrtCreateStream(&stream));
  CHECK_OK(aclhostSetStreamDeferred(stream, 1));
  items.SetDevice(0xEE, kCount * kStride + 64);
  for (size_t i = 0; i < kCount; ++i) {
    CHECK_OK(aclrtMemcpyAsync(dsts[i], kItem, srcs[i], kItem, ACL_MEMCPY_HOST_TO_DEVICE, stream));
  }
  CHECK_OK(aclrtSynchronizeStream(stream));
  items_ok("queued aclrtMemcpyAsync");

  // Device to device through descriptors, where the SoC has them: from a device copy of the source.
  size_t desc_size = 0;
  if (aclrtGetMemcpyDescSize(ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, &desc_size) == ACL_SUCCESS) {
    Pair source(kCount * kStride + 64);
    CHECK_OK(
        aclrtMemcpy(source.dev, kCount * kStride + 64, items.host, kCount * kStride + 64, ACL_MEMCPY_HOST_TO_DEVICE));
    void *descs = nullptr;
    const size_t desc_stride = (desc_size + 63) / 64 * 64;
    CHECK_OK(aclrtMalloc(&descs, kCount * desc_stride, ACL_MEM_MALLOC_HUGE_FIRST));
    items.SetDevice(0xEE, kCount * kStride + 64);
    for (size_t i = 0; i < kCount; ++i) {
      void *desc = static_cast<unsigned char *>(descs) + i * desc_stride;
      CHECK_OK(aclrtSetMemcpyDesc(desc, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, source.dev + i * kStride + i % 5, dsts[i],
                                  kItem, nullptr));
      CHECK_OK(aclrtMemcpyAsyncWithDesc(desc, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, stream));
    }
    CHECK_OK(aclrtSynchronizeStream(stream));
    items_ok("queued descriptor copies");
    CHECK_OK(aclrtFree(descs));
  } else {
    (void)aclGetRecentErrMsg();
  }
  CHECK_OK(aclrtDestroyStream(stream));
}

// Copies whose destination starts 1 to 63 bytes past the source modulo 4 KiB, which the copy engine
// runs from the end (4 KiB aliasing, streaming_copy.h), and copies just outside that window: the same
// bytes as any copy, nothing outside the destination written. 1D copies host to host, so that the
// addresses copied are the ones chosen whatever the device memory.
void TestCopiesJustPastTheSource(unsigned seed) {
  constexpr size_t kPage = 4096;
  constexpr size_t kLargest = 65536 + 13;
  constexpr size_t kBytes = kLargest + 3 * kPage;
  std::vector<unsigned char> expected(kBytes);
  void *src_mem = nullptr;
  void *dst_mem = nullptr;
  CHECK_OK(aclrtMallocHost(&src_mem, kBytes));
  CHECK_OK(aclrtMallocHost(&dst_mem, kBytes));
  auto *src = static_cast<unsigned char *>(src_mem);
  auto *dst = static_cast<unsigned char *>(dst_mem);
  Fill(src, kBytes, seed);
  const size_t gap = (reinterpret_cast<uintptr_t>(dst) - reinterpret_cast<uintptr_t>(src)) & (kPage - 1);
  const size_t from = 100;
  for (const size_t ahead : {size_t{1}, size_t{16}, size_t{31}, size_t{32}, size_t{63}, size_t{64}, kPage - 16}) {
    const size_t to = (from + ahead + kPage - gap) & (kPage - 1);  // dst + to is `ahead` past src + from
    for (const size_t n : {size_t{255}, size_t{256}, size_t{257}, size_t{4096 + 65}, kLargest}) {
      std::memset(dst, 0xEE, kBytes);
      CHECK_OK(aclrtMemcpy(dst + to, n, src + from, n, ACL_MEMCPY_HOST_TO_HOST));
      std::memset(expected.data(), 0xEE, kBytes);
      std::memcpy(expected.data() + to, src + from, n);
      test::Expect(std::memcmp(dst, expected.data(), kBytes) == 0,
                   "a copy " + std::to_string(ahead) + " bytes past its source, " + std::to_string(n) + " bytes");
    }
  }
  // Rows wider than 512 bytes (one copy a row), each as far past its source row: host to device (2D
  // copies have no host-to-host kind), so with strict device memory the rows land through another mapping.
  constexpr size_t kWidth = 600;
  constexpr size_t kHeight = 9;
  Pair rows(kBytes);
  std::memcpy(rows.host, src, kBytes);
  const size_t dev_gap = (reinterpret_cast<uintptr_t>(rows.dev) - reinterpret_cast<uintptr_t>(rows.host)) & (kPage - 1);
  for (const size_t ahead : {size_t{1}, size_t{16}, size_t{31}, size_t{63}, size_t{64}}) {
    const size_t to = (from + ahead + kPage - dev_gap) & (kPage - 1);
    rows.SetDevice(0xEE, kBytes);
    CHECK_OK(aclrtMemcpy2d(rows.dev + to, kPage, rows.host + from, kPage, kWidth, kHeight, ACL_MEMCPY_HOST_TO_DEVICE));
    std::memset(expected.data(), 0xEE, kBytes);
    for (size_t row = 0; row < kHeight; ++row) {
      std::memcpy(expected.data() + to + row * kPage, rows.host + from + row * kPage, kWidth);
    }
    test::Expect(std::memcmp(rows.Device(), expected.data(), kBytes) == 0,
                 "rows of 600 bytes " + std::to_string(ahead) + " bytes past their source rows");
  }
  CHECK_OK(aclrtFreeHost(src_mem));
  CHECK_OK(aclrtFreeHost(dst_mem));
}

// Copies queued on a deferred stream, past the split threshold (4 MiB) in all, which the synchronizing
// thread runs together where they do not depend on each other and in order where they do.
void TestQueuedCopiesKeepOrder() {
  constexpr size_t n = 5 * kMiB + 41;
  aclrtStream stream = nullptr;
  CHECK_OK(aclrtCreateStream(&stream));
  CHECK_OK(aclhostSetStreamDeferred(stream, 1));
  Pair a(n);
  Pair b(n);
  Pair c(n);
  Fill(a.host, n, 21);
  Fill(b.host, n, 22);
  CHECK_OK(aclrtMemcpy(a.dev, n, a.host, n, ACL_MEMCPY_HOST_TO_DEVICE));
  c.SetDevice(0, n);
  // a -> b, then b -> c (reads what the first wrote), then part of b.host -> c (writes over the second).
  CHECK_OK(aclrtMemcpyAsync(b.dev, n, a.dev, n, ACL_MEMCPY_DEVICE_TO_DEVICE, stream));
  CHECK_OK(aclrtMemcpyAsync(c.dev, n, b.dev, n, ACL_MEMCPY_DEVICE_TO_DEVICE, stream));
  CHECK_OK(aclrtMemcpyAsync(c.dev, kMiB, b.host, kMiB, ACL_MEMCPY_HOST_TO_DEVICE, stream));
  CHECK_OK(aclrtSynchronizeStream(stream));
  CHECK(std::memcmp(b.Device(), a.host, n) == 0);
  const unsigned char *in_c = c.Device();
  CHECK(std::memcmp(in_c, b.host, kMiB) == 0 && std::memcmp(in_c + kMiB, a.host + kMiB, n - kMiB) == 0);

  size_t desc_size = 0;
  if (aclrtGetMemcpyDescSize(ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, &desc_size) != ACL_SUCCESS) {
    (void)aclGetRecentErrMsg();
    CHECK_OK(aclrtDestroyStream(stream));
    return;
  }
  void *descs = nullptr;  // three descriptors: to b, to c, and one never written
  const size_t stride = (desc_size + 63) / 64 * 64;
  CHECK_OK(aclrtMalloc(&descs, 3 * stride, ACL_MEM_MALLOC_HUGE_FIRST));
  unsigned char *to_b = static_cast<unsigned char *>(descs);
  unsigned char *to_c = to_b + stride;
  unsigned char *blank = to_b + 2 * stride;
  CHECK_OK(aclrtMemset(blank, desc_size, 0, desc_size));
  CHECK_OK(aclrtSetMemcpyDesc(to_b, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, a.dev, b.dev, n, nullptr));
  CHECK_OK(aclrtSetMemcpyDesc(to_c, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, a.dev, c.dev, n, nullptr));
  b.SetDevice(0, n);
  c.SetDevice(0, n);
  // The first copy rewrites the descriptor the second one reads: the second copies a -> c, not a -> b.
  CHECK_OK(aclrtMemcpyAsync(to_b, desc_size, to_c, desc_size, ACL_MEMCPY_DEVICE_TO_DEVICE, stream));
  CHECK_OK(aclrtMemcpyAsyncWithDesc(to_b, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, stream));
  CHECK_OK(aclrtSynchronizeStream(stream));
  CHECK(std::memcmp(c.Device(), a.host, n) == 0);
  CHECK(b.Device()[0] == 0 && b.Device()[n - 1] == 0);

  // A copy that fails in the middle of independent ones: the others are made, the synchronize reports it.
  CHECK_OK(aclrtSetMemcpyDesc(to_b, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, a.dev, b.dev, n, nullptr));
  b.SetDevice(0, n);
  c.SetDevice(0, n);
  CHECK_OK(aclrtMemcpyAsyncWithDesc(to_b, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, stream));
  CHECK_OK(aclrtMemcpyAsyncWithDesc(to_c, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, stream));
  CHECK_OK(aclrtMemcpyAsyncWithDesc(blank, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, stream));
  CHECK_OK(aclrtMemcpyAsync(a.dev, kMiB, b.host, kMiB, ACL_MEMCPY_HOST_TO_DEVICE, stream));  // after the others
  CHECK(aclrtSynchronizeStream(stream) == ACL_ERROR_RT_INTERNAL_ERROR);
  const char *msg = aclGetRecentErrMsg();
  CHECK(msg != nullptr && std::strstr(msg, "magic") != nullptr);
  CHECK_OK(aclrtSynchronizeStream(stream));
  CHECK(std::memcmp(b.Device(), a.host, n) == 0);
  CHECK(std::memcmp(c.Device(), a.host, n) == 0);
  const unsigned char *in_a = a.Device();
  CHECK(std::memcmp(in_a, b.host, kMiB) == 0 && std::memcmp(in_a + kMiB, a.host + kMiB, n - kMiB) == 0);
  CHECK_OK(aclrtFree(descs));
  CHECK_OK(aclrtDestroyStream(stream));
}

}  // namespace

int main() {
  CHECK_OK(aclrtSetDevice(0));
  aclrtStream stream = nullptr;
  CHECK_OK(aclrtCreateStream(&stream));
  TestRowLoops(stream);
  TestWaiterKeepsOrder(stream);
  TestDeferredStream();
  TestLargeCopies(stream, 1);
  TestStreamingCopies(3);
  TestCopiesJustPastTheSource(5);
  TestQueuedCopiesKeepOrder();
  // Several threads with their own streams split large copies at the same time.
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 3; ++t) {
    threads.emplace_back([t] {
      aclrtStream own = nullptr;
      CHECK_OK(aclrtCreateStream(&own));
      TestLargeCopies(own, 10 + t);
      CHECK_OK(aclrtDestroyStream(own));
    });
  }
  for (auto &t : threads) {
    t.join();
  }
  CHECK_OK(aclrtDestroyStream(stream));
  return test::Finish();
}
