// aclrtMemcpyBatch, aclrtMemcpyBatchAsync and their V2 forms (the same without failIndex).
//
// Check order (docs/host_runtime.md, "Copies"; CANN 9.1):
//   failIndex NULL (non-V2) -> 100000 | sizes NULL -> 100000 | numBatches == 0 -> 100000 |
//   every sizes[i] == 0 -> success, *failIndex = SIZE_MAX, nothing else checked |
//   dsts, destMaxs, srcs, attrs, attrsIndexes NULL -> 100000 | destMaxs[i] < sizes[i] -> 100000 |
//   attrs[k].rsv != 0 -> 100000 | SoC without memcpy_batch -> 207000 | async: stream unknown -> 107017 |
//   *failIndex = SIZE_MAX | numAttrs == 0 or numAttrs > numBatches -> 107000 |
//   sync: numBatches > 4096 -> 107000 | attrsIndexes[0] != 0, not strictly increasing, or >= numBatches
//   -> 107000 | async: no current context -> 107002, whatever the stream (ApiImpl::MemcpyBatchAsync's
//   CHECK_CONTEXT_VALID), then NULL is the default stream | per item i (failIndex = i, 107000):
//   size == 0 or size > destMax, src NULL, dst NULL, attribute location of dst then src does not match
//   the real location (pageable counts as HOST, HOST_NUMA input as HOST, DEVICE also compares the id),
//   real src location == real dst location (only H2D and D2H), (host runtime) range past its allocation.
//   Attribute k applies to items attrsIndexes[k] .. attrsIndexes[k+1]-1, the last one to the end.
//
// Host-runtime choices (documented in docs/host_runtime.md):
// - Async (as CANN's item loop): items are validated in order; a run of pinned/device items becomes one
//   stream task (one item array per call); an item with a pageable endpoint first submits the run, drains
//   the stream and copies inline. The registry lock is not held across the whole loop: every 256 items a
//   waiting registry writer (free, registration) gets in, after the items validated so far are enqueued. When item i
//   fails, the items before it stay submitted or done, nothing after it is touched, *failIndex = i and the call returns
//   107000.
// - Sync: every item is validated first (no partial effect), then all are copied on the calling thread;
//   the call returns after the copies. The per-item checks are the async ones (the spec states the
//   zero-size / NULL item checks only for the async loop; applying them here is this runtime's choice).
//   The sync call waits for no stream and needs no device.
// - The rsv check reads attrs[k] only for k < min(numAttrs, numBatches), so a numAttrs larger than
//   numBatches never makes the runtime read past the attribute array; it is reported by the later
//   numAttrs > numBatches check (107000).
#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

#include "acl/acl_rt.h"
#include "acl_limits.h"
#include "api_guard.h"
#include "checked_math.h"
#include "copy_engine.h"
#include "copy_tasks.h"
#include "error_state.h"
#include "memcpy_common.h"
#include "memory_registry.h"
#include "order_check.h"
#include "soc_profile.h"
#include "stream_table.h"

