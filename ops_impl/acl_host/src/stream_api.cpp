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
// - aclrtSynchronizeStreamWithTimeout: -1 waits forever, > 0 waits that many milliseconds; expiry is
//   ACL_ERROR_RT_STREAM_SYNC_TIMEOUT (507046).
//
// Check order (CANN 9.1 source: the ACL layer in acl/aclrt_impl/stream.cpp, the handle guard of
// runtime/api/api_c_stream.cc, ApiErrorDecorator and ApiImpl in runtime/api/impl/):
//   aclrtDestroyStream: NULL -> 100000 | unknown or destroyed -> 107017 | no current context -> 107002 |
//     a stream of another context than the current one -> 107003 (ApiImpl::StreamDestroy)
//   aclrtSynchronizeStream(WithTimeout): timeout < -1 -> 107000 (ACL layer) | unknown or destroyed ->
//     107017 | timeout 0 -> 107000 (ApiErrorDecorator::StreamSynchronize) | no current context -> 107002,
//     whatever the stream (ApiImpl::StreamSynchronize; a stream of another context is synchronized)
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

extern "C" aclError aclrtCreateStream(aclrtStream *stream) {
  return GuardedCall("aclrtCreateStream", [&](const char *api) -> aclError {
    ACLHOST_RETURN_IF_NULL(api, stream, "expected a pointer to receive the handle");
    aclhost::CurrentContextInfo context;
    ACLHOST_RETURN_IF_ERROR(aclhost::DeviceManager::Instance().Current(api, &context));
    const aclhost::SocProfile *soc = nullptr;
    ACLHOST_RETURN_IF_ERROR(aclhost::RequireSoc(api, &soc));
    const aclrtStream created =
        StreamTable::Instance().AddUserStream(std::make_shared<Stream>(context.device, context.id), soc->max_streams);
    if (created == nullptr) {
      return Fail(ACL_ERROR_RT_NO_STREAM_RESOURCE, api,
                  "device %d already has %zu streams (its default streams included), the most a %s has",
                  static_cast<int>(context.device), soc->max_streams, soc->name);
    }
    *stream = created;
    return ACL_SUCCESS;
  });
}

extern "C" aclError aclrtDestroyStream(aclrtStream stream) {
  return GuardedCall("aclrtDestroyStream", [&](const char *api) -> aclError {
    ACLHOST_RETURN_IF_NULL(api, stream, "expected a handle from aclrtCreateStream");
    std::shared_ptr<Stream> target;
    ACLHOST_RETURN_IF_ERROR(aclhost::LookupStreamHandle(api, stream, &target));
    aclhost::CurrentContextInfo context;
    ACLHOST_RETURN_IF_ERROR(aclhost::DeviceManager::Instance().Current(api, &context));
    if (target->context() != context.id) {
      return Fail(ACL_ERROR_RT_STREAM_CONTEXT, api,
                  "stream %p belongs to another context (on device %d) than the calling thread's current "
                  "context (on device %d); make its context current (aclrtSetCurrentContext, aclrtSetDevice) "
                  "to destroy it",
                  stream, static_cast<int>(target->device()), static_cast<int>(context.device));
    }
    std::shared_ptr<Stream> removed = StreamTable::Instance().RemoveUserStream(stream);
    if (removed == nullptr) {  // another thread destroyed it meanwhile
      return Fail(ACL_ERROR_RT_INVALID_HANDLE, api,
                  "stream %p is not a live stream (never created by aclrtCreateStream, or already destroyed)", stream);
    }
    (void)removed->WaitIdle(-1);
    return ACL_SUCCESS;  // the last reference joins the worker thread
  });
}

extern "C" aclError aclrtSynchronizeStream(aclrtStream stream) {
  return GuardedCall("aclrtSynchronizeStream", [&](const char *api) -> aclError {
    std::shared_ptr<Stream> target;
    ACLHOST_RETURN_IF_ERROR(aclhost::LookupStreamHandle(api, stream, &target));
    ACLHOST_RETURN_IF_ERROR(aclhost::UseCurrentContext(api, &target));
    return aclhost::SynchronizeStream(api, *target, -1);
  });
}

extern "C" aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout) {
  return GuardedCall("aclrtSynchronizeStreamWithTimeout", [&](const char *api) -> aclError {
    const auto invalid_timeout = [&] {
      return Fail(ACL_ERROR_RT_PARAM_INVALID, api,
                  "timeout %d is invalid; expected -1 (wait forever) or a positive number of ms",
                  static_cast<int>(timeout));
    };
    if (timeout < -1) {
      return invalid_timeout();
    }
    std::shared_ptr<Stream> target;
    ACLHOST_RETURN_IF_ERROR(aclhost::LookupStreamHandle(api, stream, &target));
    if (timeout == 0) {
      return invalid_timeout();
    }
    ACLHOST_RETURN_IF_ERROR(aclhost::UseCurrentContext(api, &target));
    return aclhost::SynchronizeStream(api, *target, timeout);
  });
}

extern "C" aclError aclhostSetStreamDeferred(aclrtStream stream, int32_t deferred) {
  return GuardedCall("aclhostSetStreamDeferred", [&](const char *api) -> aclError {
    ACLHOST_RETURN_IF_NULL(api, stream, "expected a stream from aclrtCreateStream");
    std::shared_ptr<Stream> target;
    ACLHOST_RETURN_IF_ERROR(aclhost::ResolveStream(api, stream, &target));
    target->SetDeferred(deferred != 0);
    return ACL_SUCCESS;
  });
}

extern "C" aclError aclhostCompleteStream(aclrtStream stream) {
  return GuardedCall("aclhostCompleteStream", [&](const char *api) -> aclError {
    ACLHOST_RETURN_IF_NULL(api, stream, "expected a stream from aclrtCreateStream");
    std::shared_ptr<Stream> target;
    ACLHOST_RETURN_IF_ERROR(aclhost::LookupStreamHandle(api, stream, &target));
    return aclhost::CompleteStream(api, *target);
  });
}

extern "C" aclError aclhostGetHostWaitCount(uint64_t *count) {
  return GuardedCall("aclhostGetHostWaitCount", [&](const char *api) -> aclError {
    ACLHOST_RETURN_IF_NULL(api, count, "expected where to store the count");
    *count = aclhost::HostWaitCount();
    return ACL_SUCCESS;
  });
}

extern "C" aclError aclhostLaunchHostFunc(aclrtStream stream, aclhostHostFunc fn, void *userData) {
  return GuardedCall("aclhostLaunchHostFunc", [&](const char *api) -> aclError {
    ACLHOST_RETURN_IF_NULL(api, fn, "expected a function to run on the stream");
    std::shared_ptr<Stream> target;
    ACLHOST_RETURN_IF_ERROR(aclhost::ResolveStream(api, stream, &target));
    target->Enqueue(std::make_unique<aclhost::HostFuncTask>(fn, userData));
    return ACL_SUCCESS;
  });
}
