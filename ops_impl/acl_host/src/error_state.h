// Per-thread "recent error" text behind aclGetRecentErrMsg.
//
// Every failing check calls Fail(), which stores a message naming the API, the parameter, its value and
// what was expected, and returns the error code so that checks read `return Fail(code, api, ...)`.
#ifndef MS_MEMCOPY_ACL_HOST_ERROR_STATE_H_
#define MS_MEMCOPY_ACL_HOST_ERROR_STATE_H_

#include <string>

#include "acl/acl_base.h"

// Evaluates `expr` (an aclError) once and returns it from the enclosing function unless it is ACL_SUCCESS:
// the host runtime's one way of passing a failed check or call up to the caller.
#define ACLHOST_RETURN_IF_ERROR(expr)        \
  do {                                       \
    const aclError aclhost_status_ = (expr); \
    if (aclhost_status_ != ACL_SUCCESS) {    \
      return aclhost_status_;                \
    }                                        \
  } while (false)

// Returns ACL_ERROR_INVALID_PARAM from the enclosing function when the pointer `param` is NULL, with the error
// text "<param> is NULL; <expected>" for `api`: the one form of the C API's null-argument checks.
#define ACLHOST_RETURN_IF_NULL(api, param, expected)                                              \
  do {                                                                                            \
    if ((param) == nullptr) {                                                                     \
      return ::aclhost::Fail(ACL_ERROR_INVALID_PARAM, (api), "%s is NULL; %s", #param, expected); \
    }                                                                                             \
  } while (false)

namespace aclhost {

// Formats "<api>: <message>", puts it in front of the calling thread's error text and returns `code`.
aclError Fail(aclError code, const char *api, const char *fmt, ...) noexcept __attribute__((format(printf, 3, 4)));

}  // namespace aclhost

#endif  // MS_MEMCOPY_ACL_HOST_ERROR_STATE_H_
