// The strict ordering check's handle on one queued access (order_check.h): owned by the stream task
// that makes the access, it takes the access out of the tracker when the task is destroyed, after it
// has run. Empty (and free) when the check is off.
#ifndef MS_MEMCOPY_ACL_HOST_ORDER_TICKET_H_
#define MS_MEMCOPY_ACL_HOST_ORDER_TICKET_H_

#include <cstdint>
#include <utility>

namespace aclhost {

// Takes the access (stream serial, launch number) out of the tracker; nothing when it already left.
void ReleaseOrderedAccess(uint64_t stream, uint64_t launch) noexcept;

class OrderTicket {
 public:
  OrderTicket() = default;
  OrderTicket(uint64_t stream, uint64_t launch) : stream_(stream), launch_(launch) {}
  OrderTicket(OrderTicket &&other) noexcept
      : stream_(other.stream_), launch_(std::exchange(other.launch_, uint64_t{0})) {}
  OrderTicket &operator=(OrderTicket &&other) noexcept {
    if (this != &other) {
      Release();
      stream_ = other.stream_;
      launch_ = std::exchange(other.launch_, uint64_t{0});
    }
    return *this;
  }
  OrderTicket(const OrderTicket &) = delete;
  OrderTicket &operator=(const OrderTicket &) = delete;
  ~OrderTicket() { Release(); }

 private:
  void Release() noexcept {
    if (launch_ != 0) {
      ReleaseOrderedAccess(stream_, std::exchange(launch_, uint64_t{0}));
    }
  }

  uint64_t stream_ = 0;
  uint64_t launch_ = 0;  // 0: empty
};

}  // namespace aclhost

#endif  // MS_MEMCOPY_ACL_HOST_ORDER_TICKET_H_
