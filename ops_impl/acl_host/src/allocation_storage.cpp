// Heap blocks and host-inaccessible (doubly mapped) allocations.
#include "allocation_storage.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <utility>

#include "acl_host/acl_host_ext.h"
#include "checked_math.h"

namespace aclhost {
namespace {

bool ReadStrictDeviceEnv() {
  const char *value = std::getenv(ACLHOST_ENV_STRICT_DEVICE);
  return value != nullptr && std::strcmp(value, "1") == 0;
}

// The page size and `bytes` rounded up to whole pages; false when either cannot be had.
bool WholePageBytes(size_t bytes, size_t *page, size_t *whole) {
  const long page_size = sysconf(_SC_PAGESIZE);
  if (page_size <= 0) {
    return false;
  }
  *page = static_cast<size_t>(page_size);
  return !RoundUpOverflows(bytes, *page, whole);
}

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor &) = delete;
  FileDescriptor &operator=(const FileDescriptor &) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) {
      (void)close(fd_);
    }
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

bool StrictDeviceMemory() {
  static const bool strict = ReadStrictDeviceEnv();
  return strict;
}

AllocationStorage::AllocationStorage(AllocationStorage &&other) noexcept
    : address_(std::exchange(other.address_, nullptr)),
      host_address_(std::exchange(other.host_address_, nullptr)),
      mapped_bytes_(std::exchange(other.mapped_bytes_, 0)),
      alignment_(std::exchange(other.alignment_, kHeapAlignment)) {}

AllocationStorage &AllocationStorage::operator=(AllocationStorage &&other) noexcept {
  if (this != &other) {
    Release();
    address_ = std::exchange(other.address_, nullptr);
    host_address_ = std::exchange(other.host_address_, nullptr);
    mapped_bytes_ = std::exchange(other.mapped_bytes_, 0);
    alignment_ = std::exchange(other.alignment_, kHeapAlignment);
  }
  return *this;
}

AllocationStorage::~AllocationStorage() { Release(); }

void AllocationStorage::Release() noexcept {
  if (address_ == nullptr) {
    return;
  }
  if (mapped_bytes_ == 0) {
    ::operator delete(address_, alignment_);
  } else {
    (void)munmap(address_, mapped_bytes_);
    (void)munmap(host_address_, mapped_bytes_);
  }
  address_ = nullptr;
  host_address_ = nullptr;
  mapped_bytes_ = 0;
}

AllocationStorage AllocationStorage::Heap(size_t bytes) {
  AllocationStorage storage;
  // The aligned operator new rounds the size up to the alignment; a size that would wrap there would
  // give a block smaller than asked for, so it is refused before it reaches the allocator.
  size_t aligned = 0;
  if (RoundUpOverflows(bytes, static_cast<size_t>(kHeapAlignment), &aligned)) {
    return storage;
  }
  storage.address_ = ::operator new(bytes, kHeapAlignment, std::nothrow);
  storage.host_address_ = storage.address_;
  return storage;
}

AllocationStorage AllocationStorage::WholePages(size_t bytes) {
  AllocationStorage storage;
  size_t page = 0;
  size_t whole = 0;
  if (!WholePageBytes(bytes, &page, &whole)) {
    return storage;
  }
  storage.alignment_ = std::align_val_t{page};
  storage.address_ = ::operator new(whole, storage.alignment_, std::nothrow);
  storage.host_address_ = storage.address_;
  return storage;
}

AllocationStorage AllocationStorage::HostInaccessible(size_t bytes) {
  AllocationStorage storage;
  size_t page = 0;
  size_t mapped = 0;
  if (!WholePageBytes(bytes, &page, &mapped) || mapped > static_cast<size_t>(std::numeric_limits<off_t>::max())) {
    return storage;
  }
  const FileDescriptor file(memfd_create("ms_memcopy-device-memory", MFD_CLOEXEC));
  if (file.get() < 0 || ftruncate(file.get(), static_cast<off_t>(mapped)) != 0) {
    return storage;
  }
  void *const host = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, file.get(), 0);
  if (host == MAP_FAILED) {
    return storage;
  }
  void *const device = mmap(nullptr, mapped, PROT_NONE, MAP_SHARED, file.get(), 0);
  if (device == MAP_FAILED) {
    (void)munmap(host, mapped);
    return storage;
  }
  storage.address_ = device;
  storage.host_address_ = host;
  storage.mapped_bytes_ = mapped;
  return storage;
}

}  // namespace aclhost
