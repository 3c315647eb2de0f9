#include <algorithm>
#include <cstdint>

#include "acl_optional.h"
#include "copy_launch.h"
#include "kernel_counters.h"
#include "kernel_error.h"

namespace msmc {

namespace {

constexpr size_t kDescAlignment = 64;  // aclrtSetMemcpyDesc and aclrtMemcpyAsyncWithDesc require it

// Descriptors a copy of count bytes takes (one per chunk of at most kMaxDescChunk).
size_t ChunksOf(size_t count) { return count / kMaxDescChunk + (count % kMaxDescChunk != 0 ? 1 : 0); }

}  // namespace

DescCopier::~DescCopier() {
  slots_.WaitAll();
  for (const Block &block : blocks_) {
    if (block.base != nullptr) {
      (void)aclrtFree(block.base);
      CountOwned(OwnedResource::kDescriptorBytes, -static_cast<int64_t>(block.capacity * desc_stride_));
    }
  }
}

void DescCopier::Reserve(size_t slot, size_t count) {
  Block &block = blocks_[slot];
  if (count <= block.capacity) {
    return;
  }
  const size_t capacity = std::max(count, block.capacity <= SIZE_MAX / 2 ? 2 * block.capacity : count);
  void *base = nullptr;
  CheckAcl(aclrtMalloc(&base, CheckedMul(capacity, desc_stride_, "descriptors"), ACL_MEM_MALLOC_HUGE_FIRST),
           "aclrtMalloc");
  if (block.base != nullptr) {
    (void)aclrtFree(block.base);
    CountOwned(OwnedResource::kDescriptorBytes, -static_cast<int64_t>(block.capacity * desc_stride_));
  }
  block = Block{base, capacity};
  CountOwned(OwnedResource::kDescriptorBytes, static_cast<int64_t>(capacity * desc_stride_));
}

void *DescCopier::DescriptorAt(size_t slot, size_t index) const {
  return static_cast<char *>(blocks_[slot].base) + index * desc_stride_;
}

bool DescCopier::Supported() {
  if (supported_ < 0 &&
      (aclrtGetMemcpyDescSize == nullptr || aclrtSetMemcpyDesc == nullptr || aclrtMemcpyAsyncWithDesc == nullptr)) {
    supported_ = 0;  // a CANN without them (acl_optional.h)
  }
  if (supported_ < 0) {
    const aclError ret = aclrtGetMemcpyDescSize(ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, &desc_size_);
    if (ret == ACL_ERROR_RT_FEATURE_NOT_SUPPORT) {
      supported_ = 0;
    } else {
      CheckAcl(ret, "aclrtGetMemcpyDescSize");
      desc_stride_ = CheckedAdd(desc_size_, kDescAlignment - 1, "descriptors") / kDescAlignment * kDescAlignment;
      supported_ = 1;
    }
  }
  return supported_ == 1;
}

size_t DescCopier::Enqueue(void *dst, const void *src, size_t count, size_t slot, size_t first_desc, size_t fail_index,
                           aclrtStream stream) {
  // Each chunk gets its own descriptor: the copy reads it when it executes, after this call returns.
  size_t index = first_desc;
  size_t n = 0;
  for (size_t done = 0; done < count; done += n, ++index) {  // done + n <= count: never wraps
    n = std::min(kMaxDescChunk, count - done);
    void *desc = DescriptorAt(slot, index);
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
  Reserve(use.slot(), ChunksOf(count));
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
  size_t descriptors = 0;
  for (const size_t size : plan_.sizes) {
    descriptors = CheckedAdd(descriptors, ChunksOf(size), "descriptors");
  }
  Reserve(use.slot(), descriptors);
  size_t next_desc = 0;
  for (size_t i = 0; i < plan_.sizes.size(); ++i) {
    next_desc =
        Enqueue(plan_.dsts[i], plan_.srcs[i], plan_.sizes[i], use.slot(), next_desc, plan_.first_index[i], stream);
  }
}

}  // namespace msmc
