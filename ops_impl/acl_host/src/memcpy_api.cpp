// aclrtMemcpy, aclrtMemcpyAsync, aclrtMemcpyAsyncWithCondition.
//
// Check order (docs/host_runtime.md, "Copies"; ACL layer 100000, runtime layer 107000 / 207000):
//   count == 0 -> success (before anything else) | dst, src NULL -> 100000 | kind not in 0..5 -> 100000
//   async: stream handle unknown or destroyed -> 107017
//   sync: destMax == 0 -> 107000 | count > destMax -> 107000 | sync: dst == src -> success, no copy
//   no current device (whatever the stream) -> 107002
//   kind 5: src must be host, dst device (107000); other kinds: CANN's kind auto-correction (107000 when a
//   pageable endpoint does not fit the kind) | extent check (host-runtime memory safety, 107000)
//   async: resolved H2H -> 207000 ("H2H is not supported", EP mode) | async: dst == src -> success
//   async, when the copy is put on the stream (not the pageable path): stream of another device -> 107003
//
// Host-runtime choices (documented in docs/host_runtime.md):
// - Pinned/device copies are enqueued. A copy with a pageable (UNREGISTERED) endpoint first drains the
//   stream (like aclrtSynchronizeStream, reporting a recorded task failure) and then copies on the calling
//   thread, so the data is there when the call returns. CANN exempts H2H/D2D kinds from this
//   (JudgeIsInvolvePageableMemory); here any pageable endpoint makes the copy synchronous.
// - ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE(5) copies the source into a buffer owned by the task at call time
//   (the caller may free or reuse the source right away) and is always enqueued.
// - aclrtMemcpy runs inline on the calling thread without waiting for any stream.
// - aclrtMemcpyAsyncWithCondition behaves as aclrtMemcpyAsync: the host runtime can always tell pinned
//   from pageable memory, so CANN's CHECK_MEMORY_PINNED never fails with 207000 here.
// - UNCONFIRMED (docs/host_runtime.md): whether on-chip D2D copies must be 64-byte aligned at run
//   time. Choice: not enforced.
// - A device-to-device copy between memory of two different devices (kind D2D or DEFAULT; CANN's ACL
//   layer refuses INTER_DEVICE_TO_DEVICE(7) with 100000 like any kind above 5) passes every check at
//   the call, as in CANN, whose runtime never compares the devices of the endpoints. It runs only when
//   peer access is enabled in both directions between the two devices (peer_access.h). Without it:
//   aclrtMemcpy copies nothing and returns ACL_ERROR_RT_SYS_DMA (507013); aclrtMemcpyAsync returns 0,
//   and the copy fails when it executes (nothing copied, 507013 from the next synchronize).
#include <memory>

#include "acl/acl_rt.h"
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
#include "stream_table.h"

namespace aclhost {
namespace {

// Shared by the argument checks of all three calls: count == 0, NULL pointers, kind range.
// Returns true when the call is already decided (*ret holds the result).
bool AclLayerChecks(const char *api, void *dst, const void *src, size_t count, int64_t kind, aclError *ret) {
  if (count == 0) {
    *ret = ACL_SUCCESS;
    return true;
  }
  if (dst == nullptr || src == nullptr) {
    *ret = Fail(ACL_ERROR_INVALID_PARAM, api, "%s is NULL; expected a valid address", dst == nullptr ? "dst" : "src");
    return true;
  }
  *ret = CheckCopyKind(api, kind);
  return *ret != ACL_SUCCESS;
}

// Location checks shared by sync and async copies: looks both endpoints up (*dst_info, *src_info)
// and gives the effective kind in *resolved.
aclError CheckLocations(const char *api, void *dst, const void *src, size_t count, int64_t kind, MemInfo *dst_info_out,
                        MemInfo *src_info_out, int64_t *resolved) {
  const MemoryRegistry &registry = MemoryRegistry::Instance();
  const MemInfo &dst_info = *dst_info_out = registry.Lookup(dst);
  const MemInfo &src_info = *src_info_out = registry.Lookup(src);
  if (kind == ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE) {
    *resolved = kind;
    ACLHOST_RETURN_IF_ERROR(CheckStagedLocations(api, src, src_info, dst, dst_info));
  } else {
    ACLHOST_RETURN_IF_ERROR(ResolveKind(api, src, src_info, dst, dst_info, kind, resolved));
  }
  ACLHOST_RETURN_IF_ERROR(CheckExtent(api, "src", src, count, src_info));
  return CheckExtent(api, "dst", dst, count, dst_info);
}

aclError MemcpySync(const char *api, void *dst, size_t destMax, const void *src, size_t count, int64_t kind) {
  aclError ret = ACL_SUCCESS;
  if (AclLayerChecks(api, dst, src, count, kind, &ret)) {
    return ret;
  }
  if (destMax == 0) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api, "destMax is 0; expected the byte capacity of dst");
  }
  if (count > destMax) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api, "count %zu exceeds destMax %zu", count, destMax);
  }
  if (dst == src) {
    return ACL_SUCCESS;
  }
  int32_t device = -1;
  ACLHOST_RETURN_IF_ERROR(DeviceManager::Instance().CurrentDevice(api, &device));
  MemInfo dst_info;
  MemInfo src_info;
  int64_t resolved = kind;
  ACLHOST_RETURN_IF_ERROR(CheckLocations(api, dst, src, count, kind, &dst_info, &src_info, &resolved));
  if (CrossesDevices(resolved, src_info, dst_info) &&
      !PeerAccessTable::Instance().Mutual(src_info.device, dst_info.device)) {
    return PeerCopyFailure(api, src_info.device, dst_info.device);
  }
  const AccessPart part{Bytes(src, count), Bytes(dst, count)};
  ACLHOST_RETURN_IF_ERROR(CheckHostAccess(api, nullptr, &part, 1));
  CopyBytes(dst_info.HostAddress(dst), src_info.HostAddress(src), count);
  return ACL_SUCCESS;
}

