// aclrtSetDevice, aclrtResetDevice, aclrtGetDevice, aclrtGetDeviceCount, aclrtGetRunMode,
// aclrtSynchronizeDevice.
//
// - aclrtGetRunMode reports ACL_HOST: the program runs on the host and "device" memory is separate memory
//   reached through the ACL copy calls, as on an accelerator card (CANN's online/EP mode). It needs no device.
// - aclrtSynchronizeDevice waits for every stream of the calling thread's context (its default stream and
//   the streams created in it): 107002 without a context; a task failure recorded on one of them is
//   reported as by aclrtSynchronizeStream (after all of them have been waited for).
#include <memory>
#include <vector>

#include "acl/acl_rt.h"
#include "api_guard.h"
#include "device.h"
#include "error_state.h"
#include "stream_table.h"

using aclhost::DeviceManager;
using aclhost::Fail;
using aclhost::GuardedCall;

extern "C" aclError aclrtSetDevice(int32_t deviceId) {
  return GuardedCall("aclrtSetDevice",
                     [&](const char *api) { return DeviceManager::Instance().SetDevice(api, deviceId); });
}

extern "C" aclError aclrtResetDevice(int32_t deviceId) {
  return GuardedCall("aclrtResetDevice",
                     [&](const char *api) { return DeviceManager::Instance().ResetDevice(api, deviceId); });
}

extern "C" aclError aclrtGetDevice(int32_t *deviceId) {
  return GuardedCall("aclrtGetDevice", [&](const char *api) {
    ACLHOST_RETURN_IF_NULL(api, deviceId, "expected a pointer to an int32_t");
    return DeviceManager::Instance().CurrentDevice(api, deviceId);
  });
}

extern "C" aclError aclrtGetDeviceCount(uint32_t *count) {
  return GuardedCall("aclrtGetDeviceCount", [&](const char *api) -> aclError {
    ACLHOST_RETURN_IF_NULL(api, count, "expected a pointer to a uint32_t");
    int32_t devices = 0;
    ACLHOST_RETURN_IF_ERROR(DeviceManager::Instance().DeviceCount(api, &devices));
    *count = static_cast<uint32_t>(devices);
    return ACL_SUCCESS;
  });
}

extern "C" aclError aclrtGetRunMode(aclrtRunMode *runMode) {
  return GuardedCall("aclrtGetRunMode", [&](const char *api) -> aclError {
    ACLHOST_RETURN_IF_NULL(api, runMode, "expected a pointer to an aclrtRunMode");
    *runMode = ACL_HOST;
    return ACL_SUCCESS;
  });
}

extern "C" aclError aclrtSynchronizeDevice(void) {
  return GuardedCall("aclrtSynchronizeDevice", [&](const char *api) -> aclError {
    aclhost::CurrentContextInfo context;
    ACLHOST_RETURN_IF_ERROR(DeviceManager::Instance().Current(api, &context));
    std::vector<std::shared_ptr<aclhost::Stream>> streams =
        aclhost::StreamTable::Instance().StreamsOfContext(context.id);
    streams.push_back(std::move(context.default_stream));
    aclError first = ACL_SUCCESS;
    for (const std::shared_ptr<aclhost::Stream> &stream : streams) {
      const aclError synced = aclhost::SynchronizeStream(api, *stream, -1);
      if (first == ACL_SUCCESS) {
        first = synced;
      }
    }
    return first;
  });
}
