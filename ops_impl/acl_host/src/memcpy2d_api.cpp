// aclrtMemcpy2d and aclrtMemcpy2dAsync.
//
// Check order (docs/host_runtime.md, "Copies"; CANN 9.1):
//   width == 0 or height == 0 -> success, no copy (v9.1+) | dst, src NULL -> 100000
//   width > spitch or width > dpitch -> 100000 | kind not in {H2D, D2H, D2D, DEFAULT} -> 100000
//   async: stream handle unknown or destroyed -> 107017; NULL stream on a SoC profile without
//   memcpy2d_null_stream (310B, 310P, 910) or without a device -> 107000
//   height > 5242880 or width > 5000000 -> 107000
//   sync: kind D2D -> 207000 (sync 2D supports only H2D/D2H); sync: no device -> 107002
//   kind auto-correction by location (107000 when a pageable endpoint does not fit the kind)
//   sync: DEFAULT or corrected kind resolving to D2D -> 107000; resolved H2H -> 107000
//   async: resolved D2D on a SoC profile without memcpy2d_d2d -> 207000
//   extent check of both pitched ranges (host-runtime memory safety) -> 107000
//   async: no current device -> 107002; then, when the copy is put on the stream (not the pageable
//   path), a stream of another device -> 107003
//
// Host-runtime choices (documented in docs/host_runtime.md):
// - The SoC gate for 2dAsync D2D applies to the resolved kind (a D2D request whose pointers make it H2D
//   is an H2D copy).
// - A pageable endpoint makes 2dAsync drain the stream and copy on the calling thread (as CANN).
// - UNCONFIRMED (docs/host_runtime.md): the hardware result of 2dAsync D2D on 310P/310B/910. Choice:
//   those profiles have memcpy2d_d2d false in configs/soc_profiles.yaml, so the call returns 207000.
// - A 2dAsync D2D copy between memory of two devices is accepted at the call (as CANN) and runs only with
//   peer access enabled both ways between them; else it fails when it executes (507013 from the next
//   synchronize, nothing copied), as aclrtMemcpyAsync's.
#include <memory>

#include "acl/acl_rt.h"
#include "acl_limits.h"
#include "api_guard.h"
#include "checked_math.h"
#include "copy_engine.h"
#include "copy_tasks.h"
#include "device.h"
#include "error_state.h"
#include "memcpy_common.h"
#include "memory_registry.h"
#include "order_check.h"
#include "peer_access.h"
#include "soc_profile.h"
#include "stream_table.h"

namespace aclhost {
namespace {

using acl_limits::kMax2DHeight;
using acl_limits::kMax2DWidth;

struct Copy2DArgs {
  void *dst;
  size_t dpitch;
  const void *src;
  size_t spitch;
  size_t width;
  size_t height;
  int64_t kind;
};

// The ACL-layer checks; true when the call is decided (*ret holds the result).
bool AclLayerChecks(const char *api, const Copy2DArgs &a, aclError *ret) {
  if (a.width == 0 || a.height == 0) {
    *ret = ACL_SUCCESS;
    return true;
  }
  if (a.dst == nullptr || a.src == nullptr) {
    *ret = Fail(ACL_ERROR_INVALID_PARAM, api, "%s is NULL; expected a valid address", a.dst == nullptr ? "dst" : "src");
    return true;
  }
  if (a.width > a.spitch || a.width > a.dpitch) {
    *ret = Fail(ACL_ERROR_INVALID_PARAM, api, "width %zu exceeds %s %zu; expected width <= spitch and <= dpitch",
                a.width, a.width > a.spitch ? "spitch" : "dpitch", a.width > a.spitch ? a.spitch : a.dpitch);
    return true;
  }
  if (a.kind != ACL_MEMCPY_HOST_TO_DEVICE && a.kind != ACL_MEMCPY_DEVICE_TO_HOST &&
      a.kind != ACL_MEMCPY_DEVICE_TO_DEVICE && a.kind != ACL_MEMCPY_DEFAULT) {
    *ret = Fail(ACL_ERROR_INVALID_PARAM, api,
                "kind %lld (%s) is not supported; expected ACL_MEMCPY_HOST_TO_DEVICE(1), DEVICE_TO_HOST(2), "
                "DEVICE_TO_DEVICE(3) or DEFAULT(4)",
                static_cast<long long>(a.kind), KindName(a.kind));
    return true;
  }
  return false;
}

aclError CheckLimits(const char *api, const Copy2DArgs &a) {
  if (a.height > kMax2DHeight) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api, "height %zu exceeds the limit %zu", a.height, kMax2DHeight);
  }
  if (a.width > kMax2DWidth) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api, "width %zu exceeds the limit %zu", a.width, kMax2DWidth);
  }
  return ACL_SUCCESS;
}

