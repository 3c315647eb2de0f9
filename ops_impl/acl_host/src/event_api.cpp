// aclrtCreateEvent(WithFlag), aclrtDestroyEvent, aclrtRecordEvent, aclrtQueryEventStatus,
// aclrtSynchronizeEvent.
//
// Check order (CANN 9.1 source, acl/aclrt_impl/event.cpp, then the runtime):
//   event (or the status pointer) NULL -> 100000
//   create: no current context -> 107002; a flag outside ACL_EVENT_SYNC | ACL_EVENT_CAPTURE_STREAM_PROGRESS |
//     ACL_EVENT_TIME_LINE -> 107000
//   an unknown or destroyed event handle -> 107017, as for streams (host-runtime choice: CANN's runtime
//     validates the handle; the code it returns for a destroyed one is not in its public source)
//   record: an unknown or destroyed stream -> 107017; no current context -> 107002; a stream or an event
//     of another context than the calling thread's -> 107003; NULL stream: the default stream
//
// Semantics: a record replaces the previous one; aclrtQueryEventStatus reports COMPLETE once the stream
// has reached the latest record and NOT_READY before, and for an event never recorded (CANN reports only
// RT_EVENT_RECORDED as complete). aclrtSynchronizeEvent returns at once for an event never recorded or
// already complete; otherwise it waits (a host wait, aclhostGetHostWaitCount) for the recording stream
// to run what was queued on it so far, which includes the record. Destroying an event whose record is
// still queued is allowed; the record then completes unobserved.
#include <memory>

#include "acl/acl_rt.h"
#include "api_guard.h"
#include "device.h"
#include "error_state.h"
#include "event.h"
#include "stream_table.h"

namespace aclhost {
namespace {

constexpr uint32_t kKnownEventFlags = ACL_EVENT_SYNC | ACL_EVENT_CAPTURE_STREAM_PROGRESS | ACL_EVENT_TIME_LINE;

aclError LookupEvent(const char *api, aclrtEvent handle, std::shared_ptr<Event> *out)
{
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

aclError CreateEvent(const char *api, aclrtEvent *event, uint32_t flag)
{
    if (event == nullptr) {
        return Fail(ACL_ERROR_INVALID_PARAM, api, "event is NULL; expected where to store the new event");
    }
    int32_t device = -1;
    const aclError ret = DeviceManager::Instance().CurrentDevice(api, &device);
    if (ret != ACL_SUCCESS) {
        return ret;
    }
    if ((flag & ~kKnownEventFlags) != 0) {
        return Fail(ACL_ERROR_RT_PARAM_INVALID, api,
                    "flag %#x is invalid; expected a combination of ACL_EVENT_SYNC, ACL_EVENT_CAPTURE_STREAM_PROGRESS "
                    "and ACL_EVENT_TIME_LINE",
                    static_cast<unsigned>(flag));
    }
    *event = EventTable::Instance().Add(std::make_shared<Event>(device));
    return ACL_SUCCESS;
}

}  // namespace
}  // namespace aclhost

using aclhost::Event;
using aclhost::Fail;
using aclhost::GuardedCall;
using aclhost::Stream;

extern "C" aclError aclrtCreateEvent(aclrtEvent *event)
{
    constexpr const char *api = "aclrtCreateEvent";
    return GuardedCall(api, [&]() -> aclError { return aclhost::CreateEvent(api, event, ACL_EVENT_SYNC); });
}

extern "C" aclError aclrtCreateEventWithFlag(aclrtEvent *event, uint32_t flag)
{
    constexpr const char *api = "aclrtCreateEventWithFlag";
    return GuardedCall(api, [&]() -> aclError { return aclhost::CreateEvent(api, event, flag); });
}

extern "C" aclError aclrtDestroyEvent(aclrtEvent event)
{
    constexpr const char *api = "aclrtDestroyEvent";
    return GuardedCall(api, [&]() -> aclError {
        std::shared_ptr<Event> found;
        const aclError ret = aclhost::LookupEvent(api, event, &found);
        if (ret != ACL_SUCCESS) {
            return ret;
        }
        (void)aclhost::EventTable::Instance().Remove(event);
        return ACL_SUCCESS;
    });
}

extern "C" aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream)
{
    constexpr const char *api = "aclrtRecordEvent";
    return GuardedCall(api, [&]() -> aclError {
        std::shared_ptr<Event> target;
        aclError ret = aclhost::LookupEvent(api, event, &target);
        std::shared_ptr<Stream> on;
        if (ret == ACL_SUCCESS) {
            ret = aclhost::LookupStreamHandle(api, stream, &on);
        }
        if (ret == ACL_SUCCESS) {
            ret = aclhost::UseCurrentContext(api, &on);
        }
        if (ret == ACL_SUCCESS) {
            ret = aclhost::CheckStreamInCurrentContext(api, *on);
        }
        if (ret == ACL_SUCCESS && target->device() != on->device()) {
            ret = Fail(ACL_ERROR_RT_STREAM_CONTEXT, api,
                       "the event was created on device %d but the stream is on device %d",
                       static_cast<int>(target->device()), static_cast<int>(on->device()));
        }
        if (ret != ACL_SUCCESS) {
            return ret;
        }
        target->Record(on);
        return ACL_SUCCESS;
    });
}

extern "C" aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus *status)
{
    constexpr const char *api = "aclrtQueryEventStatus";
    return GuardedCall(api, [&]() -> aclError {
        if (status == nullptr) {
            return Fail(ACL_ERROR_INVALID_PARAM, api, "status is NULL; expected where to store the status");
        }
        std::shared_ptr<Event> target;
        const aclError ret = aclhost::LookupEvent(api, event, &target);
        if (ret != ACL_SUCCESS) {
            return ret;
        }
        *status = target->Complete() ? ACL_EVENT_RECORDED_STATUS_COMPLETE : ACL_EVENT_RECORDED_STATUS_NOT_READY;
        return ACL_SUCCESS;
    });
}

extern "C" aclError aclrtSynchronizeEvent(aclrtEvent event)
{
    constexpr const char *api = "aclrtSynchronizeEvent";
    return GuardedCall(api, [&]() -> aclError {
        std::shared_ptr<Event> target;
        const aclError ret = aclhost::LookupEvent(api, event, &target);
        if (ret != ACL_SUCCESS) {
            return ret;
        }
        if (target->Wait()) {
            aclhost::CountHostWait();
        }
        return ACL_SUCCESS;
    });
}
