// Memory registry of the host runtime.
//
// An ordered map keyed by allocation base holds every aclrtMalloc (DEVICE), aclrtMallocHost (pinned HOST)
// and aclhostRegisterDeviceMemory (framework memory treated as DEVICE) range. A lookup finds the
// greatest base <= p and checks p < base + size, so interior pointers resolve to their allocation.
// Addresses in no range are pageable (UNREGISTERED).
//
// Framework registration rules:
// - registrations of the same device may overlap each other in any way and in any order: each is kept
//   in registrations_ (same base: one more reference, extent the largest registered) and the map holds
//   the union of every run of overlapping registrations as one framework entry, rebuilt when a
//   registration comes or goes; so a lookup sees framework memory exactly while some registration
//   covers it;
// - a range entirely inside an aclrtMalloc allocation of the same device: counted as a nested
//   registration (the memory already is device memory), released by Unregister(ptr);
// - any other overlap (pinned memory, part of an aclrtMalloc allocation, another device's memory):
//   ACL_ERROR_RT_PARAM_INVALID.
#include "memory_registry.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <limits>
#include <mutex>
#include <thread>
#include <utility>

#include "checked_math.h"
#include "error_state.h"

namespace aclhost {

const char *MemKindName(MemKind kind) {
  switch (kind) {
    case MemKind::kPinnedHost:
      return "pinned host memory (aclrtMallocHost)";
    case MemKind::kDevice:
      return "device memory (aclrtMalloc)";
    case MemKind::kFramework:
      return "device memory (aclhostRegisterDeviceMemory)";
    case MemKind::kRegisteredHost:
      return "registered host memory (aclrtHostRegister)";
    case MemKind::kUnregistered:
      break;
  }
  return "pageable host memory";
}

int MemInfo::LocationType() const {
  switch (kind) {
    case MemKind::kPinnedHost:
    case MemKind::kRegisteredHost:
      return ACL_MEM_LOCATION_TYPE_HOST;
    case MemKind::kDevice:
    case MemKind::kFramework:
      return ACL_MEM_LOCATION_TYPE_DEVICE;
    case MemKind::kUnregistered:
      break;
  }
  return ACL_MEM_LOCATION_TYPE_UNREGISTERED;
}

MemoryRegistry &MemoryRegistry::Instance() {
  // Never destroyed, so memory still allocated at process exit stays reachable (not a leak report).
  static MemoryRegistry *const registry = new MemoryRegistry();
  return *registry;
}

aclError MemoryRegistry::Allocate(const char *api, MemKind kind, int32_t device, size_t bytes, void **out) {
  AllocationStorage storage = kind == MemKind::kPinnedHost ? AllocationStorage::WholePages(bytes)
                              : kind == MemKind::kDevice && StrictDeviceMemory()
                                  ? AllocationStorage::HostInaccessible(bytes)
                                  : AllocationStorage::Heap(bytes);
  if (!storage) {
    return Fail(ACL_ERROR_RT_MEMORY_ALLOCATION, api, "cannot allocate %zu bytes of host memory", bytes);
  }
  void *const base = storage.address();
  Entry entry;
  entry.size = bytes;
  entry.kind = kind;
  entry.device = kind == MemKind::kDevice ? device : -1;
  entry.storage = std::move(storage);
  {
    std::unique_lock<std::shared_mutex> lock = WriteLock();
    const uintptr_t key = reinterpret_cast<uintptr_t>(base);
    // A fresh allocation can only collide with registrations of memory its owner no longer owns
    // (framework memory, or host memory freed without aclrtHostUnregister); drop such stale
    // registrations so the new allocation is what the address means.
    const uintptr_t end = key + bytes;
    DropHostRegistrationsLocked(key, end);
    auto it = entries_.lower_bound(key);
    if (it != entries_.begin() && std::prev(it)->first + std::prev(it)->second.size > key) {
      it = std::prev(it);
    }
    while (it != entries_.end() && it->first < end) {
      if (it->second.kind != MemKind::kFramework) {
        ++it;
        continue;
      }
      const uintptr_t run_begin = it->first;
      const uintptr_t run_end = run_begin + it->second.size;
      auto reg = registrations_.lower_bound(run_begin);
      while (reg != registrations_.end() && reg->first < run_end) {
        const bool stale = reg->first < end && reg->first + reg->second.size > key;
        const auto current = reg++;
        if (stale) {
          EraseLocked(registrations_, current);
        }
      }
      RebuildFrameworkLocked(run_begin, run_end);
      it = entries_.lower_bound(run_end);
    }
    if (!entries_.emplace(key, std::move(entry)).second) {
      return Fail(ACL_ERROR_RT_INTERNAL_ERROR, api, "the allocator returned %p, which is already in use", base);
    }
  }
  *out = base;
  return ACL_SUCCESS;
}

aclError MemoryRegistry::BaseMismatchLocked(const char *api, const char *param, MemKind kind, const void *ptr) const {
  uintptr_t begin = 0;
  uintptr_t end = 0;
  const MemInfo info = LookupLocked(reinterpret_cast<uintptr_t>(ptr), &begin, &end);
  if (info.kind == kind) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api,
                "%s %p is %zu bytes into the allocation at %p; expected the address the allocation returned", param,
                ptr, static_cast<size_t>(reinterpret_cast<uintptr_t>(ptr) - info.base),
                reinterpret_cast<void *>(info.base));
  }
  return Fail(ACL_ERROR_RT_PARAM_INVALID, api, "%s %p is %s; expected the start of %s", param, ptr,
              MemKindName(info.kind), MemKindName(kind));
}