// Bytes from the first byte of row 0 to the last byte of the last row.
aclError CheckPitchedExtent(const char *api, const char *param, const void *p, size_t pitch, size_t width,
                            size_t height, const MemInfo &info) {
  size_t rows = 0;
  size_t span = 0;
  if (MulOverflows(height - 1, pitch, &rows) || AddOverflows(rows, width, &span)) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api, "%s extent (height %zu - 1) * pitch %zu + width %zu overflows", param,
                height, pitch, width);
  }
  return CheckExtent(api, param, p, span, info);
}

// Location-based kind resolution and the checks on the resolved kind shared by sync and async.
aclError ResolveAndCheck(const char *api, const Copy2DArgs &a, bool sync, MemInfo *dst_info, MemInfo *src_info,
                         int64_t *resolved) {
  const MemoryRegistry &registry = MemoryRegistry::Instance();
  *dst_info = registry.Lookup(a.dst);
  *src_info = registry.Lookup(a.src);
  ACLHOST_RETURN_IF_ERROR(ResolveKind(api, a.src, *src_info, a.dst, *dst_info, a.kind, resolved));
  if (sync && *resolved == ACL_MEMCPY_DEVICE_TO_DEVICE) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api,
                "kind %s resolves to device-to-device (src %p and dst %p are both device memory); "
                "aclrtMemcpy2d supports only host-to-device and device-to-host (use aclrtMemcpy2dAsync)",
                KindName(a.kind), a.src, a.dst);
  }
  if (*resolved == ACL_MEMCPY_HOST_TO_HOST) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api,
                "src %p (%s) and dst %p (%s) make a host-to-host copy; 2D copies support only H2D, D2H%s", a.src,
                MemKindName(src_info->kind), a.dst, MemKindName(dst_info->kind), sync ? "" : " or D2D");
  }
  if (!sync && *resolved == ACL_MEMCPY_DEVICE_TO_DEVICE) {
    ACLHOST_RETURN_IF_ERROR(
        RequireSocFeature(api, &SocProfile::memcpy2d_d2d, "device-to-device 2D copies are not supported"));
  }
  ACLHOST_RETURN_IF_ERROR(CheckPitchedExtent(api, "src", a.src, a.spitch, a.width, a.height, *src_info));
  return CheckPitchedExtent(api, "dst", a.dst, a.dpitch, a.width, a.height, *dst_info);
}

// The NULL stream of aclrtMemcpy2dAsync: the current device's default stream where the SoC has that
// path; 107000 on the others and when no device is set (CANN's NULL current stream).
aclError UseNullStream(const char *api, std::shared_ptr<Stream> *stream) {
  const SocProfile *soc = nullptr;
  ACLHOST_RETURN_IF_ERROR(RequireSoc(api, &soc));
  if (!soc->memcpy2d_null_stream) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api,
                "stream is NULL; SoC %s has no default stream for 2D copies, pass a stream from "
                "aclrtCreateStream",
                soc->name);
  }
  CurrentContextInfo context;
  if (!DeviceManager::Instance().CurrentIfSet(&context)) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api,
                "stream is NULL and no device is set, so there is no default stream; call aclrtSetDevice "
                "first or pass a stream from aclrtCreateStream");
  }
  *stream = std::move(context.default_stream);
  return ACL_SUCCESS;
}

// The pitched source and destination a copy reads and writes (the pitch gaps are neither).
AccessPart Accesses(const Copy2DArgs &a) {
  return AccessPart{Pitched(a.src, a.spitch, a.width, a.height), Pitched(a.dst, a.dpitch, a.width, a.height)};
}

