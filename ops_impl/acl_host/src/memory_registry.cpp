// Memory registry of the host runtime.
//
// An ordered map keyed by allocation base holds every aclrtMalloc (DEVICE), aclrtMallocHost (pinned HOST)
// and aclhostRegisterDeviceMemory (framework memory treated as DEVICE) range. A lookup finds the
// greatest base <= p and checks p < base + size, so interior pointers resolve to their allocation.
// Addresses in no range are pageable (UNREGISTERED).
//
// Framework registration rules:
// - same base as an existing registration of the same device: one more reference (the recorded size
//   grows to the larger of the two when that overlaps nothing else);
// - a range entirely inside an aclrtMalloc allocation or a registration of the same device: counted as a
//   nested registration (the memory already is device memory), released by Unregister(ptr);
// - any other overlap with an existing range: ACL_ERROR_RT_PARAM_INVALID.
#include "memory_registry.h"

#include <cstdio>
#include <iterator>
#include <limits>
#include <mutex>
#include <utility>

#include "checked_math.h"
#include "error_state.h"

namespace aclhost {
namespace {

constexpr std::align_val_t kAllocationAlignment{64};

}  // namespace

const char *MemKindName(MemKind kind)
{
    switch (kind) {
        case MemKind::kPinnedHost:
            return "pinned host memory (aclrtMallocHost)";
        case MemKind::kDevice:
            return "device memory (aclrtMalloc)";
        case MemKind::kFramework:
            return "device memory (aclhostRegisterDeviceMemory)";
        case MemKind::kUnregistered:
            break;
    }
    return "pageable host memory";
}

int MemInfo::LocationType() const
{
    switch (kind) {
        case MemKind::kPinnedHost:
            return ACL_MEM_LOCATION_TYPE_HOST;
        case MemKind::kDevice:
        case MemKind::kFramework:
            return ACL_MEM_LOCATION_TYPE_DEVICE;
        case MemKind::kUnregistered:
            break;
    }
    return ACL_MEM_LOCATION_TYPE_UNREGISTERED;
}

void MemoryRegistry::AlignedFree::operator()(void *p) const noexcept { ::operator delete(p, kAllocationAlignment); }

MemoryRegistry &MemoryRegistry::Instance()
{
    // Never destroyed, so memory still allocated at process exit stays reachable (not a leak report).
    static MemoryRegistry *const registry = new MemoryRegistry();
    return *registry;
}

aclError MemoryRegistry::Allocate(const char *api, MemKind kind, int32_t device, size_t bytes, void **out)
{
    // The aligned operator new rounds the size up to the alignment; a size that would wrap there would
    // give a block smaller than asked for, so it is refused before it reaches the allocator.
    size_t aligned = 0;
    if (RoundUpOverflows(bytes, static_cast<size_t>(kAllocationAlignment), &aligned)) {
        return Fail(ACL_ERROR_RT_MEMORY_ALLOCATION, api, "cannot allocate %zu bytes of host memory", bytes);
    }
    Storage storage(::operator new(bytes, kAllocationAlignment, std::nothrow));
    if (storage == nullptr) {
        return Fail(ACL_ERROR_RT_MEMORY_ALLOCATION, api, "cannot allocate %zu bytes of host memory", bytes);
    }
    void *const base = storage.get();
    Entry entry;
    entry.size = bytes;
    entry.kind = kind;
    entry.device = kind == MemKind::kDevice ? device : -1;
    entry.storage = std::move(storage);
    {
        std::unique_lock<std::shared_mutex> lock(mutex_);
        const uintptr_t key = reinterpret_cast<uintptr_t>(base);
        // A fresh allocation can only collide with a framework registration of memory the framework
        // no longer owns; drop such stale entries so the new allocation is what the address means.
        auto it = entries_.lower_bound(key);
        while (it != entries_.end() && it->first < key + bytes) {
            it = it->second.kind == MemKind::kFramework ? entries_.erase(it) : std::next(it);
        }
        it = entries_.lower_bound(key);
        if (it != entries_.begin()) {
            const auto prev = std::prev(it);
            if (prev->second.kind == MemKind::kFramework && prev->first + prev->second.size > key) {
                entries_.erase(prev);
            }
        }
        if (!entries_.emplace(key, std::move(entry)).second) {
            return Fail(ACL_ERROR_RT_INTERNAL_ERROR, api, "the allocator returned %p, which is already in use", base);
        }
    }
    *out = base;
    return ACL_SUCCESS;
}

aclError MemoryRegistry::BaseMismatchLocked(const char *api, const char *param, MemKind kind, const void *ptr) const
{
    uintptr_t begin = 0;
    uintptr_t end = 0;
    const MemInfo info = LookupLocked(reinterpret_cast<uintptr_t>(ptr), &begin, &end);
    if (info.kind == kind) {
        return Fail(ACL_ERROR_RT_PARAM_INVALID, api,
                    "%s %p is %zu bytes into the allocation at %p; expected the address the allocation returned",
                    param, ptr, static_cast<size_t>(reinterpret_cast<uintptr_t>(ptr) - info.base),
                    reinterpret_cast<void *>(info.base));
    }
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api, "%s %p is %s; expected the start of %s", param, ptr,
                MemKindName(info.kind), MemKindName(kind));
}

