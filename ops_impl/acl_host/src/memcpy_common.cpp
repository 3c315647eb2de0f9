// Kind and location checks shared by the memory-copy calls.
#include "memcpy_common.h"

#include <string>

#include "checked_math.h"
#include "error_state.h"

namespace aclhost {
namespace {

constexpr int64_t kH2H = ACL_MEMCPY_HOST_TO_HOST;
constexpr int64_t kH2D = ACL_MEMCPY_HOST_TO_DEVICE;
constexpr int64_t kD2H = ACL_MEMCPY_DEVICE_TO_HOST;
constexpr int64_t kD2D = ACL_MEMCPY_DEVICE_TO_DEVICE;
constexpr int64_t kNoForcedKind = -1;

constexpr unsigned Bit(int64_t kind) { return 1U << static_cast<unsigned>(kind); }

// One row of CANN's kind revision table: a forced kind (pinned/device on both sides), or the kinds a
// pageable endpoint accepts and the kind DEFAULT becomes.
struct KindRule {
  int64_t forced;
  unsigned allowed;
  int64_t default_kind;
};

// Indexed by [src location][dst location] with HOST = 0, DEVICE = 1, UNREGISTERED = 2.
constexpr KindRule kKindRules[3][3] = {
    {{kH2H, 0, kH2H}, {kH2D, 0, kH2D}, {kNoForcedKind, Bit(kH2H) | Bit(kH2D), kH2H}},
    {{kD2H, 0, kD2H}, {kD2D, 0, kD2D}, {kNoForcedKind, Bit(kD2H) | Bit(kD2D), kD2H}},
    {{kNoForcedKind, Bit(kH2H) | Bit(kD2H), kH2H},
     {kNoForcedKind, Bit(kH2D) | Bit(kD2D), kH2D},
     {kNoForcedKind, Bit(kH2H) | Bit(kH2D) | Bit(kD2H) | Bit(kD2D), kH2H}},
};

}  // namespace

const char *KindName(int64_t kind) {
  switch (kind) {
    case ACL_MEMCPY_HOST_TO_HOST:
      return "ACL_MEMCPY_HOST_TO_HOST(0)";
    case ACL_MEMCPY_HOST_TO_DEVICE:
      return "ACL_MEMCPY_HOST_TO_DEVICE(1)";
    case ACL_MEMCPY_DEVICE_TO_HOST:
      return "ACL_MEMCPY_DEVICE_TO_HOST(2)";
    case ACL_MEMCPY_DEVICE_TO_DEVICE:
      return "ACL_MEMCPY_DEVICE_TO_DEVICE(3)";
    case ACL_MEMCPY_DEFAULT:
      return "ACL_MEMCPY_DEFAULT(4)";
    case ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE:
      return "ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE(5)";
    case ACL_MEMCPY_INNER_DEVICE_TO_DEVICE:
      return "ACL_MEMCPY_INNER_DEVICE_TO_DEVICE(6)";
    case ACL_MEMCPY_INTER_DEVICE_TO_DEVICE:
      return "ACL_MEMCPY_INTER_DEVICE_TO_DEVICE(7)";
    default:
      return "an unknown kind";
  }
}

aclError CheckCopyKind(const char *api, int64_t kind) {
  if (kind < ACL_MEMCPY_HOST_TO_HOST || kind > ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE) {
    return Fail(ACL_ERROR_INVALID_PARAM, api,
                "kind %lld (%s) is not supported; expected ACL_MEMCPY_HOST_TO_HOST(0), HOST_TO_DEVICE(1), "
                "DEVICE_TO_HOST(2), DEVICE_TO_DEVICE(3), DEFAULT(4) or HOST_TO_BUF_TO_DEVICE(5)",
                static_cast<long long>(kind), KindName(kind));
  }
  return ACL_SUCCESS;
}

aclError ResolveKind(const char *api, const void *src, const MemInfo &src_info, const void *dst,
                     const MemInfo &dst_info, int64_t kind, int64_t *resolved) {
  const KindRule &rule = kKindRules[src_info.LocationType()][dst_info.LocationType()];
  if (rule.forced != kNoForcedKind) {
    *resolved = rule.forced;
    return ACL_SUCCESS;
  }
  if (kind == ACL_MEMCPY_DEFAULT) {
    *resolved = rule.default_kind;
    return ACL_SUCCESS;
  }
  if (kind >= 0 && kind < 4 && (rule.allowed & Bit(kind)) != 0) {
    *resolved = kind;
    return ACL_SUCCESS;
  }
  std::string allowed;
  for (int64_t k = 0; k < 4; ++k) {
    if ((rule.allowed & Bit(k)) != 0) {
      allowed += ", ";
      allowed += KindName(k);
    }
  }
  return Fail(ACL_ERROR_RT_PARAM_INVALID, api, "kind %s does not fit src %p (%s) and dst %p (%s); expected %s%s",
              KindName(kind), src, MemKindName(src_info.kind), dst, MemKindName(dst_info.kind),
              KindName(ACL_MEMCPY_DEFAULT), allowed.c_str());
}

aclError CheckStagedLocations(const char *api, const void *src, const MemInfo &src_info, const void *dst,
                              const MemInfo &dst_info) {
  if (src_info.is_device() || !dst_info.is_device()) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api,
                "kind ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE(5) needs host src and device dst, got src %p (%s) and "
                "dst %p (%s)",
                src, MemKindName(src_info.kind), dst, MemKindName(dst_info.kind));
  }
  return ACL_SUCCESS;
}

aclError CheckExtent(const char *api, const char *param, const void *p, size_t n, const MemInfo &info) {
  uintptr_t end = 0;
  if (RangeEndOverflows(p, n, &end)) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api, "%s %p + %zu bytes overflows the address space", param, p, n);
  }
  if (info.registered() && end > info.base + info.size) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api,
                "%s range [%p, +%zu) runs %zu bytes past the end of its allocation (%s at %p, %zu bytes)", param, p, n,
                static_cast<size_t>(end - (info.base + info.size)), MemKindName(info.kind),
                reinterpret_cast<void *>(info.base), info.size);
  }
  return ACL_SUCCESS;
}

}  // namespace aclhost
