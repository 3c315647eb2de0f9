// Checks shared by the memory-copy calls: kind translation, CANN's location-based kind correction,
// the staged-copy location rule and the host runtime's extent (memory-safety) check.
#ifndef MS_MEMCOPY_ACL_HOST_MEMCPY_COMMON_H_
#define MS_MEMCOPY_ACL_HOST_MEMCPY_COMMON_H_

#include <cstddef>
#include <cstdint>

#include "acl/acl_rt.h"
#include "memory_registry.h"

namespace aclhost {

// "ACL_MEMCPY_HOST_TO_DEVICE(1)" and so on; "unknown kind" for anything else.
const char *KindName(int64_t kind);

// ACL-layer check of aclrtMemcpy / aclrtMemcpyAsync(WithCondition): kinds 0..5, else
// ACL_ERROR_INVALID_PARAM.
aclError CheckCopyKind(const char *api, int64_t kind);

// CANN's MemcpyKindAutoCorrect for a requested kind in 0..4: pinned and device endpoints force the real
// direction silently, a pageable endpoint accepts only the kinds of its row of the table (else
// ACL_ERROR_RT_PARAM_INVALID), DEFAULT takes the row's default. *resolved is one of 0..3.
aclError ResolveKind(const char *api, const void *src, const MemInfo &src_info, const void *dst,
                     const MemInfo &dst_info, int64_t kind, int64_t *resolved);

// ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE: the source must not be device memory and the destination must be.
aclError CheckStagedLocations(const char *api, const void *src, const MemInfo &src_info, const void *dst,
                              const MemInfo &dst_info);

// Host-runtime memory safety: [p, p + n) must not wrap around the address space and, when p is registered
// memory, must end inside p's allocation. ACL_ERROR_RT_PARAM_INVALID otherwise.
aclError CheckExtent(const char *api, const char *param, const void *p, size_t n, const MemInfo &info);

// The check of CheckExtent without the message (for loops over many items; inline for them).
inline bool ExtentFits(const void *p, size_t n, const MemInfo &info) {
  uintptr_t end = 0;
  return !__builtin_add_overflow(reinterpret_cast<uintptr_t>(p), n, &end) &&
         (!info.registered() || end <= info.base + info.size);
}

inline bool IsPageable(const MemInfo &info) { return info.kind == MemKind::kUnregistered; }

// A device-to-device copy (resolved kind) whose endpoints live on two different devices: it runs only with
// peer access between them (peer_access.h).
inline bool CrossesDevices(int64_t resolved, const MemInfo &src_info, const MemInfo &dst_info) {
  return resolved == ACL_MEMCPY_DEVICE_TO_DEVICE && src_info.is_device() && dst_info.is_device() &&
         src_info.device != dst_info.device;
}

}  // namespace aclhost

#endif  // MS_MEMCOPY_ACL_HOST_MEMCPY_COMMON_H_
