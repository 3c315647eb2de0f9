// aclrtCreateStream, aclrtDestroyStream, aclrtSynchronizeStream(WithTimeout), aclhostSetStreamDeferred,
// aclhostCompleteStream, aclhostGetHostWaitCount,
// aclhostLaunchHostFunc.
//
// Host-runtime choices (documented in docs/host_runtime.md):
// - A stream belongs to the context current at creation (ACL_ERROR_RT_CONTEXT_NULL without one); its
//   worker thread starts with the first task.
// - An unknown or destroyed handle is ACL_ERROR_RT_INVALID_HANDLE (107017, as CANN's handle guard); handles
//   are never reused.
// - A device has at most the SoC profile's max_streams streams, its default streams included (CANN's
//   hardware stream limit); aclrtCreateStream beyond it is ACL_ERROR_RT_NO_STREAM_RESOURCE (207008).
// - aclrtDestroyStream waits for the stream's pending tasks, then destroys it.
// - A task failure (a descriptor copy whose descriptor is invalid when it executes) is reported once, by
//   the next synchronize of that stream: ACL_ERROR_RT_INTERNAL_ERROR (507000) with the task's message.
// - aclrtSynchronizeStreamWithTimeout: timeout < -1 or 0 is 107000 (as CANN's runtime layer); -1 waits
//   forever, > 0 waits that many milliseconds; expiry is ACL_ERROR_RT_STREAM_SYNC_TIMEOUT (507046).
#include <memory>
#include <utility>

#include "acl/acl_rt.h"
#include "acl_host/acl_host_ext.h"
#include "api_guard.h"
#include "copy_tasks.h"
#include "device.h"
#include "error_state.h"
#include "soc_profile.h"
#include "stream_table.h"

using aclhost::Fail;
using aclhost::GuardedCall;
using aclhost::Stream;
using aclhost::StreamTable;

extern "C" aclError aclrtCreateStream(aclrtStream *stream)
{
    constexpr const char *api = "aclrtCreateStream";
    return GuardedCall(api, [&]() -> aclError {
        if (stream == nullptr) {
            return Fail(ACL_ERROR_INVALID_PARAM, api, "stream is NULL; expected a pointer to receive the handle");
        }
        aclhost::CurrentContextInfo context;
        const aclError ret = aclhost::DeviceManager::Instance().Current(api, &context);
        if (ret != ACL_SUCCESS) {
            return ret;
        }
        aclError soc_error = ACL_SUCCESS;
        const aclhost::SocProfile *soc = aclhost::RequireSoc(api, &soc_error);
        if (soc == nullptr) {
            return soc_error;
        }
        const aclrtStream created = StreamTable::Instance().AddUserStream(
            std::make_shared<Stream>(context.device, context.id), soc->max_streams);
        if (created == nullptr) {
            return Fail(ACL_ERROR_RT_NO_STREAM_RESOURCE, api,
                        "device %d already has %zu streams (its default streams included), the most a %s has",
                        static_cast<int>(context.device), soc->max_streams, soc->name);
        }
        *stream = created;
        return ACL_SUCCESS;
    });
}

extern "C" aclError aclrtDestroyStream(aclrtStream stream)
{
    constexpr const char *api = "aclrtDestroyStream";
    return GuardedCall(api, [&]() -> aclError {
        if (stream == nullptr) {
            return Fail(ACL_ERROR_INVALID_PARAM, api, "stream is NULL; expected a handle from aclrtCreateStream");
        }
        std::shared_ptr<Stream> removed = StreamTable::Instance().RemoveUserStream(stream);
        if (removed == nullptr) {
            return Fail(ACL_ERROR_RT_INVALID_HANDLE, api,
                        "stream %p is not a live stream (never created by aclrtCreateStream, or already destroyed)",
                        stream);
        }
        (void)removed->WaitIdle(-1);
        return ACL_SUCCESS;  // the last reference joins the worker thread
    });
}

extern "C" aclError aclrtSynchronizeStream(aclrtStream stream)
{
    constexpr const char *api = "aclrtSynchronizeStream";
    return GuardedCall(api, [&]() -> aclError {
        std::shared_ptr<Stream> target;
        const aclError ret = aclhost::ResolveStream(api, stream, &target);
        if (ret != ACL_SUCCESS) {
            return ret;
        }
        return aclhost::SynchronizeStream(api, *target, -1);
    });
}

extern "C" aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout)
{
    constexpr const char *api = "aclrtSynchronizeStreamWithTimeout";
    return GuardedCall(api, [&]() -> aclError {
        if (timeout < -1 || timeout == 0) {
            return Fail(ACL_ERROR_RT_PARAM_INVALID, api,
                        "timeout %d is invalid; expected -1 (wait forever) or a positive number of ms",
                        static_cast<int>(timeout));
        }
        std::shared_ptr<Stream> target;
        const aclError ret = aclhost::ResolveStream(api, stream, &target);
        if (ret != ACL_SUCCESS) {
            return ret;
        }
        return aclhost::SynchronizeStream(api, *target, timeout);
    });
}

extern "C" aclError aclhostSetStreamDeferred(aclrtStream stream, int32_t deferred)
{
    constexpr const char *api = "aclhostSetStreamDeferred";
    return GuardedCall(api, [&]() -> aclError {
        if (stream == nullptr) {
            return Fail(ACL_ERROR_INVALID_PARAM, api, "stream is NULL; expected a stream from aclrtCreateStream");
        }
        std::shared_ptr<Stream> target;
        const aclError ret = aclhost::ResolveStream(api, stream, &target);
        if (ret != ACL_SUCCESS) {
            return ret;
        }
        target->SetDeferred(deferred != 0);
        return ACL_SUCCESS;
    });
}

extern "C" aclError aclhostCompleteStream(aclrtStream stream)
{
    constexpr const char *api = "aclhostCompleteStream";
    return GuardedCall(api, [&]() -> aclError {
        if (stream == nullptr) {
            return Fail(ACL_ERROR_INVALID_PARAM, api, "stream is NULL; expected a stream from aclrtCreateStream");
        }
        std::shared_ptr<Stream> target;
        const aclError ret = aclhost::LookupStreamHandle(api, stream, &target);
        if (ret != ACL_SUCCESS) {
            return ret;
        }
        return aclhost::CompleteStream(api, *target);
    });
}

extern "C" aclError aclhostGetHostWaitCount(uint64_t *count)
{
    constexpr const char *api = "aclhostGetHostWaitCount";
    return GuardedCall(api, [&]() -> aclError {
        if (count == nullptr) {
            return Fail(ACL_ERROR_INVALID_PARAM, api, "count is NULL; expected where to store the count");
        }
        *count = aclhost::HostWaitCount();
        return ACL_SUCCESS;
    });
}

extern "C" aclError aclhostLaunchHostFunc(aclrtStream stream, aclhostHostFunc fn, void *userData)
{
    constexpr const char *api = "aclhostLaunchHostFunc";
    return GuardedCall(api, [&]() -> aclError {
        if (fn == nullptr) {
            return Fail(ACL_ERROR_INVALID_PARAM, api, "fn is NULL; expected a function to run on the stream");
        }
        std::shared_ptr<Stream> target;
        const aclError ret = aclhost::ResolveStream(api, stream, &target);
        if (ret != ACL_SUCCESS) {
            return ret;
        }
        target->Enqueue(std::make_unique<aclhost::HostFuncTask>(fn, userData));
        return ACL_SUCCESS;
    });
}
