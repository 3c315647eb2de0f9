// The launch functions: one per kind of copy, independent of MindSpore's entry conventions.
// They take pointers, sizes and a stream, own the copy plan (chunking what ACL limits, coalescing,
// falling back where the SoC lacks a call), move data only through ACL calls, and throw
// InputError / AclCallError (kernel_error.h). The caller synchronizes the stream when it needs to.
#ifndef MS_MEMCOPY_KERNELS_COPY_LAUNCH_H_
#define MS_MEMCOPY_KERNELS_COPY_LAUNCH_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "acl/acl.h"
#include "acl_limits.h"
#include "event_slots.h"
#include "kernels_api.h"

namespace msmc {

// ACL limits the plans respect (acl_limits.h).
using acl_limits::kMax2DHeight;
using acl_limits::kMax2DWidth;
using acl_limits::kMaxBatchItems;
constexpr size_t kMaxDescChunk = acl_limits::kDescChunkBytes;  // bytes per descriptor copy

struct BatchItem {
  void *dst;
  const void *src;
  size_t size;
};

// A list of copies planned for one call: zero-size items dropped (CANN rejects them in a batch that
// has others), items adjacent on both sides merged. Keeps its buffers across launches.
struct CopyPlan {
  std::vector<void *> dsts;
  std::vector<void *> srcs;
  std::vector<size_t> sizes;
  std::vector<size_t> first_index;  // caller's index of each planned item

  void Build(const BatchItem *items, size_t count);
};

// Batched host<->device copies through aclrtMemcpyBatchAsync, reusable across launches (it keeps
// its planning buffers, so a launch allocates nothing per item once warmed up).
class MSMC_KERNELS_API BatchCopier {
 public:
  // Copies items[i] for every i. direction is ACL_MEMCPY_DEVICE_TO_HOST or ACL_MEMCPY_HOST_TO_DEVICE;
  // device is the device of the device-side buffers. Zero-size items are dropped, items adjacent on
  // both sides are merged, chunks hold at most kMaxBatchItems items. When overlap_argument is not
  // NULL, destination ranges that overlap raise InputError naming it, before any copy. A failing
  // item is reported by its index in `items`. Without the batch call on this SoC, copies item by
  // item with aclrtMemcpyAsync.
  void Run(const BatchItem *items, size_t count, aclrtMemcpyKind direction, int32_t device,
           const char *overlap_argument, aclrtStream stream);

 private:
  void CheckOverlap(const BatchItem *items, size_t count, const char *argument);
  void RunChunk(size_t begin, size_t end, const aclrtMemcpyBatchAttr &attr, aclrtStream stream);
  void RunItemByItem(aclrtMemcpyKind direction, aclrtStream stream);

  CopyPlan plan_;
  std::vector<size_t> order_;
};

// A pitched copy: height rows of width bytes, row r from src + r*spitch to dst + r*dpitch.
struct PitchedCopy {
  void *dst;
  size_t dpitch;
  const void *src;
  size_t spitch;
  size_t width;
  size_t height;
  aclrtMemcpyKind kind;
};

// Copies through aclrtMemcpy2dAsync, split into calls within the height and width limits; on a SoC
// without device-to-device 2D copies, falls back to aclrtMemcpyAsync (one call when the rows are
// contiguous, else one per row).
void Copy2D(const PitchedCopy &copy, aclrtStream stream);

// Device-to-device copies through memory-copy descriptors in device memory, allocated on first use
// and kept for the life of the object (one per kernel instance). A call takes the descriptors of the
// next slot of a ring guarded by events (event_slots.h), so a launch never rewrites descriptors that
// queued copies still read and never waits for its stream. Each slot's descriptors are one allocation,
// grown before a launch queues any copy (one registration in the runtime's memory registry per slot,
// not one per descriptor: the runtime looks every descriptor and address up). On a SoC without
// descriptors, copies with aclrtMemcpyAsync.
class MSMC_KERNELS_API DescCopier {
 public:
  static constexpr size_t kSlots = 4;

  DescCopier() : slots_(kSlots), blocks_(kSlots) {}
  ~DescCopier();
  DescCopier(const DescCopier &) = delete;
  DescCopier &operator=(const DescCopier &) = delete;

  void Copy(void *dst, const void *src, size_t count, aclrtStream stream);
  // Copies items[i] for every i (the items must not overlap), planned as CopyPlan does: one
  // descriptor per planned item (aclrtMemcpyBatchAsync refuses device-to-device items). A failing
  // item is reported by its index in `items`.
  void CopyItems(const BatchItem *items, size_t count, aclrtStream stream);

 private:
  bool Supported();
  // Enqueues one copy of any size through descriptors first_desc, first_desc + 1, ...; returns the
  // index of the next free descriptor.
  size_t Enqueue(void *dst, const void *src, size_t count, size_t slot, size_t first_desc, size_t fail_index,
                 aclrtStream stream);
  // Makes room for `count` descriptors in slot, which this launch holds and has queued nothing with yet
  // (so the copies that read its old block have run).
  void Reserve(size_t slot, size_t count);
  void *DescriptorAt(size_t slot, size_t index) const;

  struct Block {
    void *base = nullptr;
    size_t capacity = 0;  // descriptors
  };
  EventSlots slots_;
  std::vector<Block> blocks_;  // per slot
  CopyPlan plan_;
  size_t desc_size_ = 0;
  size_t desc_stride_ = 0;  // desc_size_ rounded up to the 64-byte alignment descriptors need
  int supported_ = -1;      // -1 unknown, 0 no, 1 yes
};

// aclrtMemcpyAsyncWithCondition (aclrtMemcpyAsync when the runtime no longer has the symbol):
// synchronous when an endpoint is pageable host memory, asynchronous otherwise.
void CopyWithCondition(void *dst, size_t dest_max, const void *src, size_t count, aclrtMemcpyKind kind,
                       aclrtStream stream);

}  // namespace msmc

#endif  // MS_MEMCOPY_KERNELS_COPY_LAUNCH_H_
