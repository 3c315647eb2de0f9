// The strict ordering check's host-only calls: aclhostGetOrderCheckCounts, aclhostCheckHostAccess.
#include <cstdint>

#include "acl_host/acl_host_ext.h"
#include "api_guard.h"
#include "error_state.h"
#include "order_check.h"

extern "C" aclError aclhostGetOrderCheckCounts(uint64_t *queuedAccesses, uint64_t *races) {
  return aclhost::GuardedCall("aclhostGetOrderCheckCounts", [&](const char *api) -> aclError {
    if (queuedAccesses == nullptr || races == nullptr) {
      return aclhost::Fail(ACL_ERROR_INVALID_PARAM, api, "%s is NULL; expected where to store the count",
                           queuedAccesses == nullptr ? "queuedAccesses" : "races");
    }
    aclhost::OrderCheckCounts(queuedAccesses, races);
    return ACL_SUCCESS;
  });
}

extern "C" aclError aclhostCheckHostAccess(const void *ptr, size_t size, int32_t write) {
  return aclhost::GuardedCall("aclhostCheckHostAccess", [&](const char *api) -> aclError {
    if (size == 0) {
      return ACL_SUCCESS;
    }
    ACLHOST_RETURN_IF_NULL(api, ptr, "expected the memory the host accesses");
    const aclhost::ByteRegion bytes = aclhost::Bytes(ptr, size);
    const aclhost::AccessPart part = write != 0 ? aclhost::AccessPart{aclhost::ByteRegion{}, bytes}
                                                : aclhost::AccessPart{bytes, aclhost::ByteRegion{}};
    return aclhost::CheckHostAccess(api, nullptr, &part, 1);
  });
}
