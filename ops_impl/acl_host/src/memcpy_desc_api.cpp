// aclrtGetMemcpyDescSize, aclrtSetMemcpyDesc, aclrtMemcpyAsyncWithDesc (layout in memcpy_desc.h).
//
// Check order (docs/host_runtime.md, "Copies"; CANN 9.1):
//   GetMemcpyDescSize: descSize NULL -> 100000 | kind >= 8 -> 100000 | SoC without memcpy_desc -> 207000 |
//     kind != INNER_DEVICE_TO_DEVICE(6) -> 207000
//   SetMemcpyDesc: desc NULL -> 100000 | kind >= 8 -> 100000 | srcAddr, dstAddr NULL -> 100000 |
//     count == 0 -> 100000 | config != NULL -> 100000 | SoC without memcpy_desc -> 207000 | kind != 6 -> 207000 |
//     count > 4 GiB -> 107000 | desc not 64-byte aligned -> 107000 | desc not device memory -> 107000 |
//     src/dst not both device memory of the same device -> 107000 |
//     (host runtime) desc allocation shorter than descSize from desc, src/dst ranges past their
//     allocations -> 107000 | no device -> 107002
//   MemcpyAsyncWithDesc: desc NULL -> 100000 | kind >= 8 -> 100000 | stream NULL -> 100000 (NULL is not the
//     default stream here) | SoC without memcpy_desc -> 207000 | stream unknown or destroyed -> 107017 |
//     kind != 6 -> 207000 | desc not 64-byte aligned -> 107000 | desc not device memory, or (host runtime)
//     shorter than descSize -> 107000
//
// Host-runtime choices (documented in docs/host_runtime.md):
// - aclrtSetMemcpyDesc writes the descriptor synchronously on the calling thread (UNCONFIRMED: docs/host_runtime.md
//   how CANN writes it; A2/A3 use a synchronous H2D write).
// - aclrtMemcpyAsyncWithDesc enqueues a task that reads src/dst/count from the descriptor when it executes,
//   not at enqueue time. A descriptor that is not valid then (wrong magic or version, or src/dst no longer
//   device memory holding the whole range) is a task failure: nothing is copied and the next
//   aclrtSynchronizeStream on the stream returns ACL_ERROR_RT_INTERNAL_ERROR (507000) with the reason.
// - The count is stored in 32 bits, as CANN's Context::SetMemcpyDesc stores rtMemcpyAddrInfo::len: a 4 GiB
//   count (accepted) is stored as 0. A count of 0 copies nothing and succeeds: CANN's host side never reads
//   the length (MemcpyAsyncPtr submits the descriptor's address with count UINT32_MAX), so nothing in its
//   source fails such a copy.
// - The descriptor fields are written and read with atomic accesses, so a descriptor rewritten while a
//   copy using it is queued is well defined (the copy sees the old or the new value of each field).
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "acl/acl_rt.h"
#include "api_guard.h"
#include "checked_math.h"
#include "copy_engine.h"
#include "device.h"
#include "error_state.h"
#include "memcpy_common.h"
#include "memcpy_desc.h"
#include "memory_registry.h"
#include "order_check.h"
#include "soc_profile.h"
#include "stream_table.h"

namespace aclhost {
namespace {

constexpr int64_t kKindLimit = 8;  // CANN's RT_MEMCPY_KIND_MAX

template <typename T>
T *Field(void *desc, size_t offset) {
  return reinterpret_cast<T *>(static_cast<unsigned char *>(desc) + offset);
}

aclError CheckKindRange(const char *api, int64_t kind) {
  if (kind < 0 || kind >= kKindLimit) {
    return Fail(ACL_ERROR_INVALID_PARAM, api, "kind %lld is out of range; expected [0, %lld)",
                static_cast<long long>(kind), static_cast<long long>(kKindLimit));
  }
  return ACL_SUCCESS;
}

aclError CheckInnerKind(const char *api, int64_t kind) {
  if (kind != ACL_MEMCPY_INNER_DEVICE_TO_DEVICE) {
    return Fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, api, "kind %s is not supported; expected %s", KindName(kind),
                KindName(ACL_MEMCPY_INNER_DEVICE_TO_DEVICE));
  }
  return ACL_SUCCESS;
}

// The SoC gate of the three descriptor calls; *soc receives the profile.
aclError CheckDescFeature(const char *api, const SocProfile **soc) {
  return RequireSocFeature(api, &SocProfile::memcpy_desc, "memory-copy descriptors are not supported", soc);
}

// Bytes the runtime reads or writes at desc: the profile's descriptor size, at least the layout.
size_t DescFootprint(const SocProfile &soc) { return std::max(soc.memcpy_desc_size, kDescLayoutBytes); }

// desc must be device memory (*info) with at least desc_size bytes left in its allocation.
aclError CheckDescMemory(const char *api, const void *desc, size_t desc_size, MemInfo *info_out) {
  const MemInfo &info = *info_out = MemoryRegistry::Instance().Lookup(desc);
  if (!info.is_device()) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api, "desc %p is %s; expected device memory (aclrtMalloc)", desc,
                MemKindName(info.kind));
  }
  const size_t left = info.base + info.size - reinterpret_cast<uintptr_t>(desc);
  if (left < desc_size) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api,
                "desc %p has %zu bytes left in its allocation; expected at least the descriptor size %zu", desc, left,
                desc_size);
  }
  return ACL_SUCCESS;
}

