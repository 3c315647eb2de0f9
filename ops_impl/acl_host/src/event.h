// Events of the host runtime: a marker put on a stream (aclrtRecordEvent) that completes when the
// stream reaches it, and the table of live event handles.
#ifndef MS_MEMCOPY_ACL_HOST_EVENT_H_
#define MS_MEMCOPY_ACL_HOST_EVENT_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include "acl/acl_rt.h"
#include "handle_map.h"
#include "order_check.h"
#include "stream.h"

namespace aclhost {

class Event : public std::enable_shared_from_this<Event> {
 public:
  Event(int32_t device, uint32_t flag) : device_(device), flag_(flag) {}

  int32_t device() const { return device_; }
  uint32_t flag() const { return flag_; }  // the aclrtCreateEventWithFlag flag

  // Puts the marker on stream; a record replaces the previous one (the event then tracks the new one).
  void Record(const std::shared_ptr<Stream> &stream);
  // Never recorded, or the stream has not yet reached the latest record: false.
  bool Complete() const;
  // Waits until the latest record is reached; returns whether it had to wait (false for an event
  // never recorded or already complete).
  bool Wait();
  // aclrtStreamWaitEvent: puts a task on `waiter` that lets the stream's later tasks run only once the
  // latest record (at this call) is reached; nothing for an event never recorded.
  void EnqueueWait(Stream &waiter);
  // The recording stream's ordering clock at the latest record (order_check.h; empty when off).
  OrderClock OrderAtRecord() const;

 private:
  void Reached(uint64_t generation);
  void WaitReached(uint64_t generation);

  const int32_t device_;
  const uint32_t flag_;
  mutable std::mutex mutex_;
  uint64_t recorded_ = 0;  // generation of the latest record (0: never recorded)
  uint64_t reached_ = 0;   // latest generation the stream has reached
  std::weak_ptr<Stream> stream_;
  std::condition_variable reached_changed_;
  OrderClock order_at_record_;
};

class EventTable {
 public:
  static EventTable &Instance();

  aclrtEvent Add(std::shared_ptr<Event> event);
  std::shared_ptr<Event> Find(aclrtEvent handle) const;  // empty when unknown
  std::shared_ptr<Event> Remove(aclrtEvent handle);      // empty when unknown
  size_t Count() const;                                  // live handles

 private:
  EventTable() = default;

  mutable std::mutex mutex_;
  HandleMap<Event> events_{0x1008};  // offset by 8 from stream handles: never one of theirs
};

}  // namespace aclhost

#endif  // MS_MEMCOPY_ACL_HOST_EVENT_H_
