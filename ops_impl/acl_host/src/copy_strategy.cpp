#include "copy_strategy.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <new>
#include <numeric>

#include "acl_host/acl_host_ext.h"
#include "api_guard.h"
#include "copy_pool.h"
#include "streaming_copy.h"

namespace aclhost {
namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kFallbackCacheBytes = 32 * kMiB;
constexpr size_t kCalibrationPiece = size_t{64} << 10;  // a typical KV block
constexpr size_t kCalibrationMinBytes = 8 * kMiB;
constexpr size_t kCalibrationMaxBytes = 128 * kMiB;
constexpr int kCalibrationRounds = 3;

// The largest cache size sysfs lists for cpu0 ("32768K", "1M"), or 0.
size_t SysfsCacheBytes() {
  size_t best = 0;
  for (int index = 0; index < 8; ++index) {
    std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
    unsigned long long value = 0;
    char unit = 0;
    if (!(in >> value)) {
      continue;
    }
    in >> unit;
    const size_t scale = unit == 'K' ? 1024 : unit == 'M' ? kMiB : unit == 'G' ? 1024 * kMiB : 1;
    best = std::max<size_t>(best, static_cast<size_t>(value) * scale);
  }
  return best;
}

// sysfs first: it lists the caches this core sees, where glibc's _SC_LEVEL3_CACHE_SIZE reports the
// whole package's L3 on some CPUs (256 MiB on an AMD EPYC VM whose core sees 32 MiB).
size_t ReadLargeWholeBytes() {
  const size_t sysfs = SysfsCacheBytes();
  if (sysfs > 0) {
    return sysfs;
  }
  long bytes = 0;
#ifdef _SC_LEVEL3_CACHE_SIZE
  bytes = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
  return bytes > 0 ? static_cast<size_t>(bytes) : kFallbackCacheBytes;
}

// The stores MS_MEMCOPY_STREAMING_STORES fixes, or false when it fixes none.
bool StoresFixedByEnv(StoreKind *kind) {
  const char *value = std::getenv(ACLHOST_ENV_STREAMING_STORES);
  if (value == nullptr) {
    return false;
  }
  if (std::strcmp(value, "0") == 0) {
    *kind = StoreKind::kMemcpy;
  } else if (std::strcmp(value, "1") == 0) {
    *kind = StoreKind::kStreaming;
  } else if (std::strcmp(value, "interleaved") == 0) {
    *kind = StoreKind::kInterleaved;
  } else {
    return false;
  }
  return true;
}

bool ThreadsFixedByEnv() { return CopyThreadsFromEnv() > 0; }

// One calibration pass: every piece of src to a scattered place in dst (as a pool's blocks are), the
// pieces split into `parts` contiguous runs.
class PiecesJob final : public Job {
 public:
  PiecesJob(unsigned char *dst, const unsigned char *src, size_t pieces, size_t stride, size_t parts, StoreKind stores)
      : Job(parts), dst_(dst), src_(src), pieces_(pieces), stride_(stride), parts_(parts), stores_(stores) {}

 private:
  void RunPart(size_t part) override {
    const size_t begin = pieces_ * part / parts_;
    const size_t end = pieces_ * (part + 1) / parts_;
    for (size_t i = begin; i < end; ++i) {
      unsigned char *d = dst_ + (i * stride_ % pieces_) * kCalibrationPiece;
      const unsigned char *s = src_ + i * kCalibrationPiece;
      CopyWithStores(d, s, kCalibrationPiece, stores_);
    }
  }

