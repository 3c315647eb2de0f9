// MemcpyWithDesc: device copies through a memcpy descriptor.
// Definitions: configs/ops/desc.yaml; primitives: ms_memcopy/ops/desc.py. The bodies, and the
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

// The descriptor of one kernel instance, allocated once and set before every launch.
struct DescState {
  DescCopier copier;
};

const AttrSpec kAttrs[] = {{"count", true}};
MSMC_REGISTER_ATTRS(kAttrs);

// The check of the window: its first element when start is known (else SIZE_MAX).
size_t CheckWindow(KernelState &s, const TensorArg &x, const TensorArg &start, const TensorArg &y) {
  const size_t itemsize = ItemSize(x.dtype, "x");
  const size_t count = static_cast<size_t>(s.Attr("count"));
  const size_t numel = NumElements(x, "x");
  if (count > numel) {  // whatever the start
    throw InputError("count " + std::to_string(count) + " exceeds the " + std::to_string(numel) + " elements of x");
  }
  const int64_t *first = KnownInt64(start, "start", 1);
  const size_t begin = first == nullptr ? SIZE_MAX : CheckRegion(first[0], count, numel, "start", "elements");
  if (NumBytes(y, "output") != CheckedMul(count, itemsize, "count")) {
    throw InputError("output", "does not hold count elements");
  }
  return begin;
}

void DescCopy(KernelState &s, const TensorArg &x, const TensorArg &y, aclrtStream stream) {
  CheckSameBytes(x, y, "x");
  s.Family<DescState>().copier.Copy(y.data, x.data, NumBytes(x, "x"), stream);
}

void DescWindow(KernelState &s, const TensorArg &x, const TensorArg &start, const TensorArg &y, aclrtStream stream) {
  std::vector<int64_t> values;
  const size_t first = CheckWindow(s, x, ValuesOnHost(start, &values), y);
  const size_t itemsize = ItemSize(x.dtype, "x");
  const size_t count = static_cast<size_t>(s.Attr("count"));
  s.Family<DescState>().copier.Copy(y.data, static_cast<const char *>(x.data) + first * itemsize, count * itemsize,
                                    stream);
}

const OpBody kBodies[] = {
    {"memcpy_desc_copy", "MemcpyWithDesc",
     [](KernelState &, const TensorArg *a, size_t) { CheckSameBytes(a[0], a[1], "x"); },
     [](KernelState &s, const TensorArg *a, size_t, aclrtStream st) { DescCopy(s, a[0], a[1], st); }},
    {"memcpy_desc_window", "MemcpyWithDesc(window)",
     [](KernelState &s, const TensorArg *a, size_t) { CheckWindow(s, a[0], a[1], a[2]); },
     [](KernelState &s, const TensorArg *a, size_t, aclrtStream st) { DescWindow(s, a[0], a[1], a[2], st); }},
};

MSMC_REGISTER_OP_BODIES(kBodies);

}  // namespace

}  // namespace msmc
