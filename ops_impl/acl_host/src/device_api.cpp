// aclrtSetDevice, aclrtResetDevice, aclrtGetDevice, aclrtGetDeviceCount.
#include "acl/acl_rt.h"
#include "api_guard.h"
#include "device.h"
#include "error_state.h"

using aclhost::DeviceManager;
using aclhost::Fail;
using aclhost::GuardedCall;

extern "C" aclError aclrtSetDevice(int32_t deviceId)
{
    constexpr const char *api = "aclrtSetDevice";
    return GuardedCall(api, [&] { return DeviceManager::Instance().SetDevice(api, deviceId); });
}

extern "C" aclError aclrtResetDevice(int32_t deviceId)
{
    constexpr const char *api = "aclrtResetDevice";
    return GuardedCall(api, [&] { return DeviceManager::Instance().ResetDevice(api, deviceId); });
}

extern "C" aclError aclrtGetDevice(int32_t *deviceId)
{
    constexpr const char *api = "aclrtGetDevice";
    return GuardedCall(api, [&] {
        if (deviceId == nullptr) {
            return Fail(ACL_ERROR_INVALID_PARAM, api, "deviceId is NULL; expected a pointer to an int32_t");
        }
        return DeviceManager::Instance().CurrentDevice(api, deviceId);
    });
}

extern "C" aclError aclrtGetDeviceCount(uint32_t *count)
{
    constexpr const char *api = "aclrtGetDeviceCount";
    return GuardedCall(api, [&]() -> aclError {
        if (count == nullptr) {
            return Fail(ACL_ERROR_INVALID_PARAM, api, "count is NULL; expected a pointer to a uint32_t");
        }
        int32_t devices = 0;
        const aclError ret = DeviceManager::Instance().DeviceCount(api, &devices);
        if (ret == ACL_SUCCESS) {
            *count = static_cast<uint32_t>(devices);
        }
        return ret;
    });
}