aclError MemoryRegistry::Release(const char *api, const char *param, MemKind kind, void *ptr, void (*drain)()) {
  {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    const auto it = entries_.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == entries_.end() || it->second.kind != kind) {
      return BaseMismatchLocked(api, param, kind, ptr);
    }
  }
  drain();  // the queued tasks run while the allocation is still registered (descriptor copies look it up)
  AllocationStorage storage;
  {
    std::unique_lock<std::shared_mutex> lock = WriteLock();
    const auto it = entries_.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == entries_.end() || it->second.kind != kind) {
      return BaseMismatchLocked(api, param, kind, ptr);
    }
    const uintptr_t begin = it->first;
    const uintptr_t end = begin + it->second.size;
    storage = std::move(it->second.storage);
    entries_.erase(it);
    nested_registrations_.erase(nested_registrations_.lower_bound(begin), nested_registrations_.lower_bound(end));
    DropHostRegistrationsLocked(begin, end);
  }
  drain();             // copies a batch enqueued between the first drain and the removal
  return ACL_SUCCESS;  // storage is freed here, after the copies that could use it
}

std::unique_lock<std::shared_mutex> MemoryRegistry::WriteLock() {
  writers_waiting_.fetch_add(1, std::memory_order_relaxed);
  std::unique_lock<std::shared_mutex> lock(mutex_);
  writers_waiting_.fetch_sub(1, std::memory_order_relaxed);
  return lock;
}

namespace {

constexpr size_t kMaxSpareNodes = 4096;

// "item 3: " for a range of a batch call, "" for a single call.
struct ItemPrefix {
  char text[40] = "";
  explicit ItemPrefix(size_t item) {
    if (item != SIZE_MAX) {
      (void)std::snprintf(text, sizeof(text), "item %zu: ", item);
    }
  }
};

}  // namespace

aclError MemoryRegistry::Register(const char *api, void *ptr, size_t size, int32_t device) {
  std::unique_lock<std::shared_mutex> lock = WriteLock();
  bool nested = false;
  ACLHOST_RETURN_IF_ERROR(CheckRegisterLocked(api, ptr, size, device, SIZE_MAX, &nested));
  ApplyRegisterLocked(ptr, size, device, nested);
  return ACL_SUCCESS;
}

aclError MemoryRegistry::RegisterMany(const char *api, void *const *ptrs, const size_t *sizes, size_t count,
                                      int32_t device) {
  std::unique_lock<std::shared_mutex> lock = WriteLock();
  bool nested = false;
  for (size_t i = 0; i < count; ++i) {
    ACLHOST_RETURN_IF_ERROR(CheckRegisterLocked(api, ptrs[i], sizes[i], device, i, &nested));
  }
  for (size_t i = 0; i < count; ++i) {
    (void)CheckRegisterLocked(api, ptrs[i], sizes[i], device, i, &nested);  // cannot fail: checked above
    ApplyRegisterLocked(ptrs[i], sizes[i], device, nested);
  }
  return ACL_SUCCESS;
}