aclError MemoryRegistry::CheckAllocationBase(const char *api, const char *param, MemKind kind, const void *ptr) const
{
    std::shared_lock<std::shared_mutex> lock(mutex_);
    const auto it = entries_.find(reinterpret_cast<uintptr_t>(ptr));
    if (it != entries_.end() && it->second.kind == kind) {
        return ACL_SUCCESS;
    }
    return BaseMismatchLocked(api, param, kind, ptr);
}

aclError MemoryRegistry::Release(const char *api, const char *param, MemKind kind, void *ptr)
{
    Storage storage;
    {
        std::unique_lock<std::shared_mutex> lock(mutex_);
        const auto it = entries_.find(reinterpret_cast<uintptr_t>(ptr));
        if (it == entries_.end() || it->second.kind != kind) {
            return BaseMismatchLocked(api, param, kind, ptr);
        }
        const uintptr_t begin = it->first;
        const uintptr_t end = begin + it->second.size;
        storage = std::move(it->second.storage);
        entries_.erase(it);
        nested_registrations_.erase(nested_registrations_.lower_bound(begin),
                                    nested_registrations_.lower_bound(end));
    }
    return ACL_SUCCESS;  // storage is freed here, outside the lock
}

namespace {

constexpr size_t kMaxSpareNodes = 4096;

// "item 3: " for a range of a batch call, "" for a single call.
struct ItemPrefix {
    char text[40] = "";
    explicit ItemPrefix(size_t item)
    {
        if (item != SIZE_MAX) {
            (void)std::snprintf(text, sizeof(text), "item %zu: ", item);
        }
    }
};

}  // namespace

aclError MemoryRegistry::Register(const char *api, void *ptr, size_t size, int32_t device)
{
    std::unique_lock<std::shared_mutex> lock(mutex_);
    return RegisterLocked(api, ptr, size, device, SIZE_MAX);
}

aclError MemoryRegistry::RegisterMany(const char *api, void *const *ptrs, const size_t *sizes, size_t count,
                                      int32_t device)
{
    std::unique_lock<std::shared_mutex> lock(mutex_);
    for (size_t i = 0; i < count; ++i) {
        const aclError ret = RegisterLocked(api, ptrs[i], sizes[i], device, i);
        if (ret != ACL_SUCCESS) {
            for (size_t j = i; j-- > 0;) {
                (void)UnregisterLocked(api, ptrs[j], j);  // cannot fail: registered above
            }
            return ret;
        }
    }
    return ACL_SUCCESS;
}

aclError MemoryRegistry::RegisterLocked(const char *api, void *ptr, size_t size, int32_t device, size_t item)
{
    const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
    uintptr_t end = 0;
    if (RangeEndOverflows(ptr, size, &end)) {
        return Fail(ACL_ERROR_RT_PARAM_INVALID, api, "%sptr %p + size %zu overflows the address space",
                    ItemPrefix(item).text, ptr, size);
    }
    auto next = entries_.upper_bound(p);
    if (next != entries_.begin()) {
        const auto prev = std::prev(next);
        Entry &holder = prev->second;
        const uintptr_t holder_end = prev->first + holder.size;
        if (p < holder_end) {
            const bool device_memory = holder.kind == MemKind::kDevice || holder.kind == MemKind::kFramework;
            if (device_memory && holder.device != device) {
                return Fail(ACL_ERROR_RT_PARAM_INVALID, api,
                            "%sptr %p lies in device memory of device %d; the current device is %d",
                            ItemPrefix(item).text, ptr, static_cast<int>(holder.device), static_cast<int>(device));
            }
            if (holder.kind == MemKind::kFramework && prev->first == p) {
                if (end > holder_end) {
                    if (next != entries_.end() && next->first < end) {
                        return Fail(ACL_ERROR_RT_PARAM_INVALID, api,
                                    "%srange [%p, +%zu) overlaps another allocation or registration at %p",
                                    ItemPrefix(item).text, ptr, size, reinterpret_cast<void *>(next->first));
                    }
                    holder.size = size;
                }
                ++holder.references;
                return ACL_SUCCESS;
            }
            if (device_memory && end <= holder_end) {
                ++nested_registrations_[p];
                return ACL_SUCCESS;
            }
            return Fail(ACL_ERROR_RT_PARAM_INVALID, api, "%srange [%p, +%zu) partly overlaps %s at %p of %zu bytes",
                        ItemPrefix(item).text, ptr, size, MemKindName(holder.kind),
                        reinterpret_cast<void *>(prev->first), holder.size);
        }
    }
    if (next != entries_.end() && next->first < end) {
        return Fail(ACL_ERROR_RT_PARAM_INVALID, api, "%srange [%p, +%zu) partly overlaps %s at %p",
                    ItemPrefix(item).text, ptr, size, MemKindName(next->second.kind),
                    reinterpret_cast<void *>(next->first));
    }
    InsertFrameworkLocked(next, p, size, device);
    return ACL_SUCCESS;
}