namespace aclhost {
namespace {

using acl_limits::kMaxBatchItems;

struct BatchArgs {
  void **dsts;
  size_t *destMaxs;
  void **srcs;
  size_t *sizes;
  size_t count;
  aclrtMemcpyBatchAttr *attrs;
  size_t *attrsIndexes;
  size_t numAttrs;
  size_t *failIndex;  // NULL for the V2 calls
};

void SetFailIndex(const BatchArgs &a, size_t value) {
  if (a.failIndex != nullptr) {
    *a.failIndex = value;
  }
}

// ACL-layer checks; true when the call is decided (*ret holds the result).
bool AclLayerChecks(const char *api, const BatchArgs &a, bool has_fail_index, aclError *ret) {
  *ret = ACL_SUCCESS;
  if (has_fail_index && a.failIndex == nullptr) {
    *ret = Fail(ACL_ERROR_INVALID_PARAM, api, "failIndex is NULL; expected a pointer to a size_t");
    return true;
  }
  if (a.sizes == nullptr) {
    *ret = Fail(ACL_ERROR_INVALID_PARAM, api, "sizes is NULL; expected an array of numBatches sizes");
    return true;
  }
  if (a.count == 0) {
    *ret = Fail(ACL_ERROR_INVALID_PARAM, api, "numBatches is 0; expected a positive count");
    return true;
  }
  bool all_zero = true;
  for (size_t i = 0; i < a.count && all_zero; ++i) {
    all_zero = a.sizes[i] == 0;
  }
  if (all_zero) {
    SetFailIndex(a, SIZE_MAX);
    return true;
  }
  const struct {
    const void *value;
    const char *name;
  } arrays[] = {{a.dsts, "dsts"},
                {a.destMaxs, "destMaxs"},
                {a.srcs, "srcs"},
                {a.attrs, "attrs"},
                {a.attrsIndexes, "attrsIndexes"}};
  for (const auto &array : arrays) {
    if (array.value == nullptr) {
      *ret = Fail(ACL_ERROR_INVALID_PARAM, api, "%s is NULL; expected an array", array.name);
      return true;
    }
  }
  for (size_t i = 0; i < a.count; ++i) {
    if (a.destMaxs[i] < a.sizes[i]) {
      *ret = Fail(ACL_ERROR_INVALID_PARAM, api, "sizes[%zu] %zu exceeds destMaxs[%zu] %zu", i, a.sizes[i], i,
                  a.destMaxs[i]);
      return true;
    }
  }
  const size_t readable_attrs = a.numAttrs < a.count ? a.numAttrs : a.count;
  for (size_t k = 0; k < readable_attrs; ++k) {
    for (size_t j = 0; j < sizeof(a.attrs[k].rsv); ++j) {
      if (a.attrs[k].rsv[j] != 0) {
        *ret = Fail(ACL_ERROR_INVALID_PARAM, api, "attrs[%zu].rsv[%zu] is %u; expected 0", k, j,
                    static_cast<unsigned>(a.attrs[k].rsv[j]));
        return true;
      }
    }
  }
  return false;
}

aclError CheckBatchFeature(const char *api) {
  return RequireSocFeature(api, &SocProfile::memcpy_batch, "batch memory copies are not supported");
}

// Runtime-layer checks of the counts and attribute indexes.
aclError RuntimeChecks(const char *api, const BatchArgs &a, bool sync) {
  if (a.numAttrs == 0) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api, "numAttrs is 0; expected 1 .. numBatches (%zu)", a.count);
  }
  if (a.numAttrs > a.count) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api, "numAttrs %zu exceeds numBatches %zu", a.numAttrs, a.count);
  }
  if (sync && a.count > kMaxBatchItems) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api, "numBatches %zu exceeds the limit %zu of a synchronous batch", a.count,
                kMaxBatchItems);
  }
  if (a.attrsIndexes[0] != 0) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api, "attrsIndexes[0] is %zu; expected 0", a.attrsIndexes[0]);
  }
  for (size_t k = 1; k < a.numAttrs; ++k) {
    if (a.attrsIndexes[k] <= a.attrsIndexes[k - 1]) {
      return Fail(ACL_ERROR_RT_PARAM_INVALID, api,
                  "attrsIndexes[%zu] %zu is not greater than attrsIndexes[%zu] %zu; expected strictly "
                  "increasing indexes",
                  k, a.attrsIndexes[k], k - 1, a.attrsIndexes[k - 1]);
    }
    if (a.attrsIndexes[k] >= a.count) {
      return Fail(ACL_ERROR_RT_PARAM_INVALID, api, "attrsIndexes[%zu] %zu is not below numBatches %zu", k,
                  a.attrsIndexes[k], a.count);
    }
  }
  return ACL_SUCCESS;
}

const char *LocationName(int64_t type) {
  switch (type) {
    case ACL_MEM_LOCATION_TYPE_HOST:
      return "HOST";
    case ACL_MEM_LOCATION_TYPE_DEVICE:
      return "DEVICE";
    case ACL_MEM_LOCATION_TYPE_UNREGISTERED:
      return "UNREGISTERED";
    case ACL_MEM_LOCATION_TYPE_MANAGED:
      return "MANAGED";
    case ACL_MEM_LOCATION_TYPE_HOST_NUMA:
      return "HOST_NUMA";
    default:
      return "unknown";
  }
}

// The real location as batch copies see it: device memory is DEVICE, pinned and pageable memory HOST.
int64_t BatchLocation(const MemInfo &info) {
  return info.is_device() ? ACL_MEM_LOCATION_TYPE_DEVICE : ACL_MEM_LOCATION_TYPE_HOST;
}

// Whether an attribute's declared location matches the real one (the per-item fast path).
inline bool LocationMatches(const aclrtMemLocation &declared, const MemInfo &info) {
  const int64_t raw_type = RawEnumValue(declared.type);
  const int64_t type = raw_type == ACL_MEM_LOCATION_TYPE_HOST_NUMA ? int64_t{ACL_MEM_LOCATION_TYPE_HOST} : raw_type;
  const int64_t real = BatchLocation(info);
  return type == real && (real != ACL_MEM_LOCATION_TYPE_DEVICE || static_cast<int64_t>(declared.id) == info.device);
}

