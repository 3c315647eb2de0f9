// The streams and events of the asynchronous forms (bodies/transfer.cpp): a transfer stream per
// device and lane (swap-out, swap-in, copies within the device), created once for the process, and a
// ring of events per kernel instance. A transfer is queued on its lane after an event recorded on the
// launching (compute) stream, and an event recorded after it on the lane is what WaitTransfer makes the
// compute stream wait for. Nothing here grows with the number of launches.
#ifndef MS_MEMCOPY_KERNELS_TRANSFER_STREAMS_H_
#define MS_MEMCOPY_KERNELS_TRANSFER_STREAMS_H_

#include <array>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "acl/acl.h"
#include "host_buffers.h"  // MSMC_EXPORT
#include "kernels_api.h"
#include "launch_context.h"

namespace msmc {

// The lanes, one transfer stream each per device; also the values of WaitTransfer's `lane` attribute
// (kAllLanes: every lane).
enum TransferLane : int64_t { kLaneDeviceToHost = 0, kLaneHostToDevice = 1, kLaneWithinDevice = 2 };
constexpr int64_t kTransferLanes = 3;
constexpr int64_t kAllLanes = -1;

// The lane's stream on `device`, created on first use (on the host runtime it has a worker thread of
// its own, so its copies overlap the launching thread's work) and kept for the life of the process,
// as ThreadStream is.
aclrtStream TransferStream(int32_t device, int64_t lane);
// Records the lane's latest-transfer event on its stream: call after queuing a transfer there.
void MarkTransferQueued(int32_t device, int64_t lane);
// Makes `stream` wait (aclrtStreamWaitEvent, no host wait) for every transfer queued so far on the
// lane of `device` (every lane for kAllLanes).
void WaitForTransfers(int32_t device, int64_t lane, aclrtStream stream);

// Per kernel instance: kSlots slots, each an event recorded on the compute stream (the transfer's
// start, waited for by the lane) and one recorded on the lane after the transfer (its end), plus what
// must outlive the transfer (on the host runtime, the tensors' device-memory declaration). A slot is
// reused once its transfer has run: a launch waits on the host only when a whole ring of its
// transfers is still in flight. Each use of a slot has a generation, so a TransferTicket can tell
// whether the slot still holds its transfer (a reused slot's earlier transfer has completed). The
// destructor waits for every transfer, then destroys the events.
class TransferRing {
 public:
  static constexpr size_t kSlots = 4;
  struct Slot {
    aclrtEvent start = nullptr;
    aclrtEvent end = nullptr;
    bool recorded = false;
    uint64_t generation = 0;
    std::unique_ptr<DeviceMemoryScope> memory;
  };

  TransferRing() = default;
  ~TransferRing();
  TransferRing(const TransferRing &) = delete;
  TransferRing &operator=(const TransferRing &) = delete;

  // The next slot in turn, its previous transfer finished and its memory declaration dropped (called
  // by the launching thread only).
  Slot &Acquire();
  // Records the slot's end event on `lane_stream`, after the transfer's copies.
  void Release(Slot &slot, aclrtStream lane_stream);
  size_t IndexOf(const Slot &slot) const { return static_cast<size_t>(&slot - slots_.data()); }
  // Whether the transfer of slot `index`, use `generation`, has completed: the slot was reused since,
  // or its end event has completed (aclrtQueryEventStatus; never a wait). Any thread.
  bool Completed(size_t index, uint64_t generation);
  // Waits on the host (aclrtSynchronizeEvent) for that transfer only, unless the slot was reused.
  void WaitFor(size_t index, uint64_t generation);

 private:
  std::array<Slot, kSlots> slots_;
  size_t next_ = 0;
  std::mutex mu_;  // a slot's generation, recorded flag and end event's record against the pollers
};

// One eager launch of an asynchronous form as its caller follows it (ms_memcopy.nn.TransferQueue,
// through KernelInstance.submit_transfer): the launch, made later in MindSpore's launch order, tells the
// ticket which ring slot its transfer took; Done() then queries that slot's end event and Wait() waits
// for it alone. Nothing of MindSpore's is called, so neither drains MindSpore's queues.
class MSMC_KERNELS_API TransferTicket {
 public:
  // The launch queued its transfer in slot `index` of `ring`; `owner` keeps the ring alive. `failing`:
  // the launch failed after taking the slot, and Fail follows with its error (the waiters wait for it).
  void Queued(std::shared_ptr<void> owner, TransferRing *ring, size_t index, uint64_t generation, bool failing = false);
  // The launch failed with `what` (after Queued when some copies were queued).
  void Fail(const std::string &what);
  // The launch returned: a ticket that no transfer filled fails (not an asynchronous form).
  void Finish(const char *label);
  // Without waiting: whether the launch was made and its transfer has completed. A failed launch
  // throws std::runtime_error with its error once the copies it queued (if any) have completed.
  bool Done();
  // Blocks until the launch was made (in MindSpore's launch order), then waits for this transfer's end
  // event only; throws as Done() does.
  void Wait();

 private:
  enum State { kPending, kQueued, kFailing, kFailed };
  bool Transferred();  // with mu_ held: no transfer, or its copies have completed

  std::mutex mu_;
  std::condition_variable cv_;
  State state_ = kPending;
  std::string error_;
  std::shared_ptr<void> owner_;
  TransferRing *ring_ = nullptr;
  size_t index_ = 0;
  uint64_t generation_ = 0;
};

// While alive on a thread, the asynchronous form launched on that thread reports its ring slot to
// `ticket` (its ring kept alive by `owner`, the kernel instance's state).
class MSMC_KERNELS_API TicketScope {
 public:
  TicketScope(TransferTicket *ticket, std::shared_ptr<void> owner);
  ~TicketScope();
  TicketScope(const TicketScope &) = delete;
  TicketScope &operator=(const TicketScope &) = delete;
};

// Called by an asynchronous form after it queued its transfer in `slot` of `ring`: tells the ticket of
// the calling thread's TicketScope, if any; `failing`: the launch failed after taking the slot (the
// entry then fails the ticket with the error it raises).
void NoteTransfer(TransferRing &ring, const TransferRing::Slot &slot, bool failing = false);

}  // namespace msmc

// Waits on the host for every transfer queued so far on every lane of every device (the end-of-step
// synchronization of the asynchronous forms): 0, or the failing ACL code.
MSMC_EXPORT int32_t msmc_transfer_synchronize(void);
// The stream of `lane` on `device` (created if needed; the calling thread needs a current device), for
// tests that hold a lane busy with a host function; NULL on failure.
MSMC_EXPORT void *msmc_transfer_lane_stream(int32_t device, int64_t lane);
// The transfer streams created so far in this process (at most kTransferLanes per device).
MSMC_EXPORT int64_t msmc_transfer_stream_count(void);

#endif  // MS_MEMCOPY_KERNELS_TRANSFER_STREAMS_H_