aclError MemcpyAsyncCommon(const char *api, void *dst, size_t destMax, const void *src, size_t count, int64_t kind,
                           aclrtStream handle) {
  aclError ret = ACL_SUCCESS;
  if (AclLayerChecks(api, dst, src, count, kind, &ret)) {
    return ret;
  }
  std::shared_ptr<Stream> stream;
  ACLHOST_RETURN_IF_ERROR(LookupStreamHandle(api, handle, &stream));
  if (count > destMax) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api, "count %zu exceeds destMax %zu", count, destMax);
  }
  ACLHOST_RETURN_IF_ERROR(UseCurrentContext(api, &stream));
  MemInfo dst_info;
  MemInfo src_info;
  int64_t resolved = kind;
  ACLHOST_RETURN_IF_ERROR(CheckLocations(api, dst, src, count, kind, &dst_info, &src_info, &resolved));
  if (resolved == ACL_MEMCPY_HOST_TO_HOST) {
    return Fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, api,
                "src %p (%s) and dst %p (%s) make a host-to-host copy, which asynchronous copies do not "
                "support; use aclrtMemcpy or memcpy",
                src, MemKindName(src_info.kind), dst, MemKindName(dst_info.kind));
  }
  if (dst == src) {
    return ACL_SUCCESS;
  }
  const StreamRef on{*stream, handle};
  const AccessPart part{Bytes(src, count), Bytes(dst, count)};
  if (resolved == ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE) {
    ACLHOST_RETURN_IF_ERROR(CheckStreamInCurrentContext(api, *stream));
    // The source is read now, on the calling thread; the stream only writes the destination.
    const AccessPart staging{part.read, ByteRegion{}};
    const AccessPart landing{ByteRegion{}, part.write};
    ACLHOST_RETURN_IF_ERROR(CheckHostAccess(api, nullptr, &staging, 1));
    OrderTicket ticket;
    ACLHOST_RETURN_IF_ERROR(CheckOrderedLaunch(api, on, &landing, 1, &ticket));
    std::unique_ptr<unsigned char[]> staged(new unsigned char[count]);
    CopyBytes(staged.get(), src_info.HostAddress(src), count);
    std::unique_ptr<StreamTask> copy =
        std::make_unique<StagedCopyTask>(dst_info.HostAddress(dst), std::move(staged), count);
    copy->order_ticket = std::move(ticket);
    stream->Enqueue(std::move(copy));
    return ACL_SUCCESS;
  }
  if (IsPageable(src_info) || IsPageable(dst_info)) {
    ACLHOST_RETURN_IF_ERROR(CheckHostAccess(api, &on, &part, 1));
    ACLHOST_RETURN_IF_ERROR(SynchronizeStream(api, *stream, -1));
    CopyBytes(dst_info.HostAddress(dst), src_info.HostAddress(src), count);
    return ACL_SUCCESS;
  }
  ACLHOST_RETURN_IF_ERROR(CheckStreamInCurrentContext(api, *stream));
  OrderTicket ticket;
  ACLHOST_RETURN_IF_ERROR(CheckOrderedLaunch(api, on, &part, 1, &ticket));
  std::unique_ptr<StreamTask> copy =
      std::make_unique<CopyTask>(dst_info.HostAddress(dst), src_info.HostAddress(src), count);
  EnqueueCopy(*stream, std::move(copy), std::move(ticket), resolved, src_info, dst_info);
  return ACL_SUCCESS;
}

}  // namespace
}  // namespace aclhost

extern "C" aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind) {
  constexpr const char *api = "aclrtMemcpy";
  return aclhost::GuardedCall(
      api, [&] { return aclhost::MemcpySync(api, dst, destMax, src, count, aclhost::RawEnumValue(kind)); });
}

extern "C" aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind,
                                     aclrtStream stream) {
  return aclhost::GuardedCall("aclrtMemcpyAsync", [&](const char *api) {
    return aclhost::MemcpyAsyncCommon(api, dst, destMax, src, count, aclhost::RawEnumValue(kind), stream);
  });
}

extern "C" aclError aclrtMemcpyAsyncWithCondition(void *dst, size_t destMax, const void *src, size_t count,
                                                  aclrtMemcpyKind kind, aclrtStream stream) {
  return aclhost::GuardedCall("aclrtMemcpyAsyncWithCondition", [&](const char *api) {
    return aclhost::MemcpyAsyncCommon(api, dst, destMax, src, count, aclhost::RawEnumValue(kind), stream);
  });
}
