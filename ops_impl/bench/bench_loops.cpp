// Timing loops for `python -m ms_memcopy bench`, built into ms_memcopy/_lib/libms_memcopy_bench.so.
//
// Each function runs its body `iters` times and returns the elapsed nanoseconds (steady clock), so
// that no Python overhead is part of what it measures. The baselines are plain C++ loops
// (std::memcpy per item, per row, or split across threads); the ACL loops call the runtime through
// function pointers the caller passes in (taken from the loaded ACL library with ctypes), so this
// library links against nothing but libc/libstdc++ and works with the host runtime and with CANN.
// A negative return is the failing aclError, negated.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#define MSMC_BENCH_API extern "C" __attribute__((visibility("default")))

namespace {

using Clock = std::chrono::steady_clock;
using AclError = int;
using Stream = void *;

using MemcpyFn = AclError (*)(void *, size_t, const void *, size_t, int);
using MemcpyAsyncFn = AclError (*)(void *, size_t, const void *, size_t, int, Stream);
using Memcpy2dFn = AclError (*)(void *, size_t, const void *, size_t, size_t, size_t, int);
using Memcpy2dAsyncFn = AclError (*)(void *, size_t, const void *, size_t, size_t, size_t, int, Stream);
using SyncFn = AclError (*)(Stream);
using BatchFn = AclError (*)(void **, size_t *, void **, size_t *, size_t, void *, size_t *, size_t, size_t *);
using BatchAsyncFn = AclError (*)(void **, size_t *, void **, size_t *, size_t, void *, size_t *, size_t, size_t *,
                                  Stream);
using SetDescFn = AclError (*)(void *, int, void *, void *, size_t, void *);
using DescAsyncFn = AclError (*)(void *, int, Stream);

// Keeps the compiler from dropping or merging copies whose results are never read.
inline void Clobber() { asm volatile("" ::: "memory"); }

template <typename Body>
int64_t Timed(int64_t iters, Body body) {
  const auto start = Clock::now();
  for (int64_t i = 0; i < iters; ++i) {
    const AclError ret = body();
    if (ret != 0) {
      return -static_cast<int64_t>(ret);
    }
    Clobber();
  }
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
}

}  // namespace

// --- baselines: plain C++ ---------------------------------------------------------------------------

// for each i: std::memcpy(dsts[i], srcs[i], sizes[i])
MSMC_BENCH_API int64_t msmc_bench_memcpy_items(void *const *dsts, const void *const *srcs, const size_t *sizes,
                                               size_t n, int64_t iters) {
  return Timed(iters, [&] {
    for (size_t i = 0; i < n; ++i) {
      std::memcpy(dsts[i], srcs[i], sizes[i]);
    }
    return 0;
  });
}

// for each row r: std::memcpy(dst + r * dpitch, src + r * spitch, width)
MSMC_BENCH_API int64_t msmc_bench_memcpy_rows(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                              size_t height, int64_t iters) {
  auto *out = static_cast<unsigned char *>(dst);
  const auto *in = static_cast<const unsigned char *>(src);
  return Timed(iters, [&] {
    for (size_t r = 0; r < height; ++r) {
      std::memcpy(out + r * dpitch, in + r * spitch, width);
    }
    return 0;
  });
}

