#include <algorithm>
#include <atomic>
#include <cstring>

#include "acl_optional.h"
#include "copy_launch.h"
#include "kernel_error.h"

namespace msmc {
namespace {

// Whether this process's ACL runtime has the batch call: -1 not yet known, 0 no, 1 yes.
std::atomic<int> g_batch_supported{-1};

aclrtMemcpyBatchAttr MakeAttr(aclrtMemcpyKind direction, int32_t device) {
  aclrtMemcpyBatchAttr attr;
  std::memset(&attr, 0, sizeof(attr));
  const aclrtMemLocation device_loc{static_cast<uint32_t>(device), ACL_MEM_LOCATION_TYPE_DEVICE};
  const aclrtMemLocation host_loc{0, ACL_MEM_LOCATION_TYPE_HOST};
  const bool to_host = direction == ACL_MEMCPY_DEVICE_TO_HOST;
  attr.dstLoc = to_host ? host_loc : device_loc;
  attr.srcLoc = to_host ? device_loc : host_loc;
  return attr;
}

}  // namespace

void CopyPlan::Build(const BatchItem *items, size_t count) {
  dsts.clear();
  srcs.clear();
  sizes.clear();
  first_index.clear();
  for (size_t i = 0; i < count; ++i) {
    const BatchItem &item = items[i];
    if (item.size == 0) {
      continue;
    }
    if (!sizes.empty()) {
      const char *dst_end = static_cast<char *>(dsts.back()) + sizes.back();
      const char *src_end = static_cast<const char *>(srcs.back()) + sizes.back();
      if (dst_end == item.dst && src_end == item.src) {
        sizes.back() = CheckedAdd(sizes.back(), item.size, "tensors");
        continue;
      }
    }
    dsts.push_back(item.dst);
    srcs.push_back(const_cast<void *>(item.src));
    sizes.push_back(item.size);
    first_index.push_back(i);
  }
}

void BatchCopier::CheckOverlap(const BatchItem *items, size_t count, const char *argument) {
  order_.clear();
  for (size_t i = 0; i < count; ++i) {
    if (items[i].size > 0) {
      order_.push_back(i);
    }
  }
  std::sort(order_.begin(), order_.end(), [items](size_t a, size_t b) {
    return reinterpret_cast<uintptr_t>(items[a].dst) < reinterpret_cast<uintptr_t>(items[b].dst);
  });
  for (size_t k = 1; k < order_.size(); ++k) {
    const BatchItem &prev = items[order_[k - 1]];
    const BatchItem &cur = items[order_[k]];
    const uintptr_t prev_end = reinterpret_cast<uintptr_t>(prev.dst) + prev.size;
    if (reinterpret_cast<uintptr_t>(cur.dst) < prev_end) {
      const size_t a = std::min(order_[k - 1], order_[k]);
      const size_t b = std::max(order_[k - 1], order_[k]);
      throw InputError(argument, "items " + std::to_string(a) + " and " + std::to_string(b) +
                                     " write overlapping bytes (copies within a batch run in no order, "
                                     "so the result would be undefined); nothing was copied");
    }
  }
}

void BatchCopier::Run(const BatchItem *items, size_t count, aclrtMemcpyKind direction, int32_t device,
                      const char *overlap_argument, aclrtStream stream) {
  if (overlap_argument != nullptr) {
    CheckOverlap(items, count, overlap_argument);
  }
  plan_.Build(items, count);
  if (plan_.sizes.empty()) {
    return;
  }
  if (g_batch_supported.load(std::memory_order_relaxed) == 0) {
    RunItemByItem(direction, stream);
    return;
  }
  const aclrtMemcpyBatchAttr attr = MakeAttr(direction, device);
  for (size_t begin = 0; begin < plan_.sizes.size(); begin += kMaxBatchItems) {
    const size_t end = std::min(plan_.sizes.size(), begin + kMaxBatchItems);
    RunChunk(begin, end, attr, stream);
    if (g_batch_supported.load(std::memory_order_relaxed) == 0) {
      RunItemByItem(direction, stream);  // the probe failed on the first chunk: nothing was copied
      return;
    }
  }
}

void BatchCopier::RunChunk(size_t begin, size_t end, const aclrtMemcpyBatchAttr &attr, aclrtStream stream) {
  size_t attr_index = 0;
  size_t fail_index = SIZE_MAX;
  aclrtMemcpyBatchAttr attrs[1] = {attr};
  if (aclrtMemcpyBatchAsync == nullptr) {  // a CANN without it (acl_optional.h)
    g_batch_supported.store(0, std::memory_order_relaxed);
    return;
  }
  const aclError ret =
      aclrtMemcpyBatchAsync(plan_.dsts.data() + begin, plan_.sizes.data() + begin, plan_.srcs.data() + begin,
                            plan_.sizes.data() + begin, end - begin, attrs, &attr_index, 1, &fail_index, stream);
  if (ret == ACL_ERROR_RT_FEATURE_NOT_SUPPORT && begin == 0) {
    g_batch_supported.store(0, std::memory_order_relaxed);
    return;
  }
  if (ret == ACL_SUCCESS) {
    g_batch_supported.store(1, std::memory_order_relaxed);
    return;
  }
  const size_t caller_index =
      (fail_index != SIZE_MAX && fail_index < end - begin) ? plan_.first_index[begin + fail_index] : kNoFailIndex;
  CheckAcl(ret, "aclrtMemcpyBatchAsync", caller_index);
}

void BatchCopier::RunItemByItem(aclrtMemcpyKind direction, aclrtStream stream) {
  for (size_t i = 0; i < plan_.sizes.size(); ++i) {
    CheckAcl(aclrtMemcpyAsync(plan_.dsts[i], plan_.sizes[i], plan_.srcs[i], plan_.sizes[i], direction, stream),
             "aclrtMemcpyAsync", plan_.first_index[i]);
  }
}

}  // namespace msmc
