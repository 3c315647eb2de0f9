// Devices and contexts of the host runtime: device count, per-device references and primary contexts,
// user contexts, the calling thread's current context, default streams.
#ifndef MS_MEMCOPY_ACL_HOST_DEVICE_H_
#define MS_MEMCOPY_ACL_HOST_DEVICE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "acl/acl_rt.h"
#include "stream.h"

namespace aclhost {

// The calling thread's context as the calls that need one see it.
struct CurrentContextInfo {
  uint64_t id = 0;  // context id (the primary context of device d has id d + 1)
  int32_t device = -1;
  std::shared_ptr<Stream> default_stream;
};

class DeviceManager {
 public:
  static DeviceManager &Instance();

  // MS_MEMCOPY_DEVICE_COUNT (default 8); ACL_ERROR_INVALID_PARAM when the variable is malformed.
  aclError DeviceCount(const char *api, int32_t *count);

  aclError SetDevice(const char *api, int32_t id);
  aclError ResetDevice(const char *api, int32_t id);

  aclError CreateContext(const char *api, int32_t device, aclrtContext *out);
  aclError DestroyContext(const char *api, aclrtContext handle);
  aclError SetCurrentContext(const char *api, aclrtContext handle);
  aclError GetCurrentContext(const char *api, aclrtContext *out);

  // The calling thread's context: the one set by aclrtCreateContext / aclrtSetCurrentContext, else the
  // primary context of the thread's device (aclrtSetDevice), else, on a thread that never set either,
  // that of the process default device. ACL_ERROR_RT_CONTEXT_NULL when there is none, or it was
  // destroyed or its device reset.
  aclError Current(const char *api, CurrentContextInfo *out);
  // Current() without a failure message; false when there is no current context.
  bool CurrentIfSet(CurrentContextInfo *out);

  // The device of Current().
  aclError CurrentDevice(const char *api, int32_t *id);

  // The default stream of Current().
  aclError DefaultStream(const char *api, std::shared_ptr<Stream> *out);

 private:
  struct DeviceState {
    uint64_t references = 0;
    std::shared_ptr<Stream> default_stream;  // of the primary context
  };
  struct UserContext {
    int32_t device = -1;
    std::shared_ptr<Stream> default_stream;
  };

  DeviceManager() = default;
  aclError DeviceCountLocked(const char *api, int32_t *count);
  aclError CheckDeviceIdLocked(const char *api, int32_t id);
  bool CurrentLocked(CurrentContextInfo *out, const char **why);
  // The id of a live context named by `handle`, or 0; *primary tells whether it is a primary context.
  uint64_t LiveContextLocked(aclrtContext handle, bool *primary);

  std::mutex mutex_;
  int32_t count_ = 0;  // 0 until MS_MEMCOPY_DEVICE_COUNT has been read successfully
  int32_t process_default_ = -1;
  std::map<int32_t, DeviceState> devices_;
  std::map<uint64_t, UserContext> user_contexts_;
  uint64_t next_user_context_ = 0;
};

}  // namespace aclhost

#endif  // MS_MEMCOPY_ACL_HOST_DEVICE_H_
