// Names the kernels put in their messages, exported for Python: the label of each op's body
// ("Memcpy2D(extract)"), with which the primitives prefix the errors of their own checks so that an
// error reads the same whether Python or a kernel finds it, and the kernels' name of each ACL code.
#include "host_buffers.h"  // MSMC_EXPORT
#include "kernel_error.h"
#include "op_bodies.h"

// The label of op (its name in configs/ops/*.yaml), or nullptr for an op without a body.
MSMC_EXPORT const char *msmc_op_label(const char *op) {
  const msmc::OpBody *body = msmc::FindOpBody(op);
  return body != nullptr ? body->label : nullptr;
}

// The name the kernels' errors give an ACL error code of the shipped headers, or nullptr for another code.
MSMC_EXPORT const char *msmc_acl_error_name(int32_t code) { return msmc::KnownAclErrorName(code); }