// The failure of a location that does not match (cold: only called when LocationMatches is false).
__attribute__((noinline, cold)) aclError LocationFailure(const char *api, size_t item, size_t attr_index,
                                                         const char *side, const aclrtMemLocation &declared,
                                                         const void *ptr, const MemInfo &info) {
  const int64_t raw_type = RawEnumValue(declared.type);
  char where[96] = " (declare host memory, pinned or pageable, as ACL_MEM_LOCATION_TYPE_HOST)";
  if (info.is_device()) {
    (void)std::snprintf(where, sizeof(where), " of device %d", static_cast<int>(info.device));
  }
  return Fail(ACL_ERROR_RT_PARAM_INVALID, api,
              "item %zu: attrs[%zu].%sLoc {id %u, type %lld (%s)} does not match %ss[%zu] %p, which is %s%s", item,
              attr_index, side, static_cast<unsigned>(declared.id), static_cast<long long>(raw_type),
              LocationName(raw_type), side, item, ptr, MemKindName(info.kind), where);
}

__attribute__((noinline, cold)) aclError ExtentFailure(const char *api, const char *array, size_t i, const void *ptr,
                                                       size_t size, const MemInfo &info) {
  char name[64];
  (void)std::snprintf(name, sizeof(name), "item %zu: %s[%zu]", i, array, i);
  return CheckExtent(api, name, ptr, size, info);
}

__attribute__((noinline, cold)) aclError ItemFailure(const char *api, const BatchArgs &a, size_t i) {
  if (a.sizes[i] == 0 || a.sizes[i] > a.destMaxs[i]) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api, "item %zu: sizes[%zu] is %zu; expected 0 < size <= destMaxs[%zu] %zu",
                i, i, a.sizes[i], i, a.destMaxs[i]);
  }
  return Fail(ACL_ERROR_RT_PARAM_INVALID, api, "item %zu: %ss[%zu] is NULL", i, a.srcs[i] == nullptr ? "src" : "dst",
              i);
}

__attribute__((noinline, cold)) aclError SameSideFailure(const char *api, size_t i, const MemInfo &src_info) {
  return Fail(ACL_ERROR_RT_PARAM_INVALID, api,
              "item %zu: srcs[%zu] and dsts[%zu] are both %s memory; only host-to-device and device-to-host "
              "copies are supported",
              i, i, i, src_info.is_device() ? "device" : "host");
}

// Per-item checks of item i under attribute attr_index. The checks run inline; messages are built by
// cold functions only when a check fails.
inline aclError ValidateItem(const char *api, const BatchArgs &a, size_t i, size_t attr_index,
                             MemoryRegistry::Reader &reader, MemInfo *dst_info, MemInfo *src_info) {
  const size_t size = a.sizes[i];
  if (size == 0 || size > a.destMaxs[i] || a.srcs[i] == nullptr || a.dsts[i] == nullptr) {
    return ItemFailure(api, a, i);
  }
  const aclrtMemcpyBatchAttr &attr = a.attrs[attr_index];
  *dst_info = reader.Lookup(a.dsts[i]);
  if (!LocationMatches(attr.dstLoc, *dst_info)) {
    return LocationFailure(api, i, attr_index, "dst", attr.dstLoc, a.dsts[i], *dst_info);
  }
  *src_info = reader.Lookup(a.srcs[i]);
  if (!LocationMatches(attr.srcLoc, *src_info)) {
    return LocationFailure(api, i, attr_index, "src", attr.srcLoc, a.srcs[i], *src_info);
  }
  if (BatchLocation(*dst_info) == BatchLocation(*src_info)) {
    return SameSideFailure(api, i, *src_info);
  }
  if (!ExtentFits(a.srcs[i], size, *src_info)) {
    return ExtentFailure(api, "srcs", i, a.srcs[i], size, *src_info);
  }
  if (!ExtentFits(a.dsts[i], size, *dst_info)) {
    return ExtentFailure(api, "dsts", i, a.dsts[i], size, *dst_info);
  }
  return ACL_SUCCESS;
}

// Item i as the copy engine moves it: at the host addresses of its endpoints.
inline CopyItem HostItem(const BatchArgs &a, size_t i, const MemInfo &dst_info, const MemInfo &src_info) {
  return CopyItem{dst_info.HostAddress(a.dsts[i]), src_info.HostAddress(a.srcs[i]), a.sizes[i]};
}

