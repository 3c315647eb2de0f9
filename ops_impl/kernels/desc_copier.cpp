#include <algorithm>

#include "acl_optional.h"
#include "copy_launch.h"
#include "kernel_counters.h"
#include "kernel_error.h"

namespace msmc {

DescCopier::~DescCopier() {
  slots_.WaitAll();
  for (const std::vector<void *> &slot : descriptors_) {
    for (void *desc : slot) {
      (void)aclrtFree(desc);
      CountOwned(OwnedResource::kDescriptorBytes, -static_cast<int64_t>(desc_size_));
    }
  }
}

void *DescCopier::DescriptorFor(size_t slot, size_t index) {
  std::vector<void *> &descs = descriptors_[slot];
  while (descs.size() <= index) {
    void *desc = nullptr;
    CheckAcl(aclrtMalloc(&desc, desc_size_, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
    CountOwned(OwnedResource::kDescriptorBytes, static_cast<int64_t>(desc_size_));
    descs.push_back(desc);
  }
  return descs[index];
}

bool DescCopier::Supported() {
  if (supported_ < 0 && (aclrtGetMemcpyDescSize == nullptr || aclrtSetMemcpyDesc == nullptr ||
                         aclrtMemcpyAsyncWithDesc == nullptr)) {
    supported_ = 0;  // a CANN without them (acl_optional.h)
  }
  if (supported_ < 0) {
    const aclError ret = aclrtGetMemcpyDescSize(ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, &desc_size_);
    if (ret == ACL_ERROR_RT_FEATURE_NOT_SUPPORT) {
      supported_ = 0;
    } else {
      CheckAcl(ret, "aclrtGetMemcpyDescSize");
      supported_ = 1;
    }
  }
  return supported_ == 1;
}

size_t DescCopier::Enqueue(void *dst, const void *src, size_t count, size_t slot, size_t first_desc,
                           size_t fail_index, aclrtStream stream) {
  // Each chunk gets its own descriptor: the copy reads it when it executes, after this call returns.
  size_t index = first_desc;
  size_t n = 0;
  for (size_t done = 0; done < count; done += n, ++index) {  // done + n <= count: never wraps
    n = std::min(kMaxDescChunk, count - done);
    void *desc = DescriptorFor(slot, index);
    CheckAcl(aclrtSetMemcpyDesc(desc, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE,
                                const_cast<char *>(static_cast<const char *>(src)) + done,
                                static_cast<char *>(dst) + done, n, nullptr),
             "aclrtSetMemcpyDesc", fail_index);
    CheckAcl(aclrtMemcpyAsyncWithDesc(desc, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, stream), "aclrtMemcpyAsyncWithDesc",
             fail_index);
  }
  return index;
}

void DescCopier::Copy(void *dst, const void *src, size_t count, aclrtStream stream) {
  if (count == 0) {
    return;
  }
  if (!Supported()) {
    CheckAcl(aclrtMemcpyAsync(dst, count, src, count, ACL_MEMCPY_DEVICE_TO_DEVICE, stream), "aclrtMemcpyAsync");
    return;
  }
  SlotUse use(slots_, stream);
  Enqueue(dst, src, count, use.slot(), 0, kNoFailIndex, stream);
}

void DescCopier::CopyItems(const BatchItem *items, size_t count, aclrtStream stream) {
  plan_.Build(items, count);
  const bool with_desc = Supported();
  if (!with_desc) {
    for (size_t i = 0; i < plan_.sizes.size(); ++i) {
      CheckAcl(aclrtMemcpyAsync(plan_.dsts[i], plan_.sizes[i], plan_.srcs[i], plan_.sizes[i],
                                ACL_MEMCPY_DEVICE_TO_DEVICE, stream),
               "aclrtMemcpyAsync", plan_.first_index[i]);
    }
    return;
  }
  SlotUse use(slots_, stream);
  size_t next_desc = 0;
  for (size_t i = 0; i < plan_.sizes.size(); ++i) {
    next_desc = Enqueue(plan_.dsts[i], plan_.srcs[i], plan_.sizes[i], use.slot(), next_desc, plan_.first_index[i],
                        stream);
  }
}

}  // namespace msmc
