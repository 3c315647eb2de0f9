// Device and context state of the host runtime.
//
// As CANN binds them (its runtime source):
// - aclrtSetDevice counts a reference on the device, creates its primary context (with the default stream)
//   on the first reference, and makes that primary context the calling thread's context, clearing a context
//   the thread had set.
// - aclrtCreateContext creates a context on a device (id outside [0, count) -> 107001), with its own default
//   stream, and makes it the calling thread's current context. aclrtSetCurrentContext makes a live context
//   current on the calling thread (NULL -> 100000 at the ACL layer; unknown, destroyed, or the primary
//   context of a reset device -> 107000, ApiErrorDecorator::ContextSetCurrent). Both replace the primary
//   context the thread had from aclrtSetDevice (CANN clears the thread's primary-context reference).
//   aclrtGetCurrentContext returns the thread's context (a created one, else the primary context of its
//   device). Streams belong to the context current when they are created.
// - aclrtDestroyContext: NULL -> 100000; unknown or destroyed -> 107002; a primary context -> 107002 (only
//   aclrtResetDevice releases it). It waits for the context's streams, destroys them (their handles then
//   read as invalid, 107017) and clears the calling thread's current context if it was that one: that
//   thread then has no context (Context::TearDown; CANN's RunDestroyedContextHandleRejectedCase expects
//   107002 from aclrtGetCurrentContext), and another thread still holding it gets 107002 too, from every
//   call that needs a context, until it sets a device or a context.
// - aclrtResetDevice drops a reference; at zero the primary context is released: its default stream is
//   drained and destroyed (a new one comes with the next aclrtSetDevice). Its user streams stay valid (the
//   primary context's id is the same after the next aclrtSetDevice). Resetting a device that holds no
//   reference (never set, or already reset) returns ACL_ERROR_RT_CONTEXT_RELEASE_ERROR (507007), as CANN's
//   primary-context release.
// - A call that needs a context when the thread has none (or it was destroyed, or its device reset) returns
//   ACL_ERROR_RT_CONTEXT_NULL (107002).
//
// Host-runtime choices (documented in docs/host_runtime.md):
// - The device count comes from MS_MEMCOPY_DEVICE_COUNT (default 8, accepted range 1..1024), read at the
//   first call that needs it; a malformed value makes that call return ACL_ERROR_INVALID_PARAM (100000)
//   and is read again by the next call.
// - The first device ever set becomes the process default: a thread that never called aclrtSetDevice
//   (nor created or set a context) uses its primary context. CANN returns 107002 there unless aclInit's
//   JSON file configures a default device, which the host runtime does not read.
// - Context handles are opaque integers, never pointers; a primary context keeps its handle across
//   aclrtResetDevice / aclrtSetDevice.
#include "device.h"

#include <cerrno>
#include <cstdlib>
#include <utility>
#include <vector>

#include "acl_host/acl_host_ext.h"
#include "error_state.h"
#include "soc_profile.h"
#include "stream_table.h"

