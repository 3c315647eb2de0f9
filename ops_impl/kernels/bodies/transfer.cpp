// The asynchronous forms of the copy primitives and WaitTransfer: the transfer's copies run on a
// transfer stream of their lane (transfer_streams.h), after everything the launching stream had
// queued, and the launch returns a token at once; WaitTransfer makes the launching stream wait for
// the lane's transfers. Definitions: configs/ops/transfer.yaml; primitives: ms_memcopy/ops/transfer.py.
//
// An asynchronous form runs the body of its synchronous op (found by name: the same check, plan,
// error texts and ACL calls) on the lane's stream, with its own KernelState for that body; that state
// discards the body's int64 output (bytes moved), and the token (the same value) goes to the op's
// output on the launching stream, so the framework's output is never written after the launch. The
// body's check runs before it queues any copy: nothing moves when it fails.
#include <cstring>
#include <string>
#include <vector>

#include "body_helpers.h"
#include "kernel_error.h"
#include "launch_context.h"
#include "op_bodies.h"
#include "transfer_streams.h"

namespace msmc {

using namespace bodies;  // NOLINT(build/namespaces)

namespace {

const AttrSpec kAttrs[] = {{"buffer_id", false}, {"lane", false}};
MSMC_REGISTER_ATTRS(kAttrs);

// How an asynchronous form's arguments map onto its synchronous op's.
enum class Layout {
  // The synchronous op's inputs, then its int64 output (discarded); the token is the sum of the values
  // the body computes for it.
  kResultLast,
  // MemcpyBatch h2d in place: the form takes (tensors..., offsets), the synchronous body (offsets,
  // outputs...) with the tensors as its outputs; the token is the tensors' bytes.
  kTensorsInPlace,
};

// An asynchronous form: its op, the synchronous op whose body it runs, the attributes that body reads,
// the lane it runs on, its argument layout and whether the body writes one result per tensor
// (MemcpyBatch d2h) rather than one.
struct AsyncForm {
  const char *op;
  const char *sync_op;
  std::vector<const char *> attrs;
  int64_t lane;
  Layout layout = Layout::kResultLast;
  bool result_per_tensor = false;
};

// The attributes SwapBlocks' body reads (configs/ops/blocks.yaml), passed on by its asynchronous forms.
const std::vector<const char *> kSwapAttrs = {"buffer_id", "host_layout", "blocks_per_host_block"};

const AsyncForm kForms[] = {
    {"swap_blocks_d2h_async", "swap_blocks_d2h", kSwapAttrs, kLaneDeviceToHost},
    {"swap_blocks_h2d_async", "swap_blocks_h2d", kSwapAttrs, kLaneHostToDevice},
    {"copy_blocks_async", "copy_blocks", {}, kLaneWithinDevice},
    {"memcpy_batch_d2h_async", "memcpy_batch_d2h", {"buffer_id"}, kLaneDeviceToHost, Layout::kResultLast, true},
    {"memcpy_batch_h2d_async", "memcpy_batch_h2d", {"buffer_id"}, kLaneHostToDevice, Layout::kTensorsInPlace},
    {"memcpy2d_write_async", "memcpy2d_write", {}, kLaneWithinDevice},
};

const AsyncForm &Form(const char *op) {
  for (const AsyncForm &form : kForms) {
    if (std::strcmp(form.op, op) == 0) {
      return form;
    }
  }
  throw std::logic_error(std::string("no asynchronous form ") + op);
}

const OpBody &SyncBody(const AsyncForm &form) {
  const OpBody *body = FindOpBody(form.sync_op);
  if (body == nullptr) {
    throw std::logic_error(std::string("no body for ") + form.sync_op);
  }
  return *body;
}

// Per kernel instance; members are destroyed bottom-up, so the ring waits for the transfers before the
// body's state they use goes.
struct TransferState {
  KernelState body;  // the synchronous body's state (its plans; its results discarded)
  TransferRing ring;
  std::vector<TensorArg> args;
  int64_t results_shape[1] = {1};
};

// The synchronous body's args from the form's (tensors..., token): see Layout. The body's int64 output
// has a shape and no memory: the body's state discards its results (the token carries them).
TensorArg *BodyArgs(const AsyncForm &form, TransferState &t, const TensorArg *args, size_t count) {
  if (form.layout == Layout::kTensorsInPlace) {
    t.args.assign(1, args[count - 2]);  // offsets
    t.args.insert(t.args.end(), args, args + count - 2);
    return t.args.data();
  }
  t.results_shape[0] = form.result_per_tensor ? static_cast<int64_t>(count - 2) : 1;
  t.args.assign(args, args + count);
  t.args.back() = TensorArg{nullptr, t.results_shape, 1, "int64"};
  return t.args.data();
}

// The count of the body's args.
size_t BodyCount(const AsyncForm &form, size_t count) {
  return form.layout == Layout::kTensorsInPlace ? count - 1 : count;
}

// The token: the bytes the transfer moves.
int64_t TokenValue(const AsyncForm &form, const KernelState &body, const TensorArg *args, size_t count) {
  int64_t total = 0;
  if (form.layout == Layout::kTensorsInPlace) {
    for (size_t i = 0; i + 2 < count; ++i) {
      total = static_cast<int64_t>(CheckedAdd(static_cast<size_t>(total), NumBytes(args[i], "tensors"), "tensors"));
    }
    return total;
  }
  for (int64_t value : body.host_results) {
    total += value;
  }
  return total;
}

void Prepare(const AsyncForm &form, KernelState &s, TransferState &t) {
  for (const char *name : form.attrs) {
    t.body.StoreAttr(name, s.Attr(name));
  }
  t.body.device = s.device;
  t.body.discard_results = true;
}

void CheckAsync(const char *op, KernelState &s, const TensorArg *args, size_t count) {
  const AsyncForm &form = Form(op);
  TransferState &t = s.Family<TransferState>();
  Prepare(form, s, t);
  SyncBody(form).check(t.body, BodyArgs(form, t, args, count), BodyCount(form, count));
}

// The tensors (all but host-value inputs) declared as device memory until the transfer has run (host
// runtime; nothing with CANN, where they are device memory): the declaration the launch made, kept
// past its end, or a new one outside a CPU-target launch.
std::unique_ptr<DeviceMemoryScope> DeclareTensors(const TensorArg *args, size_t count) {
  std::unique_ptr<DeviceMemoryScope> memory = TakeLaunchMemory();
  if (memory != nullptr) {
    return memory;
  }
  memory = std::make_unique<DeviceMemoryScope>();
  RegisterTensors(args, count, memory.get());
  return memory;
}

void RunAsync(const char *op, KernelState &s, const TensorArg *args, size_t count, aclrtStream stream) {
  const AsyncForm &form = Form(op);
  const OpBody &body = SyncBody(form);
  TransferState &t = s.Family<TransferState>();
  Prepare(form, s, t);
  TensorArg *body_args = BodyArgs(form, t, args, count);
  const size_t body_count = BodyCount(form, count);
  const aclrtStream lane = TransferStream(s.device, form.lane);
  HoldUntilLaunchCompletes(lane);
  TransferRing::Slot &slot = t.ring.Acquire();
  slot.memory = DeclareTensors(args, count - 1);
  CheckAcl(aclrtRecordEvent(slot.start, stream), "aclrtRecordEvent");
  CheckAcl(aclrtStreamWaitEvent(lane, slot.start), "aclrtStreamWaitEvent");
  try {
    body.run(t.body, body_args, body_count, lane);  // its check comes first: a mistake queues no copy
  } catch (...) {
    // A failed check, or an ACL failure part way: what was queued runs after the launching stream's
    // work, which may not have run yet (the CPU target completes it after this returns), so the slot
    // keeps the tensors declared until the lane has passed the transfer's end.
    t.ring.Release(slot, lane);
    NoteTransfer(t.ring, slot, true);
    throw;
  }
  t.ring.Release(slot, lane);
  NoteTransfer(t.ring, slot);
  MarkTransferQueued(s.device, form.lane);
  s.host_results.assign(1, TokenValue(form, t.body, args, count));
  WriteResults(s, args[count - 1], stream);  // the token, on the launching stream
}

// WaitTransfer: tensors..., token, out. The token is the int64 [1] output of an asynchronous form.
const TensorArg &CheckWait(KernelState &s, const TensorArg *args, size_t count) {
  const TensorArg &token = args[count - 2];
  if (std::strcmp(token.dtype, "int64") != 0 || token.ndim != 1 || token.shape[0] != 1) {
    throw InputError("token", std::string("must be the int64 tensor of shape [1] an asynchronous form returned, got ") +
                                  token.dtype + " of " + std::to_string(token.ndim) + " dimension(s)");
  }
  const int64_t lane = s.Attr("lane");
  if (lane != kAllLanes && (lane < 0 || lane >= kTransferLanes)) {
    throw InputError("lane", "is " + std::to_string(lane) + "; expected -1 (every lane), 0, 1 or 2");
  }
  return token;
}

void RunWait(KernelState &s, const TensorArg *args, size_t count, aclrtStream stream) {
  const TensorArg &token = CheckWait(s, args, count);
  WaitForTransfers(s.device, s.Attr("lane"), stream);
  CheckAcl(aclrtMemcpyAsync(args[count - 1].data, sizeof(int64_t), token.data, sizeof(int64_t),
                            ACL_MEMCPY_DEVICE_TO_DEVICE, stream),
           "aclrtMemcpyAsync");
}

#define MSMC_ASYNC_BODY(op, label)                                                           \
  {op, label, [](KernelState &s, const TensorArg *a, size_t n) { CheckAsync(op, s, a, n); }, \
   [](KernelState &s, const TensorArg *a, size_t n, aclrtStream st) { RunAsync(op, s, a, n, st); }}

const OpBody kBodies[] = {
    MSMC_ASYNC_BODY("swap_blocks_d2h_async", "SwapBlocksAsync(d2h)"),
    MSMC_ASYNC_BODY("swap_blocks_h2d_async", "SwapBlocksAsync(h2d)"),
    MSMC_ASYNC_BODY("copy_blocks_async", "CopyBlocksAsync"),
    MSMC_ASYNC_BODY("memcpy_batch_d2h_async", "MemcpyBatchAsync(d2h)"),
    MSMC_ASYNC_BODY("memcpy_batch_h2d_async", "MemcpyBatchAsync(h2d)"),
    MSMC_ASYNC_BODY("memcpy2d_write_async", "Memcpy2DAsync(write)"),
    {"wait_transfer", "WaitTransfer", [](KernelState &s, const TensorArg *a, size_t n) { CheckWait(s, a, n); },
     [](KernelState &s, const TensorArg *a, size_t n, aclrtStream st) { RunWait(s, a, n, st); }},
};

#undef MSMC_ASYNC_BODY

MSMC_REGISTER_OP_BODIES(kBodies);

}  // namespace

}  // namespace msmc
