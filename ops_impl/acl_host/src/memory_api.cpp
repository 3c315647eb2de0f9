// aclrtMalloc, aclrtMallocHost, aclrtFree, aclrtFreeHost and the host-only registration calls.
//
// Host-runtime choices (documented in docs/host_runtime.md):
// - aclrtMalloc returns 64-byte aligned host memory recorded as DEVICE memory of the current device (with
//   MS_MEMCOPY_STRICT_DEVICE=1, page-aligned memory the host cannot access; allocation_storage.h). Its
//   size is rounded up to a multiple of 32 and the SoC profile's malloc_extra_bytes are added (not for the
//   HUGE1G policies, as CANN). CANN appends 32 bytes plus 32 of padding to every request: a size whose
//   64-byte append (or rounding) overflows is ACL_ERROR_INVALID_PARAM, as in CANN's source.
// - aclrtMallocHost returns whole pages of its own recorded as pinned HOST memory, every page already
//   resident (zero-filled; CANN leaves the contents unspecified). As CANN's ApiImpl::HostMalloc it needs a
//   current context (107002), checked after the NULL and size-0 checks (100000, CANN's ACL layer). The
//   same 64-byte append rule applies (host choice: CANN's host allocator path is not in its open source),
//   before the context, as the ACL layer's checks come first. aclrtFreeHost needs no context.
// - aclrtGetMemInfo: free/total NULL -> 100000; attr outside aclrtMemAttr (0..17) -> 107016
//   (ACL_ERROR_RT_INVALID_MEMORY_TYPE); no context -> 107002. Every attribute reports the same memory:
//   total is the host's physical memory, free is total minus the live aclrtMalloc bytes of the current
//   device (host choice: the emulated device memory is host memory).
// - aclrtFree / aclrtFreeHost take only the base of an allocation of their own kind (else 107000), and
//   first wait for every stream to drain, so memory is never freed under a queued copy.
#include <unistd.h>

#include <cstring>

#include "acl/acl_rt.h"
#include "acl_host/acl_host_ext.h"
#include "api_guard.h"
#include "checked_math.h"
#include "device.h"
#include "error_state.h"
#include "memory_registry.h"
#include "soc_profile.h"
#include "stream_table.h"

using aclhost::DeviceManager;
using aclhost::Fail;
using aclhost::GuardedCall;
using aclhost::MemKind;
using aclhost::MemoryRegistry;

namespace {

constexpr size_t kMallocGranule = 32;
// CANN adds 32 bytes and 32 bytes of padding to every allocation request before it allocates.
constexpr size_t kMallocAppendBytes = 64;

// True (after setting the error) when size plus CANN's append does not fit in size_t.
bool AppendOverflows(const char *api, size_t size, aclError *ret) {
  size_t appended = 0;
  if (!aclhost::AddOverflows(size, kMallocAppendBytes, &appended)) {
    return false;
  }
  *ret = Fail(ACL_ERROR_INVALID_PARAM, api,
              "size %zu is too large: size plus the %zu bytes every allocation "
              "appends overflows",
              size, kMallocAppendBytes);
  return true;
}

bool IsHuge1gPolicy(int64_t policy) {
  return policy == ACL_MEM_MALLOC_HUGE1G_ONLY || policy == ACL_MEM_MALLOC_HUGE1G_ONLY_P2P;
}

// The size checks of aclrtMalloc and aclrtMallocHost: a positive count that the registry can append.
aclError CheckAllocationSize(const char *api, size_t size) {
  if (size == 0) {
    return Fail(ACL_ERROR_INVALID_PARAM, api, "size is 0; expected a positive byte count");
  }
  aclError ret = ACL_SUCCESS;
  if (AppendOverflows(api, size, &ret)) {
    return ret;
  }
  return ACL_SUCCESS;
}

aclError FreeAllocation(const char *api, const char *param, MemKind kind, void *ptr) {
  if (ptr == nullptr) {
    return Fail(ACL_ERROR_INVALID_PARAM, api, "%s is NULL; expected an address returned by %s", param,
                kind == MemKind::kDevice ? "aclrtMalloc" : "aclrtMallocHost");
  }
  return MemoryRegistry::Instance().Release(api, param, kind, ptr, aclhost::DrainAllStreams);
}

}  // namespace

