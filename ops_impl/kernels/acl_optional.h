// The ACL calls newer than the oldest CANN the kernels support, declared weak: the kernels library
// then loads against a CANN release that lacks them, and each call site takes its fallback (per-item
// aclrtMemcpyAsync) when the symbol is absent, as it does when the call returns 207000
// (ACL_ERROR_RT_FEATURE_NOT_SUPPORT) on a SoC without the feature. Include this header instead of
// calling these functions through acl/acl.h alone.
#ifndef MS_MEMCOPY_KERNELS_ACL_OPTIONAL_H_
#define MS_MEMCOPY_KERNELS_ACL_OPTIONAL_H_

#include "acl/acl.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
extern "C" {
aclError aclrtMemcpyBatchAsync(void **dsts, size_t *destMaxs, void **srcs, size_t *sizes, size_t numBatches,
                               aclrtMemcpyBatchAttr *attrs, size_t *attrsIndexes, size_t numAttrs, size_t *failIndex,
                               aclrtStream stream) __attribute__((weak));
aclError aclrtGetMemcpyDescSize(aclrtMemcpyKind kind, size_t *descSize) __attribute__((weak));
aclError aclrtSetMemcpyDesc(void *desc, aclrtMemcpyKind kind, void *srcAddr, void *dstAddr, size_t count, void *config)
    __attribute__((weak));
aclError aclrtMemcpyAsyncWithDesc(void *desc, aclrtMemcpyKind kind, aclrtStream stream) __attribute__((weak));
aclError aclrtMemcpyAsyncWithCondition(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind,
                                       aclrtStream stream) __attribute__((weak));
}
#pragma GCC diagnostic pop

#endif  // MS_MEMCOPY_KERNELS_ACL_OPTIONAL_H_