aclError Memcpy2dSync(const char *api, const Copy2DArgs &a) {
  aclError ret = ACL_SUCCESS;
  if (AclLayerChecks(api, a, &ret)) {
    return ret;
  }
  ACLHOST_RETURN_IF_ERROR(CheckLimits(api, a));
  if (a.kind == ACL_MEMCPY_DEVICE_TO_DEVICE) {
    return Fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, api,
                "kind ACL_MEMCPY_DEVICE_TO_DEVICE(3) is not supported by aclrtMemcpy2d; expected "
                "ACL_MEMCPY_HOST_TO_DEVICE(1), DEVICE_TO_HOST(2) or DEFAULT(4) (use aclrtMemcpy2dAsync)");
  }
  int32_t device = -1;
  ACLHOST_RETURN_IF_ERROR(DeviceManager::Instance().CurrentDevice(api, &device));
  MemInfo dst_info;
  MemInfo src_info;
  int64_t resolved = a.kind;
  ACLHOST_RETURN_IF_ERROR(ResolveAndCheck(api, a, true, &dst_info, &src_info, &resolved));
  const AccessPart part = Accesses(a);
  ACLHOST_RETURN_IF_ERROR(CheckHostAccess(api, nullptr, &part, 1));
  Copy2D(dst_info.HostAddress(a.dst), a.dpitch, src_info.HostAddress(a.src), a.spitch, a.width, a.height);
  return ACL_SUCCESS;
}

aclError Memcpy2dAsync(const char *api, const Copy2DArgs &a, aclrtStream handle) {
  aclError ret = ACL_SUCCESS;
  if (AclLayerChecks(api, a, &ret)) {
    return ret;
  }
  std::shared_ptr<Stream> stream;
  ACLHOST_RETURN_IF_ERROR(LookupStreamHandle(api, handle, &stream));
  if (stream == nullptr) {
    ACLHOST_RETURN_IF_ERROR(UseNullStream(api, &stream));
  }
  ACLHOST_RETURN_IF_ERROR(CheckLimits(api, a));
  MemInfo dst_info;
  MemInfo src_info;
  int64_t resolved = a.kind;
  ACLHOST_RETURN_IF_ERROR(ResolveAndCheck(api, a, false, &dst_info, &src_info, &resolved));
  int32_t device = -1;
  ACLHOST_RETURN_IF_ERROR(DeviceManager::Instance().CurrentDevice(api, &device));
  const StreamRef on{*stream, handle};
  const AccessPart part = Accesses(a);
  if (IsPageable(src_info) || IsPageable(dst_info)) {
    ACLHOST_RETURN_IF_ERROR(CheckHostAccess(api, &on, &part, 1));
    ACLHOST_RETURN_IF_ERROR(SynchronizeStream(api, *stream, -1));
    Copy2D(dst_info.HostAddress(a.dst), a.dpitch, src_info.HostAddress(a.src), a.spitch, a.width, a.height);
    return ACL_SUCCESS;
  }
  ACLHOST_RETURN_IF_ERROR(CheckStreamInCurrentContext(api, *stream));
  OrderTicket ticket;
  ACLHOST_RETURN_IF_ERROR(CheckOrderedLaunch(api, on, &part, 1, &ticket));
  std::unique_ptr<StreamTask> copy = std::make_unique<Copy2DTask>(
      dst_info.HostAddress(a.dst), a.dpitch, src_info.HostAddress(a.src), a.spitch, a.width, a.height);
  EnqueueCopy(*stream, std::move(copy), std::move(ticket), resolved, src_info, dst_info);
  return ACL_SUCCESS;
}

}  // namespace
}  // namespace aclhost

extern "C" aclError aclrtMemcpy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                                  aclrtMemcpyKind kind) {
  return aclhost::GuardedCall("aclrtMemcpy2d", [&](const char *api) {
    const aclhost::Copy2DArgs args{dst, dpitch, src, spitch, width, height, aclhost::RawEnumValue(kind)};
    return aclhost::Memcpy2dSync(api, args);
  });
}

extern "C" aclError aclrtMemcpy2dAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                       size_t height, aclrtMemcpyKind kind, aclrtStream stream) {
  return aclhost::GuardedCall("aclrtMemcpy2dAsync", [&](const char *api) {
    const aclhost::Copy2DArgs args{dst, dpitch, src, spitch, width, height, aclhost::RawEnumValue(kind)};
    return aclhost::Memcpy2dAsync(api, args, stream);
  });
}