extern "C" aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
  return GuardedCall("aclrtMalloc", [&](const char *api) -> aclError {
    ACLHOST_RETURN_IF_NULL(api, devPtr, "expected a pointer to receive the address");
    ACLHOST_RETURN_IF_ERROR(CheckAllocationSize(api, size));
    const aclhost::SocProfile *soc = nullptr;
    ACLHOST_RETURN_IF_ERROR(aclhost::RequireSoc(api, &soc));
    const size_t extra = IsHuge1gPolicy(aclhost::RawEnumValue(policy)) ? 0 : soc->malloc_extra_bytes;
    size_t rounded = 0;
    size_t padded = 0;
    if (aclhost::RoundUpOverflows(size, kMallocGranule, &rounded) || aclhost::AddOverflows(rounded, extra, &padded)) {
      return Fail(ACL_ERROR_INVALID_PARAM, api, "size %zu is too large to round up to %zu bytes plus %zu", size,
                  kMallocGranule, extra);
    }
    int32_t device = -1;
    ACLHOST_RETURN_IF_ERROR(DeviceManager::Instance().CurrentDevice(api, &device));
    return MemoryRegistry::Instance().Allocate(api, MemKind::kDevice, device, padded, devPtr);
  });
}

extern "C" aclError aclrtMallocHost(void **hostPtr, size_t size) {
  return GuardedCall("aclrtMallocHost", [&](const char *api) -> aclError {
    ACLHOST_RETURN_IF_NULL(api, hostPtr, "expected a pointer to receive the address");
    ACLHOST_RETURN_IF_ERROR(CheckAllocationSize(api, size));
    int32_t device = -1;
    ACLHOST_RETURN_IF_ERROR(DeviceManager::Instance().CurrentDevice(api, &device));
    ACLHOST_RETURN_IF_ERROR(MemoryRegistry::Instance().Allocate(api, MemKind::kPinnedHost, -1, size, hostPtr));
    // Page-locked memory is resident from the start: touch every page now, so the first copy into
    // it does not pay the page faults that CANN's pinned memory never takes.
    std::memset(*hostPtr, 0, size);
    return ACL_SUCCESS;
  });
}

extern "C" aclError aclrtFree(void *devPtr) {
  return GuardedCall("aclrtFree",
                     [&](const char *api) { return FreeAllocation(api, "devPtr", MemKind::kDevice, devPtr); });
}

extern "C" aclError aclrtFreeHost(void *hostPtr) {
  return GuardedCall("aclrtFreeHost",
                     [&](const char *api) { return FreeAllocation(api, "hostPtr", MemKind::kPinnedHost, hostPtr); });
}

extern "C" aclError aclhostRegisterDeviceMemory(void *ptr, size_t size) {
  return GuardedCall("aclhostRegisterDeviceMemory", [&](const char *api) -> aclError {
    ACLHOST_RETURN_IF_NULL(api, ptr, "expected the start of the memory to register");
    if (size == 0) {
      return Fail(ACL_ERROR_INVALID_PARAM, api, "size is 0; expected a positive byte count");
    }
    int32_t device = -1;
    ACLHOST_RETURN_IF_ERROR(DeviceManager::Instance().CurrentDevice(api, &device));
    return MemoryRegistry::Instance().Register(api, ptr, size, device);
  });
}

extern "C" aclError aclhostUnregisterDeviceMemory(void *ptr) {
  return GuardedCall("aclhostUnregisterDeviceMemory", [&](const char *api) -> aclError {
    ACLHOST_RETURN_IF_NULL(api, ptr, "expected a registered address");
    return MemoryRegistry::Instance().Unregister(api, ptr);
  });
}

