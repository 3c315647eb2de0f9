// Entry layer for MindSpore's ops.Custom(func_type="aot") on the CPU target.
//
// For each kernel symbol K named in configs/ops.yaml this file exports K (the launch, running the
// op's body registered in op_bodies.cpp), KInit (reads the primitive's attributes into a KernelState
// kept by MindSpore for the kernel's lifetime; the ACL runtime is first touched at launch, where
// MindSpore reports errors with their text) and, for the ops with dynamic_shape, KInferShape (the
// op's output rule). The list is generated from configs/ops.yaml (aot_entries.inc). A launch declares the framework's tensors as device
// memory, runs the op body on the calling thread's stream and completes it before returning
// (RunOnHostTarget), because MindSpore may reuse the tensors' memory as soon as the kernel returns.
//
// Errors: no exception escapes as anything but std::exception, which MindSpore catches and reports
// with its what() text: "ms_memcopy <op>: ValueError: <argument>: ..." for bad input (nothing was
// copied) and "ms_memcopy <op>: AclError: <api> failed: <NAME> (<code>) [fail index i]: ..." for a
// failed ACL call.
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "aot_extra.h"
#include "kernel_error.h"
#include "launch_context.h"
#include "op_bodies.h"

using mindspore::AotExtra;
using mindspore::AotKernelData;

namespace msmc {
namespace {

struct AotState : public AotKernelData {
  KernelState state;
};

int InitState(AotExtra *extra, const char *op) {
  const OpBody *body = FindOpBody(op);
  const char *label = body != nullptr ? body->label : op;
  try {
    auto holder = std::make_unique<AotState>();
    KernelState &s = holder->state;
    for (const char *const *name = AttrNames(); *name != nullptr; ++name) {
      if (extra->HasAttr(*name)) {
        SetAttr(s, *name, extra->GetAttrInt(*name));
      }
    }
    s.device = HostTargetDevice();
    delete extra->kernel_data_;
    extra->kernel_data_ = holder.release();
    return 0;
  } catch (const std::exception &e) {
    throw std::runtime_error(std::string("ms_memcopy ") + label + ": " + e.what());
  }
}

KernelState &StateOf(void *extra) {
  auto *aot = static_cast<AotExtra *>(extra);
  auto *holder = dynamic_cast<AotState *>(aot->kernel_data_);
  if (holder == nullptr) {
    throw std::logic_error("kernel state missing: the Init function did not run");
  }
  return holder->state;
}

// Runs the body registered for op (op_bodies.h) with the CPU launch protocol.
int RunAot(const char *op, int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *extra) {
  const OpBody *body = FindOpBody(op);
  const char *label = body != nullptr ? body->label : op;
  try {
    if (body == nullptr) {
      throw std::logic_error("no op body is registered for this op");
    }
    KernelState &s = StateOf(extra);
    std::vector<TensorArg> args;
    args.reserve(static_cast<size_t>(nparam));
    for (int i = 0; i < nparam; ++i) {
      args.push_back(TensorArg{params[i], shapes[i], ndims[i], dtypes[i]});
    }
    RunOnHostTarget(*body, s, args.data(), args.size());
    return 0;
  } catch (const std::exception &e) {
    throw std::runtime_error(std::string("ms_memcopy ") + label + ": " + e.what());
  }
}

std::vector<int64_t> ShapeOf(int ndim, const int64_t *shape) { return std::vector<int64_t>(shape, shape + ndim); }

}  // namespace
}  // namespace msmc

#define MSMC_AOT extern "C" __attribute__((visibility("default")))
// The aot symbols of one op of configs/ops.yaml: <kernel>Init and <kernel>, running the op's
// registered body (OP is the op's name there).
#define MSMC_AOT_ENTRY(K, OP)                                                                           \
  MSMC_AOT int K##Init(int *, int64_t **, const char **, AotExtra *extra) { return msmc::InitState(extra, OP); } \
  MSMC_AOT int K(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *, void *extra) { \
    return msmc::RunAot(OP, nparam, params, ndims, shapes, dtypes, extra);                               \
  }
// The infer hook of an op with dynamic_shape: its output has the shape of input I, or the given dims.
#define MSMC_AOT_INFER_LIKE(K, I)                                                                \
  MSMC_AOT std::vector<int64_t> K##InferShape(int *ndims, int64_t **shapes, AotExtra *) {        \
    return msmc::ShapeOf(ndims[I], shapes[I]);                                                   \
  }
#define MSMC_AOT_INFER_DIMS(K, ...)                                                              \
  MSMC_AOT std::vector<int64_t> K##InferShape(int *, int64_t **, AotExtra *extra) { return {__VA_ARGS__}; }

#include "aot_entries.inc"  // generated from configs/ops.yaml by setup.py (ms_memcopy.route_codegen)
