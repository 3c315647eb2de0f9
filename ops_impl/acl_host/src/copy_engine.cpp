// Copy engine: std::memcpy for small copies, width-specialized row loops for 2D copies, large copies split
// across the copy pool and stored as the machine's copy strategy says (copy_strategy.h).
#include "copy_engine.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "copy_pool.h"
#include "copy_strategy.h"
#include "streaming_copy.h"

namespace aclhost {
namespace {

constexpr size_t kMinPartBytes = size_t{1} << 20;  // parts smaller than this are not worth a hand-off
constexpr size_t kRowCostBytes = 32;               // a 2D row costs about as much as copying this many bytes

bool Overlaps(uintptr_t d, uintptr_t s, size_t dn, size_t sn) { return d < s + sn && s < d + dn; }

// The whole that the calling thread's copies belong to (CopyRunScope); 0 outside any scope.
thread_local size_t t_run_bytes = 0;

// The stores of copies belonging to a whole of `total` bytes (or to the thread's declared run).
StoreKind StoresFor(size_t total) {
  return std::max(total, t_run_bytes) >= LargeWholeBytes() ? GetCopyStrategy().stores : StoreKind::kMemcpy;
}

// How many parts to split `work` bytes into (1: do not split). One contiguous part per thread: memcpy
// picks its stores by the size of each call, so parts as large as possible keep the stores of a split copy
// those of the whole copy; a helper that starts late loses nothing (the caller claims unstarted parts).
size_t PartsFor(size_t work) {
  if (work < kParallelMinBytes) {
    return 1;
  }
  const size_t threads = GetCopyStrategy().threads;
  if (threads < 2) {
    return 1;
  }
  return std::max<size_t>(2, std::min(threads, work / kMinPartBytes));
}

// --- 1D ----------------------------------------------------------------------------------------------

// One thread's copy with the given stores, or std::memmove when the ranges overlap.
void CopySerial(void *dst, const void *src, size_t n, StoreKind stores) {
  if (n == 0 || dst == src) {
    return;
  }
  if (Overlaps(reinterpret_cast<uintptr_t>(dst), reinterpret_cast<uintptr_t>(src), n, n)) {
    std::memmove(dst, src, n);
  } else {
    CopyWithStores(dst, src, n, stores);
  }
}

class BytesJob final : public Job {
 public:
  BytesJob(unsigned char *dst, const unsigned char *src, size_t n, size_t parts, StoreKind stores)
      : Job(parts),
        dst_(dst),
        src_(src),
        n_(n),
        part_bytes_(((n + parts - 1) / parts + 63) & ~size_t{63}),
        stores_(stores) {}

 private:
  void RunPart(size_t part) override {
    const size_t begin = std::min(n_, part * part_bytes_);
    const size_t end = std::min(n_, begin + part_bytes_);
    CopySerial(dst_ + begin, src_ + begin, end - begin, stores_);
  }

  unsigned char *dst_;
  const unsigned char *src_;
  size_t n_;
  size_t part_bytes_;
  StoreKind stores_;
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
    CopyPlain(d, s, r.width);
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
  ItemsJob(const CopyItem *items, const size_t *bounds, size_t parts, StoreKind stores)
      : Job(parts), items_(items), bounds_(bounds), stores_(stores) {}

 private:
  void RunPart(size_t part) override {
    for (size_t i = bounds_[part]; i < bounds_[part + 1]; ++i) {
      CopySerial(items_[i].dst, items_[i].src, items_[i].size, stores_);
    }
  }

  const CopyItem *items_;
  const size_t *bounds_;
  StoreKind stores_;
};

// CopyBytes with the stores the whole the copy belongs to decides.
void CopyBytesOf(void *dst, const void *src, size_t n, StoreKind stores) {
  if (n >= kParallelMinBytes && !Overlaps(reinterpret_cast<uintptr_t>(dst), reinterpret_cast<uintptr_t>(src), n, n)) {
    CopyPool &pool = CopyPool::Instance();
    const size_t parts = PartsFor(n);
    if (parts > 1) {
      BytesJob job(static_cast<unsigned char *>(dst), static_cast<const unsigned char *>(src), n, parts, stores);
      pool.Run(job);
      return;
    }
  }
  CopySerial(dst, src, n, stores);
}

}  // namespace

CopyRunScope::CopyRunScope(size_t bytes) : saved_(t_run_bytes) { t_run_bytes = std::max(saved_, bytes); }

CopyRunScope::~CopyRunScope() { t_run_bytes = saved_; }

void CopyBytes(void *dst, const void *src, size_t n) { CopyBytesOf(dst, src, n, StoresFor(n)); }

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
    const size_t parts = std::min(height, PartsFor(work));
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
  const StoreKind stores = StoresFor(total);
  if (count > 1 && total >= kParallelMinBytes) {
    CopyPool &pool = CopyPool::Instance();
    const size_t parts = std::min(count, PartsFor(total));
    if (parts > 1) {
      size_t bounds[CopyPool::kMaxThreads + 1];
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
      ItemsJob job(items, bounds, part, stores);
      pool.Run(job);
      return;
    }
  }
  for (size_t i = 0; i < count; ++i) {
    CopyBytesOf(items[i].dst, items[i].src, items[i].size, stores);
  }
}

}  // namespace aclhost
