// Kernel-owned memory reused across launches without stalling the stream: a few slots, each guarded
// by an event recorded after the last work queued that reads it. A slot is handed out again only once
// its stream has run past that work, so a launch never waits for its stream unless it has launched a
// whole ring of work ahead of it (then it waits for the oldest slot's event only).
#ifndef MS_MEMCOPY_KERNELS_EVENT_SLOTS_H_
#define MS_MEMCOPY_KERNELS_EVENT_SLOTS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "acl/acl.h"
#include "kernels_api.h"

namespace msmc {

class MSMC_KERNELS_API EventSlots {
 public:
  explicit EventSlots(size_t count) : events_(count, nullptr), recorded_(count, false) {}
  ~EventSlots();  // waits for every recorded event, then destroys the events
  EventSlots(const EventSlots &) = delete;
  EventSlots &operator=(const EventSlots &) = delete;

  // The next slot in turn, once the work that last read it has run.
  size_t Acquire();
  // Records the slot's event on stream: the work queued there so far reads the slot.
  void Release(size_t slot, aclrtStream stream);
  // Waits for every recorded event (before the slots' memory is freed).
  void WaitAll() noexcept;

 private:
  std::vector<aclrtEvent> events_;  // created on first release
  std::vector<bool> recorded_;
  size_t next_ = 0;
};

// One use of a slot for the launch in progress: acquired on construction, released on the stream when
// the use ends, whether the launch queued all its work or failed part way.
class SlotUse {
 public:
  SlotUse(EventSlots &slots, aclrtStream stream) : slots_(slots), stream_(stream), slot_(slots.Acquire()) {}
  ~SlotUse();
  SlotUse(const SlotUse &) = delete;
  SlotUse &operator=(const SlotUse &) = delete;

  size_t slot() const { return slot_; }

 private:
  EventSlots &slots_;
  aclrtStream stream_;
  size_t slot_;
};

// Host memory from aclrtMallocHost (pinned: copies from it are asynchronous), grown on demand.
class MSMC_KERNELS_API PinnedBlock {
 public:
  PinnedBlock() = default;
  ~PinnedBlock();
  PinnedBlock(const PinnedBlock &) = delete;
  PinnedBlock &operator=(const PinnedBlock &) = delete;

  // At least nbytes; the contents are not kept when it grows. Only for a block no queued work reads.
  void *Reserve(size_t nbytes);

 private:
  void *data_ = nullptr;
  size_t capacity_ = 0;
};

// Writes int64 results (bytes copied) into a kernel's device output from a ring of pinned slots: the
// copy is asynchronous, and the slot is reused only after the copy has run.
class MSMC_KERNELS_API ResultStaging {
 public:
  static constexpr size_t kSlots = 8;

  ResultStaging() : slots_(kSlots), blocks_(kSlots) {}
  ~ResultStaging() { slots_.WaitAll(); }
  ResultStaging(const ResultStaging &) = delete;
  ResultStaging &operator=(const ResultStaging &) = delete;

  void Write(const int64_t *values, size_t count, void *out, aclrtStream stream);

 private:
  EventSlots slots_;
  std::vector<PinnedBlock> blocks_;
};

}  // namespace msmc

#endif  // MS_MEMCOPY_KERNELS_EVENT_SLOTS_H_
