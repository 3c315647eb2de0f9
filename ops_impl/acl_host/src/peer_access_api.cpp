// aclrtDeviceCanAccessPeer, aclrtDeviceEnablePeerAccess, aclrtDeviceDisablePeerAccess,
// aclrtDevicePeerAccessStatus.
//
// Check order (CANN 9.1: the ACL layer in src/acl/aclrt_impl/memory.cpp, then rtGetDevicePhyIdByIndex,
// rtDeviceCanAccessPeer / rtEnableP2P / rtDisableP2P in src/runtime/api/impl/api_error.cc and
// api_impl.cc):
//   CanAccessPeer: deviceId == peerDeviceId -> 100000 | peerDeviceId not a device -> 107001 |
//     deviceId outside [0, 64) (RT_MAX_DEV_NUM, negative ids included) -> 107000 | canAccessPeer NULL ->
//     107000 (a runtime-layer check: not 100000) | SoC without peer access -> 207000 | deviceId not a
//     device -> 107001. Needs no current device.
//   EnablePeerAccess: flags != 0 -> 200006 (ACL_ERROR_FEATURE_UNSUPPORTED) | no current device -> 107002 |
//     peerDeviceId == current device -> 100000 | peerDeviceId not a device -> 107001 | SoC without peer
//     access -> 207000.
//   DisablePeerAccess: as EnablePeerAccess without flags.
//   PeerAccessStatus: status NULL -> 100000 | deviceId or peerDeviceId outside [0, 64) -> 107000 |
//     *status = 1 when each device has enabled the other (the driver's drvGetP2PStatus), else 0; ids in
//     [count, 64) give 0, as the API page says. No SoC gate: every emulated SoC's runtime config has the
//     feature (on Ascend310B nothing can be enabled, so the status is 0). Needs no current device.
//
// Host-runtime choices (documented in docs/host_runtime.md):
// - Every pair of distinct devices can access each other (*canAccessPeer = 1), as in one AI server.
// - Enabling an enabled direction and disabling a direction that is not enabled succeed (CANN passes
//   both to the driver, whose answer is not in its open source).
// - Peer access stays until it is disabled (aclrtResetDevice does not clear it).
// - "Not a device" for the driver-side checks (ids in [count, 64)) is 107001, as the device-id
//   translation of CANN's runtime reports an unknown id.
#include <cstdint>
#include <utility>

#include "acl/acl_rt.h"
#include "acl_limits.h"
#include "api_guard.h"
#include "device.h"
#include "error_state.h"
#include "peer_access.h"
#include "soc_profile.h"

namespace aclhost {
namespace {

using acl_limits::kMaxRuntimeDevices;

aclError CheckSameDevice(const char *api, int32_t device, int32_t peer) {
  if (device == peer) {
    return Fail(ACL_ERROR_INVALID_PARAM, api, "deviceId %d cannot be equal to peerDeviceId %d",
                static_cast<int>(device), static_cast<int>(peer));
  }
  return ACL_SUCCESS;
}

aclError CheckIsDevice(const char *api, const char *param, int32_t id) {
  int32_t count = 0;
  ACLHOST_RETURN_IF_ERROR(DeviceManager::Instance().DeviceCount(api, &count));
  if (id < 0 || id >= count) {
    return Fail(ACL_ERROR_RT_INVALID_DEVICEID, api, "%s %d is not a device; expected [0, %d)", param,
                static_cast<int>(id), static_cast<int>(count));
  }
  return ACL_SUCCESS;
}

aclError CheckPeerFeature(const char *api) {
  return RequireSocFeature(api, &SocProfile::peer_access, "peer access between devices is not supported");
}

aclError CanAccessPeer(const char *api, int32_t *can_access, int32_t device, int32_t peer) {
  ACLHOST_RETURN_IF_ERROR(CheckSameDevice(api, device, peer));
  ACLHOST_RETURN_IF_ERROR(CheckIsDevice(api, "peerDeviceId", peer));
  if (device < 0 || device >= kMaxRuntimeDevices) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api, "deviceId %d is out of range; expected [0, %lld)",
                static_cast<int>(device), static_cast<long long>(kMaxRuntimeDevices));
  }
  if (can_access == nullptr) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api, "canAccessPeer is NULL; expected a pointer to an int32_t");
  }
  ACLHOST_RETURN_IF_ERROR(CheckPeerFeature(api));
  ACLHOST_RETURN_IF_ERROR(CheckIsDevice(api, "deviceId", device));
  *can_access = 1;
  return ACL_SUCCESS;
}

