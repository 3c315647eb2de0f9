// The copy engine: every byte the host runtime moves goes through these functions, so that they can be
// optimized without touching callers.
//
// - Small copies are one std::memcpy (std::memmove when the ranges overlap), copied from the end
//   where the destination starts just past the source modulo 4 KiB (CopyPlain, streaming_copy.h).
// - Large copies (kParallelMinBytes and more, ranges not overlapping) are split into one part per thread
//   of the copy strategy (copy_strategy.h: calibrated at the first large copy, or fixed by
//   MS_MEMCOPY_COPY_THREADS), which the copy pool's workers and the calling thread copy together.
// - 2D copies pick a row loop by width: fixed-size moves for narrow rows (1..64 bytes), 16/32-byte
//   chunks up to 512 bytes, std::memcpy per row beyond; dense rows are one copy.
// - Copies that are part of a large whole (one copy, a batch, or the copies a waiting thread runs back
//   to back from a stream: CopyRunScope) of at least the last-level cache store with streaming stores
//   where the copy strategy found them faster than std::memcpy on this machine (or
//   MS_MEMCOPY_STREAMING_STORES=1 asks for them); otherwise std::memcpy, which picks its own stores.
#ifndef MS_MEMCOPY_ACL_HOST_COPY_ENGINE_H_
#define MS_MEMCOPY_ACL_HOST_COPY_ENGINE_H_

#include <cstddef>

namespace aclhost {

struct CopyItem {
  void *dst;
  const void *src;
  size_t size;
};

// Copies of at least this many bytes (1D, a batch, or a 2D copy's bytes plus a per-row cost) are split
// across the copy pool.
constexpr size_t kParallelMinBytes = size_t{4} << 20;

// While alive, the copies of the calling thread count as parts of a whole of `bytes` (at least: an
// enclosing scope's larger whole stays in force). A stream's waiting thread declares the copies it is
// about to run; the bytes copied are the same either way, only the kind of store changes.
class CopyRunScope {
 public:
  explicit CopyRunScope(size_t bytes);
  ~CopyRunScope();
  CopyRunScope(const CopyRunScope &) = delete;
  CopyRunScope &operator=(const CopyRunScope &) = delete;

 private:
  size_t saved_;
};

// Copies n bytes. Overlapping ranges are allowed (the result is as if through a temporary buffer).
void CopyBytes(void *dst, const void *src, size_t n);

// Copies `height` rows of `width` bytes: row r goes from src + r * spitch to dst + r * dpitch. The bytes
// between the rows of dst are never written. Callers guarantee width <= spitch, width <= dpitch and that
// the extents do not overflow. If the source and destination extents overlap, rows are copied one at a
// time in order, each as by CopyBytes.
void Copy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height);

// Copies every item, each as by CopyBytes. Items that overlap each other give an unspecified result
// (large batches are copied by several threads at once, like the items of a CANN batch, which run in
// no order).
void CopyItems(const CopyItem *items, size_t count);

}  // namespace aclhost

#endif  // MS_MEMCOPY_ACL_HOST_COPY_ENGINE_H_
