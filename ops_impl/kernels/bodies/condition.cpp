// MemcpyWithCondition: copies through aclrtMemcpyAsyncWithCondition.
// Definitions: configs/ops/condition.yaml; primitives: ms_memcopy/ops/condition.py. The bodies register
// themselves below (op_bodies.h), under the names of the definitions.
#include "op_bodies.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "body_helpers.h"
#include "host_buffers.h"
#include "kernel_error.h"

namespace msmc {

using namespace bodies;  // NOLINT(build/namespaces)

void CondD2D(KernelState &, const TensorArg &x, const TensorArg &y, aclrtStream stream) {
  CheckSameBytes(x, y, "x");
  const size_t n = NumBytes(x, "x");
  CopyWithCondition(y.data, n, x.data, n, ACL_MEMCPY_DEVICE_TO_DEVICE, stream);
}

void CondD2H(KernelState &s, const TensorArg &x, const TensorArg &offset, const TensorArg &out, aclrtStream stream) {
  HostBufferLease buffer(s.buffer_id, "host_buffer", stream);
  const size_t n = NumBytes(x, "x");
  const size_t begin = CheckHostRange(ReadInt64(s, offset, "offset", 1)[0], n, buffer.nbytes(), "offset", "x");
  CopyWithCondition(buffer.data() + begin, buffer.nbytes() - begin, x.data, n, ACL_MEMCPY_DEVICE_TO_HOST, stream);
  s.host_results.assign(1, static_cast<int64_t>(n));
  WriteResults(s, out, stream);
}

void CondH2D(KernelState &s, const TensorArg &offset, const TensorArg &y, aclrtStream stream) {
  HostBufferLease buffer(s.buffer_id, "host_buffer", stream);
  const size_t n = NumBytes(y, "output");
  const size_t begin =
      CheckHostRange(ReadInt64(s, offset, "offset", 1)[0], n, buffer.nbytes(), "offset", "the output");
  CopyWithCondition(y.data, n, buffer.data() + begin, n, ACL_MEMCPY_HOST_TO_DEVICE, stream);
}

namespace {

const OpBody kBodies[] = {
    {"memcpy_cond_d2d", "MemcpyWithCondition(d2d)",
     [](KernelState &s, const TensorArg *a, size_t, aclrtStream st) { CondD2D(s, a[0], a[1], st); }},
    {"memcpy_cond_d2h", "MemcpyWithCondition(d2h)",
     [](KernelState &s, const TensorArg *a, size_t, aclrtStream st) { CondD2H(s, a[0], a[1], a[2], st); }},
    {"memcpy_cond_h2d", "MemcpyWithCondition(h2d)",
     [](KernelState &s, const TensorArg *a, size_t, aclrtStream st) { CondH2D(s, a[0], a[1], st); }},
};

MSMC_REGISTER_OP_BODIES(kBodies);

}  // namespace

}  // namespace msmc
