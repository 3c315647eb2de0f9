#include "transfer_streams.h"

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "kernel_counters.h"
#include "kernel_error.h"

namespace msmc {

namespace {

// One lane of one device: its stream and the event re-recorded after each transfer queued there. A
// stream wait and an event synchronization use the record that is latest when they are called, so
// one event serves every transfer of the lane.
struct Lane {
  aclrtStream stream = nullptr;
  aclrtEvent latest = nullptr;
  bool recorded = false;
};

// The lanes, created on first use and never destroyed (as ThreadStream: the process may end after the
// ACL runtime's teardown; the runtime releases them with the process).
class Lanes {
 public:
  static Lanes &Instance() {
    static Lanes *lanes = new Lanes();  // never destroyed, see above
    return *lanes;
  }

  aclrtStream Stream(int32_t device, int64_t lane) {
    std::lock_guard<std::mutex> lock(mu_);
    return Get(device, lane).stream;
  }

  void Mark(int32_t device, int64_t lane) {
    std::lock_guard<std::mutex> lock(mu_);
    Lane &l = Get(device, lane);
    CheckAcl(aclrtRecordEvent(l.latest, l.stream), "aclrtRecordEvent");
    l.recorded = true;
  }

  void WaitFor(int32_t device, int64_t lane, aclrtStream stream) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto &entry : lanes_) {
      const bool chosen = entry.first.first == device && (lane == kAllLanes || entry.first.second == lane);
      if (chosen && entry.second.recorded) {
        CheckAcl(aclrtStreamWaitEvent(stream, entry.second.latest), "aclrtStreamWaitEvent");
      }
    }
  }

  aclError SynchronizeAll() noexcept {
    std::vector<aclrtEvent> events;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto &entry : lanes_) {
        if (entry.second.recorded) {
          events.push_back(entry.second.latest);
        }
      }
    }
    for (aclrtEvent event : events) {  // outside the lock: a launch may queue meanwhile
      const aclError ret = aclrtSynchronizeEvent(event);
      if (ret != ACL_SUCCESS) {
        return ret;
      }
    }
    return ACL_SUCCESS;
  }

  int64_t Count() {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int64_t>(lanes_.size());
  }

 private:
  Lane &Get(int32_t device, int64_t lane) {
    if (lane < 0 || lane >= kTransferLanes) {
      throw InputError("lane", "is " + std::to_string(lane) + "; expected 0 (d2h), 1 (h2d) or 2 (within the device)");
    }
    auto it = lanes_.find({device, lane});
    if (it != lanes_.end()) {
      return it->second;
    }
    Lane l;
    CheckAcl(aclrtCreateStream(&l.stream), "aclrtCreateStream");
    const aclError ret = aclrtCreateEvent(&l.latest);
    if (ret != ACL_SUCCESS) {
      (void)aclrtDestroyStream(l.stream);
      CheckAcl(ret, "aclrtCreateEvent");
    }
    return lanes_.emplace(std::make_pair(device, lane), l).first->second;
  }

  std::mutex mu_;
  std::map<std::pair<int32_t, int64_t>, Lane> lanes_;
};

}  // namespace

aclrtStream TransferStream(int32_t device, int64_t lane) { return Lanes::Instance().Stream(device, lane); }

void MarkTransferQueued(int32_t device, int64_t lane) { Lanes::Instance().Mark(device, lane); }

void WaitForTransfers(int32_t device, int64_t lane, aclrtStream stream) {
  Lanes::Instance().WaitFor(device, lane, stream);
}

TransferRing::~TransferRing() {
  for (Slot &slot : slots_) {
    if (slot.recorded) {
      (void)aclrtSynchronizeEvent(slot.end);
    }
    slot.memory.reset();
    for (aclrtEvent event : {slot.start, slot.end}) {
      if (event != nullptr) {
        (void)aclrtDestroyEvent(event);
        CountOwned(OwnedResource::kEvents, -1);
      }
    }
  }
}

TransferRing::Slot &TransferRing::Acquire() {
  Slot &slot = slots_[next_];
  next_ = (next_ + 1) % kSlots;
  if (slot.recorded) {
    CheckAcl(aclrtSynchronizeEvent(slot.end), "aclrtSynchronizeEvent");  // at once when complete
    slot.recorded = false;
  }
  slot.memory.reset();
  for (aclrtEvent *event : {&slot.start, &slot.end}) {
    if (*event == nullptr) {
      CheckAcl(aclrtCreateEvent(event), "aclrtCreateEvent");
      CountOwned(OwnedResource::kEvents, 1);
    }
  }
  return slot;
}

void TransferRing::Release(Slot &slot, aclrtStream lane_stream) {
  CheckAcl(aclrtRecordEvent(slot.end, lane_stream), "aclrtRecordEvent");
  slot.recorded = true;
}

}  // namespace msmc

int32_t msmc_transfer_synchronize(void) { return msmc::Lanes::Instance().SynchronizeAll(); }

int64_t msmc_transfer_stream_count(void) {
  try {
    return msmc::Lanes::Instance().Count();
  } catch (...) {
    return -1;
  }
}

void *msmc_transfer_lane_stream(int32_t device, int64_t lane) {
  try {
    return msmc::TransferStream(device, lane);
  } catch (...) {
    return nullptr;
  }
}
