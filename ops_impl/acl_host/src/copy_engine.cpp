// Copy engine: std::memcpy for small copies, width-specialized row loops for 2D copies, and a pool of
// worker threads (started once, at most one thread per usable core) that splits large copies.
#include "copy_engine.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "acl_host/acl_host_ext.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace aclhost {
namespace {

constexpr size_t kMaxThreads = 8;
constexpr size_t kMinPartBytes = size_t{1} << 20;  // parts smaller than this are not worth a hand-off
// One contiguous part per thread: std::memcpy picks non-temporal stores by the size of each call, so
// parts as large as possible keep the stores of a split copy the same as those of the whole copy (eight
// 8 MiB parts of a 64 MiB copy ran at half the bandwidth of two 32 MiB parts). A helper that starts late
// loses nothing: the caller claims the parts nobody has started.
constexpr size_t kPartsPerThread = 1;
constexpr size_t kRowCostBytes = 32;                 // a 2D row costs about as much as copying this many bytes
constexpr std::chrono::microseconds kSpinTime{200};  // how long an idle pool thread or a waiting caller spins

bool Overlaps(uintptr_t d, uintptr_t s, size_t dn, size_t sn) { return d < s + sn && s < d + dn; }

// The whole that the calling thread's copies belong to (CopyRunScope); 0 outside any scope.
thread_local size_t t_run_bytes = 0;

// Whether copies belonging to a whole of `total` bytes (or to the thread's declared run) stream.
bool Streams(size_t total) { return std::max(total, t_run_bytes) >= kStreamingMinBytes; }

size_t UsableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) {
      return static_cast<size_t>(n);
    }
  }
  const unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? n : 1;
}

size_t ConfiguredThreads() {
  size_t threads = std::min(UsableCores(), kMaxThreads);
  const char *value = std::getenv(ACLHOST_ENV_COPY_THREADS);
  if (value != nullptr && *value != '\0') {
    char *end = nullptr;
    const unsigned long long wanted = std::strtoull(value, &end, 10);
    if (end != value && *end == '\0' && wanted > 0) {
      threads = std::min<size_t>(threads, static_cast<size_t>(wanted));
    }
  }
  return threads;
}

// One split copy: `parts` parts, claimed by index by the caller and by pool workers.
class Job {
 public:
  explicit Job(size_t parts) : parts_(parts) {}
  virtual ~Job() = default;

  // Runs unclaimed parts until none is left.
  void RunParts() {
    for (size_t part = next_.fetch_add(1); part < parts_; part = next_.fetch_add(1)) {
      RunPart(part);
    }
  }
  bool Exhausted() const { return next_.load() >= parts_; }

  // Pool workers inside RunParts: changed under the pool's mutex, read without it by a caller that spins.
  std::atomic<size_t> workers{0};

 protected:
  virtual void RunPart(size_t part) = 0;

 private:
  const size_t parts_;
  std::atomic<size_t> next_{0};
};

class CopyPool {
 public:
  static CopyPool &Instance() {
    // Never destroyed: its threads wait for work until the process ends (like the stream workers).
    static CopyPool *const pool = new CopyPool(ConfiguredThreads());
    return *pool;
  }

  size_t threads() const { return helpers_ + 1; }

  // Runs every part of job on the calling thread and on idle workers; returns when all are done.
  void Run(Job &job) {
    if (helpers_ > 0) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        queue_.push_back(&job);
        submitted_.fetch_add(1, std::memory_order_release);
      }
      work_ready_.notify_all();  // no system call when every worker is spinning
    }
    job.RunParts();
    if (helpers_ == 0) {
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const auto it = std::find(queue_.begin(), queue_.end(), &job);
      if (it != queue_.end()) {
        queue_.erase(it);
      }
    }
    // A helper's part is about as long as the caller's: spin a little before sleeping, since waking
    // a sleeping thread costs tens of microseconds on a virtual machine.
    if (SpinUntil([&job] { return job.workers.load(std::memory_order_acquire) == 0; })) {
      return;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    job_done_.wait(lock, [&job] { return job.workers.load(std::memory_order_acquire) == 0; });
  }

 private:
  explicit CopyPool(size_t threads) : helpers_(threads - 1) {
    for (size_t i = 0; i < helpers_; ++i) {
      std::thread(&CopyPool::WorkerLoop, this).detach();
    }
  }

  void WorkerLoop() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      if (queue_.empty()) {
        // Just finished a part: spin a little before sleeping, so that back-to-back large copies
        // find this worker awake instead of paying a thread wake-up each.
        const uint64_t seen = submitted_.load(std::memory_order_acquire);
        lock.unlock();
        SpinUntil([this, seen] { return submitted_.load(std::memory_order_acquire) != seen; });
        lock.lock();
      }
      work_ready_.wait(lock, [this] { return !queue_.empty(); });
      Job *job = queue_.front();
      if (job->Exhausted()) {
        queue_.pop_front();
        continue;
      }
      job->workers.fetch_add(1, std::memory_order_relaxed);
      lock.unlock();
      job->RunParts();
      lock.lock();
      job->workers.fetch_sub(1, std::memory_order_release);
      if (!queue_.empty() && queue_.front() == job) {
        queue_.pop_front();  // every part is claimed
      }
      job_done_.notify_all();
    }
  }

  // Polls done() for at most kSpinTime; true when it became true.
  template <typename Done>
  static bool SpinUntil(Done done) {
    const auto until = std::chrono::steady_clock::now() + kSpinTime;
    while (!done()) {
      if (std::chrono::steady_clock::now() >= until) {
        return false;
      }
      std::this_thread::yield();
    }
    return true;
  }

  const size_t helpers_;
  std::atomic<uint64_t> submitted_{0};  // jobs ever queued (lets a spinning worker see new work)
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable job_done_;
  std::deque<Job *> queue_;
};

