// Errors raised by the copy kernels. The launch functions throw them; the entry layer (the
// CustomOpBuilder module, ms_extension/) turns them into the framework's error, keeping the text,
// which is what users see.
#ifndef MS_MEMCOPY_KERNELS_KERNEL_ERROR_H_
#define MS_MEMCOPY_KERNELS_KERNEL_ERROR_H_

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "acl/acl.h"

namespace msmc {

constexpr size_t kNoFailIndex = SIZE_MAX;

// An input mistake found before any byte moved. what() reads "ValueError: <argument>: <reason>",
// or "ValueError: <statement>" for a statement that starts with the argument's name itself
// ("offsets[1] = 60: ...", "offsets[0] is negative (-1)"). The entry layer drops the "ValueError: "
// (route::Rethrow): users read "ms_memcopy <label>: <argument>: <reason>" as a ValueError.
class InputError : public std::invalid_argument {
 public:
  InputError(const std::string &argument, const std::string &reason);
  explicit InputError(const std::string &statement);
};

// A failed ACL call. what() reads
// "AclError: <api> failed: <NAME> (<code>) [fail index i]: <runtime message>".
class AclCallError : public std::runtime_error {
 public:
  AclCallError(aclError code, const std::string &api, size_t fail_index, const std::string &message);
  aclError code() const { return code_; }
  size_t fail_index() const { return fail_index_; }

 private:
  aclError code_;
  size_t fail_index_;
};

// The name of an ACL error code in the shipped headers ("ACL_ERROR_RT_PARAM_INVALID"), or nullptr.
const char *KnownAclErrorName(aclError code);
// The same, or "ACL_ERROR_UNKNOWN_<code>" for a code the headers lack (as the Python layer names it).
std::string AclErrorName(aclError code);

// Throws AclCallError when ret != ACL_SUCCESS, with the runtime's aclGetRecentErrMsg text.
void CheckAcl(aclError ret, const char *api);
// The same, naming fail_index (already mapped to the caller's item index) when it is not kNoFailIndex.
void CheckAcl(aclError ret, const char *api, size_t fail_index);

// Overflow-checked size arithmetic for the copy plans; argument names the input blamed on overflow.
size_t CheckedMul(size_t a, size_t b, const char *argument);
size_t CheckedAdd(size_t a, size_t b, const char *argument);

}  // namespace msmc

#endif  // MS_MEMCOPY_KERNELS_KERNEL_ERROR_H_
