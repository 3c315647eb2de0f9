// aclrtCreateContext, aclrtDestroyContext, aclrtSetCurrentContext, aclrtGetCurrentContext (the rules are in
// device.cpp). The ACL layer rejects a NULL argument with ACL_ERROR_INVALID_PARAM before the runtime sees it.
#include "acl/acl_rt.h"
#include "api_guard.h"
#include "device.h"
#include "error_state.h"

using aclhost::DeviceManager;
using aclhost::Fail;
using aclhost::GuardedCall;

extern "C" aclError aclrtCreateContext(aclrtContext *context, int32_t deviceId) {
  return GuardedCall("aclrtCreateContext", [&](const char *api) -> aclError {
    ACLHOST_RETURN_IF_NULL(api, context, "expected a pointer to receive the context");
    return DeviceManager::Instance().CreateContext(api, deviceId, context);
  });
}

extern "C" aclError aclrtDestroyContext(aclrtContext context) {
  return GuardedCall("aclrtDestroyContext", [&](const char *api) -> aclError {
    ACLHOST_RETURN_IF_NULL(api, context, "expected a context from aclrtCreateContext");
    return DeviceManager::Instance().DestroyContext(api, context);
  });
}

extern "C" aclError aclrtSetCurrentContext(aclrtContext context) {
  return GuardedCall("aclrtSetCurrentContext", [&](const char *api) -> aclError {
    ACLHOST_RETURN_IF_NULL(api, context, "expected a live context");
    return DeviceManager::Instance().SetCurrentContext(api, context);
  });
}

extern "C" aclError aclrtGetCurrentContext(aclrtContext *context) {
  return GuardedCall("aclrtGetCurrentContext", [&](const char *api) -> aclError {
    ACLHOST_RETURN_IF_NULL(api, context, "expected a pointer to receive the context");
    return DeviceManager::Instance().GetCurrentContext(api, context);
  });
}
