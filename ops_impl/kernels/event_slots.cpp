#include "event_slots.h"

#include <cstring>

#include "kernel_counters.h"
#include "kernel_error.h"

namespace msmc {

EventSlots::~EventSlots() {
  WaitAll();
  for (aclrtEvent event : events_) {
    if (event != nullptr) {
      (void)aclrtDestroyEvent(event);
      CountOwned(OwnedResource::kEvents, -1);
    }
  }
}

size_t EventSlots::Acquire() {
  const size_t slot = next_;
  next_ = (next_ + 1) % events_.size();
  if (recorded_[slot]) {
    CheckAcl(aclrtSynchronizeEvent(events_[slot]), "aclrtSynchronizeEvent");  // at once when complete
    recorded_[slot] = false;
  }
  return slot;
}

void EventSlots::Release(size_t slot, aclrtStream stream) {
  if (events_[slot] == nullptr) {
    CheckAcl(aclrtCreateEvent(&events_[slot]), "aclrtCreateEvent");
    CountOwned(OwnedResource::kEvents, 1);
  }
  CheckAcl(aclrtRecordEvent(events_[slot], stream), "aclrtRecordEvent");
  recorded_[slot] = true;
}

void EventSlots::WaitAll() noexcept {
  for (size_t slot = 0; slot < events_.size(); ++slot) {
    if (recorded_[slot]) {
      (void)aclrtSynchronizeEvent(events_[slot]);
      recorded_[slot] = false;
    }
  }
}

SlotUse::~SlotUse() {
  try {
    slots_.Release(slot_, stream_);
  } catch (...) {
    // Without an event the slot cannot be guarded: wait for what may read it.
    (void)aclrtSynchronizeStream(stream_);
  }
}

PinnedBlock::~PinnedBlock() {
  if (data_ != nullptr) {
    (void)aclrtFreeHost(data_);
    CountOwned(OwnedResource::kPinnedBytes, -static_cast<int64_t>(capacity_));
  }
}

void *PinnedBlock::Reserve(size_t nbytes) {
  if (nbytes <= capacity_ && data_ != nullptr) {
    return data_;
  }
  if (data_ != nullptr) {
    CheckAcl(aclrtFreeHost(data_), "aclrtFreeHost");
    CountOwned(OwnedResource::kPinnedBytes, -static_cast<int64_t>(capacity_));
    data_ = nullptr;
    capacity_ = 0;
  }
  CheckAcl(aclrtMallocHost(&data_, nbytes), "aclrtMallocHost");
  capacity_ = nbytes;
  CountOwned(OwnedResource::kPinnedBytes, static_cast<int64_t>(nbytes));
  return data_;
}

void ResultStaging::Write(const int64_t *values, size_t count, void *out, aclrtStream stream) {
  if (count == 0) {
    return;
  }
  const size_t bytes = CheckedMul(count, sizeof(int64_t), "output");
  SlotUse use(slots_, stream);
  void *staged = blocks_[use.slot()].Reserve(bytes);
  std::memcpy(staged, values, bytes);
  CheckAcl(aclrtMemcpyAsync(out, bytes, staged, bytes, ACL_MEMCPY_HOST_TO_DEVICE, stream), "aclrtMemcpyAsync");
}

}  // namespace msmc
