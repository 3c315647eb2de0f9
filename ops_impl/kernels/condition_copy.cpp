#include "copy_launch.h"
#include "kernel_error.h"

// Declared weak so that the kernels still load against a CANN release that has dropped the
// deprecated symbol; the copy then goes through aclrtMemcpyAsync.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
extern "C" aclError aclrtMemcpyAsyncWithCondition(void *dst, size_t destMax, const void *src, size_t count,
                                                  aclrtMemcpyKind kind, aclrtStream stream) __attribute__((weak));

namespace msmc {

void CopyWithCondition(void *dst, size_t dest_max, const void *src, size_t count, aclrtMemcpyKind kind,
                       aclrtStream stream) {
  if (count == 0) {
    return;
  }
  if (aclrtMemcpyAsyncWithCondition != nullptr) {
    CheckAcl(aclrtMemcpyAsyncWithCondition(dst, dest_max, src, count, kind, stream), "aclrtMemcpyAsyncWithCondition");
  } else {
    CheckAcl(aclrtMemcpyAsync(dst, dest_max, src, count, kind, stream), "aclrtMemcpyAsync");
  }
}

}  // namespace msmc
#pragma GCC diagnostic pop