namespace aclhost {
namespace {

constexpr const char *kDeviceCountEnv = ACLHOST_ENV_DEVICE_COUNT;
constexpr int32_t kDefaultDeviceCount = 8;
constexpr long kMaxDeviceCount = 1024;
constexpr uint64_t kFirstUserContext = 2048;  // primary contexts use ids 1..kMaxDeviceCount
constexpr uintptr_t kContextHandleBase = 0x40000000;
constexpr uintptr_t kContextHandleStride = 16;

thread_local int32_t t_current_device = -1;  // aclrtSetDevice on this thread
thread_local uint64_t t_context = 0;         // aclrtCreateContext / aclrtSetCurrentContext on this thread
thread_local bool t_bound = false;           // this thread has set a device or a context: no process default

uint64_t PrimaryContextId(int32_t device) { return static_cast<uint64_t>(device) + 1; }

// The thread's current context becomes `id`, in place of its device's primary context.
void BindContext(uint64_t id) {
  t_context = id;
  t_current_device = -1;
  t_bound = true;
}

aclrtContext ContextHandle(uint64_t id) {
  return reinterpret_cast<aclrtContext>(kContextHandleBase + kContextHandleStride * static_cast<uintptr_t>(id));
}

// The context id a handle names (0 when it cannot name one).
uint64_t ContextIdOf(aclrtContext handle) {
  const uintptr_t raw = reinterpret_cast<uintptr_t>(handle);
  if (raw <= kContextHandleBase || (raw - kContextHandleBase) % kContextHandleStride != 0) {
    return 0;
  }
  return static_cast<uint64_t>((raw - kContextHandleBase) / kContextHandleStride);
}

}  // namespace

DeviceManager &DeviceManager::Instance() {
  static DeviceManager *const manager = new DeviceManager();
  return *manager;
}

aclError DeviceManager::DeviceCountLocked(const char *api, int32_t *count) {
  if (count_ > 0) {
    *count = count_;
    return ACL_SUCCESS;
  }
  const char *env = std::getenv(kDeviceCountEnv);
  if (env == nullptr || env[0] == '\0') {
    count_ = kDefaultDeviceCount;
  } else {
    char *end = nullptr;
    errno = 0;
    const long parsed = std::strtol(env, &end, 10);
    if (errno != 0 || end == env || *end != '\0' || parsed < 1 || parsed > kMaxDeviceCount) {
      return Fail(ACL_ERROR_INVALID_PARAM, api, "%s=\"%s\" is not a device count; expected an integer in [1, %ld]",
                  kDeviceCountEnv, env, kMaxDeviceCount);
    }
    count_ = static_cast<int32_t>(parsed);
  }
  *count = count_;
  return ACL_SUCCESS;
}

aclError DeviceManager::DeviceCount(const char *api, int32_t *count) {
  std::lock_guard<std::mutex> lock(mutex_);
  return DeviceCountLocked(api, count);
}

aclError DeviceManager::CheckDeviceIdLocked(const char *api, int32_t id) {
  int32_t count = 0;
  ACLHOST_RETURN_IF_ERROR(DeviceCountLocked(api, &count));
  if (id < 0 || id >= count) {
    return Fail(ACL_ERROR_RT_INVALID_DEVICEID, api, "deviceId %d is out of range; expected [0, %d)",
                static_cast<int>(id), static_cast<int>(count));
  }
  return ACL_SUCCESS;
}

aclError DeviceManager::SetDevice(const char *api, int32_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  ACLHOST_RETURN_IF_ERROR(CheckDeviceIdLocked(api, id));
  ACLHOST_RETURN_IF_ERROR(RequireSoc(api));
  DeviceState &state = devices_[id];
  if (state.default_stream == nullptr) {
    auto stream = std::make_shared<Stream>(id, PrimaryContextId(id));
    StreamTable::Instance().AddDefaultStream(stream);
    state.default_stream = std::move(stream);
  }
  ++state.references;
  t_current_device = id;
  t_context = 0;
  t_bound = true;
  if (process_default_ < 0) {
    process_default_ = id;
  }
  return ACL_SUCCESS;
}

aclError DeviceManager::ResetDevice(const char *api, int32_t id) {
  std::shared_ptr<Stream> retired;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ACLHOST_RETURN_IF_ERROR(CheckDeviceIdLocked(api, id));
    const auto it = devices_.find(id);
    if (it == devices_.end() || it->second.references == 0) {
      return Fail(ACL_ERROR_RT_CONTEXT_RELEASE_ERROR, api,
                  "device %d holds no reference to release; call aclrtSetDevice(%d) first", static_cast<int>(id),
                  static_cast<int>(id));
    }
    if (--it->second.references == 0) {
      retired = std::move(it->second.default_stream);
      it->second.default_stream.reset();
    }
  }
  if (retired != nullptr) {
    StreamTable::Instance().RemoveDefaultStream(retired.get());
    (void)retired->WaitIdle(-1);
  }
  return ACL_SUCCESS;
}

uint64_t DeviceManager::LiveContextLocked(aclrtContext handle, bool *primary) {
  const uint64_t id = ContextIdOf(handle);
  *primary = id >= 1 && id <= static_cast<uint64_t>(kMaxDeviceCount);
  if (*primary) {
    const auto it = devices_.find(static_cast<int32_t>(id - 1));
    return it != devices_.end() && it->second.references > 0 ? id : 0;
  }
  return user_contexts_.count(id) != 0 ? id : 0;
}

aclError DeviceManager::CreateContext(const char *api, int32_t device, aclrtContext *out) {
  std::lock_guard<std::mutex> lock(mutex_);
  ACLHOST_RETURN_IF_ERROR(CheckDeviceIdLocked(api, device));
  ACLHOST_RETURN_IF_ERROR(RequireSoc(api));
  const uint64_t id = kFirstUserContext + next_user_context_;
  UserContext context;
  context.device = device;
  context.default_stream = std::make_shared<Stream>(device, id);
  StreamTable::Instance().AddDefaultStream(context.default_stream);
  user_contexts_.emplace(id, std::move(context));
  ++next_user_context_;
  BindContext(id);
  *out = ContextHandle(id);
  return ACL_SUCCESS;
}

