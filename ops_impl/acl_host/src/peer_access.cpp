// Peer access table and the cross-device copy rule.
#include "peer_access.h"

#include <cstdio>

#include "acl/acl_rt.h"
#include "error_state.h"

namespace aclhost {
namespace {

// Why a copy between devices s and d cannot run, and what enables it.
void MissingAccess(char *out, size_t size, int s, int d) {
  (void)std::snprintf(out, size,
                      "peer access between devices %d and %d is not enabled in both directions; call "
                      "aclrtDeviceEnablePeerAccess(%d, 0) with device %d current and "
                      "aclrtDeviceEnablePeerAccess(%d, 0) with device %d current",
                      s, d, d, s, s, d);
}

}  // namespace

PeerAccessTable &PeerAccessTable::Instance() {
  static PeerAccessTable *const table = new PeerAccessTable();
  return *table;
}

void PeerAccessTable::Enable(int32_t device, int32_t peer) {
  std::lock_guard<std::mutex> lock(mutex_);
  enabled_.emplace(device, peer);
}

void PeerAccessTable::Disable(int32_t device, int32_t peer) {
  std::lock_guard<std::mutex> lock(mutex_);
  enabled_.erase({device, peer});
}

bool PeerAccessTable::Mutual(int32_t a, int32_t b) {
  std::lock_guard<std::mutex> lock(mutex_);
  return enabled_.count({a, b}) != 0 && enabled_.count({b, a}) != 0;
}

aclError PeerCopyFailure(const char *api, int32_t src_device, int32_t dst_device) {
  const int s = static_cast<int>(src_device);
  const int d = static_cast<int>(dst_device);
  char reason[256];
  MissingAccess(reason, sizeof(reason), s, d);
  return Fail(ACL_ERROR_RT_SYS_DMA, api, "copy from device %d memory to device %d memory failed: %s", s, d, reason);
}

aclError PeerGuardedTask::Run(std::string *message) {
  if (PeerAccessTable::Instance().Mutual(src_device_, dst_device_)) {
    return copy_->Run(message);
  }
  const int s = static_cast<int>(src_device_);
  const int d = static_cast<int>(dst_device_);
  char reason[256];
  MissingAccess(reason, sizeof(reason), s, d);
  char text[400];
  (void)std::snprintf(text, sizeof(text),
                      "a copy from device %d memory to device %d memory failed when it executed: %s; nothing was "
                      "copied",
                      s, d, reason);
  *message = text;
  return ACL_ERROR_RT_SYS_DMA;
}

std::unique_ptr<StreamTask> CopyBetween(std::unique_ptr<StreamTask> copy, int32_t src_device, int32_t dst_device) {
  if (src_device == dst_device) {
    return copy;
  }
  return std::make_unique<PeerGuardedTask>(std::move(copy), src_device, dst_device);
}

void EnqueueCopy(Stream &stream, std::unique_ptr<StreamTask> copy, OrderTicket ticket, int64_t resolved,
                 const MemInfo &src_info, const MemInfo &dst_info) {
  if (CrossesDevices(resolved, src_info, dst_info)) {
    copy = CopyBetween(std::move(copy), src_info.device, dst_info.device);
  }
  copy->order_ticket = std::move(ticket);
  stream.Enqueue(std::move(copy));
}

}  // namespace aclhost
