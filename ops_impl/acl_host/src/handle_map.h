// Opaque handles of runtime objects (streams, events): base + 16 * id, never a valid pointer and never
// reused, so a destroyed handle always reads as unknown. Not locked: its owner holds its own lock.
#ifndef MS_MEMCOPY_ACL_HOST_HANDLE_MAP_H_
#define MS_MEMCOPY_ACL_HOST_HANDLE_MAP_H_

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <utility>

namespace aclhost {

template <typename T>
class HandleMap {
 public:
  using Entries = std::unordered_map<uintptr_t, std::shared_ptr<T>>;

  // Different bases keep the handles of different kinds apart (a stream handle is never an event's).
  explicit HandleMap(uintptr_t base) : base_(base) {}

  void *Add(std::shared_ptr<T> object) {
    const uintptr_t key = base_ + kStride * next_id_++;
    entries_.emplace(key, std::move(object));
    return reinterpret_cast<void *>(key);
  }

  std::shared_ptr<T> Find(const void *handle) const  // empty when unknown
  {
    const auto it = entries_.find(reinterpret_cast<uintptr_t>(handle));
    return it == entries_.end() ? nullptr : it->second;
  }

  std::shared_ptr<T> Remove(const void *handle)  // empty when unknown
  {
    const auto it = entries_.find(reinterpret_cast<uintptr_t>(handle));
    if (it == entries_.end()) {
      return nullptr;
    }
    std::shared_ptr<T> object = std::move(it->second);
    entries_.erase(it);
    return object;
  }

  Entries &entries() { return entries_; }
  const Entries &entries() const { return entries_; }

 private:
  static constexpr uintptr_t kStride = 16;

  const uintptr_t base_;
  uintptr_t next_id_ = 1;
  Entries entries_;
};

}  // namespace aclhost

#endif  // MS_MEMCOPY_ACL_HOST_HANDLE_MAP_H_
