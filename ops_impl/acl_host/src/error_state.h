// Per-thread "recent error" text behind aclGetRecentErrMsg.
//
// Every failing check calls Fail(), which stores a message naming the API, the parameter, its value and
// what was expected, and returns the error code so that checks read `return Fail(code, api, ...)`.
#ifndef MS_MEMCOPY_ACL_HOST_ERROR_STATE_H_
#define MS_MEMCOPY_ACL_HOST_ERROR_STATE_H_

#include <string>

#include "acl/acl_base.h"

namespace aclhost {

// Formats "<api>: <message>", puts it in front of the calling thread's error text and returns `code`.
aclError Fail(aclError code, const char *api, const char *fmt, ...) noexcept __attribute__((format(printf, 3, 4)));

}  // namespace aclhost

#endif  // MS_MEMCOPY_ACL_HOST_ERROR_STATE_H_
