// Device state of the host runtime.
//
// Host-runtime choices (documented in docs/host_runtime.md):
// - The device count comes from MS_MEMCOPY_DEVICE_COUNT (default 8, accepted range 1..1024), read at the
//   first call that needs it; a malformed value makes that call return ACL_ERROR_INVALID_PARAM (100000)
//   and is read again by the next call.
// - aclrtSetDevice counts a reference on the device and makes it the calling thread's current device.
//   CANN needs a context on every thread; here the first device ever set also becomes the process default,
//   used by threads that never called aclrtSetDevice.
// - aclrtResetDevice drops a reference; at zero the device's default stream is drained and destroyed
//   (a new one comes with the next aclrtSetDevice). User streams stay valid. Resetting a device that holds
//   no reference (never set, or already reset) returns ACL_ERROR_RT_CONTEXT_RELEASE_ERROR (507007), as
//   CANN's primary-context release.
// - A call that needs a device when none is set (or the current one was reset to zero references)
//   returns ACL_ERROR_RT_CONTEXT_NULL (107002).
#include "device.h"

#include <cerrno>
#include <cstdlib>
#include <utility>

#include "acl/acl_rt.h"
#include "error_state.h"
#include "soc_profile.h"
#include "stream_table.h"

namespace aclhost {
namespace {

constexpr const char *kDeviceCountEnv = "MS_MEMCOPY_DEVICE_COUNT";
constexpr int32_t kDefaultDeviceCount = 8;
constexpr long kMaxDeviceCount = 1024;

thread_local int32_t t_current_device = -1;

}  // namespace

DeviceManager &DeviceManager::Instance()
{
    static DeviceManager *const manager = new DeviceManager();
    return *manager;
}

aclError DeviceManager::DeviceCountLocked(const char *api, int32_t *count)
{
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
            return Fail(ACL_ERROR_INVALID_PARAM, api,
                        "%s=\"%s\" is not a device count; expected an integer in [1, %ld]", kDeviceCountEnv, env,
                        kMaxDeviceCount);
        }
        count_ = static_cast<int32_t>(parsed);
    }
    *count = count_;
    return ACL_SUCCESS;
}

aclError DeviceManager::DeviceCount(const char *api, int32_t *count)
{
    std::lock_guard<std::mutex> lock(mutex_);
    return DeviceCountLocked(api, count);
}

aclError DeviceManager::SetDevice(const char *api, int32_t id)
{
    std::lock_guard<std::mutex> lock(mutex_);
    int32_t count = 0;
    aclError ret = DeviceCountLocked(api, &count);
    if (ret != ACL_SUCCESS) {
        return ret;
    }
    if (id < 0 || id >= count) {
        return Fail(ACL_ERROR_RT_INVALID_DEVICEID, api, "deviceId %d is out of range; expected [0, %d)",
                    static_cast<int>(id), static_cast<int>(count));
    }
    if (RequireSoc(api, &ret) == nullptr) {
        return ret;
    }
    DeviceState &state = devices_[id];
    if (state.default_stream == nullptr) {
        auto stream = std::make_shared<Stream>(id);
        StreamTable::Instance().AddDefaultStream(stream);
        state.default_stream = std::move(stream);
    }
    ++state.references;
    t_current_device = id;
    if (process_default_ < 0) {
        process_default_ = id;
    }
    return ACL_SUCCESS;
}

aclError DeviceManager::ResetDevice(const char *api, int32_t id)
{
    std::shared_ptr<Stream> retired;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        int32_t count = 0;
        const aclError ret = DeviceCountLocked(api, &count);
        if (ret != ACL_SUCCESS) {
            return ret;
        }
        if (id < 0 || id >= count) {
            return Fail(ACL_ERROR_RT_INVALID_DEVICEID, api, "deviceId %d is out of range; expected [0, %d)",
                        static_cast<int>(id), static_cast<int>(count));
        }
        const auto it = devices_.find(id);
        if (it == devices_.end() || it->second.references == 0) {
            return Fail(ACL_ERROR_RT_CONTEXT_RELEASE_ERROR, api,
                        "device %d holds no reference to release; call aclrtSetDevice(%d) first",
                        static_cast<int>(id), static_cast<int>(id));
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

aclError DeviceManager::CurrentDeviceLocked(const char *api, int32_t *id)
{
    const int32_t candidate = t_current_device >= 0 ? t_current_device : process_default_;
    if (candidate < 0) {
        return Fail(ACL_ERROR_RT_CONTEXT_NULL, api, "no device is set; call aclrtSetDevice first");
    }
    const auto it = devices_.find(candidate);
    if (it == devices_.end() || it->second.references == 0) {
        return Fail(ACL_ERROR_RT_CONTEXT_NULL, api,
                    "device %d has been reset by aclrtResetDevice; call aclrtSetDevice again",
                    static_cast<int>(candidate));
    }
    *id = candidate;
    return ACL_SUCCESS;
}

aclError DeviceManager::CurrentDevice(const char *api, int32_t *id)
{
    std::lock_guard<std::mutex> lock(mutex_);
    return CurrentDeviceLocked(api, id);
}

aclError DeviceManager::DefaultStream(const char *api, std::shared_ptr<Stream> *out)
{
    std::lock_guard<std::mutex> lock(mutex_);
    int32_t id = -1;
    const aclError ret = CurrentDeviceLocked(api, &id);
    if (ret != ACL_SUCCESS) {
        return ret;
    }
    *out = devices_[id].default_stream;
    return ACL_SUCCESS;
}

}  // namespace aclhost

namespace aclhost {

bool DeviceManager::DefaultStreamIfSet(std::shared_ptr<Stream> *out)
{
    std::lock_guard<std::mutex> lock(mutex_);
    const int32_t candidate = t_current_device >= 0 ? t_current_device : process_default_;
    const auto it = devices_.find(candidate);
    if (candidate < 0 || it == devices_.end() || it->second.references == 0) {
        return false;
    }
    *out = it->second.default_stream;
    return true;
}

}  // namespace aclhost