// The copy task: reads the descriptor when it runs (at desc_bytes, the host address of desc).
class DescCopyTask final : public StreamTask {
 public:
  DescCopyTask(void *desc, void *desc_bytes)
      : desc_(desc),
        desc_bytes_(desc_bytes),
        count_hint_(__atomic_load_n(Field<uint32_t>(desc_bytes, kDescCountOffset), __ATOMIC_RELAXED)) {}

  size_t CopiedBytes() const override { return count_hint_; }  // the count when the copy was queued

  aclError Run(std::string *message) override {
    char text[256];
    CopyItem copy;
    if (!Resolve(&copy, text, sizeof(text))) {
      *message = text;
      return ACL_ERROR_RT_INTERNAL_ERROR;
    }
    CopyBytes(copy.dst, copy.src, copy.size);
    return ACL_SUCCESS;
  }

  bool DescribeCopy(CopyItem *copy, CopyItem *also_read) const override {
    char text[256];
    if (!Resolve(copy, text, sizeof(text))) {
      return false;
    }
    *also_read = CopyItem{nullptr, desc_bytes_, kDescLayoutBytes};  // the copy reads the descriptor
    return true;
  }

 private:
  // The copy the descriptor describes now (host addresses; nothing for a count of 0), or false with
  // the reason in text.
  bool Resolve(CopyItem *copy, char *text, size_t text_size) const {
    // The call rejected a descriptor that is not 64-byte aligned: the atomics are aligned.
    const uint32_t magic = __atomic_load_n(Field<uint32_t>(desc_bytes_, kDescMagicOffset), __ATOMIC_ACQUIRE);
    const uint32_t version = __atomic_load_n(Field<uint32_t>(desc_bytes_, kDescVersionOffset), __ATOMIC_RELAXED);
    if (magic != kDescMagic || version != kDescVersion) {
      (void)std::snprintf(text, text_size,
                          "aclrtMemcpyAsyncWithDesc: descriptor %p holds magic 0x%08" PRIx32 " version %" PRIu32
                          " when the copy executes; expected 0x%08" PRIx32 " version %" PRIu32
                          " (written by aclrtSetMemcpyDesc); nothing was copied",
                          desc_, magic, version, kDescMagic, kDescVersion);
      return false;
    }
    const uint64_t src = __atomic_load_n(Field<uint64_t>(desc_bytes_, kDescSrcOffset), __ATOMIC_RELAXED);
    const uint64_t dst = __atomic_load_n(Field<uint64_t>(desc_bytes_, kDescDstOffset), __ATOMIC_RELAXED);
    const uint32_t count = __atomic_load_n(Field<uint32_t>(desc_bytes_, kDescCountOffset), __ATOMIC_RELAXED);
    if (count == 0) {
      *copy = CopyItem{nullptr, nullptr, 0};  // a 4 GiB count stored in 32 bits: CANN's copy moves nothing either
      return true;
    }
    void *const dst_ptr = reinterpret_cast<void *>(static_cast<uintptr_t>(dst));
    const void *const src_ptr = reinterpret_cast<const void *>(static_cast<uintptr_t>(src));
    MemInfo src_info;
    MemInfo dst_info;
    if (!EndpointIsDevice(src_ptr, count, &src_info) || !EndpointIsDevice(dst_ptr, count, &dst_info)) {
      (void)std::snprintf(text, text_size,
                          "aclrtMemcpyAsyncWithDesc: descriptor %p (src 0x%" PRIx64 ", dst 0x%" PRIx64
                          ", count %" PRIu32
                          ") no longer describes a copy between device memory when it "
                          "executes; nothing was copied",
                          desc_, src, dst, count);
      return false;
    }
    *copy = CopyItem{dst_info.HostAddress(dst_ptr), src_info.HostAddress(src_ptr), static_cast<size_t>(count)};
    return true;
  }

  static bool EndpointIsDevice(const void *p, uint32_t count, MemInfo *info_out) {
    const MemInfo &info = *info_out = MemoryRegistry::Instance().Lookup(p);
    uintptr_t end = 0;
    return info.is_device() && !RangeEndOverflows(p, static_cast<size_t>(count), &end) && end <= info.base + info.size;
  }

