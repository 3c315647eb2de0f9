#include "kernel_error.h"

#include <cstdio>

namespace msmc {

InputError::InputError(const std::string &argument, const std::string &reason)
    : std::invalid_argument("ValueError: " + argument + ": " + reason) {}

InputError::InputError(const std::string &statement) : std::invalid_argument("ValueError: " + statement) {}

namespace {

std::string FormatAclFailure(aclError code, const std::string &api, size_t fail_index,
                             const std::string &message) {
  std::string text = "AclError: " + api + " failed: " + AclErrorName(code) + " (" + std::to_string(code) + ")";
  if (fail_index != kNoFailIndex) {
    text += " [fail index " + std::to_string(fail_index) + "]";
  }
  if (!message.empty()) {
    text += ": " + message;
  }
  return text;
}

}  // namespace

AclCallError::AclCallError(aclError code, const std::string &api, size_t fail_index, const std::string &message)
    : std::runtime_error(FormatAclFailure(code, api, fail_index, message)), code_(code), fail_index_(fail_index) {}

const char *AclErrorName(aclError code) {
  switch (code) {
    case 0: return "ACL_SUCCESS";
    case 100000: return "ACL_ERROR_INVALID_PARAM";
    case 100001: return "ACL_ERROR_UNINITIALIZE";
    case 100002: return "ACL_ERROR_REPEAT_INITIALIZE";
    case 100003: return "ACL_ERROR_INVALID_FILE";
    case 100037: return "ACL_ERROR_REPEAT_FINALIZE";
    case 200000: return "ACL_ERROR_BAD_ALLOC";
    case 200001: return "ACL_ERROR_API_NOT_SUPPORT";
    case 200006: return "ACL_ERROR_FEATURE_UNSUPPORTED";
    case 500000: return "ACL_ERROR_INTERNAL_ERROR";
    case 500001: return "ACL_ERROR_FAILURE";
    case 107000: return "ACL_ERROR_RT_PARAM_INVALID";
    case 107001: return "ACL_ERROR_RT_INVALID_DEVICEID";
    case 107002: return "ACL_ERROR_RT_CONTEXT_NULL";
    case 107003: return "ACL_ERROR_RT_STREAM_CONTEXT";
    case 107008: return "ACL_ERROR_RT_ADDR_UNALIGNED";
    case 107016: return "ACL_ERROR_RT_INVALID_MEMORY_TYPE";
    case 107017: return "ACL_ERROR_RT_INVALID_HANDLE";
    case 207000: return "ACL_ERROR_RT_FEATURE_NOT_SUPPORT";
    case 207001: return "ACL_ERROR_RT_MEMORY_ALLOCATION";
    case 207008: return "ACL_ERROR_RT_NO_STREAM_RESOURCE";
    case 207018: return "ACL_ERROR_RT_DEVICE_OOM";
    case 507000: return "ACL_ERROR_RT_INTERNAL_ERROR";
    case 507007: return "ACL_ERROR_RT_CONTEXT_RELEASE_ERROR";
    case 507013: return "ACL_ERROR_RT_SYS_DMA";
    case 507046: return "ACL_ERROR_RT_STREAM_SYNC_TIMEOUT";
    default: return "ACL_ERROR_UNKNOWN";
  }
}

void CheckAcl(aclError ret, const char *api) { CheckAcl(ret, api, kNoFailIndex); }

void CheckAcl(aclError ret, const char *api, size_t fail_index) {
  if (ret == ACL_SUCCESS) {
    return;
  }
  // The runtime keeps a thread's messages newest first, one per line: the first line is this failure's.
  const char *message = aclGetRecentErrMsg();
  const std::string text = message != nullptr ? message : "";
  throw AclCallError(ret, api, fail_index, text.substr(0, text.find('\n')));
}

size_t CheckedMul(size_t a, size_t b, const char *argument) {
  size_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) {
    throw InputError(argument, "size overflows (" + std::to_string(a) + " * " + std::to_string(b) + ")");
  }
  return out;
}

size_t CheckedAdd(size_t a, size_t b, const char *argument) {
  size_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) {
    throw InputError(argument, "size overflows (" + std::to_string(a) + " + " + std::to_string(b) + ")");
  }
  return out;
}

}  // namespace msmc
