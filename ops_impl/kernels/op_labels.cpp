// The label of each op's body ("Memcpy2D(extract)"), exported for Python: the primitives prefix the
// errors of their own checks with it, so an error reads the same whether Python or a kernel finds it.
#include "host_buffers.h"  // MSMC_EXPORT
#include "op_bodies.h"

// The label of op (its name in configs/ops.yaml), or nullptr for an op without a body.
MSMC_EXPORT const char *msmc_op_label(const char *op) {
  const msmc::OpBody *body = msmc::FindOpBody(op);
  return body != nullptr ? body->label : nullptr;
}
