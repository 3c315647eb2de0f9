// aclhostGetLiveResourceCounts: how many events and pinned host allocations are alive, for tests that
// show that repeated calls do not accumulate them.
#include <cstdint>

#include "acl_host/acl_host_ext.h"
#include "api_guard.h"
#include "error_state.h"
#include "event.h"
#include "memory_registry.h"

extern "C" aclError aclhostGetLiveResourceCounts(uint64_t *events, uint64_t *pinnedAllocations) {
  return aclhost::GuardedCall("aclhostGetLiveResourceCounts", [&](const char *api) -> aclError {
    if (events == nullptr || pinnedAllocations == nullptr) {
      return aclhost::Fail(ACL_ERROR_INVALID_PARAM, api, "%s is NULL; expected where to store the count",
                           events == nullptr ? "events" : "pinnedAllocations");
    }
    *events = aclhost::EventTable::Instance().Count();
    *pinnedAllocations = aclhost::MemoryRegistry::Instance().AllocationCount(aclhost::MemKind::kPinnedHost);
    return ACL_SUCCESS;
  });
}
