// Registered host memory in the memory registry: the ranges of aclrtHostRegister / aclrtHostRegisterV2.
//
// Rules (CANN 9.1; docs/host_runtime.md names the source of each and the host runtime's choices):
// - a range may not overlap another host registration in any byte: ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED
//   (507910);
// - its start must be 4 KiB aligned, and it must lie in pageable memory, or (without ACL_HOST_REG_PINNED)
//   entirely inside one aclrtMallocHost allocation; device memory, framework memory and ranges that cross an
//   allocation's edge are refused: ACL_ERROR_RT_PARAM_INVALID (107000);
// - only a registration's base unregisters it (else ACL_ERROR_HOST_MEMORY_NOT_REGISTERED, 507911), and only a
//   mapped registration's base has a device pointer (else 107000): its own address.
// Every registration counts as pinned host memory: a range in pageable memory gets a kRegisteredHost entry in
// entries_ (location HOST), so copies from and to it take the pinned, asynchronous path.
#include <iterator>

#include "checked_math.h"
#include "error_state.h"
#include "memory_registry.h"

namespace aclhost {
namespace {

constexpr uintptr_t kRegisterAlignment = 4096;  // "Host内存地址需4KB页对齐" (CANN's API reference)

}  // namespace

std::map<uintptr_t, MemoryRegistry::HostRegistration>::const_iterator MemoryRegistry::FindHostOverlapLocked(
    uintptr_t begin, uintptr_t end) const {
  auto it = host_registrations_.lower_bound(begin);
  if (it != host_registrations_.end() && it->first < end) {
    return it;
  }
  if (it != host_registrations_.begin()) {
    const auto prev = std::prev(it);
    if (prev->first + prev->second.size > begin) {
      return prev;
    }
  }
  return host_registrations_.end();
}

aclError MemoryRegistry::CheckHostOverlap(const char *api, const void *ptr, uint64_t size) const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  uintptr_t end = 0;
  if (RangeEndOverflows(ptr, size, &end)) {
    return ACL_SUCCESS;  // RegisterHost reports it
  }
  const auto holder = FindHostOverlapLocked(reinterpret_cast<uintptr_t>(ptr), end);
  if (holder == host_registrations_.end()) {
    return ACL_SUCCESS;
  }
  return Fail(ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED, api,
              "range [%p, +%llu) overlaps the host memory registered at %p of %zu bytes", ptr,
              static_cast<unsigned long long>(size), reinterpret_cast<void *>(holder->first), holder->second.size);
}

aclError MemoryRegistry::RegisterHost(const char *api, void *ptr, uint64_t size, HostRegisterRequest request) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  if (p % kRegisterAlignment != 0) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api, "ptr %p is not 4 KiB aligned; expected a page-aligned address", ptr);
  }
  uintptr_t end = 0;
  if (RangeEndOverflows(ptr, size, &end)) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api, "ptr %p + size %llu overflows the address space", ptr,
                static_cast<unsigned long long>(size));
  }
  std::unique_lock<std::shared_mutex> lock = WriteLock();
  const auto registered = FindHostOverlapLocked(p, end);
  if (registered != host_registrations_.end()) {
    return Fail(ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED, api,
                "range [%p, +%zu) overlaps the host memory registered at %p of %zu bytes", ptr,
                static_cast<size_t>(size), reinterpret_cast<void *>(registered->first), registered->second.size);
  }
  HostRegistration registration;
  registration.size = static_cast<size_t>(size);
  registration.request = request;
  auto it = entries_.upper_bound(p);
  if (it != entries_.begin() && std::prev(it)->first + std::prev(it)->second.size > p) {
    it = std::prev(it);  // the entry holding p
  }
  if (it != entries_.end() && it->first < end) {
    const Entry &holder = it->second;
    const bool inside = it->first <= p && end <= it->first + holder.size;
    if (holder.kind != MemKind::kPinnedHost || !inside) {
      return Fail(ACL_ERROR_RT_PARAM_INVALID, api, "range [%p, +%zu) overlaps %s at %p of %zu bytes", ptr,
                  static_cast<size_t>(size), MemKindName(holder.kind), reinterpret_cast<void *>(it->first),
                  holder.size);
    }
    if (request.pinned) {
      return Fail(ACL_ERROR_RT_PARAM_INVALID, api,
                  "range [%p, +%zu) already is pinned memory (aclrtMallocHost at %p); ACL_HOST_REG_PINNED "
                  "takes pageable memory only",
                  ptr, static_cast<size_t>(size), reinterpret_cast<void *>(it->first));
    }
    registration.nested = true;
  } else {
    Entry entry;
    entry.size = static_cast<size_t>(size);
    entry.kind = MemKind::kRegisteredHost;
    InsertLocked(entries_, entries_.lower_bound(p), p, std::move(entry));
  }
  host_registrations_.emplace(p, registration);
  return ACL_SUCCESS;
}

aclError MemoryRegistry::UnregisterHost(const char *api, void *ptr) {
  std::unique_lock<std::shared_mutex> lock = WriteLock();
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  const auto it = host_registrations_.find(p);
  if (it == host_registrations_.end()) {
    return Fail(ACL_ERROR_HOST_MEMORY_NOT_REGISTERED, api,
                "ptr %p is not the start of host memory registered by aclrtHostRegister or aclrtHostRegisterV2", ptr);
  }
  if (!it->second.nested) {
    const auto entry = entries_.find(p);
    if (entry != entries_.end() && entry->second.kind == MemKind::kRegisteredHost) {
      EraseLocked(entries_, entry);
    }
  }
  host_registrations_.erase(it);
  return ACL_SUCCESS;
}

aclError MemoryRegistry::HostDevicePointer(const char *api, void *pHost, void **pDevice) const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  const auto it = host_registrations_.find(reinterpret_cast<uintptr_t>(pHost));
  if (it == host_registrations_.end() || !it->second.request.mapped) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api,
                "pHost %p is not the start of host memory registered for device address mapping", pHost);
  }
  *pDevice = pHost;  // device memory is host memory here: the mapped address is the host address
  return ACL_SUCCESS;
}

void MemoryRegistry::DropHostRegistrationsLocked(uintptr_t begin, uintptr_t end) {
  for (auto it = FindHostOverlapLocked(begin, end); it != host_registrations_.end() && it->first < end;) {
    if (!it->second.nested) {
      const auto entry = entries_.find(it->first);
      if (entry != entries_.end() && entry->second.kind == MemKind::kRegisteredHost) {
        EraseLocked(entries_, entry);
      }
    }
    it = host_registrations_.erase(it);
  }
}

}  // namespace aclhost