  void *desc_;
  void *desc_bytes_;
  uint32_t count_hint_;
};

// The copy a descriptor describes now, at device addresses, for the strict ordering check (nothing when
// it holds none): the task resolves it again when it runs.
AccessPart DescribedAccess(void *desc_bytes) {
  const uint32_t magic = __atomic_load_n(Field<uint32_t>(desc_bytes, kDescMagicOffset), __ATOMIC_ACQUIRE);
  const uint32_t version = __atomic_load_n(Field<uint32_t>(desc_bytes, kDescVersionOffset), __ATOMIC_RELAXED);
  if (magic != kDescMagic || version != kDescVersion) {
    return AccessPart{};
  }
  const uint64_t src = __atomic_load_n(Field<uint64_t>(desc_bytes, kDescSrcOffset), __ATOMIC_RELAXED);
  const uint64_t dst = __atomic_load_n(Field<uint64_t>(desc_bytes, kDescDstOffset), __ATOMIC_RELAXED);
  const size_t count = __atomic_load_n(Field<uint32_t>(desc_bytes, kDescCountOffset), __ATOMIC_RELAXED);
  return AccessPart{Bytes(reinterpret_cast<const void *>(static_cast<uintptr_t>(src)), count),
                    Bytes(reinterpret_cast<const void *>(static_cast<uintptr_t>(dst)), count)};
}

aclError GetMemcpyDescSize(const char *api, int64_t kind, size_t *descSize) {
  ACLHOST_RETURN_IF_NULL(api, descSize, "expected a pointer to a size_t");
  ACLHOST_RETURN_IF_ERROR(CheckKindRange(api, kind));
  const SocProfile *soc = nullptr;
  ACLHOST_RETURN_IF_ERROR(CheckDescFeature(api, &soc));
  ACLHOST_RETURN_IF_ERROR(CheckInnerKind(api, kind));
  *descSize = soc->memcpy_desc_size;
  return ACL_SUCCESS;
}

aclError SetMemcpyDesc(const char *api, void *desc, int64_t kind, void *srcAddr, void *dstAddr, size_t count,
                       const void *config) {
  ACLHOST_RETURN_IF_NULL(api, desc, "expected device memory of the descriptor size");
  ACLHOST_RETURN_IF_ERROR(CheckKindRange(api, kind));
  if (srcAddr == nullptr || dstAddr == nullptr) {
    return Fail(ACL_ERROR_INVALID_PARAM, api, "%s is NULL; expected device memory",
                srcAddr == nullptr ? "srcAddr" : "dstAddr");
  }
  if (count == 0) {
    return Fail(ACL_ERROR_INVALID_PARAM, api, "count is 0; expected a positive byte count");
  }
  if (config != nullptr) {
    return Fail(ACL_ERROR_INVALID_PARAM, api, "config %p is a reserved parameter; expected NULL", config);
  }
  const SocProfile *soc = nullptr;
  ACLHOST_RETURN_IF_ERROR(CheckDescFeature(api, &soc));
  ACLHOST_RETURN_IF_ERROR(CheckInnerKind(api, kind));
  if (count > kDescMaxCount) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api, "count %zu exceeds the limit %llu (4 GiB)", count,
                static_cast<unsigned long long>(kDescMaxCount));
  }
  if (reinterpret_cast<uintptr_t>(desc) % kDescAlignment != 0) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api, "desc %p is not 64-byte aligned", desc);
  }
  const MemoryRegistry &registry = MemoryRegistry::Instance();
  const MemInfo src_info = registry.Lookup(srcAddr);
  const MemInfo dst_info = registry.Lookup(dstAddr);
  MemInfo desc_info;
  ACLHOST_RETURN_IF_ERROR(CheckDescMemory(api, desc, DescFootprint(*soc), &desc_info));
  if (!src_info.is_device() || !dst_info.is_device() || src_info.device != dst_info.device) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api,
                "srcAddr %p (%s, device %d) and dstAddr %p (%s, device %d) do not match kind %s; expected "
                "device memory of one device on both sides",
                srcAddr, MemKindName(src_info.kind), static_cast<int>(src_info.device), dstAddr,
                MemKindName(dst_info.kind), static_cast<int>(dst_info.device), KindName(kind));
  }
  ACLHOST_RETURN_IF_ERROR(CheckExtent(api, "srcAddr", srcAddr, count, src_info));
  ACLHOST_RETURN_IF_ERROR(CheckExtent(api, "dstAddr", dstAddr, count, dst_info));
  int32_t device = -1;
  ACLHOST_RETURN_IF_ERROR(DeviceManager::Instance().CurrentDevice(api, &device));
  const AccessPart written{ByteRegion{}, Bytes(desc, DescFootprint(*soc))};
  ACLHOST_RETURN_IF_ERROR(CheckHostAccess(api, nullptr, &written, 1));
  void *const fields = desc_info.HostAddress(desc);
  __atomic_store_n(Field<uint32_t>(fields, kDescMagicOffset), 0U, __ATOMIC_RELAXED);
  __atomic_store_n(Field<uint64_t>(fields, kDescSrcOffset), static_cast<uint64_t>(reinterpret_cast<uintptr_t>(srcAddr)),
                   __ATOMIC_RELAXED);
  __atomic_store_n(Field<uint64_t>(fields, kDescDstOffset), static_cast<uint64_t>(reinterpret_cast<uintptr_t>(dstAddr)),
                   __ATOMIC_RELAXED);
  __atomic_store_n(Field<uint32_t>(fields, kDescCountOffset), static_cast<uint32_t>(count), __ATOMIC_RELAXED);
  __atomic_store_n(Field<uint32_t>(fields, kDescReservedOffset), 0U, __ATOMIC_RELAXED);
  __atomic_store_n(Field<uint32_t>(fields, kDescVersionOffset), kDescVersion, __ATOMIC_RELAXED);
  const size_t footprint = DescFootprint(*soc);
  for (size_t offset = kDescLayoutBytes; offset + sizeof(uint64_t) <= footprint; offset += sizeof(uint64_t)) {
    __atomic_store_n(Field<uint64_t>(fields, offset), uint64_t{0}, __ATOMIC_RELAXED);
  }
  __atomic_store_n(Field<uint32_t>(fields, kDescMagicOffset), kDescMagic, __ATOMIC_RELEASE);
  return ACL_SUCCESS;
}

