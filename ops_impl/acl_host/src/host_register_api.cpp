// aclrtHostRegister, aclrtHostRegisterV2, aclrtHostGetDevicePointer and aclrtHostUnregister.
//
// The checks and their order follow CANN 9.1 (docs/host_runtime.md, "Registered host memory"):
// - ACL layer (src/acl/aclrt_impl/memory.cpp): NULL pointers, size 0 and a non-zero flag of
//   aclrtHostGetDevicePointer are ACL_ERROR_INVALID_PARAM (100000);
// - runtime layer (api_error.cc): aclrtHostRegister's type outside combinations of IOMEMORY | READONLY is
//   ACL_ERROR_RT_FEATURE_NOT_SUPPORT (207000); aclrtHostRegisterV2's flag without a known bit, or with an
//   unknown one, is ACL_ERROR_RT_PARAM_INVALID (107000), then a range overlapping a registration is
//   ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED (507910); then the current context (107002); then the range
//   itself (host_registration.cpp).
#include "acl/acl_rt.h"
#include "api_guard.h"
#include "checked_math.h"
#include "device.h"
#include "error_state.h"
#include "memory_registry.h"

using aclhost::DeviceManager;
using aclhost::Fail;
using aclhost::GuardedCall;
using aclhost::HostRegisterRequest;
using aclhost::MemoryRegistry;

namespace {

constexpr uint32_t kRegisterTypeBits = ACL_HOST_REGISTER_IOMEMORY | ACL_HOST_REGISTER_READONLY;
constexpr uint32_t kMappingFlags = ACL_HOST_REG_MAPPED | ACL_HOST_REG_IOMEMORY | ACL_HOST_REG_READONLY;
constexpr uint32_t kRegisterFlags = kMappingFlags | ACL_HOST_REG_PINNED;

aclError CheckRange(const char *api, const void *ptr, uint64_t size) {
  ACLHOST_RETURN_IF_NULL(api, ptr, "expected the start of the host memory to register");
  if (size == 0) {
    return Fail(ACL_ERROR_INVALID_PARAM, api, "size is 0; expected a positive byte count");
  }
  return ACL_SUCCESS;
}

aclError RequireContext(const char *api) {
  int32_t device = -1;
  return DeviceManager::Instance().CurrentDevice(api, &device);
}

}  // namespace

extern "C" aclError aclrtHostRegister(void *ptr, uint64_t size, aclrtHostRegisterType type, void **devPtr) {
  return GuardedCall("aclrtHostRegister", [&](const char *api) -> aclError {
    ACLHOST_RETURN_IF_NULL(api, ptr, "expected the start of the host memory to register");
    ACLHOST_RETURN_IF_NULL(api, devPtr, "expected a pointer to receive the device address");
    ACLHOST_RETURN_IF_ERROR(CheckRange(api, ptr, size));
    const int64_t raw_type = aclhost::RawEnumValue(type);
    if (raw_type < 0 || (static_cast<uint64_t>(raw_type) & ~static_cast<uint64_t>(kRegisterTypeBits)) != 0) {
      return Fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, api,
                  "type %lld is not supported; expected ACL_HOST_REGISTER_MAPPED (0) or a combination of "
                  "ACL_HOST_REGISTER_IOMEMORY (0x4) and ACL_HOST_REGISTER_READONLY (0x8)",
                  static_cast<long long>(raw_type));
    }
    ACLHOST_RETURN_IF_ERROR(RequireContext(api));
    HostRegisterRequest request;
    request.mapped = true;
    ACLHOST_RETURN_IF_ERROR(MemoryRegistry::Instance().RegisterHost(api, ptr, size, request));
    *devPtr = ptr;
    return ACL_SUCCESS;
  });
}

extern "C" aclError aclrtHostRegisterV2(void *ptr, uint64_t size, uint32_t flag) {
  return GuardedCall("aclrtHostRegisterV2", [&](const char *api) -> aclError {
    ACLHOST_RETURN_IF_ERROR(CheckRange(api, ptr, size));
    if ((flag & kRegisterFlags) == 0 || (flag & ~kRegisterFlags) != 0) {
      return Fail(ACL_ERROR_RT_PARAM_INVALID, api,
                  "flag %#x is invalid; expected an OR of ACL_HOST_REG_MAPPED (0x2), ACL_HOST_REG_IOMEMORY (0x4), "
                  "ACL_HOST_REG_READONLY (0x8) and ACL_HOST_REG_PINNED (0x10000000)",
                  static_cast<unsigned>(flag));
    }
    MemoryRegistry &registry = MemoryRegistry::Instance();
    ACLHOST_RETURN_IF_ERROR(registry.CheckHostOverlap(api, ptr, size));
    ACLHOST_RETURN_IF_ERROR(RequireContext(api));
    HostRegisterRequest request;
    request.mapped = (flag & kMappingFlags) != 0;
    request.pinned = (flag & ACL_HOST_REG_PINNED) != 0;
    return registry.RegisterHost(api, ptr, size, request);
  });
}

extern "C" aclError aclrtHostGetDevicePointer(void *pHost, void **pDevice, uint32_t flag) {
  return GuardedCall("aclrtHostGetDevicePointer", [&](const char *api) -> aclError {
    ACLHOST_RETURN_IF_NULL(api, pHost, "expected the start of registered host memory");
    ACLHOST_RETURN_IF_NULL(api, pDevice, "expected a pointer to receive the device address");
    if (flag != 0) {
      return Fail(ACL_ERROR_INVALID_PARAM, api, "flag is %u; expected 0 (reserved)", static_cast<unsigned>(flag));
    }
    ACLHOST_RETURN_IF_ERROR(RequireContext(api));
    return MemoryRegistry::Instance().HostDevicePointer(api, pHost, pDevice);
  });
}

extern "C" aclError aclrtHostUnregister(void *ptr) {
  return GuardedCall("aclrtHostUnregister", [&](const char *api) -> aclError {
    ACLHOST_RETURN_IF_NULL(api, ptr, "expected the start of registered host memory");
    ACLHOST_RETURN_IF_ERROR(RequireContext(api));
    return MemoryRegistry::Instance().UnregisterHost(api, ptr);
  });
}
