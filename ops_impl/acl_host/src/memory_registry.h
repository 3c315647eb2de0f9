// The memory registry: which host addresses the runtime treats as device memory, pinned host memory
// (allocated, or registered by aclrtHostRegister*) or framework memory registered as device memory.
// Everything else is pageable (UNREGISTERED). Every call that moves or sets bytes of registered memory
// does so at MemInfo::HostAddress of the address it was given (strict device memory is not readable at
// its own address; allocation_storage.h).
#ifndef MS_MEMCOPY_ACL_HOST_MEMORY_REGISTRY_H_
#define MS_MEMCOPY_ACL_HOST_MEMORY_REGISTRY_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <vector>

#include "acl/acl_rt.h"
#include "allocation_storage.h"

namespace aclhost {

enum class MemKind : uint8_t {
  kUnregistered,    // pageable host memory (malloc, stack, numpy, ...)
  kPinnedHost,      // aclrtMallocHost
  kDevice,          // aclrtMalloc
  kFramework,       // aclhostRegisterDeviceMemory: framework-owned memory declared as device memory
  kRegisteredHost,  // aclrtHostRegister / aclrtHostRegisterV2: existing host memory, now pinned
};

// What aclrtHostRegister / aclrtHostRegisterV2 asked for (host_registration.cpp has the rules).
struct HostRegisterRequest {
  bool mapped = false;  // MAPPED, IOMEMORY or READONLY: aclrtHostGetDevicePointer answers for it
  bool pinned = false;  // ACL_HOST_REG_PINNED: refused on memory that already is pinned
};

const char *MemKindName(MemKind kind);

// What the registry knows about one address.
struct MemInfo {
  MemKind kind = MemKind::kUnregistered;
  int32_t device = -1;      // device id for kDevice / kFramework, else -1
  uintptr_t base = 0;       // start of the allocation (0 when unregistered)
  size_t size = 0;          // bytes of the allocation (0 when unregistered)
  uintptr_t host_base = 0;  // where the runtime accesses the byte at base (base, except strict device memory)

  bool registered() const { return kind != MemKind::kUnregistered; }
  // The address at which the runtime reads or writes the byte at p, an address of this allocation (p
  // itself for pageable memory).
  void *HostAddress(const void *p) const {
    const uintptr_t address = reinterpret_cast<uintptr_t>(p);
    return reinterpret_cast<void *>(registered() ? host_base + (address - base) : address);
  }
  bool is_device() const { return kind == MemKind::kDevice || kind == MemKind::kFramework; }
  // ACL location type: HOST for pinned memory, DEVICE for device or framework memory, else UNREGISTERED.
  int LocationType() const;
};

class MemoryRegistry {
 public:
  static MemoryRegistry &Instance();

  // Allocation of `bytes` recorded as `kind` (kDevice or kPinnedHost): 64-byte aligned host memory, or
  // for kDevice in strict device memory, page-aligned memory the host cannot access at *out.
  // ACL_ERROR_RT_MEMORY_ALLOCATION when the host cannot provide it.
  aclError Allocate(const char *api, MemKind kind, int32_t device, size_t bytes, void **out);

  // Frees the allocation of `kind` starting at ptr (ACL_ERROR_RT_PARAM_INVALID when ptr is not the
  // base of one): drain() (no lock held) lets the queued tasks finish while it is registered, then it
  // leaves the registry, then drain() runs again, then the memory is freed. A batch copy holds the
  // shared lock from validating an item until it is enqueued, so every copy that saw the allocation
  // is on a stream before it leaves the registry, and the second drain lets it finish first.
  aclError Release(const char *api, const char *param, MemKind kind, void *ptr, void (*drain)());

  // Registered host memory (host_registration.cpp). CheckHostOverlap: 507910 when [ptr, ptr + size)
  // overlaps a host registration (CANN checks this before anything else of the range). RegisterHost
  // checks alignment, overlap and the memory underneath under the write lock, then records it.
  aclError CheckHostOverlap(const char *api, const void *ptr, uint64_t size) const;
  aclError RegisterHost(const char *api, void *ptr, uint64_t size, HostRegisterRequest request);
  aclError UnregisterHost(const char *api, void *ptr);  // 507911 unless ptr is a registration's base
  aclError HostDevicePointer(const char *api, void *pHost, void **pDevice) const;

  // Framework registration (see acl_host_ext.h for the rules).
  aclError Register(const char *api, void *ptr, size_t size, int32_t device);
  aclError Unregister(const char *api, void *ptr);
  // Many registrations under one lock. All or nothing: when range i is refused, the ranges this call
  // registered are unregistered again and range i's error is returned (its message names the index).
  aclError RegisterMany(const char *api, void *const *ptrs, const size_t *sizes, size_t count, int32_t device);
  // Unregisters every pointer under one lock; the first unknown one is reported (107000) after the
  // others are released.
  aclError UnregisterMany(const char *api, void *const *ptrs, size_t count);

  // One lookup under the registry's shared lock.
  MemInfo Lookup(const void *ptr) const;

  // Bytes of the live aclrtMalloc allocations of one device (their recorded, padded sizes).
  size_t DeviceBytes(int32_t device) const;
  // The number of live allocations of one kind (kDevice or kPinnedHost).
  size_t AllocationCount(MemKind kind) const;

