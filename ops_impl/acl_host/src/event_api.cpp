// aclrtCreateEvent(WithFlag), aclrtDestroyEvent, aclrtRecordEvent, aclrtQueryEventStatus,
// aclrtSynchronizeEvent, aclrtStreamWaitEvent.
//
// Check order (CANN 9.1 source: acl/aclrt_impl/event.cpp, then the runtime's handle guard, then
// ApiErrorDecorator in runtime/api/impl/api_error.cc, then ApiImpl):
//   event (or the status pointer) NULL -> 100000
//   create: the flag (ApiErrorDecorator::EventCreate): no bit of RT_EVENT_FLAG_MAX (0x3F) set, or a bit
//     above it (ACL_EVENT_IPC included) -> 107000; ACL_EVENT_DEVICE_USE_ONLY (RT_EVENT_MC2, 0x10) or
//     ACL_EVENT_EXTERNAL (0x20) with any other bit -> 107000. Then no current context -> 107002; then
//     ACL_EVENT_DEVICE_USE_ONLY on a SoC without it (CANN's mc2FeatureFlag; profile event_device_use_only)
//     -> 207000. aclrtCreateEvent uses CANN's RT_EVENT_DEFAULT (0x0E).
//   an unknown or destroyed event handle -> 107017, as for streams (host-runtime choice: CANN's runtime
//     validates the handle; the code it returns for a destroyed one is not in its public source)
//   record: an unknown or destroyed stream -> 107017; an ACL_EVENT_DEVICE_USE_ONLY event -> 107000 ("only
//     on the device"); no current context -> 107002; a stream or an event of another context than the
//     calling thread's -> 107003; NULL stream: the default stream
//   query / synchronize: an ACL_EVENT_EXTERNAL event -> 207000 (CANN's decorator)
//   stream wait: event NULL -> 100000; an unknown or destroyed stream, then event -> 107017; no current
//     context -> 107002; a stream of another context than the calling thread's -> 107003; NULL stream:
//     the default stream. An event of another device is waited for (CANN's cross-device wait).
//
// Semantics: a record replaces the previous one; aclrtQueryEventStatus reports COMPLETE once the stream
// has reached the latest record and NOT_READY before, and for an event never recorded (CANN reports only
// RT_EVENT_RECORDED as complete). aclrtSynchronizeEvent returns at once for an event never recorded or
// already complete; otherwise it waits (a host wait, aclhostGetHostWaitCount) for the recording stream
// to run what was queued on it so far, which includes the record. It needs no current context. Destroying
// an event whose record is still queued is allowed; the record then completes unobserved.
// aclrtStreamWaitEvent makes the stream's later tasks wait for the event's latest record at the time of
// the call (none for an event never recorded); the host does not wait. With the strict ordering check
// (order_check.h), a record captures the stream's clock and a stream wait merges it into the waiting
// stream's; a synchronized or complete event retires what its record follows.
#include <memory>

#include "acl/acl_rt.h"
#include "api_guard.h"
#include "device.h"
#include "error_state.h"
#include "event.h"
#include "order_check.h"
#include "soc_profile.h"
#include "stream_table.h"