void MemoryRegistry::InsertFrameworkLocked(std::map<uintptr_t, Entry>::const_iterator hint, uintptr_t p, size_t size,
                                           int32_t device)
{
    Entry entry;
    entry.size = size;
    entry.kind = MemKind::kFramework;
    entry.device = device;
    entry.references = 1;
    if (spare_nodes_.empty()) {
        entries_.emplace_hint(hint, p, std::move(entry));
        return;
    }
    auto node = std::move(spare_nodes_.back());
    spare_nodes_.pop_back();
    node.key() = p;
    node.mapped() = std::move(entry);
    entries_.insert(hint, std::move(node));
}

aclError MemoryRegistry::Unregister(const char *api, void *ptr)
{
    std::unique_lock<std::shared_mutex> lock(mutex_);
    return UnregisterLocked(api, ptr, SIZE_MAX);
}

aclError MemoryRegistry::UnregisterMany(const char *api, void *const *ptrs, size_t count)
{
    std::unique_lock<std::shared_mutex> lock(mutex_);
    aclError first = ACL_SUCCESS;
    for (size_t i = 0; i < count; ++i) {
        if (first == ACL_SUCCESS) {
            first = UnregisterLocked(api, ptrs[i], i);  // its message stays the reported one
        } else {
            const uintptr_t p = reinterpret_cast<uintptr_t>(ptrs[i]);
            const auto it = entries_.find(p);
            const bool known = (it != entries_.end() && it->second.kind == MemKind::kFramework) ||
                               nested_registrations_.count(p) != 0;
            if (known) {
                (void)UnregisterLocked(api, ptrs[i], i);
            }
        }
    }
    return first;
}

aclError MemoryRegistry::UnregisterLocked(const char *api, void *ptr, size_t item)
{
    const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
    const auto it = entries_.find(p);
    if (it != entries_.end() && it->second.kind == MemKind::kFramework) {
        if (--it->second.references == 0) {
            if (spare_nodes_.capacity() == 0) {
                spare_nodes_.reserve(kMaxSpareNodes);  // once: pushing a spare node never allocates
            }
            if (spare_nodes_.size() < kMaxSpareNodes) {
                spare_nodes_.push_back(entries_.extract(it));
            } else {
                entries_.erase(it);
            }
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

MemInfo MemoryRegistry::LookupLocked(uintptr_t p, uintptr_t *begin, uintptr_t *end) const
{
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
            *begin = prev->first;
            *end = prev_end;
            return info;
        }
        *begin = prev_end;
    }
    return info;
}

MemInfo MemoryRegistry::Lookup(const void *ptr) const
{
    std::shared_lock<std::shared_mutex> lock(mutex_);
    uintptr_t begin = 0;
    uintptr_t end = 0;
    return LookupLocked(reinterpret_cast<uintptr_t>(ptr), &begin, &end);
}

size_t MemoryRegistry::DeviceBytes(int32_t device) const
{
    std::shared_lock<std::shared_mutex> lock(mutex_);
    size_t total = 0;
    for (const auto &entry : entries_) {
        if (entry.second.kind == MemKind::kDevice && entry.second.device == device) {
            total += entry.second.size;
        }
    }
    return total;
}

MemoryRegistry::Reader::Reader(const MemoryRegistry &registry) : registry_(registry), lock_(registry.mutex_) {}

void MemoryRegistry::Reader::Pause()
{
    lock_.unlock();
    for (Range &range : cache_) {
        range = Range();
    }
}

void MemoryRegistry::Reader::Resume() { lock_.lock(); }

MemInfo MemoryRegistry::Reader::LookupMiss(uintptr_t p)
{
    Range &slot = cache_[next_slot_];
    next_slot_ ^= 1U;
    slot.info = registry_.LookupLocked(p, &slot.begin, &slot.end);
    return slot.info;
}

}  // namespace aclhost