// How many parts to split `work` bytes into (1: do not split).
size_t PartsFor(size_t work, size_t threads) {
  if (threads < 2 || work < kParallelMinBytes) {
    return 1;
  }
  return std::max<size_t>(2, std::min(threads * kPartsPerThread, work / kMinPartBytes));
}

// --- 1D ----------------------------------------------------------------------------------------------

#if defined(__SSE2__)
// One 64-byte line with streaming stores; dst is 16-byte aligned.
inline void StreamLine(unsigned char *dst, const unsigned char *src) {
  const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src));
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + 16));
  const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + 32));
  const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + 48));
  _mm_stream_si128(reinterpret_cast<__m128i *>(dst), a);
  _mm_stream_si128(reinterpret_cast<__m128i *>(dst + 16), b);
  _mm_stream_si128(reinterpret_cast<__m128i *>(dst + 32), c);
  _mm_stream_si128(reinterpret_cast<__m128i *>(dst + 48), d);
}
#endif

// A copy of non-overlapping ranges with streaming stores: the destination's lines are written without
// being read first and without displacing cached data. Ordinary stores for the unaligned head and the
// tail; the streaming stores are fenced before returning, so the bytes are visible to whichever thread
// later observes the copy as complete.
void CopyStreaming(void *dst, const void *src, size_t n) {
#if defined(__SSE2__)
  constexpr size_t kLine = 64;
  constexpr size_t kPage = 4096;
  auto *d = static_cast<unsigned char *>(dst);
  const auto *s = static_cast<const unsigned char *>(src);
  const size_t head = (kLine - (reinterpret_cast<uintptr_t>(d) & (kLine - 1))) & (kLine - 1);
  if (n < head + kStreamingMinPieceBytes) {
    std::memcpy(dst, src, n);
    return;
  }
  std::memcpy(d, s, head);
  d += head;
  s += head;
  n -= head;
  // Four pages at a time, a line of each in turn, as glibc's own streaming copy does: four read streams
  // at once keep the memory busier than one (about 10% faster here than page after page).
  for (; n >= 4 * kPage; d += 4 * kPage, s += 4 * kPage, n -= 4 * kPage) {
    for (size_t off = 0; off < kPage; off += kLine) {
      StreamLine(d + off, s + off);
      StreamLine(d + kPage + off, s + kPage + off);
      StreamLine(d + 2 * kPage + off, s + 2 * kPage + off);
      StreamLine(d + 3 * kPage + off, s + 3 * kPage + off);
    }
  }
  for (; n >= kLine; d += kLine, s += kLine, n -= kLine) {
    StreamLine(d, s);
  }
  _mm_sfence();
  std::memcpy(d, s, n);
#else
  std::memcpy(dst, src, n);
#endif
}

// One thread's copy: std::memcpy (streaming stores for a piece of a large whole), or std::memmove when
// the ranges overlap.
void CopySerial(void *dst, const void *src, size_t n, bool streaming) {
  if (n == 0 || dst == src) {
    return;
  }
  if (Overlaps(reinterpret_cast<uintptr_t>(dst), reinterpret_cast<uintptr_t>(src), n, n)) {
    std::memmove(dst, src, n);
  } else if (streaming && n >= kStreamingMinPieceBytes) {
    CopyStreaming(dst, src, n);
  } else {
    std::memcpy(dst, src, n);
  }
}