namespace aclhost {
namespace {

// CANN's RT_EVENT_FLAG_MAX (src/runtime/core/inc/event/event.hpp): the bits aclrtCreateEventWithFlag takes.
constexpr uint32_t kEventFlagMask = 0x3F;
// Flags CANN takes only alone.
constexpr uint32_t kSoleEventFlags[] = {ACL_EVENT_DEVICE_USE_ONLY, ACL_EVENT_EXTERNAL};
// aclrtCreateEvent's flag, CANN's RT_EVENT_DEFAULT: RT_EVENT_STREAM_MARK | RT_EVENT_DDSYNC | RT_EVENT_TIME_LINE.
constexpr uint32_t kDefaultEventFlag = 0x02 | 0x04 | 0x08;

aclError CheckEventFlag(const char *api, uint32_t flag) {
  if ((flag & kEventFlagMask) == 0 || flag > kEventFlagMask) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api,
                "flag %#x is invalid; expected an OR of ACL_EVENT_SYNC (0x1), ACL_EVENT_CAPTURE_STREAM_PROGRESS "
                "(0x2), 0x4 and ACL_EVENT_TIME_LINE (0x8), or ACL_EVENT_DEVICE_USE_ONLY (0x10) or "
                "ACL_EVENT_EXTERNAL (0x20) alone",
                static_cast<unsigned>(flag));
  }
  for (const uint32_t sole : kSoleEventFlags) {
    if ((flag & sole) != 0 && (flag & ~sole) != 0) {
      return Fail(ACL_ERROR_RT_PARAM_INVALID, api,
                  "flag %#x combines %s (%#x) with other flags; it is valid only alone", static_cast<unsigned>(flag),
                  sole == ACL_EVENT_EXTERNAL ? "ACL_EVENT_EXTERNAL" : "ACL_EVENT_DEVICE_USE_ONLY",
                  static_cast<unsigned>(sole));
    }
  }
  return ACL_SUCCESS;
}

aclError CheckDeviceUseOnlySupported(const char *api) {
  return RequireSocFeature(api, &SocProfile::event_device_use_only,
                           "ACL_EVENT_DEVICE_USE_ONLY events are not supported");
}

aclError LookupEvent(const char *api, aclrtEvent handle, std::shared_ptr<Event> *out) {
  if (handle == nullptr) {
    return Fail(ACL_ERROR_INVALID_PARAM, api, "event is NULL; expected an event from aclrtCreateEvent");
  }
  *out = EventTable::Instance().Find(handle);
  if (*out == nullptr) {
    return Fail(ACL_ERROR_RT_INVALID_HANDLE, api,
                "event %p is not a live event (never created by aclrtCreateEvent, or already destroyed)", handle);
  }
  return ACL_SUCCESS;
}

// CANN's ApiErrorDecorator refuses to query or synchronize an ACL_EVENT_EXTERNAL event.
aclError CheckNotExternal(const char *api, aclrtEvent handle, const Event &event) {
  if (event.flag() == ACL_EVENT_EXTERNAL) {
    return Fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, api,
                "event %p was created with ACL_EVENT_EXTERNAL; it cannot be "
                "queried or synchronized",
                handle);
  }
  return ACL_SUCCESS;
}

aclError CreateEvent(const char *api, aclrtEvent *event, uint32_t flag) {
  ACLHOST_RETURN_IF_NULL(api, event, "expected where to store the new event");
  ACLHOST_RETURN_IF_ERROR(CheckEventFlag(api, flag));
  int32_t device = -1;
  ACLHOST_RETURN_IF_ERROR(DeviceManager::Instance().CurrentDevice(api, &device));
  if (flag == ACL_EVENT_DEVICE_USE_ONLY) {
    ACLHOST_RETURN_IF_ERROR(CheckDeviceUseOnlySupported(api));
  }
  *event = EventTable::Instance().Add(std::make_shared<Event>(device, flag));
  return ACL_SUCCESS;
}

}  // namespace
}  // namespace aclhost

using aclhost::Event;
using aclhost::Fail;
using aclhost::GuardedCall;
using aclhost::Stream;

extern "C" aclError aclrtCreateEvent(aclrtEvent *event) {
  return GuardedCall("aclrtCreateEvent", [&](const char *api) -> aclError {
    return aclhost::CreateEvent(api, event, aclhost::kDefaultEventFlag);
  });
}

extern "C" aclError aclrtCreateEventWithFlag(aclrtEvent *event, uint32_t flag) {
  return GuardedCall("aclrtCreateEventWithFlag",
                     [&](const char *api) -> aclError { return aclhost::CreateEvent(api, event, flag); });
}