aclError MemoryRegistry::CheckRegisterLocked(const char *api, void *ptr, size_t size, int32_t device, size_t item,
                                             bool *nested) const {
  *nested = false;
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  uintptr_t end = 0;
  if (RangeEndOverflows(ptr, size, &end)) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api, "%sptr %p + size %zu overflows the address space",
                ItemPrefix(item).text, ptr, size);
  }
  auto it = entries_.upper_bound(p);
  if (it != entries_.begin() && std::prev(it)->first + std::prev(it)->second.size > p) {
    it = std::prev(it);  // the entry holding p
  }
  for (; it != entries_.end() && it->first < end; ++it) {
    const Entry &holder = it->second;
    const bool device_memory = holder.kind == MemKind::kDevice || holder.kind == MemKind::kFramework;
    if (device_memory && holder.device != device) {
      return Fail(ACL_ERROR_RT_PARAM_INVALID, api,
                  "%srange [%p, +%zu) overlaps device memory of device %d at %p; the current device is %d",
                  ItemPrefix(item).text, ptr, size, static_cast<int>(holder.device),
                  reinterpret_cast<void *>(it->first), static_cast<int>(device));
    }
    if (holder.kind == MemKind::kFramework) {
      continue;
    }
    if (holder.kind == MemKind::kDevice && it->first <= p && end <= it->first + holder.size) {
      *nested = true;
      return ACL_SUCCESS;
    }
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api, "%srange [%p, +%zu) partly overlaps %s at %p of %zu bytes",
                ItemPrefix(item).text, ptr, size, MemKindName(holder.kind), reinterpret_cast<void *>(it->first),
                holder.size);
  }
  return ACL_SUCCESS;
}

void MemoryRegistry::ApplyRegisterLocked(void *ptr, size_t size, int32_t device, bool nested) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  if (nested) {
    ++nested_registrations_[p];
    return;
  }
  const auto same_base = registrations_.find(p);
  if (same_base != registrations_.end()) {
    ++same_base->second.references;
    if (size <= same_base->second.size) {
      return;  // the union is unchanged
    }
    same_base->second.size = size;
  } else {
    Entry registration;
    registration.size = size;
    registration.kind = MemKind::kFramework;
    registration.device = device;
    registration.references = 1;
    InsertLocked(registrations_, registrations_.lower_bound(p), p, std::move(registration));
  }
  // The framework entries the new range overlaps, and the new range, become one.
  uintptr_t begin = p;
  uintptr_t end = p + size;
  auto it = entries_.upper_bound(p);
  if (it != entries_.begin()) {
    const auto prev = std::prev(it);
    if (prev->first + prev->second.size > p) {
      begin = prev->first;
      end = std::max(end, prev->first + prev->second.size);
    }
  }
  for (; it != entries_.end() && it->first < end; ++it) {
    end = std::max(end, it->first + it->second.size);
  }
  RebuildFrameworkLocked(begin, end);
}

void MemoryRegistry::RebuildFrameworkLocked(uintptr_t begin, uintptr_t end) {
  auto it = entries_.lower_bound(begin);
  while (it != entries_.end() && it->first < end) {
    const auto current = it++;
    if (current->second.kind == MemKind::kFramework) {
      EraseLocked(entries_, current);
    }
  }
  auto reg = registrations_.lower_bound(begin);
  while (reg != registrations_.end() && reg->first < end) {
    const uintptr_t run_begin = reg->first;
    uintptr_t run_end = run_begin + reg->second.size;
    Entry run;
    run.kind = MemKind::kFramework;
    run.device = reg->second.device;
    for (++reg; reg != registrations_.end() && reg->first < run_end; ++reg) {
      run_end = std::max(run_end, reg->first + reg->second.size);
    }
    run.size = run_end - run_begin;
    InsertLocked(entries_, entries_.lower_bound(run_begin), run_begin, std::move(run));
  }
}

void MemoryRegistry::InsertLocked(EntryMap &map, EntryMap::const_iterator hint, uintptr_t key, Entry entry) {
  if (spare_nodes_.empty()) {
    map.emplace_hint(hint, key, std::move(entry));
    return;
  }
  auto node = std::move(spare_nodes_.back());
  spare_nodes_.pop_back();
  node.key() = key;
  node.mapped() = std::move(entry);
  map.insert(hint, std::move(node));
}

void MemoryRegistry::EraseLocked(EntryMap &map, EntryMap::iterator it) {
  if (spare_nodes_.capacity() == 0) {
    spare_nodes_.reserve(kMaxSpareNodes);  // once: pushing a spare node never allocates
  }
  if (spare_nodes_.size() < kMaxSpareNodes && !it->second.storage) {
    spare_nodes_.push_back(map.extract(it));
  } else {
    map.erase(it);
  }
}

