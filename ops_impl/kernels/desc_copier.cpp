#include <algorithm>

#include "copy_launch.h"
#include "kernel_error.h"

namespace msmc {
namespace {

// aclrtSetMemcpyDesc takes at most this many bytes per descriptor.
constexpr size_t kMaxDescCount = 4ULL << 30;

}  // namespace

DescCopier::~DescCopier() {
  for (void *desc : descriptors_) {
    (void)aclrtFree(desc);
  }
}

void *DescCopier::DescriptorFor(size_t chunk) {
  while (descriptors_.size() <= chunk) {
    void *desc = nullptr;
    CheckAcl(aclrtMalloc(&desc, desc_size_, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
    descriptors_.push_back(desc);
  }
  return descriptors_[chunk];
}

void DescCopier::Copy(void *dst, const void *src, size_t count, aclrtStream stream) {
  if (count == 0) {
    return;
  }
  if (supported_ < 0) {
    const aclError ret = aclrtGetMemcpyDescSize(ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, &desc_size_);
    if (ret == ACL_ERROR_RT_FEATURE_NOT_SUPPORT) {
      (void)aclGetRecentErrMsg();  // consumed: the fallback is not a failure
      supported_ = 0;
    } else {
      CheckAcl(ret, "aclrtGetMemcpyDescSize");
      supported_ = 1;
    }
  }
  if (supported_ == 0) {
    CheckAcl(aclrtMemcpyAsync(dst, count, src, count, ACL_MEMCPY_DEVICE_TO_DEVICE, stream), "aclrtMemcpyAsync");
    return;
  }
  // Each chunk gets its own descriptor: the copy reads it when it executes, after this call returns.
  size_t chunk = 0;
  for (size_t done = 0; done < count; done += kMaxDescCount, ++chunk) {
    const size_t n = std::min(kMaxDescCount, count - done);
    void *desc = DescriptorFor(chunk);
    CheckAcl(aclrtSetMemcpyDesc(desc, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE,
                                const_cast<char *>(static_cast<const char *>(src)) + done,
                                static_cast<char *>(dst) + done, n, nullptr),
             "aclrtSetMemcpyDesc");
    CheckAcl(aclrtMemcpyAsyncWithDesc(desc, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, stream), "aclrtMemcpyAsyncWithDesc");
  }
}

}  // namespace msmc
