// The memory behind one allocation of the registry.
//
// Normally a 64-byte aligned heap block (pinned host memory: whole pages of the heap). With strict device memory
// (MS_MEMCOPY_STRICT_DEVICE=1) an aclrtMalloc allocation is one anonymous memory file mapped twice: PROT_NONE at the
// address the caller gets, so that host code which dereferences device memory faults here as it does on an NPU, and
// read-write at a second address, the only one the runtime moves bytes through. Offsets keep their
// meaning in both mappings, so a device pointer plus an offset inside the allocation is a valid device
// pointer, and MemInfo::HostAddress maps it to the byte the runtime reads or writes.
#ifndef MS_MEMCOPY_ACL_HOST_ALLOCATION_STORAGE_H_
#define MS_MEMCOPY_ACL_HOST_ALLOCATION_STORAGE_H_

#include <cstddef>
#include <new>

namespace aclhost {

// The alignment of a heap block.
inline constexpr std::align_val_t kHeapAlignment{64};

// ACLHOST_ENV_STRICT_DEVICE "1" turns strict device memory on; any other value, or none, leaves it off.
// Read once.
bool StrictDeviceMemory();

class AllocationStorage {
 public:
  AllocationStorage() = default;
  AllocationStorage(AllocationStorage &&other) noexcept;
  AllocationStorage &operator=(AllocationStorage &&other) noexcept;
  AllocationStorage(const AllocationStorage &) = delete;
  AllocationStorage &operator=(const AllocationStorage &) = delete;
  ~AllocationStorage();

  // Each returns an empty storage when the host cannot provide `bytes` (never a smaller block).
  static AllocationStorage Heap(size_t bytes);
  // Whole pages of the heap, page-aligned, that no other block shares (pinned host memory: as CANN's,
  // it never shares a page with the caller's own memory, which may be registered page by page).
  static AllocationStorage WholePages(size_t bytes);
  static AllocationStorage HostInaccessible(size_t bytes);

  explicit operator bool() const { return address_ != nullptr; }
  // The address the allocation is known by (the one aclrtMalloc returns).
  void *address() const { return address_; }
  // Where the runtime reads and writes the allocation's bytes: address() unless host-inaccessible.
  void *host_address() const { return host_address_; }

 private:
  void Release() noexcept;

  void *address_ = nullptr;
  void *host_address_ = nullptr;
  size_t mapped_bytes_ = 0;                      // length of each of the two mappings; 0 for a heap block
  std::align_val_t alignment_ = kHeapAlignment;  // a heap block's
};

}  // namespace aclhost

#endif  // MS_MEMCOPY_ACL_HOST_ALLOCATION_STORAGE_H_