aclError MemcpyAsyncWithDesc(const char *api, void *desc, int64_t kind, aclrtStream handle) {
  ACLHOST_RETURN_IF_NULL(api, desc, "expected a descriptor set by aclrtSetMemcpyDesc");
  ACLHOST_RETURN_IF_ERROR(CheckKindRange(api, kind));
  if (handle == nullptr) {
    return Fail(ACL_ERROR_INVALID_PARAM, api,
                "stream is NULL; expected a stream from aclrtCreateStream (the default stream is not allowed)");
  }
  const SocProfile *soc = nullptr;
  ACLHOST_RETURN_IF_ERROR(CheckDescFeature(api, &soc));
  std::shared_ptr<Stream> stream;
  ACLHOST_RETURN_IF_ERROR(LookupStreamHandle(api, handle, &stream));
  ACLHOST_RETURN_IF_ERROR(CheckInnerKind(api, kind));
  if (reinterpret_cast<uintptr_t>(desc) % kDescAlignment != 0) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api, "desc %p is not 64-byte aligned", desc);
  }
  MemInfo desc_info;
  ACLHOST_RETURN_IF_ERROR(CheckDescMemory(api, desc, DescFootprint(*soc), &desc_info));
  void *const desc_bytes = desc_info.HostAddress(desc);
  OrderTicket ticket;
  if (OrderCheckOn()) {
    const AccessPart parts[] = {AccessPart{Bytes(desc, kDescLayoutBytes), ByteRegion{}}, DescribedAccess(desc_bytes)};
    ACLHOST_RETURN_IF_ERROR(CheckOrderedLaunch(api, StreamRef{*stream, handle}, parts, 2, &ticket));
  }
  std::unique_ptr<StreamTask> copy = std::make_unique<DescCopyTask>(desc, desc_bytes);
  copy->order_ticket = std::move(ticket);
  stream->Enqueue(std::move(copy));
  return ACL_SUCCESS;
}

}  // namespace
}  // namespace aclhost

extern "C" aclError aclrtGetMemcpyDescSize(aclrtMemcpyKind kind, size_t *descSize) {
  return aclhost::GuardedCall("aclrtGetMemcpyDescSize", [&](const char *api) {
    return aclhost::GetMemcpyDescSize(api, aclhost::RawEnumValue(kind), descSize);
  });
}

extern "C" aclError aclrtSetMemcpyDesc(void *desc, aclrtMemcpyKind kind, void *srcAddr, void *dstAddr, size_t count,
                                       void *config) {
  return aclhost::GuardedCall("aclrtSetMemcpyDesc", [&](const char *api) {
    return aclhost::SetMemcpyDesc(api, desc, aclhost::RawEnumValue(kind), srcAddr, dstAddr, count, config);
  });
}

extern "C" aclError aclrtMemcpyAsyncWithDesc(void *desc, aclrtMemcpyKind kind, aclrtStream stream) {
  constexpr const char *api = "aclrtMemcpyAsyncWithDesc";
  return aclhost::GuardedCall(
      api, [&] { return aclhost::MemcpyAsyncWithDesc(api, desc, aclhost::RawEnumValue(kind), stream); });
}