  unsigned char *dst_;
  const unsigned char *src_;
  size_t pieces_;
  size_t stride_;
  size_t parts_;
  StoreKind stores_;
};

struct Way {
  StoreKind stores;
  size_t threads;
  double rounds_s[kCalibrationRounds] = {};
  double median_s = std::numeric_limits<double>::infinity();
};

double GBps(size_t bytes, double seconds) { return seconds > 0 ? bytes / seconds / 1e9 : 0.0; }

// Times every way over buffers of `bytes` each; false when the buffers cannot be had.
bool Calibrate(Way *ways, size_t count, size_t bytes) {
  std::unique_ptr<unsigned char[]> src(new (std::nothrow) unsigned char[bytes]);
  std::unique_ptr<unsigned char[]> dst(new (std::nothrow) unsigned char[bytes]);
  if (!src || !dst) {
    return false;
  }
  std::memset(src.get(), 1, bytes);
  std::memset(dst.get(), 2, bytes);
  const size_t pieces = bytes / kCalibrationPiece;
  size_t stride = pieces * 5 / 8 + 1;
  while (std::gcd(stride, pieces) != 1) {
    ++stride;
  }
  CopyPool &pool = CopyPool::Instance();
  for (int round = 0; round < kCalibrationRounds; ++round) {
    for (size_t k = 0; k < count; ++k) {
      Way &way = ways[round % 2 == 0 ? k : count - 1 - k];  // alternate the order: drift hits all alike
      PiecesJob job(dst.get(), src.get(), pieces, stride, way.threads, way.stores);
      const auto start = std::chrono::steady_clock::now();
      if (way.threads > 1) {
        pool.Run(job);
      } else {
        job.RunParts();
      }
      const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
      way.rounds_s[round] = took.count();
    }
  }
  // The median round of each way: one round that the caches or a neighbour sped up or slowed down
  // does not decide.
  for (size_t k = 0; k < count; ++k) {
    double *rounds = ways[k].rounds_s;
    std::nth_element(rounds, rounds + kCalibrationRounds / 2, rounds + kCalibrationRounds);
    ways[k].median_s = rounds[kCalibrationRounds / 2];
  }
  return true;
}

CopyStrategy Decide() {
  CopyStrategy out;
  const size_t pool_threads = CopyPool::Instance().threads();
  StoreKind fixed_stores = StoreKind::kMemcpy;
  const bool stores_fixed = !HaveStreamingStores() || StoresFixedByEnv(&fixed_stores);
  const bool threads_fixed = ThreadsFixedByEnv() || pool_threads == 1;
  // Twice the last-level cache each: where two cores see a last-level cache each (an AMD EPYC VM's
  // two vCPUs on two core complexes), a split copy of buffers the size of one ran partly from the
  // caches, and memcpy measured up to twice its speed over a large whole.
  const size_t bytes =
      std::clamp(std::min(LargeWholeBytes(), kCalibrationMaxBytes) * 2, kCalibrationMinBytes, kCalibrationMaxBytes) /
      kCalibrationPiece * kCalibrationPiece;

  Way ways[6];
  size_t count = 0;
  for (const StoreKind stores : {StoreKind::kMemcpy, StoreKind::kStreaming, StoreKind::kInterleaved}) {
    if (stores_fixed && stores != fixed_stores) {
      continue;
    }
    if (!threads_fixed) {
      ways[count++] = Way{stores, 1};
    }
    ways[count++] = Way{stores, pool_threads};
  }
  const bool measured = count > 1 && Calibrate(ways, count, bytes);
  if (!measured) {
    out.stores = fixed_stores;
    out.threads = threads_fixed ? pool_threads : 1;
  } else {
    // The best of each store kind (a split only when clearly faster), then memcpy against the fastest
    // streaming kind (streaming only when clearly faster).
    const Way *best[3] = {nullptr, nullptr, nullptr};
    for (size_t k = 0; k < count; ++k) {
      const Way *&slot = best[static_cast<int>(ways[k].stores)];
      if (slot == nullptr || ways[k].median_s * kSplitMargin < slot->median_s) {
        slot = &ways[k];  // ways of one kind come one thread first
      }
    }
    const Way *streaming = best[1];
    if (streaming == nullptr || (best[2] != nullptr && best[2]->median_s < streaming->median_s)) {
      streaming = best[2];
    }
    const Way *chosen = best[0];
    if (chosen == nullptr || (streaming != nullptr && streaming->median_s * kStreamingMargin < chosen->median_s)) {
      chosen = streaming;
    }
    out.stores = chosen->stores;
    out.threads = chosen->threads;
  }

  std::string text = std::string(StoreKindName(out.stores)) + " stores, " + std::to_string(out.threads) +
                     (out.threads == 1 ? " thread" : " threads");
  std::string why;
  if (stores_fixed) {
    why += HaveStreamingStores()
               ? std::string(ACLHOST_ENV_STREAMING_STORES) + "=" + std::getenv(ACLHOST_ENV_STREAMING_STORES)
               : "no streaming stores in this build";
  }
  if (threads_fixed) {
    why += why.empty() ? "" : ", ";
    why += pool_threads == 1 && !ThreadsFixedByEnv()
               ? std::string("one usable core")
               : std::string(ACLHOST_ENV_COPY_THREADS) + "=" + std::getenv(ACLHOST_ENV_COPY_THREADS);
  }
  if (!why.empty()) {
    text += " (fixed: " + why + ")";
  }
  if (measured) {
    text += "; calibrated over " + std::to_string(bytes / kMiB) + " MiB in " + std::to_string(kCalibrationPiece >> 10) +
            " KiB pieces:";
    for (size_t k = 0; k < count; ++k) {
      char speed[32];
      std::snprintf(speed, sizeof(speed), "%.2f", GBps(bytes, ways[k].median_s));
      text += std::string(k == 0 ? " " : ", ") + StoreKindName(ways[k].stores) + " x" +
              std::to_string(ways[k].threads) + " " + speed + " GB/s";
    }
  }
  out.description = text + "; large wholes from " + std::to_string(LargeWholeBytes() >> 20) + " MiB (last-level cache)";
  return out;
}

}  // namespace

size_t LargeWholeBytes() {
  static const size_t bytes = ReadLargeWholeBytes();
  return bytes;
}

const CopyStrategy &GetCopyStrategy() {
  static const CopyStrategy strategy = Decide();
  return strategy;
}

}  // namespace aclhost

extern "C" const char *aclhostGetCopyStrategy(void) {
  return aclhost::GuardedText("aclhostGetCopyStrategy", [] { return aclhost::GetCopyStrategy().description.c_str(); });
}
