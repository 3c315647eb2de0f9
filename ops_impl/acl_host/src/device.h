// Devices of the host runtime: count, per-thread current device, reference counts, default streams.
#ifndef MS_MEMCOPY_ACL_HOST_DEVICE_H_
#define MS_MEMCOPY_ACL_HOST_DEVICE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "acl/acl_base.h"
#include "stream.h"

namespace aclhost {

class DeviceManager {
public:
    static DeviceManager &Instance();

    // MS_MEMCOPY_DEVICE_COUNT (default 8); ACL_ERROR_INVALID_PARAM when the variable is malformed.
    aclError DeviceCount(const char *api, int32_t *count);

    aclError SetDevice(const char *api, int32_t id);
    aclError ResetDevice(const char *api, int32_t id);

    // The calling thread's device, else the process default (the first device ever set).
    // ACL_ERROR_RT_CONTEXT_NULL when there is none, or when that device has been reset to zero references.
    aclError CurrentDevice(const char *api, int32_t *id);

    // The default stream of CurrentDevice().
    aclError DefaultStream(const char *api, std::shared_ptr<Stream> *out);
    // The same without a failure message: false when there is no current device.
    bool DefaultStreamIfSet(std::shared_ptr<Stream> *out);

private:
    struct DeviceState {
        uint64_t references = 0;
        std::shared_ptr<Stream> default_stream;
    };

    DeviceManager() = default;
    aclError DeviceCountLocked(const char *api, int32_t *count);
    aclError CurrentDeviceLocked(const char *api, int32_t *id);

    std::mutex mutex_;
    int32_t count_ = 0;  // 0 until MS_MEMCOPY_DEVICE_COUNT has been read successfully
    int32_t process_default_ = -1;
    std::map<int32_t, DeviceState> devices_;
};

}  // namespace aclhost

#endif  // MS_MEMCOPY_ACL_HOST_DEVICE_H_
