#include "kernel_error.h"

#include <cstdio>

namespace msmc {

InputError::InputError(const std::string &argument, const std::string &reason)
    : std::invalid_argument("ValueError: " + argument + ": " + reason) {}

InputError::InputError(const std::string &statement) : std::invalid_argument("ValueError: " + statement) {}

namespace {

std::string FormatAclFailure(aclError code, const std::string &api, size_t fail_index, const std::string &message) {
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

namespace {

struct ErrorName {
  aclError code;
  const char *name;
};

// Every code of the shipped ACL headers: setup.py generates the table from them (through
// ms_memcopy.acl_error_codes, the source of Python's table too).
constexpr ErrorName kErrorNames[] = {
#include "acl_error_names.inc"
};

}  // namespace

const char *KnownAclErrorName(aclError code) {
  for (const ErrorName &entry : kErrorNames) {
    if (entry.code == code) {
      return entry.name;
    }
  }
  return nullptr;
}

std::string AclErrorName(aclError code) {
  const char *name = KnownAclErrorName(code);
  return name != nullptr ? name : "ACL_ERROR_UNKNOWN_" + std::to_string(code);
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