extern "C" aclError aclrtDestroyEvent(aclrtEvent event) {
  return GuardedCall("aclrtDestroyEvent", [&](const char *api) -> aclError {
    std::shared_ptr<Event> found;
    ACLHOST_RETURN_IF_ERROR(aclhost::LookupEvent(api, event, &found));
    (void)aclhost::EventTable::Instance().Remove(event);
    return ACL_SUCCESS;
  });
}

extern "C" aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream) {
  return GuardedCall("aclrtRecordEvent", [&](const char *api) -> aclError {
    std::shared_ptr<Event> target;
    ACLHOST_RETURN_IF_ERROR(aclhost::LookupEvent(api, event, &target));
    std::shared_ptr<Stream> on;
    ACLHOST_RETURN_IF_ERROR(aclhost::LookupStreamHandle(api, stream, &on));
    if (target->flag() == ACL_EVENT_DEVICE_USE_ONLY) {
      return Fail(ACL_ERROR_RT_PARAM_INVALID, api,
                  "event %p was created with ACL_EVENT_DEVICE_USE_ONLY; only the device records it", event);
    }
    ACLHOST_RETURN_IF_ERROR(aclhost::UseCurrentContext(api, &on));
    ACLHOST_RETURN_IF_ERROR(aclhost::CheckStreamInCurrentContext(api, *on));
    if (target->device() != on->device()) {
      return Fail(ACL_ERROR_RT_STREAM_CONTEXT, api, "the event was created on device %d but the stream is on device %d",
                  static_cast<int>(target->device()), static_cast<int>(on->device()));
    }
    target->Record(on);
    return ACL_SUCCESS;
  });
}

extern "C" aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus *status) {
  return GuardedCall("aclrtQueryEventStatus", [&](const char *api) -> aclError {
    ACLHOST_RETURN_IF_NULL(api, status, "expected where to store the status");
    std::shared_ptr<Event> target;
    ACLHOST_RETURN_IF_ERROR(aclhost::LookupEvent(api, event, &target));
    ACLHOST_RETURN_IF_ERROR(aclhost::CheckNotExternal(api, event, *target));
    const bool complete = target->Complete();
    *status = complete ? ACL_EVENT_RECORDED_STATUS_COMPLETE : ACL_EVENT_RECORDED_STATUS_NOT_READY;
    if (complete && aclhost::OrderCheckOn()) {
      aclhost::RetireObserved(target->OrderAtRecord());
    }
    return ACL_SUCCESS;
  });
}

extern "C" aclError aclrtSynchronizeEvent(aclrtEvent event) {
  return GuardedCall("aclrtSynchronizeEvent", [&](const char *api) -> aclError {
    std::shared_ptr<Event> target;
    ACLHOST_RETURN_IF_ERROR(aclhost::LookupEvent(api, event, &target));
    ACLHOST_RETURN_IF_ERROR(aclhost::CheckNotExternal(api, event, *target));
    if (target->Wait()) {
      aclhost::CountHostWait();
    }
    if (aclhost::OrderCheckOn()) {
      aclhost::RetireObserved(target->OrderAtRecord());
    }
    return ACL_SUCCESS;
  });
}

extern "C" aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event) {
  return GuardedCall("aclrtStreamWaitEvent", [&](const char *api) -> aclError {
    ACLHOST_RETURN_IF_NULL(api, event, "expected an event from aclrtCreateEvent");
    std::shared_ptr<Stream> on;
    ACLHOST_RETURN_IF_ERROR(aclhost::LookupStreamHandle(api, stream, &on));
    std::shared_ptr<Event> target;
    ACLHOST_RETURN_IF_ERROR(aclhost::LookupEvent(api, event, &target));
    ACLHOST_RETURN_IF_ERROR(aclhost::UseCurrentContext(api, &on));
    ACLHOST_RETURN_IF_ERROR(aclhost::CheckStreamInCurrentContext(api, *on));
    if (aclhost::OrderCheckOn()) {
      aclhost::MergeOrder(*on, target->OrderAtRecord());
    }
    target->EnqueueWait(*on);
    return ACL_SUCCESS;
  });
}
