// MemcpyWithCondition: copies through aclrtMemcpyAsyncWithCondition.
// Definitions: configs/ops/condition.yaml; primitives: ms_memcopy/ops/condition.py. The bodies, and the
// attributes they read, register themselves below (op_bodies.h) under the names of the definitions.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "body_helpers.h"
#include "host_buffers.h"
#include "kernel_error.h"
#include "op_bodies.h"

namespace msmc {

using namespace bodies;  // NOLINT(build/namespaces)

namespace {

const AttrSpec kAttrs[] = {{"buffer_id", false}};
MSMC_REGISTER_ATTRS(kAttrs);

// The checks: the bytes copied and, when the offset is known, where they lie in a HostBuffer of
// `capacity` bytes (else SIZE_MAX).
struct HostSpan {
  size_t nbytes;
  size_t begin;
};

HostSpan CheckCondD2H(const TensorArg &x, const TensorArg &offset, size_t capacity) {
  const size_t n = NumBytes(x, "x");
  const int64_t *off = KnownInt64(offset, "offset", 1);
  return HostSpan{n, off == nullptr ? SIZE_MAX : CheckHostRange(off[0], n, capacity, "offset", "x")};
}

HostSpan CheckCondH2D(const TensorArg &offset, const TensorArg &y, size_t capacity) {
  const size_t n = NumBytes(y, "output");
  const int64_t *off = KnownInt64(offset, "offset", 1);
  return HostSpan{n, off == nullptr ? SIZE_MAX : CheckHostRange(off[0], n, capacity, "offset", "the output")};
}

void CondD2D(KernelState &, const TensorArg &x, const TensorArg &y, aclrtStream stream) {
  CheckSameBytes(x, y, "x");
  const size_t n = NumBytes(x, "x");
  CopyWithCondition(y.data, n, x.data, n, ACL_MEMCPY_DEVICE_TO_DEVICE, stream);
}

void CondD2H(KernelState &s, const TensorArg &x, const TensorArg &offset, const TensorArg &out, aclrtStream stream) {
  HostBufferLease buffer(s.Attr("buffer_id"), "host_buffer", stream);
  std::vector<int64_t> values;
  const HostSpan span = CheckCondD2H(x, ValuesOnHost(offset, &values), buffer.nbytes());
  CopyWithCondition(buffer.data() + span.begin, buffer.nbytes() - span.begin, x.data, span.nbytes,
                    ACL_MEMCPY_DEVICE_TO_HOST, stream);
  s.host_results.assign(1, static_cast<int64_t>(span.nbytes));
  WriteResults(s, out, stream);
}

void CondH2D(KernelState &s, const TensorArg &offset, const TensorArg &y, aclrtStream stream) {
  HostBufferLease buffer(s.Attr("buffer_id"), "host_buffer", stream);
  std::vector<int64_t> values;
  const HostSpan span = CheckCondH2D(ValuesOnHost(offset, &values), y, buffer.nbytes());
  CopyWithCondition(y.data, span.nbytes, buffer.data() + span.begin, span.nbytes, ACL_MEMCPY_HOST_TO_DEVICE, stream);
}

const OpBody kBodies[] = {
    {"memcpy_cond_d2d", "MemcpyWithCondition(d2d)",
     [](KernelState &, const TensorArg *a, size_t) { CheckSameBytes(a[0], a[1], "x"); },
     [](KernelState &s, const TensorArg *a, size_t, aclrtStream st) { CondD2D(s, a[0], a[1], st); }},
    {"memcpy_cond_d2h", "MemcpyWithCondition(d2h)",
     [](KernelState &s, const TensorArg *a, size_t) {
       CheckCondD2H(a[0], a[1], HostBufferBytes(s.Attr("buffer_id"), "host_buffer"));
     },
     [](KernelState &s, const TensorArg *a, size_t, aclrtStream st) { CondD2H(s, a[0], a[1], a[2], st); }},
    {"memcpy_cond_h2d", "MemcpyWithCondition(h2d)",
     [](KernelState &s, const TensorArg *a, size_t) {
       CheckCondH2D(a[0], a[1], HostBufferBytes(s.Attr("buffer_id"), "host_buffer"));
     },
     [](KernelState &s, const TensorArg *a, size_t, aclrtStream st) { CondH2D(s, a[0], a[1], st); }},
};

MSMC_REGISTER_OP_BODIES(kBodies);

}  // namespace

}  // namespace msmc
