// The emulated SoC: which memory-copy features the host runtime accepts (configs/soc_profiles.yaml).
#ifndef MS_MEMCOPY_ACL_HOST_SOC_PROFILE_H_
#define MS_MEMCOPY_ACL_HOST_SOC_PROFILE_H_

#include <cstddef>

#include "acl/acl_base.h"

namespace aclhost {

struct SocProfile {
  const char *name;
  bool memcpy_batch;           // aclrtMemcpyBatch / BatchAsync / V2
  bool memcpy_desc;            // aclrtGetMemcpyDescSize / SetMemcpyDesc / MemcpyAsyncWithDesc
  bool memcpy2d_d2d;           // aclrtMemcpy2dAsync device-to-device
  bool memcpy2d_null_stream;   // aclrtMemcpy2dAsync takes a NULL (default) stream
  size_t memcpy_desc_size;     // bytes per descriptor
  size_t malloc_extra_bytes;   // aclrtMalloc padding after rounding up to 32
  size_t max_streams;          // streams of one device, its default streams included
  bool peer_access;            // aclrtDeviceCanAccessPeer / EnablePeerAccess / DisablePeerAccess
  bool event_device_use_only;  // aclrtCreateEventWithFlag(ACL_EVENT_DEVICE_USE_ONLY)
};

// The profile named by MS_MEMCOPY_SOC (unset or empty: the table's default), resolved once, into *soc
// (when soc is not NULL). An unknown name leaves it unresolved, stores a message listing the valid names
// and returns ACL_ERROR_INVALID_PARAM; a later call tries again.
aclError RequireSoc(const char *api, const SocProfile **soc = nullptr);

// RequireSoc, then ACL_ERROR_RT_FEATURE_NOT_SUPPORT with "<unsupported> on SoC <name>" (unsupported: e.g.
// "batch memory copies are not supported") unless the profile has `feature`.
aclError RequireSocFeature(const char *api, bool SocProfile::*feature, const char *unsupported,
                           const SocProfile **soc = nullptr);

// Same resolution without touching the error message; NULL when MS_MEMCOPY_SOC is invalid.
const SocProfile *SocOrNull();

}  // namespace aclhost

#endif  // MS_MEMCOPY_ACL_HOST_SOC_PROFILE_H_