// Index of the attribute that applies to item i, advancing from the attribute of item i - 1.
size_t AttributeFor(const BatchArgs &a, size_t i, size_t current) {
  while (current + 1 < a.numAttrs && i >= a.attrsIndexes[current + 1]) {
    ++current;
  }
  return current;
}

// The strict ordering check (order_check.h) of items [begin, end): a launch on *launch_on, or the host's
// access after draining *after; on a race the fail index is the item that races.
aclError CheckItemsOrder(const char *api, const BatchArgs &a, size_t begin, size_t end, const StreamRef *launch_on,
                         const StreamRef *after, OrderTicket *ticket) {
  if (!OrderCheckOn()) {
    return ACL_SUCCESS;
  }
  std::vector<AccessPart> parts(end - begin);
  for (size_t i = begin; i < end; ++i) {
    parts[i - begin] = AccessPart{Bytes(a.srcs[i], a.sizes[i]), Bytes(a.dsts[i], a.sizes[i])};
  }
  size_t racing = 0;
  const aclError ret = launch_on != nullptr
                           ? CheckOrderedLaunch(api, *launch_on, parts.data(), parts.size(), ticket, &racing, begin)
                           : CheckHostAccess(api, after, parts.data(), parts.size(), &racing, begin);
  if (ret != ACL_SUCCESS) {
    SetFailIndex(a, begin + racing);
  }
  return ret;
}

aclError RunAsyncItems(const char *api, const BatchArgs &a, Stream &stream, aclrtStream handle) {
  std::shared_ptr<CopyItem[]> items(new CopyItem[a.count]);
  const StreamRef on{stream, handle};
  size_t run_begin = 0;
  size_t run_end = 0;
  const auto submit_run = [&]() -> aclError {
    if (run_end > run_begin) {
      std::unique_ptr<StreamTask> task = std::make_unique<BatchRunTask>(items, run_begin, run_end);
      ACLHOST_RETURN_IF_ERROR(CheckItemsOrder(api, a, run_begin, run_end, &on, nullptr, &task->order_ticket));
      stream.Enqueue(std::move(task));
      run_begin = run_end;
    }
    return ACL_SUCCESS;
  };
  // The registry's shared lock is held from validating an item until its copy is enqueued (or done),
  // so aclrtFree, which removes the allocation under the exclusive lock and then drains the streams,
  // never frees memory under a copy of this call. Every kItemsPerLockCheck items, with everything
  // validated so far enqueued, the loop lets waiting frees and registrations in.
  constexpr size_t kItemsPerLockCheck = 256;
  MemoryRegistry::Reader reader(MemoryRegistry::Instance());
  size_t attr_index = 0;
  for (size_t i = 0; i < a.count; ++i) {
    if (i % kItemsPerLockCheck == 0 && i != 0 && reader.WritersWaiting()) {
      ACLHOST_RETURN_IF_ERROR(submit_run());
      reader.Pause();
      reader.WaitForWriters();
      reader.Resume();
    }
    attr_index = AttributeFor(a, i, attr_index);
    MemInfo dst_info;
    MemInfo src_info;
    aclError ret = ValidateItem(api, a, i, attr_index, reader, &dst_info, &src_info);
    if (ret != ACL_SUCCESS) {
      ACLHOST_RETURN_IF_ERROR(submit_run());
      SetFailIndex(a, i);
      return ret;
    }
    if (IsPageable(dst_info) || IsPageable(src_info)) {
      ACLHOST_RETURN_IF_ERROR(submit_run());
      ACLHOST_RETURN_IF_ERROR(CheckItemsOrder(api, a, i, i + 1, nullptr, &on, nullptr));
      reader.Pause();
      ACLHOST_RETURN_IF_ERROR(SynchronizeStream(api, stream, -1));
      reader.Resume();
      // The registry may have changed while the lock was released: check the item again.
      ret = ValidateItem(api, a, i, attr_index, reader, &dst_info, &src_info);
      if (ret != ACL_SUCCESS) {
        SetFailIndex(a, i);
        return ret;
      }
      const CopyItem item = HostItem(a, i, dst_info, src_info);
      CopyBytes(item.dst, item.src, item.size);
      continue;
    }
    items[run_end++] = HostItem(a, i, dst_info, src_info);
  }
  return submit_run();
}