aclError PeerAccessStatus(const char *api, int32_t device, int32_t peer, int32_t *status) {
  ACLHOST_RETURN_IF_NULL(api, status, "expected a pointer to an int32_t");
  for (const auto &id : {std::make_pair("deviceId", device), std::make_pair("peerDeviceId", peer)}) {
    if (id.second < 0 || id.second >= kMaxRuntimeDevices) {
      return Fail(ACL_ERROR_RT_PARAM_INVALID, api, "%s %d is out of range; expected [0, %lld)", id.first,
                  static_cast<int>(id.second), static_cast<long long>(kMaxRuntimeDevices));
    }
  }
  *status = device != peer && PeerAccessTable::Instance().Mutual(device, peer) ? 1 : 0;
  return ACL_SUCCESS;
}

// The checks of Enable/DisablePeerAccess after the flags; *device is the current device.
aclError PeerOfCurrentDevice(const char *api, int32_t peer, int32_t *device) {
  ACLHOST_RETURN_IF_ERROR(DeviceManager::Instance().CurrentDevice(api, device));
  ACLHOST_RETURN_IF_ERROR(CheckSameDevice(api, *device, peer));
  ACLHOST_RETURN_IF_ERROR(CheckIsDevice(api, "peerDeviceId", peer));
  return CheckPeerFeature(api);
}

}  // namespace
}  // namespace aclhost

extern "C" aclError aclrtDeviceCanAccessPeer(int32_t *canAccessPeer, int32_t deviceId, int32_t peerDeviceId) {
  return aclhost::GuardedCall("aclrtDeviceCanAccessPeer", [&](const char *api) {
    return aclhost::CanAccessPeer(api, canAccessPeer, deviceId, peerDeviceId);
  });
}

extern "C" aclError aclrtDeviceEnablePeerAccess(int32_t peerDeviceId, uint32_t flags) {
  return aclhost::GuardedCall("aclrtDeviceEnablePeerAccess", [&](const char *api) -> aclError {
    if (flags != 0) {
      return aclhost::Fail(ACL_ERROR_FEATURE_UNSUPPORTED, api,
                           "flags is a reserved parameter and must be 0, current value=%u",
                           static_cast<unsigned>(flags));
    }
    int32_t device = -1;
    ACLHOST_RETURN_IF_ERROR(aclhost::PeerOfCurrentDevice(api, peerDeviceId, &device));
    aclhost::PeerAccessTable::Instance().Enable(device, peerDeviceId);
    return ACL_SUCCESS;
  });
}

extern "C" aclError aclrtDeviceDisablePeerAccess(int32_t peerDeviceId) {
  return aclhost::GuardedCall("aclrtDeviceDisablePeerAccess", [&](const char *api) -> aclError {
    int32_t device = -1;
    ACLHOST_RETURN_IF_ERROR(aclhost::PeerOfCurrentDevice(api, peerDeviceId, &device));
    aclhost::PeerAccessTable::Instance().Disable(device, peerDeviceId);
    return ACL_SUCCESS;
  });
}

extern "C" aclError aclrtDevicePeerAccessStatus(int32_t deviceId, int32_t peerDeviceId, int32_t *status) {
  return aclhost::GuardedCall("aclrtDevicePeerAccessStatus", [&](const char *api) {
    return aclhost::PeerAccessStatus(api, deviceId, peerDeviceId, status);
  });
}