  // Many lookups under one shared lock, with a two-entry cache of the last hits (a hit may be a gap
  // between allocations, i.e. pageable memory). Used by batch copies. aclrtFree and registration
  // changes wait for it, so Pause() it before waiting for a stream (no thread ever waits for a stream
  // while holding the registry lock; stream tasks may then take it).
  class Reader {
   public:
    explicit Reader(const MemoryRegistry &registry);
    // Inline for the cache hits of batch loops; a miss looks the registry up.
    MemInfo Lookup(const void *ptr) {
      const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
      for (const Range &range : cache_) {
        if (range.begin <= p && p < range.end) {
          return range.info;
        }
      }
      return LookupMiss(p);
    }
    void Pause();   // releases the lock and forgets the cache
    void Resume();  // takes the lock again
    // Whether a thread waits to change the registry (the lock prefers readers, so a long reader
    // should Pause and WaitForWriters at a point where it holds no unenqueued validation).
    bool WritersWaiting() const;
    void WaitForWriters() const;  // while paused: until no writer waits

   private:
    MemInfo LookupMiss(uintptr_t p);

    struct Range {
      uintptr_t begin = 1;
      uintptr_t end = 0;  // empty until filled
      MemInfo info;
    };
    const MemoryRegistry &registry_;
    std::shared_lock<std::shared_mutex> lock_;
    Range cache_[2];
    unsigned next_slot_ = 0;
  };

 private:
  struct Entry {
    size_t size = 0;
    MemKind kind = MemKind::kUnregistered;
    int32_t device = -1;
    uint64_t references = 0;    // framework registrations (in registrations_)
    AllocationStorage storage;  // owned memory of kDevice / kPinnedHost
  };
  using EntryMap = std::map<uintptr_t, Entry>;

  MemoryRegistry() = default;
  // item: the index of the range in a batch (named in messages), or SIZE_MAX for a single call.
  // Whether [ptr, ptr + size) may be registered for device; *nested: it lies inside an aclrtMalloc
  // allocation. The answer does not depend on other framework registrations of the same device, so a
  // batch checks every range before it registers any.
  aclError CheckRegisterLocked(const char *api, void *ptr, size_t size, int32_t device, size_t item,
                               bool *nested) const;
  void ApplyRegisterLocked(void *ptr, size_t size, int32_t device, bool nested);
  aclError UnregisterLocked(const char *api, void *ptr, size_t item);
  // Rebuilds the framework entries of entries_ over [begin, end) from the registrations whose base lies
  // there: every maximal run of overlapping registrations becomes one entry spanning their union.
  // [begin, end) must not cut a run (callers pass the union of the entries they invalidate).
  void RebuildFrameworkLocked(uintptr_t begin, uintptr_t end);
  // Inserts into map, reusing a node released earlier if there is one.
  void InsertLocked(EntryMap &map, EntryMap::const_iterator hint, uintptr_t key, Entry entry);
  void EraseLocked(EntryMap &map, EntryMap::iterator it);
  // The entry containing p, and the address range [*begin, *end) over which that answer holds.
  MemInfo LookupLocked(uintptr_t p, uintptr_t *begin, uintptr_t *end) const;
  // Stores the message for "ptr is not the base of an allocation of kind" and returns 107000.
  aclError BaseMismatchLocked(const char *api, const char *param, MemKind kind, const void *ptr) const;

  struct HostRegistration {
    size_t size = 0;
    HostRegisterRequest request;
    bool nested = false;  // inside an aclrtMallocHost allocation: no entry of its own in entries_
  };
  // The host registration overlapping [begin, end), or host_registrations_.end().
  std::map<uintptr_t, HostRegistration>::const_iterator FindHostOverlapLocked(uintptr_t begin, uintptr_t end) const;
  // Forgets the host registrations overlapping [begin, end): of memory an allocation now reuses, or inside
  // an aclrtMallocHost allocation being freed.
  void DropHostRegistrationsLocked(uintptr_t begin, uintptr_t end);

  // The exclusive lock, counted in writers_waiting_ while it is awaited.
  std::unique_lock<std::shared_mutex> WriteLock();

  mutable std::shared_mutex mutex_;
  std::atomic<int> writers_waiting_{0};
  // Disjoint ranges: aclrtMalloc and aclrtMallocHost allocations, and framework memory, where one
  // framework entry is the union of a run of overlapping registrations (its `references` is unused).
  EntryMap entries_;
  // Every framework registration by base (same base: one node, counted, of the largest size). They may
  // overlap each other in any way; entries_ holds their unions, which is what lookups read.
  EntryMap registrations_;
  // Map nodes released by unregistrations, reused by the next ones: kernels register and unregister
  // every tensor at every launch, and this keeps that free of allocations.
  std::vector<EntryMap::node_type> spare_nodes_;
  // Registrations that lie inside a device allocation of the same device: counted, no new entry.
  std::map<uintptr_t, uint64_t> nested_registrations_;
  // aclrtHostRegister* registrations by base; disjoint. Those not nested in an aclrtMallocHost allocation
  // also have a kRegisteredHost entry in entries_, which is what lookups read.
  std::map<uintptr_t, HostRegistration> host_registrations_;
};

}  // namespace aclhost

#endif  // MS_MEMCOPY_ACL_HOST_MEMORY_REGISTRY_H_