aclError MemcpyBatchAsyncImpl(const char *api, const BatchArgs &a, bool has_fail_index, aclrtStream handle) {
  aclError ret = ACL_SUCCESS;
  if (AclLayerChecks(api, a, has_fail_index, &ret)) {
    return ret;
  }
  ACLHOST_RETURN_IF_ERROR(CheckBatchFeature(api));
  std::shared_ptr<Stream> stream;
  ACLHOST_RETURN_IF_ERROR(LookupStreamHandle(api, handle, &stream));
  SetFailIndex(a, SIZE_MAX);
  ACLHOST_RETURN_IF_ERROR(RuntimeChecks(api, a, false));
  ACLHOST_RETURN_IF_ERROR(UseCurrentContext(api, &stream));
  return RunAsyncItems(api, a, *stream, handle);
}

aclError MemcpyBatchSyncImpl(const char *api, const BatchArgs &a, bool has_fail_index) {
  aclError ret = ACL_SUCCESS;
  if (AclLayerChecks(api, a, has_fail_index, &ret)) {
    return ret;
  }
  ACLHOST_RETURN_IF_ERROR(CheckBatchFeature(api));
  SetFailIndex(a, SIZE_MAX);
  ACLHOST_RETURN_IF_ERROR(RuntimeChecks(api, a, true));
  std::unique_ptr<CopyItem[]> items(new CopyItem[a.count]);  // one array per call
  {
    MemoryRegistry::Reader reader(MemoryRegistry::Instance());
    size_t attr_index = 0;
    for (size_t i = 0; i < a.count; ++i) {
      attr_index = AttributeFor(a, i, attr_index);
      MemInfo dst_info;
      MemInfo src_info;
      ret = ValidateItem(api, a, i, attr_index, reader, &dst_info, &src_info);
      if (ret != ACL_SUCCESS) {
        SetFailIndex(a, i);
        return ret;
      }
      items[i] = HostItem(a, i, dst_info, src_info);
    }
  }
  ACLHOST_RETURN_IF_ERROR(CheckItemsOrder(api, a, 0, a.count, nullptr, nullptr, nullptr));
  CopyItems(items.get(), a.count);
  return ACL_SUCCESS;
}

}  // namespace
}  // namespace aclhost

extern "C" aclError aclrtMemcpyBatch(void **dsts, size_t *destMaxs, void **srcs, size_t *sizes, size_t numBatches,
                                     aclrtMemcpyBatchAttr *attrs, size_t *attrsIndexes, size_t numAttrs,
                                     size_t *failIndex) {
  return aclhost::GuardedCall("aclrtMemcpyBatch", [&](const char *api) {
    const aclhost::BatchArgs args{dsts, destMaxs, srcs, sizes, numBatches, attrs, attrsIndexes, numAttrs, failIndex};
    return aclhost::MemcpyBatchSyncImpl(api, args, true);
  });
}

extern "C" aclError aclrtMemcpyBatchAsync(void **dsts, size_t *destMaxs, void **srcs, size_t *sizes, size_t numBatches,
                                          aclrtMemcpyBatchAttr *attrs, size_t *attrsIndexes, size_t numAttrs,
                                          size_t *failIndex, aclrtStream stream) {
  return aclhost::GuardedCall("aclrtMemcpyBatchAsync", [&](const char *api) {
    const aclhost::BatchArgs args{dsts, destMaxs, srcs, sizes, numBatches, attrs, attrsIndexes, numAttrs, failIndex};
    return aclhost::MemcpyBatchAsyncImpl(api, args, true, stream);
  });
}

extern "C" aclError aclrtMemcpyBatchV2(void **dsts, size_t *destMaxs, void **srcs, size_t *sizes, size_t numBatches,
                                       aclrtMemcpyBatchAttr *attrs, size_t *attrsIndexes, size_t numAttrs) {
  return aclhost::GuardedCall("aclrtMemcpyBatchV2", [&](const char *api) {
    const aclhost::BatchArgs args{dsts, destMaxs, srcs, sizes, numBatches, attrs, attrsIndexes, numAttrs, nullptr};
    return aclhost::MemcpyBatchSyncImpl(api, args, false);
  });
}

extern "C" aclError aclrtMemcpyBatchAsyncV2(void **dsts, size_t *destMaxs, void **srcs, size_t *sizes,
                                            size_t numBatches, aclrtMemcpyBatchAttr *attrs, size_t *attrsIndexes,
                                            size_t numAttrs, aclrtStream stream) {
  return aclhost::GuardedCall("aclrtMemcpyBatchAsyncV2", [&](const char *api) {
    const aclhost::BatchArgs args{dsts, destMaxs, srcs, sizes, numBatches, attrs, attrsIndexes, numAttrs, nullptr};
    return aclhost::MemcpyBatchAsyncImpl(api, args, false, stream);
  });
}
