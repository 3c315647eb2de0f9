// MemcpyBatch: tensors to and from a HostBuffer in one batched call.
// Definitions: configs/ops/batch.yaml; primitives: ms_memcopy/ops/batch.py. The bodies register
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

void BatchD2H(KernelState &s, const TensorArg *tensors, size_t k, const TensorArg &offsets, const TensorArg &out,
              aclrtStream stream) {
  HostBufferLease buffer(s.buffer_id, "host_buffer", stream);
  const size_t given = NumElements(offsets, "offsets");
  if (given != k) {
    throw InputError("tensors", "got " + std::to_string(k) + " tensor(s) for " + std::to_string(given) +
                                    " offsets: MemcpyBatch(d2h) takes one tensor per offset");
  }
  const int64_t *offs = ReadInt64(s, offsets, "offsets", k);
  s.items.resize(k);
  s.host_results.resize(k);
  for (size_t i = 0; i < k; ++i) {
    const size_t n = NumBytes(tensors[i], "tensors");
    const size_t begin = CheckItemRange(offs[i], n, buffer.nbytes(), i);
    s.items[i] = BatchItem{buffer.data() + begin, tensors[i].data, n};
    s.host_results[i] = static_cast<int64_t>(n);
  }
  s.batch.Run(s.items.data(), k, ACL_MEMCPY_DEVICE_TO_HOST, s.device, "offsets", stream);
  WriteResults(s, out, stream);
}

void BatchH2D(KernelState &s, const TensorArg &offsets, const TensorArg *outputs, size_t k, aclrtStream stream) {
  HostBufferLease buffer(s.buffer_id, "host_buffer", stream);
  const int64_t *offs = ReadInt64(s, offsets, "offsets", k);
  s.items.resize(k);
  for (size_t i = 0; i < k; ++i) {
    const size_t n = NumBytes(outputs[i], "outputs");
    const size_t begin = CheckItemRange(offs[i], n, buffer.nbytes(), i);
    s.items[i] = BatchItem{outputs[i].data, buffer.data() + begin, n};
  }
  s.batch.Run(s.items.data(), k, ACL_MEMCPY_HOST_TO_DEVICE, s.device, nullptr, stream);
}

namespace {

const OpBody kBodies[] = {
    {"memcpy_batch_d2h", "MemcpyBatch(d2h)",
     [](KernelState &s, const TensorArg *a, size_t n, aclrtStream st) { BatchD2H(s, a, n - 2, a[n - 2], a[n - 1], st); }},
    {"memcpy_batch_h2d", "MemcpyBatch(h2d)",
     [](KernelState &s, const TensorArg *a, size_t n, aclrtStream st) { BatchH2D(s, a[0], a + 1, n - 1, st); }},
};

MSMC_REGISTER_OP_BODIES(kBodies);

}  // namespace

}  // namespace msmc