// One copy of n bytes split into `threads` equal parts, each copied by its own thread with
// std::memcpy; the helper threads are started before the clock starts and spin between iterations.
// This is the best a memcpy can do on the machine's cores (the bandwidth floor of large copies).
MSMC_BENCH_API int64_t msmc_bench_memcpy_threads(void *dst, const void *src, size_t n, int threads, int64_t iters) {
  if (threads <= 1) {
    const void *srcs[1] = {src};
    void *dsts[1] = {dst};
    return msmc_bench_memcpy_items(dsts, srcs, &n, 1, iters);
  }
  auto *out = static_cast<unsigned char *>(dst);
  const auto *in = static_cast<const unsigned char *>(src);
  const size_t part = (n / static_cast<size_t>(threads) + 63) & ~size_t{63};
  const auto copy_part = [&](int t) {
    const size_t begin = std::min(n, part * static_cast<size_t>(t));
    const size_t end = t == threads - 1 ? n : std::min(n, begin + part);
    std::memcpy(out + begin, in + begin, end - begin);
  };
  std::atomic<int64_t> round{0};
  std::atomic<int> finished{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> helpers;
  for (int t = 1; t < threads; ++t) {
    helpers.emplace_back([&, t] {
      int64_t seen = 0;
      for (;;) {
        int64_t r;
        while ((r = round.load(std::memory_order_acquire)) == seen) {
          if (stop.load(std::memory_order_acquire)) {
            return;
          }
          std::this_thread::yield();
        }
        seen = r;
        copy_part(t);
        finished.fetch_add(1, std::memory_order_acq_rel);
      }
    });
  }
  const int64_t ns = Timed(iters, [&] {
    finished.store(0, std::memory_order_relaxed);
    round.fetch_add(1, std::memory_order_acq_rel);
    copy_part(0);
    while (finished.load(std::memory_order_acquire) != threads - 1) {
      std::this_thread::yield();
    }
    return 0;
  });
  stop.store(true, std::memory_order_release);
  for (auto &h : helpers) {
    h.join();
  }
  return ns;
}

// --- our calls, timed without Python in the loop -------------------------------------------------

MSMC_BENCH_API int64_t msmc_bench_acl_memcpy(void *fn, void *dst, size_t dest_max, const void *src, size_t count,
                                             int kind, int64_t iters) {
  const auto call = reinterpret_cast<MemcpyFn>(fn);
  return Timed(iters, [&] { return call(dst, dest_max, src, count, kind); });
}

// aclrtMemcpyAsync (or ...WithCondition) followed by aclrtSynchronizeStream, each iteration.
MSMC_BENCH_API int64_t msmc_bench_acl_memcpy_async(void *fn, void *sync, void *dst, size_t dest_max, const void *src,
                                                   size_t count, int kind, Stream stream, int64_t iters) {
  const auto call = reinterpret_cast<MemcpyAsyncFn>(fn);
  const auto wait = reinterpret_cast<SyncFn>(sync);
  return Timed(iters, [&] {
    const AclError ret = call(dst, dest_max, src, count, kind, stream);
    return ret != 0 ? ret : wait(stream);
  });
}

MSMC_BENCH_API int64_t msmc_bench_acl_memcpy2d(void *fn, void *dst, size_t dpitch, const void *src, size_t spitch,
                                               size_t width, size_t height, int kind, int64_t iters) {
  const auto call = reinterpret_cast<Memcpy2dFn>(fn);
  return Timed(iters, [&] { return call(dst, dpitch, src, spitch, width, height, kind); });
}

MSMC_BENCH_API int64_t msmc_bench_acl_memcpy2d_async(void *fn, void *sync, void *dst, size_t dpitch, const void *src,
                                                     size_t spitch, size_t width, size_t height, int kind,
                                                     Stream stream, int64_t iters) {
  const auto call = reinterpret_cast<Memcpy2dAsyncFn>(fn);
  const auto wait = reinterpret_cast<SyncFn>(sync);
  return Timed(iters, [&] {
    const AclError ret = call(dst, dpitch, src, spitch, width, height, kind, stream);
    return ret != 0 ? ret : wait(stream);
  });
}

// aclrtMemcpyBatch with one attribute for all items.
MSMC_BENCH_API int64_t msmc_bench_acl_batch(void *fn, void **dsts, size_t *dest_maxs, void **srcs, size_t *sizes,
                                            size_t n, void *attr, int64_t iters) {
  const auto call = reinterpret_cast<BatchFn>(fn);
  size_t index = 0;
  size_t fail_index = 0;
  return Timed(iters, [&] { return call(dsts, dest_maxs, srcs, sizes, n, attr, &index, 1, &fail_index); });
}

// aclrtMemcpyBatchAsync with one attribute for all items, then aclrtSynchronizeStream.
MSMC_BENCH_API int64_t msmc_bench_acl_batch_async(void *fn, void *sync, void **dsts, size_t *dest_maxs, void **srcs,
                                                  size_t *sizes, size_t n, void *attr, Stream stream, int64_t iters) {
  const auto call = reinterpret_cast<BatchAsyncFn>(fn);
  const auto wait = reinterpret_cast<SyncFn>(sync);
  size_t index = 0;
  size_t fail_index = 0;
  return Timed(iters, [&] {
    const AclError ret = call(dsts, dest_maxs, srcs, sizes, n, attr, &index, 1, &fail_index, stream);
    return ret != 0 ? ret : wait(stream);
  });
}

// aclrtSetMemcpyDesc + aclrtMemcpyAsyncWithDesc + aclrtSynchronizeStream, each iteration.
MSMC_BENCH_API int64_t msmc_bench_acl_desc(void *set_fn, void *copy_fn, void *sync, void *desc, int kind, void *src,
                                           void *dst, size_t count, Stream stream, int64_t iters) {
  const auto set = reinterpret_cast<SetDescFn>(set_fn);
  const auto copy = reinterpret_cast<DescAsyncFn>(copy_fn);
  const auto wait = reinterpret_cast<SyncFn>(sync);
  return Timed(iters, [&] {
    AclError ret = set(desc, kind, src, dst, count, nullptr);
    if (ret == 0) {
      ret = copy(desc, kind, stream);
    }
    return ret != 0 ? ret : wait(stream);
  });
}

// --- MindSpore reference ---------------------------------------------------------------------------

// An ops.Custom(func_type="aot") kernel that does nothing: the bench runs it over the same inputs as a
// primitive to tell MindSpore's own cost of launching a custom op from the primitive's kernel time.
MSMC_BENCH_API int msmc_bench_null_aot(int, void **, int *, int64_t **, const char **, void *, void *) { return 0; }