aclError DeviceManager::DestroyContext(const char *api, aclrtContext handle) {
  std::shared_ptr<Stream> default_stream;
  uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    bool primary = false;
    id = LiveContextLocked(handle, &primary);
    if (id != 0 && primary) {
      return Fail(ACL_ERROR_RT_CONTEXT_NULL, api,
                  "context %p is the primary context of device %d; aclrtResetDevice releases it, "
                  "aclrtDestroyContext only destroys contexts from aclrtCreateContext",
                  handle, static_cast<int>(id - 1));
    }
    if (id == 0) {
      return Fail(ACL_ERROR_RT_CONTEXT_NULL, api,
                  "context %p is not a live context (never created by aclrtCreateContext, or already "
                  "destroyed)",
                  handle);
    }
    const auto it = user_contexts_.find(id);
    default_stream = std::move(it->second.default_stream);
    user_contexts_.erase(it);
    if (t_context == id) {
      t_context = 0;
    }
  }
  std::vector<std::shared_ptr<Stream>> streams = StreamTable::Instance().RemoveStreamsOfContext(id);
  StreamTable::Instance().RemoveDefaultStream(default_stream.get());
  streams.push_back(std::move(default_stream));
  for (const std::shared_ptr<Stream> &stream : streams) {
    (void)stream->WaitIdle(-1);
  }
  return ACL_SUCCESS;
}

aclError DeviceManager::SetCurrentContext(const char *api, aclrtContext handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  bool primary = false;
  const uint64_t id = LiveContextLocked(handle, &primary);
  if (id == 0) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api,
                "context %p is not a live context (destroyed, its device reset, or never created)", handle);
  }
  BindContext(id);
  return ACL_SUCCESS;
}

aclError DeviceManager::GetCurrentContext(const char *api, aclrtContext *out) {
  CurrentContextInfo info;
  ACLHOST_RETURN_IF_ERROR(Current(api, &info));
  *out = ContextHandle(info.id);
  return ACL_SUCCESS;
}

bool DeviceManager::CurrentLocked(CurrentContextInfo *out, const char **why) {
  if (t_context != 0) {
    if (t_context > static_cast<uint64_t>(kMaxDeviceCount)) {
      const auto it = user_contexts_.find(t_context);
      if (it == user_contexts_.end()) {
        *why = "the thread's current context has been destroyed; set another one or call aclrtSetDevice";
        return false;
      }
      out->id = t_context;
      out->device = it->second.device;
      out->default_stream = it->second.default_stream;
      return true;
    }
    const int32_t device = static_cast<int32_t>(t_context - 1);
    const auto it = devices_.find(device);
    if (it == devices_.end() || it->second.references == 0) {
      *why = "the thread's current context belongs to a device reset by aclrtResetDevice";
      return false;
    }
    out->id = t_context;
    out->device = device;
    out->default_stream = it->second.default_stream;
    return true;
  }
  if (t_current_device < 0 && t_bound) {
    *why =
        "the thread's current context was destroyed by aclrtDestroyContext; call aclrtSetDevice or "
        "aclrtSetCurrentContext";
    return false;
  }
  const int32_t device = t_current_device >= 0 ? t_current_device : process_default_;
  if (device < 0) {
    *why = "no device is set; call aclrtSetDevice first";
    return false;
  }
  const auto it = devices_.find(device);
  if (it == devices_.end() || it->second.references == 0) {
    *why = "the current device has been reset by aclrtResetDevice; call aclrtSetDevice again";
    return false;
  }
  out->id = PrimaryContextId(device);
  out->device = device;
  out->default_stream = it->second.default_stream;
  return true;
}

aclError DeviceManager::Current(const char *api, CurrentContextInfo *out) {
  std::lock_guard<std::mutex> lock(mutex_);
  const char *why = "";
  if (!CurrentLocked(out, &why)) {
    return Fail(ACL_ERROR_RT_CONTEXT_NULL, api, "%s", why);
  }
  return ACL_SUCCESS;
}

bool DeviceManager::CurrentIfSet(CurrentContextInfo *out) {
  std::lock_guard<std::mutex> lock(mutex_);
  const char *why = "";
  return CurrentLocked(out, &why);
}

aclError DeviceManager::CurrentDevice(const char *api, int32_t *id) {
  CurrentContextInfo info;
  ACLHOST_RETURN_IF_ERROR(Current(api, &info));
  *id = info.device;
  return ACL_SUCCESS;
}

aclError DeviceManager::DefaultStream(const char *api, std::shared_ptr<Stream> *out) {
  CurrentContextInfo info;
  ACLHOST_RETURN_IF_ERROR(Current(api, &info));
  *out = std::move(info.default_stream);
  return ACL_SUCCESS;
}

}  // namespace aclhost
