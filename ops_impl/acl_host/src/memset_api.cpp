// aclrtMemset and aclrtMemsetAsync.
//
// Check order (CANN 9.1 source: ACL layer, then the runtime's checks, then the context):
//   count == 0 -> success, nothing set | devPtr NULL -> 100000
//   async: stream handle unknown or destroyed -> 107017
//   no current context -> 107002 (sync: before the count check, as CANN's driver call comes after it)
//   count > maxCount -> 107000
//   async: the stream belongs to another context -> 107003
//   sync: devPtr not memory of aclrtMalloc / aclrtMallocHost / a framework registration -> 107000 (host
//     choice: CANN leaves it to the driver)
//   extent check (host-runtime memory safety: ptr + count wrapping; registered memory: past its
//     allocation) -> 107000
//
// Each of the count bytes is set to the low byte of value (CANN's byte-wise driver memset). aclrtMemset
// runs on the calling thread and waits for no stream. aclrtMemsetAsync on device memory puts the memset on
// the stream (the NULL stream is the current context's default stream); on host memory, pinned or
// pageable, it sets the bytes on the calling thread before it returns, without waiting for the stream, as
// CANN's MemSetAsync (runtime/core/src/launch/memory_common.cc: memset_s for RT_MEMORY_LOC_HOST and
// RT_MEMORY_LOC_UNREGISTERED).
#include <cstring>
#include <memory>

#include "acl/acl_rt.h"
#include "api_guard.h"
#include "copy_tasks.h"
#include "device.h"
#include "error_state.h"
#include "memcpy_common.h"
#include "memory_registry.h"
#include "order_check.h"
#include "stream_table.h"

namespace aclhost {
namespace {

// The checks on the memory itself: registered memory holding count bytes from devPtr (*info).
aclError CheckMemsetTarget(const char *api, void *devPtr, size_t count, MemInfo *info_out) {
  const MemInfo &info = *info_out = MemoryRegistry::Instance().Lookup(devPtr);
  if (!info.registered()) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api,
                "devPtr %p is pageable host memory; expected memory from aclrtMalloc or aclrtMallocHost", devPtr);
  }
  return CheckExtent(api, "devPtr", devPtr, count, info);
}

aclError CheckCount(const char *api, size_t maxCount, size_t count) {
  if (count > maxCount) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api, "count %zu exceeds maxCount %zu", count, maxCount);
  }
  return ACL_SUCCESS;
}

aclError MemsetSync(const char *api, void *devPtr, size_t maxCount, int32_t value, size_t count) {
  if (count == 0) {
    return ACL_SUCCESS;
  }
  ACLHOST_RETURN_IF_NULL(api, devPtr, "expected the memory to set");
  int32_t device = -1;
  ACLHOST_RETURN_IF_ERROR(DeviceManager::Instance().CurrentDevice(api, &device));
  ACLHOST_RETURN_IF_ERROR(CheckCount(api, maxCount, count));
  MemInfo info;
  ACLHOST_RETURN_IF_ERROR(CheckMemsetTarget(api, devPtr, count, &info));
  const AccessPart part{ByteRegion{}, Bytes(devPtr, count)};
  ACLHOST_RETURN_IF_ERROR(CheckHostAccess(api, nullptr, &part, 1));
  std::memset(info.HostAddress(devPtr), static_cast<unsigned char>(value), count);
  return ACL_SUCCESS;
}

aclError MemsetAsync(const char *api, void *devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream handle) {
  if (count == 0) {
    return ACL_SUCCESS;
  }
  ACLHOST_RETURN_IF_NULL(api, devPtr, "expected the memory to set");
  std::shared_ptr<Stream> stream;
  ACLHOST_RETURN_IF_ERROR(LookupStreamHandle(api, handle, &stream));
  ACLHOST_RETURN_IF_ERROR(CheckCount(api, maxCount, count));
  ACLHOST_RETURN_IF_ERROR(UseCurrentContext(api, &stream));
  ACLHOST_RETURN_IF_ERROR(CheckStreamInCurrentContext(api, *stream));
  const MemInfo info = MemoryRegistry::Instance().Lookup(devPtr);
  ACLHOST_RETURN_IF_ERROR(CheckExtent(api, "devPtr", devPtr, count, info));
  const AccessPart part{ByteRegion{}, Bytes(devPtr, count)};
  if (!info.is_device()) {  // set now, on the calling thread, whatever the stream has queued
    ACLHOST_RETURN_IF_ERROR(CheckHostAccess(api, nullptr, &part, 1));
    std::memset(info.HostAddress(devPtr), static_cast<unsigned char>(value), count);
    return ACL_SUCCESS;
  }
  OrderTicket ticket;
  ACLHOST_RETURN_IF_ERROR(CheckOrderedLaunch(api, StreamRef{*stream, handle}, &part, 1, &ticket));
  std::unique_ptr<StreamTask> task =
      std::make_unique<MemsetTask>(info.HostAddress(devPtr), static_cast<unsigned char>(value), count);
  task->order_ticket = std::move(ticket);
  stream->Enqueue(std::move(task));
  return ACL_SUCCESS;
}

}  // namespace
}  // namespace aclhost

extern "C" aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count) {
  return aclhost::GuardedCall(
      "aclrtMemset", [&](const char *api) { return aclhost::MemsetSync(api, devPtr, maxCount, value, count); });
}

extern "C" aclError aclrtMemsetAsync(void *devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream) {
  return aclhost::GuardedCall("aclrtMemsetAsync", [&](const char *api) {
    return aclhost::MemsetAsync(api, devPtr, maxCount, value, count, stream);
  });
}
