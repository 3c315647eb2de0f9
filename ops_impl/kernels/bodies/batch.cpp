// MemcpyBatch: tensors to and from a HostBuffer in one batched call.
// Definitions: configs/ops/batch.yaml; primitives: ms_memcopy/ops/batch.py. The bodies, and the
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

// The batch plan of one kernel instance, reused across launches.
struct BatchState {
  BatchCopier copier;
  std::vector<BatchItem> items;
  std::vector<size_t> nbytes;                            // the bytes of each item
  std::vector<size_t> host_offsets;                      // ... and where it lies in the HostBuffer (empty: unknown)
  std::vector<std::pair<int64_t, size_t>> destinations;  // (host offset, item), sorted
};

const AttrSpec kAttrs[] = {{"buffer_id", false}};
MSMC_REGISTER_ATTRS(kAttrs);

// InputError when two items of s's plan write overlapping bytes of the HostBuffer (d2h: the copies
// of a batch run in no order).
void CheckOverlap(BatchState &s) {
  s.destinations.clear();
  for (size_t i = 0; i < s.nbytes.size(); ++i) {
    if (s.nbytes[i] > 0) {
      s.destinations.emplace_back(static_cast<int64_t>(s.host_offsets[i]), i);
    }
  }
  std::sort(s.destinations.begin(), s.destinations.end());
  for (size_t k = 1; k < s.destinations.size(); ++k) {
    const size_t prev = s.destinations[k - 1].second;
    const size_t cur = s.destinations[k].second;
    if (s.host_offsets[cur] < s.host_offsets[prev] + s.nbytes[prev]) {
      throw InputError("offsets", "items " + std::to_string(std::min(prev, cur)) + " and " +
                                      std::to_string(std::max(prev, cur)) +
                                      " write overlapping bytes (copies within a batch run in no order, "
                                      "so the result would be undefined); nothing was copied");
    }
  }
}

// The check of both directions: s.nbytes[i] = bytes of tensors[i] and, when the offsets are known,
// s.host_offsets[i] = where it lies in a HostBuffer of `capacity` bytes.
void CheckBatch(BatchState &s, const TensorArg *tensors, size_t k, const TensorArg &offsets, size_t capacity,
                bool d2h) {
  if (d2h) {
    const size_t given = NumElements(offsets, "offsets");
    if (given != k) {
      throw InputError("tensors", "got " + std::to_string(k) + " tensor(s) for " + std::to_string(given) +
                                      " offsets: MemcpyBatch(d2h) takes one tensor per offset");
    }
  }
  const int64_t *offs = KnownInt64(offsets, "offsets", k);
  s.nbytes.resize(k);
  for (size_t i = 0; i < k; ++i) {
    s.nbytes[i] = NumBytes(tensors[i], d2h ? "tensors" : "outputs");
  }
  s.host_offsets.clear();
  if (offs == nullptr) {
    return;
  }
  s.host_offsets.resize(k);
  for (size_t i = 0; i < k; ++i) {
    s.host_offsets[i] = CheckItemRange(offs[i], s.nbytes[i], capacity, i);
  }
  if (d2h) {
    CheckOverlap(s);
  }
}

// MemcpyBatch d2h: tensors[i] -> HostBuffer[offsets[i]:], out[i] = bytes of tensors[i].
void BatchD2H(KernelState &s, const TensorArg *tensors, size_t k, const TensorArg &offsets, const TensorArg &out,
              aclrtStream stream) {
  BatchState &b = s.Family<BatchState>();
  HostBufferLease buffer(s.Attr("buffer_id"), "host_buffer", stream);
  std::vector<int64_t> values;
  CheckBatch(b, tensors, k, ValuesOnHost(offsets, &values), buffer.nbytes(), true);
  b.items.resize(k);
  s.host_results.resize(k);
  for (size_t i = 0; i < k; ++i) {
    b.items[i] = BatchItem{buffer.data() + b.host_offsets[i], tensors[i].data, b.nbytes[i]};
    s.host_results[i] = static_cast<int64_t>(b.nbytes[i]);
  }
  b.copier.Run(b.items.data(), k, ACL_MEMCPY_DEVICE_TO_HOST, s.device, nullptr, stream);
  WriteResults(s, out, stream);
}

// MemcpyBatch h2d: HostBuffer[offsets[i]:] -> outputs[i].
void BatchH2D(KernelState &s, const TensorArg &offsets, const TensorArg *outputs, size_t k, aclrtStream stream) {
  BatchState &b = s.Family<BatchState>();
  HostBufferLease buffer(s.Attr("buffer_id"), "host_buffer", stream);
  std::vector<int64_t> values;
  CheckBatch(b, outputs, k, ValuesOnHost(offsets, &values), buffer.nbytes(), false);
  b.items.resize(k);
  for (size_t i = 0; i < k; ++i) {
    b.items[i] = BatchItem{outputs[i].data, buffer.data() + b.host_offsets[i], b.nbytes[i]};
  }
  b.copier.Run(b.items.data(), k, ACL_MEMCPY_HOST_TO_DEVICE, s.device, nullptr, stream);
}

const OpBody kBodies[] = {
    {"memcpy_batch_d2h", "MemcpyBatch(d2h)",
     [](KernelState &s, const TensorArg *a, size_t n) {
       CheckBatch(s.Family<BatchState>(), a, n - 2, a[n - 2], HostBufferBytes(s.Attr("buffer_id"), "host_buffer"),
                  true);
     },
     [](KernelState &s, const TensorArg *a, size_t n, aclrtStream st) {
       BatchD2H(s, a, n - 2, a[n - 2], a[n - 1], st);
     }},
    {"memcpy_batch_h2d", "MemcpyBatch(h2d)",
     [](KernelState &s, const TensorArg *a, size_t n) {
       CheckBatch(s.Family<BatchState>(), a + 1, n - 1, a[0], HostBufferBytes(s.Attr("buffer_id"), "host_buffer"),
                  false);
     },
     [](KernelState &s, const TensorArg *a, size_t n, aclrtStream st) { BatchH2D(s, a[0], a + 1, n - 1, st); }},
};

MSMC_REGISTER_OP_BODIES(kBodies);

}  // namespace

}  // namespace msmc
