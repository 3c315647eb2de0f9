// MemcpyWithCondition's copy: aclrtMemcpyAsyncWithCondition, or aclrtMemcpyAsync where it is missing or refused.
#include "acl_optional.h"
#include "copy_launch.h"
#include "kernel_error.h"

namespace msmc {

void CopyWithCondition(void *dst, size_t dest_max, const void *src, size_t count, aclrtMemcpyKind kind,
                       aclrtStream stream) {
  if (count == 0) {
    return;
  }
  // The call is deprecated: a CANN without the symbol, or a driver without the user-memory attributes
  // it queries (207000), gets the same copy through aclrtMemcpyAsync.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  if (aclrtMemcpyAsyncWithCondition != nullptr) {
    const aclError ret = aclrtMemcpyAsyncWithCondition(dst, dest_max, src, count, kind, stream);
    if (ret != ACL_ERROR_RT_FEATURE_NOT_SUPPORT) {
      CheckAcl(ret, "aclrtMemcpyAsyncWithCondition");
      return;
    }
  }
#pragma GCC diagnostic pop
  CheckAcl(aclrtMemcpyAsync(dst, dest_max, src, count, kind, stream), "aclrtMemcpyAsync");
}

}  // namespace msmc