class BytesJob final : public Job {
 public:
  BytesJob(unsigned char *dst, const unsigned char *src, size_t n, size_t parts, bool streaming)
      : Job(parts),
        dst_(dst),
        src_(src),
        n_(n),
        part_bytes_(((n + parts - 1) / parts + 63) & ~size_t{63}),
        streaming_(streaming) {}

 private:
  void RunPart(size_t part) override {
    const size_t begin = std::min(n_, part * part_bytes_);
    const size_t end = std::min(n_, begin + part_bytes_);
    CopySerial(dst_ + begin, src_ + begin, end - begin, streaming_);
  }

  unsigned char *dst_;
  const unsigned char *src_;
  size_t n_;
  size_t part_bytes_;
  bool streaming_;
};

// --- 2D ----------------------------------------------------------------------------------------------

struct Rows {
  unsigned char *dst;
  size_t dpitch;
  const unsigned char *src;
  size_t spitch;
  size_t width;
};

template <size_t W>
void RowsFixed(const Rows &r, size_t first, size_t count) {
  unsigned char *d = r.dst + first * r.dpitch;
  const unsigned char *s = r.src + first * r.spitch;
  size_t i = 0;
  for (; i + 4 <= count; i += 4) {
    std::memcpy(d, s, W);
    std::memcpy(d + r.dpitch, s + r.spitch, W);
    std::memcpy(d + 2 * r.dpitch, s + 2 * r.spitch, W);
    std::memcpy(d + 3 * r.dpitch, s + 3 * r.spitch, W);
    d += 4 * r.dpitch;
    s += 4 * r.spitch;
  }
  for (; i < count; ++i, d += r.dpitch, s += r.spitch) {
    std::memcpy(d, s, W);
  }
}

// Rows of 1..64 bytes: two fixed-size moves that may overlap inside the row (never past it).
template <size_t W>
void RowsTwoMoves(const Rows &r, size_t first, size_t count) {
  unsigned char *d = r.dst + first * r.dpitch;
  const unsigned char *s = r.src + first * r.spitch;
  const size_t tail = r.width - W;
  for (size_t i = 0; i < count; ++i, d += r.dpitch, s += r.spitch) {
    std::memcpy(d, s, W);
    std::memcpy(d + tail, s + tail, W);
  }
}

void RowsBytes(const Rows &r, size_t first, size_t count) {
  unsigned char *d = r.dst + first * r.dpitch;
  const unsigned char *s = r.src + first * r.spitch;
  for (size_t i = 0; i < count; ++i, d += r.dpitch, s += r.spitch) {
    for (size_t b = 0; b < r.width; ++b) {
      d[b] = s[b];
    }
  }
}

// Rows of 65..512 bytes: 32-byte moves and a last one ending at the row's end.
void RowsChunks(const Rows &r, size_t first, size_t count) {
  unsigned char *d = r.dst + first * r.dpitch;
  const unsigned char *s = r.src + first * r.spitch;
  const size_t last = r.width - 32;
  for (size_t i = 0; i < count; ++i, d += r.dpitch, s += r.spitch) {
    for (size_t off = 0; off < last; off += 32) {
      std::memcpy(d + off, s + off, 32);
    }
    std::memcpy(d + last, s + last, 32);
  }
}

void RowsMemcpy(const Rows &r, size_t first, size_t count) {
  unsigned char *d = r.dst + first * r.dpitch;
  const unsigned char *s = r.src + first * r.spitch;
  for (size_t i = 0; i < count; ++i, d += r.dpitch, s += r.spitch) {
    std::memcpy(d, s, r.width);
  }
}

using RowLoop = void (*)(const Rows &, size_t, size_t);

RowLoop RowLoopFor(size_t width) {
  switch (width) {
    case 1:
      return RowsFixed<1>;
    case 2:
      return RowsFixed<2>;
    case 4:
      return RowsFixed<4>;
    case 8:
      return RowsFixed<8>;
    case 16:
      return RowsFixed<16>;
    case 32:
      return RowsFixed<32>;
    case 64:
      return RowsFixed<64>;
    default:
      break;
  }
  if (width < 4) {
    return RowsBytes;
  }
  if (width < 8) {
    return RowsTwoMoves<4>;
  }
  if (width < 16) {
    return RowsTwoMoves<8>;
  }
  if (width < 32) {
    return RowsTwoMoves<16>;
  }
  if (width < 64) {
    return RowsTwoMoves<32>;
  }
  return width <= 512 ? RowsChunks : RowsMemcpy;
}

class RowsJob final : public Job {
 public:
  RowsJob(const Rows &rows, size_t height, RowLoop loop, size_t parts)
      : Job(parts), rows_(rows), height_(height), loop_(loop), part_rows_((height + parts - 1) / parts) {}