aclError MemoryRegistry::Unregister(const char *api, void *ptr) {
  std::unique_lock<std::shared_mutex> lock = WriteLock();
  return UnregisterLocked(api, ptr, SIZE_MAX);
}

aclError MemoryRegistry::UnregisterMany(const char *api, void *const *ptrs, size_t count) {
  std::unique_lock<std::shared_mutex> lock = WriteLock();
  aclError first = ACL_SUCCESS;
  for (size_t i = 0; i < count; ++i) {
    if (first == ACL_SUCCESS) {
      first = UnregisterLocked(api, ptrs[i], i);  // its message stays the reported one
    } else {
      const uintptr_t p = reinterpret_cast<uintptr_t>(ptrs[i]);
      if (registrations_.count(p) != 0 || nested_registrations_.count(p) != 0) {
        (void)UnregisterLocked(api, ptrs[i], i);
      }
    }
  }
  return first;
}

aclError MemoryRegistry::UnregisterLocked(const char *api, void *ptr, size_t item) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  const auto it = registrations_.find(p);
  if (it != registrations_.end()) {
    if (--it->second.references == 0) {
      // The framework entry holding p is the union this registration was part of; rebuild it
      // from the registrations that remain (it may shrink, split or vanish).
      const auto holder = std::prev(entries_.upper_bound(p));
      const uintptr_t run_begin = holder->first;
      const uintptr_t run_end = run_begin + holder->second.size;
      EraseLocked(registrations_, it);
      RebuildFrameworkLocked(run_begin, run_end);
    }
    return ACL_SUCCESS;
  }
  const auto nested = nested_registrations_.find(p);
  if (nested != nested_registrations_.end()) {
    if (--nested->second == 0) {
      nested_registrations_.erase(nested);
    }
    return ACL_SUCCESS;
  }
  return Fail(ACL_ERROR_RT_PARAM_INVALID, api, "%sptr %p was not registered by aclhostRegisterDeviceMemory",
              ItemPrefix(item).text, ptr);
}

MemInfo MemoryRegistry::LookupLocked(uintptr_t p, uintptr_t *begin, uintptr_t *end) const {
  MemInfo info;
  auto next = entries_.upper_bound(p);
  *begin = 0;
  *end = next == entries_.end() ? std::numeric_limits<uintptr_t>::max() : next->first;
  if (next != entries_.begin()) {
    const auto prev = std::prev(next);
    const uintptr_t prev_end = prev->first + prev->second.size;
    if (p < prev_end) {
      info.kind = prev->second.kind;
      info.device = prev->second.device;
      info.base = prev->first;
      info.size = prev->second.size;
      const AllocationStorage &storage = prev->second.storage;
      info.host_base = storage ? reinterpret_cast<uintptr_t>(storage.host_address()) : prev->first;
      *begin = prev->first;
      *end = prev_end;
      return info;
    }
    *begin = prev_end;
  }
  return info;
}

MemInfo MemoryRegistry::Lookup(const void *ptr) const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  uintptr_t begin = 0;
  uintptr_t end = 0;
  return LookupLocked(reinterpret_cast<uintptr_t>(ptr), &begin, &end);
}

size_t MemoryRegistry::DeviceBytes(int32_t device) const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  size_t total = 0;
  for (const auto &entry : entries_) {
    if (entry.second.kind == MemKind::kDevice && entry.second.device == device) {
      total += entry.second.size;
    }
  }
  return total;
}

size_t MemoryRegistry::AllocationCount(MemKind kind) const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  size_t count = 0;
  for (const auto &entry : entries_) {
    count += entry.second.kind == kind ? 1 : 0;
  }
  return count;
}

MemoryRegistry::Reader::Reader(const MemoryRegistry &registry) : registry_(registry), lock_(registry.mutex_) {}

void MemoryRegistry::Reader::Pause() {
  lock_.unlock();
  for (Range &range : cache_) {
    range = Range();
  }
}

void MemoryRegistry::Reader::Resume() { lock_.lock(); }

bool MemoryRegistry::Reader::WritersWaiting() const {
  return registry_.writers_waiting_.load(std::memory_order_relaxed) != 0;
}

void MemoryRegistry::Reader::WaitForWriters() const {
  while (WritersWaiting()) {
    std::this_thread::yield();
  }
}

MemInfo MemoryRegistry::Reader::LookupMiss(uintptr_t p) {
  Range &slot = cache_[next_slot_];
  next_slot_ ^= 1U;
  slot.info = registry_.LookupLocked(p, &slot.begin, &slot.end);
  return slot.info;
}

}  // namespace aclhost
