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
    // without the lock: a poller must never wait behind it (returns at once when complete)
    CheckAcl(aclrtSynchronizeEvent(slot.end), "aclrtSynchronizeEvent");
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    slot.recorded = false;
    ++slot.generation;
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
  std::lock_guard<std::mutex> lock(mu_);
  CheckAcl(aclrtRecordEvent(slot.end, lane_stream), "aclrtRecordEvent");
  slot.recorded = true;
}

bool TransferRing::Completed(size_t index, uint64_t generation) {
  std::lock_guard<std::mutex> lock(mu_);
  const Slot &slot = slots_.at(index);
  return slot.generation != generation || !slot.recorded || EventCompleted(slot.end);
}

void TransferRing::WaitFor(size_t index, uint64_t generation) {
  aclrtEvent end = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Slot &slot = slots_.at(index);
    if (slot.generation != generation || !slot.recorded) {
      return;
    }
    end = slot.end;
  }
  // (should the slot be reused meanwhile, this waits for its later transfer as well: never too little)
  SynchronizeEvent(end);
}

void TransferTicket::Queued(std::shared_ptr<void> owner, TransferRing *ring, size_t index, uint64_t generation,
                            bool failing) {
  std::lock_guard<std::mutex> lock(mu_);
  owner_ = std::move(owner);
  ring_ = ring;
  index_ = index;
  generation_ = generation;
  state_ = failing ? kFailing : kQueued;
  cv_.notify_all();
}

void TransferTicket::Fail(const std::string &what) {
  std::lock_guard<std::mutex> lock(mu_);
  if (state_ != kFailed) {
    state_ = kFailed;
    error_ = what;
    cv_.notify_all();
  }
}

void TransferTicket::Finish(const char *label) {
  std::lock_guard<std::mutex> lock(mu_);
  if (state_ == kPending) {
    state_ = kFailed;
    error_ = std::string("ms_memcopy ") + label + ": queued no transfer (not an asynchronous form)";
    cv_.notify_all();
  }
}

bool TransferTicket::Transferred() {
  if (ring_ == nullptr || !ring_->Completed(index_, generation_)) {
    return ring_ == nullptr;
  }
  ring_ = nullptr;
  owner_.reset();  // the kernel's state may go now
  return true;
}

bool TransferTicket::Done() {
  std::lock_guard<std::mutex> lock(mu_);
  if (state_ == kPending || state_ == kFailing || !Transferred()) {
    return false;
  }
  if (state_ == kFailed) {
    throw std::runtime_error(error_);
  }
  return true;
}

void TransferTicket::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return state_ == kQueued || state_ == kFailed; });
  if (ring_ != nullptr) {
    TransferRing *ring = ring_;
    const size_t index = index_;
    const uint64_t generation = generation_;
    std::shared_ptr<void> owner = owner_;  // the ring lives through the wait
    lock.unlock();
    ring->WaitFor(index, generation);
    lock.lock();
    ring_ = nullptr;
    owner_.reset();
  }
  if (state_ == kFailed) {
    throw std::runtime_error(error_);
  }
}

namespace {

struct CurrentTicket {
  TransferTicket *ticket = nullptr;
  std::shared_ptr<void> owner;
};

thread_local CurrentTicket current_ticket;

}  // namespace

TicketScope::TicketScope(TransferTicket *ticket, std::shared_ptr<void> owner) {
  current_ticket = CurrentTicket{ticket, std::move(owner)};
}

TicketScope::~TicketScope() { current_ticket = CurrentTicket{}; }

void NoteTransfer(TransferRing &ring, const TransferRing::Slot &slot, bool failing) {
  if (current_ticket.ticket != nullptr) {
    current_ticket.ticket->Queued(current_ticket.owner, &ring, ring.IndexOf(slot), slot.generation, failing);
    current_ticket.ticket = nullptr;  // one transfer per launch
  }
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