 private:
  void RunPart(size_t part) override {
    const size_t first = std::min(height_, part * part_rows_);
    loop_(rows_, first, std::min(height_, first + part_rows_) - first);
  }

  Rows rows_;
  size_t height_;
  RowLoop loop_;
  size_t part_rows_;
};

// --- batches -----------------------------------------------------------------------------------------

// Items split into parts of about equal bytes; part k holds items [bounds_[k], bounds_[k + 1]).
class ItemsJob final : public Job {
 public:
  ItemsJob(const CopyItem *items, const size_t *bounds, size_t parts, bool streaming)
      : Job(parts), items_(items), bounds_(bounds), streaming_(streaming) {}

 private:
  void RunPart(size_t part) override {
    for (size_t i = bounds_[part]; i < bounds_[part + 1]; ++i) {
      CopySerial(items_[i].dst, items_[i].src, items_[i].size, streaming_);
    }
  }

  const CopyItem *items_;
  const size_t *bounds_;
  bool streaming_;
};

// CopyBytes, streaming or not as the whole the copy belongs to decides.
void CopyBytesOf(void *dst, const void *src, size_t n, bool streaming) {
  if (n >= kParallelMinBytes && !Overlaps(reinterpret_cast<uintptr_t>(dst), reinterpret_cast<uintptr_t>(src), n, n)) {
    CopyPool &pool = CopyPool::Instance();
    const size_t parts = PartsFor(n, pool.threads());
    if (parts > 1) {
      BytesJob job(static_cast<unsigned char *>(dst), static_cast<const unsigned char *>(src), n, parts, streaming);
      pool.Run(job);
      return;
    }
  }
  CopySerial(dst, src, n, streaming);
}

}  // namespace

CopyRunScope::CopyRunScope(size_t bytes) : saved_(t_run_bytes) { t_run_bytes = std::max(saved_, bytes); }

CopyRunScope::~CopyRunScope() { t_run_bytes = saved_; }

void CopyBytes(void *dst, const void *src, size_t n) { CopyBytesOf(dst, src, n, Streams(n)); }

void Copy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height) {
  if (width == 0 || height == 0) {
    return;
  }
  auto *out = static_cast<unsigned char *>(dst);
  const auto *in = static_cast<const unsigned char *>(src);
  if (width == dpitch && width == spitch) {
    CopyBytes(dst, src, width * height);  // dense rows: one copy
    return;
  }
  const size_t dst_span = (height - 1) * dpitch + width;
  const size_t src_span = (height - 1) * spitch + width;
  if (Overlaps(reinterpret_cast<uintptr_t>(dst), reinterpret_cast<uintptr_t>(src), dst_span, src_span)) {
    for (size_t row = 0; row < height; ++row) {
      CopyBytes(out + row * dpitch, in + row * spitch, width);
    }
    return;
  }
  const Rows rows{out, dpitch, in, spitch, width};
  const RowLoop loop = RowLoopFor(width);
  const size_t work = width * height + kRowCostBytes * height;
  if (work >= kParallelMinBytes) {
    CopyPool &pool = CopyPool::Instance();
    const size_t parts = std::min(height, PartsFor(work, pool.threads()));
    if (parts > 1) {
      RowsJob job(rows, height, loop, parts);
      pool.Run(job);
      return;
    }
  }
  loop(rows, 0, height);
}

void CopyItems(const CopyItem *items, size_t count) {
  size_t total = 0;
  for (size_t i = 0; i < count; ++i) {
    if (__builtin_add_overflow(total, items[i].size, &total)) {
      total = SIZE_MAX;
      break;
    }
  }
  const bool streaming = Streams(total);
  if (count > 1 && total >= kParallelMinBytes) {
    CopyPool &pool = CopyPool::Instance();
    const size_t parts = std::min(count, PartsFor(total, pool.threads()));
    if (parts > 1) {
      size_t bounds[kMaxThreads * kPartsPerThread + 1];
      size_t part = 0;
      size_t done = 0;
      bounds[0] = 0;
      const size_t share = total / parts;
      for (size_t i = 0; i < count && part + 1 < parts; ++i) {
        done += std::min(items[i].size, total - done);
        if (done >= share * (part + 1)) {
          bounds[++part] = i + 1;
        }
      }
      bounds[++part] = count;
      ItemsJob job(items, bounds, part, streaming);
      pool.Run(job);
      return;
    }
  }
  for (size_t i = 0; i < count; ++i) {
    CopyBytesOf(items[i].dst, items[i].src, items[i].size, streaming);
  }
}

}  // namespace aclhost