extern "C" aclError aclhostRegisterDeviceMemoryBatch(void *const *ptrs, const size_t *sizes, size_t count) {
  return GuardedCall("aclhostRegisterDeviceMemoryBatch", [&](const char *api) -> aclError {
    if (count == 0) {
      return ACL_SUCCESS;
    }
    if (ptrs == nullptr || sizes == nullptr) {
      return Fail(ACL_ERROR_INVALID_PARAM, api, "%s is NULL; expected an array of count (%zu) values",
                  ptrs == nullptr ? "ptrs" : "sizes", count);
    }
    for (size_t i = 0; i < count; ++i) {
      if (ptrs[i] == nullptr || sizes[i] == 0) {
        return Fail(ACL_ERROR_INVALID_PARAM, api, "item %zu: %s; nothing was registered", i,
                    ptrs[i] == nullptr ? "ptr is NULL" : "size is 0");
      }
    }
    int32_t device = -1;
    ACLHOST_RETURN_IF_ERROR(DeviceManager::Instance().CurrentDevice(api, &device));
    return MemoryRegistry::Instance().RegisterMany(api, ptrs, sizes, count, device);
  });
}

extern "C" aclError aclhostUnregisterDeviceMemoryBatch(void *const *ptrs, size_t count) {
  return GuardedCall("aclhostUnregisterDeviceMemoryBatch", [&](const char *api) -> aclError {
    if (count == 0) {
      return ACL_SUCCESS;
    }
    if (ptrs == nullptr) {
      return Fail(ACL_ERROR_INVALID_PARAM, api, "ptrs is NULL; expected an array of count (%zu) pointers", count);
    }
    for (size_t i = 0; i < count; ++i) {
      if (ptrs[i] == nullptr) {
        return Fail(ACL_ERROR_INVALID_PARAM, api, "item %zu: ptr is NULL; nothing was unregistered", i);
      }
    }
    return MemoryRegistry::Instance().UnregisterMany(api, ptrs, count);
  });
}

extern "C" aclError aclhostGetMemLocation(const void *ptr, int32_t *type, int32_t *deviceId, void **base,
                                          size_t *size) {
  return GuardedCall("aclhostGetMemLocation", [&](const char *api) -> aclError {
    ACLHOST_RETURN_IF_NULL(api, ptr, "expected an address to look up");
    if (type == nullptr || deviceId == nullptr) {
      return Fail(ACL_ERROR_INVALID_PARAM, api, "%s is NULL; expected a pointer to an int32_t",
                  type == nullptr ? "type" : "deviceId");
    }
    const aclhost::MemInfo info = MemoryRegistry::Instance().Lookup(ptr);
    *type = info.LocationType();
    *deviceId = info.device;
    if (base != nullptr) {
      *base = reinterpret_cast<void *>(info.base);
    }
    if (size != nullptr) {
      *size = info.size;
    }
    return ACL_SUCCESS;
  });
}

extern "C" aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *free, size_t *total) {
  return GuardedCall("aclrtGetMemInfo", [&](const char *api) -> aclError {
    if (free == nullptr || total == nullptr) {
      return Fail(ACL_ERROR_INVALID_PARAM, api, "%s is NULL; expected a pointer to a size_t",
                  free == nullptr ? "free" : "total");
    }
    const int64_t raw_attr = aclhost::RawEnumValue(attr);
    if (raw_attr < ACL_DDR_MEM || raw_attr > ACL_MEM_P2P_HUGE1G) {
      return Fail(ACL_ERROR_RT_INVALID_MEMORY_TYPE, api, "attr %lld is not an aclrtMemAttr; expected [%d, %d]",
                  static_cast<long long>(raw_attr), static_cast<int>(ACL_DDR_MEM),
                  static_cast<int>(ACL_MEM_P2P_HUGE1G));
    }
    int32_t device = -1;
    ACLHOST_RETURN_IF_ERROR(DeviceManager::Instance().CurrentDevice(api, &device));
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page_size = sysconf(_SC_PAGESIZE);
    size_t physical = 0;
    if (pages <= 0 || page_size <= 0 ||
        aclhost::MulOverflows(static_cast<size_t>(pages), static_cast<size_t>(page_size), &physical)) {
      return Fail(ACL_ERROR_RT_INTERNAL_ERROR, api, "the host's physical memory size is not available");
    }
    const size_t used = MemoryRegistry::Instance().DeviceBytes(device);
    *total = physical;
    *free = used < physical ? physical - used : 0;
    return ACL_SUCCESS;
  });
}
