// The C ABI boundary: every exported ACL function body runs inside GuardedCall, so that no C++
// exception ever reaches a C caller. std::bad_alloc becomes ACL_ERROR_RT_MEMORY_ALLOCATION (207001),
// anything else ACL_ERROR_RT_INTERNAL_ERROR (507000); both store a message for aclGetRecentErrMsg.
#ifndef MS_MEMCOPY_ACL_HOST_API_GUARD_H_
#define MS_MEMCOPY_ACL_HOST_API_GUARD_H_

#include <exception>
#include <new>
#include <type_traits>

#include "acl/acl_rt.h"
#include "error_state.h"

namespace aclhost {

// `body` takes no argument, or the API's name (for its Fail messages).
template <typename Body>
aclError GuardedCall(const char *api, Body &&body) noexcept {
  try {
    if constexpr (std::is_invocable_v<Body &, const char *>) {
      return body(api);
    } else {
      return body();
    }
  } catch (const std::bad_alloc &) {
    return Fail(ACL_ERROR_RT_MEMORY_ALLOCATION, api, "host memory allocation failed inside the runtime");
  } catch (const std::exception &e) {
    return Fail(ACL_ERROR_RT_INTERNAL_ERROR, api, "internal error: %s", e.what());
  } catch (...) {
    return Fail(ACL_ERROR_RT_INTERNAL_ERROR, api, "internal error: unknown exception");
  }
}

// For the few calls that return a pointer: NULL on any exception.
template <typename Body>
const char *GuardedText(const char *api, Body &&body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    (void)Fail(ACL_ERROR_RT_MEMORY_ALLOCATION, api, "host memory allocation failed inside the runtime");
  } catch (const std::exception &e) {
    (void)Fail(ACL_ERROR_RT_INTERNAL_ERROR, api, "internal error: %s", e.what());
  } catch (...) {
    (void)Fail(ACL_ERROR_RT_INTERNAL_ERROR, api, "internal error: unknown exception");
  }
  return nullptr;
}

}  // namespace aclhost

#endif  // MS_MEMCOPY_ACL_HOST_API_GUARD_H_
