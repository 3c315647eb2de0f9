// Strict ordering checks (MS_MEMCOPY_STRICT_ORDER=1, docs/host_runtime.md "Strict ordering"): the
// runtime tracks the bytes each queued, unfinished copy or memset reads and writes, and refuses a call
// that touches them from another stream, or from the host, without an ordering between the two.
//
// Ordering is happens-before with a vector clock per stream: each stream counts its tracked launches;
// a stream's clock holds, per stream, the last launch known to come before its next one (its own count,
// and what aclrtStreamWaitEvent merged from the clocks that aclrtRecordEvent captured). A queued access
// of stream s with launch number n is ordered before a launch on stream t when t's clock holds n or more
// for s. The host is ordered after an access only once it has left the tracker: when its task has run
// and been destroyed, or when the host saw it complete (a synchronize, a completed event).
//
// Every function here returns at once, doing nothing, while the check is off.
#ifndef MS_MEMCOPY_ACL_HOST_ORDER_CHECK_H_
#define MS_MEMCOPY_ACL_HOST_ORDER_CHECK_H_

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "acl/acl_base.h"
#include "order_ticket.h"

namespace aclhost {

class Stream;

// rows rows of width bytes, pitch bytes apart (one row: a plain byte range); width 0: no bytes.
struct ByteRegion {
  uintptr_t begin = 0;
  size_t width = 0;
  size_t pitch = 0;
  size_t rows = 1;
};

inline ByteRegion Bytes(const void *p, size_t count) {
  return ByteRegion{reinterpret_cast<uintptr_t>(p), count, count, 1};
}

inline ByteRegion Pitched(const void *p, size_t pitch, size_t width, size_t rows) {
  return ByteRegion{reinterpret_cast<uintptr_t>(p), width, rows > 1 ? pitch : width, rows};
}

// One copy of a call (a batch has one per item): the bytes it reads and the bytes it writes.
struct AccessPart {
  ByteRegion read;
  ByteRegion write;
};

// A stream's (or an event's) clock: (stream serial, launch count) pairs sorted by serial.
using OrderClock = std::vector<std::pair<uint64_t, uint64_t>>;

// Whether MS_MEMCOPY_STRICT_ORDER is "1", read once, at the first call that asks.
bool OrderCheckOn();

// Names a stream in race reports: its handle, or NULL for a default stream.
struct StreamRef {
  const Stream &stream;
  const void *handle;
};

namespace order_detail {
aclError CheckLaunch(const char *api, StreamRef on, const AccessPart *parts, size_t count, OrderTicket *ticket,
                     size_t *racing_part);
aclError CheckHost(const char *api, const StreamRef *after, const AccessPart *parts, size_t count, size_t *racing_part);
void Capture(const Stream &stream, OrderClock *clock);
void Merge(const Stream &stream, const OrderClock &clock);
void Retire(const OrderClock &clock);
void RetireStream(const Stream &stream);
void Forget(uint64_t stream_serial);
}  // namespace order_detail

// A launch on `on` that makes the parts' accesses when the stream runs it: ACL_ERROR_RT_PARAM_INVALID
// (107000) with a message naming both calls when a part races with a queued access (*racing_part: its
// index), else the access is tracked and *ticket (to be moved into the task) holds it.
inline aclError CheckOrderedLaunch(const char *api, StreamRef on, const AccessPart *parts, size_t count,
                                   OrderTicket *ticket, size_t *racing_part = nullptr) {
  return OrderCheckOn() ? order_detail::CheckLaunch(api, on, parts, count, ticket, racing_part) : ACL_SUCCESS;
}

// An access the calling thread makes now (a synchronous call, or the host side of an asynchronous one):
// the same error as CheckOrderedLaunch when it races; nothing is tracked. `after`: the stream the call
// drains first (the pageable rule), whose own and ordered accesses complete before the access; NULL
// for none.
inline aclError CheckHostAccess(const char *api, const StreamRef *after, const AccessPart *parts, size_t count,
                                size_t *racing_part = nullptr) {
  return OrderCheckOn() ? order_detail::CheckHost(api, after, parts, count, racing_part) : ACL_SUCCESS;
}

// aclrtRecordEvent: the stream's clock now (empty when off).
inline void CaptureOrder(const Stream &stream, OrderClock *clock) {
  if (OrderCheckOn()) {
    order_detail::Capture(stream, clock);
  }
}

// aclrtStreamWaitEvent: the stream's later launches come after everything the clock holds.
inline void MergeOrder(const Stream &stream, const OrderClock &clock) {
  if (OrderCheckOn()) {
    order_detail::Merge(stream, clock);
  }
}

// The host saw everything the clock holds complete (an event it synchronized or found complete).
inline void RetireObserved(const OrderClock &clock) {
  if (OrderCheckOn()) {
    order_detail::Retire(clock);
  }
}

// The host waited for the stream: everything its clock holds has completed.
inline void RetireStreamObserved(const Stream &stream) {
  if (OrderCheckOn()) {
    order_detail::RetireStream(stream);
  }
}

// The stream is gone: its clock, and its entries in the other clocks, leave the tracker.
inline void ForgetOrderedStream(uint64_t stream_serial) {
  if (OrderCheckOn()) {
    order_detail::Forget(stream_serial);
  }
}

// Marks the calling thread as the worker of the stream with this serial: the accesses of a host function
// running there are in that stream's order (ordered after its earlier tasks, before its later ones).
void SetOrderWorkerStream(uint64_t stream_serial) noexcept;

// aclhostGetOrderCheckCounts: the accesses tracked now, and the races reported so far.
void OrderCheckCounts(uint64_t *queued_accesses, uint64_t *races);

}  // namespace aclhost

#endif  // MS_MEMCOPY_ACL_HOST_ORDER_CHECK_H_
