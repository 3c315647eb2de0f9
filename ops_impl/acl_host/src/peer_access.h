// Peer access between devices of one process (aclrtDeviceEnablePeerAccess / DisablePeerAccess) and the
// rule the copy calls apply to a device-to-device copy whose endpoints live on two different devices.
#ifndef MS_MEMCOPY_ACL_HOST_PEER_ACCESS_H_
#define MS_MEMCOPY_ACL_HOST_PEER_ACCESS_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "acl/acl_base.h"
#include "memcpy_common.h"
#include "stream.h"

namespace aclhost {

// Process-wide table of enabled directions (device -> peer). Device-level, as CANN's: every thread and
// context of the process sees the same table.
class PeerAccessTable {
 public:
  static PeerAccessTable &Instance();

  void Enable(int32_t device, int32_t peer);
  void Disable(int32_t device, int32_t peer);
  // A copy between memory of devices a and b can run: both directions are enabled (the driver's
  // P2P takes effect only when each side has enabled the other).
  bool Mutual(int32_t a, int32_t b);

 private:
  PeerAccessTable() = default;
  std::mutex mutex_;
  std::set<std::pair<int32_t, int32_t>> enabled_;
};

// The failure of a cross-device copy without mutual peer access: ACL_ERROR_RT_SYS_DMA (507013), with a
// message naming both devices and the calls that enable the access.
aclError PeerCopyFailure(const char *api, int32_t src_device, int32_t dst_device);

// A copy task between memory of two devices: the access is checked when the task runs (as the copy
// engine of a device finds out when it touches the peer's memory). With it the wrapped copy runs;
// without it nothing is copied and the next synchronize of the stream reports 507013.
class PeerGuardedTask final : public StreamTask {
 public:
  PeerGuardedTask(std::unique_ptr<StreamTask> copy, int32_t src_device, int32_t dst_device)
      : copy_(std::move(copy)), src_device_(src_device), dst_device_(dst_device) {}
  aclError Run(std::string *message) override;

 private:
  std::unique_ptr<StreamTask> copy_;
  int32_t src_device_;
  int32_t dst_device_;
};

// The task that puts `copy` on a stream: `copy` itself when src and dst are on one device, else `copy`
// guarded by the peer-access check.
std::unique_ptr<StreamTask> CopyBetween(std::unique_ptr<StreamTask> copy, int32_t src_device, int32_t dst_device);

// Queues `copy`, of the resolved kind between src_info and dst_info, on `stream` with its order ticket:
// through CopyBetween when it CrossesDevices.
void EnqueueCopy(Stream &stream, std::unique_ptr<StreamTask> copy, OrderTicket ticket, int64_t resolved,
                 const MemInfo &src_info, const MemInfo &dst_info);

}  // namespace aclhost

#endif  // MS_MEMCOPY_ACL_HOST_PEER_ACCESS_H_
