// The infer functions of the op_def route: one OpFuncImpl per op of the generated table, exported
// under the name the generated op_def registration (gen_custom_ops_def.cc) refers to,
// gCustom_<op>FuncImpl. Each evaluates the op's output rules from configs/ops/*.yaml (route_common.h)
// on MindSpore's InferInfo of the op_def arguments, names the op's host-value inputs as
// value-dependent, so that kernels get their values on the host, and runs the op body's check
// (op_bodies.h) on the shapes and the constant values, so that a graph with a bad constant offset,
// region or mapping is refused while it compiles, with the kernel's text.
#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "include/utils/utils.h"
#include "ops/ops_func_impl/op_func_impl.h"
#include "route_common.h"
#include "route_ops.inc"
#include "utils/ms_context.h"

namespace msmc {
namespace route {
namespace {

using mindspore::PrimitivePtr;
using mindspore::ShapeArray;
using mindspore::ops::InferInfoPtrList;
using mindspore::ops::OpFuncImpl;
using mindspore::ops::TypeIdList;

ArgReader ReaderOf(const InferInfoPtrList &in) {
  ArgReader r;
  r.shape = [&in](int i) { return in[i]->GetShape(); };
  r.dtype = [&in](int i) { return in[i]->GetType(); };
  r.int_value = [&in](int i) { return in[i]->GetScalarValue<int64_t>(); };
  r.ints = [&in](int i) -> std::optional<std::vector<int64_t>> {
    auto values = in[i]->GetArrayValue<int64_t>();
    if (!values.has_value() || values->HasUnknownValue()) {
      return std::nullopt;
    }
    return values->ToVector();
  };
  r.length = [&in](int i) -> std::optional<size_t> {
    if (in[i]->IsDynamicSequence()) {
      return std::nullopt;
    }
    return in[i]->GetSequenceElements().size();
  };
  return r;
}

// The copies are host code run kernel by kernel: a graph compiled for task sink (jit_level O2) or
// captured as a whole cannot run them. Checked whenever a graph is being compiled: in GRAPH_MODE, and
// for ms.jit inside PYNATIVE_MODE.
void CheckJitLevel(const char *label) {
  auto context = mindspore::MsContext::GetInstance();
  if (context == nullptr) {
    return;
  }
  const bool compiling_graph =
      mindspore::JitCompiling() || context->get_param<int>(mindspore::MS_CTX_EXECUTION_MODE) == mindspore::kGraphMode;
  if (compiling_graph && context->GetJitLevel() == "O2") {
    MS_EXCEPTION(mindspore::RuntimeError)
        << "ms_memcopy " << label
        << ": runs kernel by kernel and cannot be compiled with jit_level O2 (task sink); use jit_level O0 or O1";
  }
}

// TypeError for a tensor argument of the wrong dtype, or for tensors of the op's dtype_group inputs
// whose dtypes differ, in the primitives' words.
void CheckDtypes(const RouteOp &op, const char *label, const InferInfoPtrList &in) {
  std::vector<std::pair<std::string, TypeId>> same_dtype;
  for (int a = 0; a < op.nargs; ++a) {
    const RouteArg &arg = op.args[a];
    std::vector<std::pair<std::string, TypeId>> tensors;
    if (arg.kind == ArgKind::kTensor || arg.kind == ArgKind::kHostValues) {
      tensors.emplace_back(arg.name, in[a]->GetType());
    } else if (arg.kind == ArgKind::kTensors && !in[a]->IsDynamicSequence()) {
      const auto elements = in[a]->GetSequenceElements();
      for (size_t i = 0; i < elements.size(); ++i) {
        tensors.emplace_back(std::string(arg.name) + "[" + std::to_string(i) + "]", elements[i]->GetType());
      }
    }
    for (const auto &[name, type] : tensors) {
      const std::string mismatch = DtypeMismatch(name, arg, type);
      if (!mismatch.empty()) {
        MS_EXCEPTION(mindspore::TypeError) << "ms_memcopy " << label << ": " << mismatch;
      }
    }
    if (arg.same_dtype) {
      same_dtype.insert(same_dtype.end(), tensors.begin(), tensors.end());
    }
  }
  for (const auto &[name, type] : same_dtype) {
    const auto &[first_name, first_type] = same_dtype.front();
    if (type != first_type) {
      MS_EXCEPTION(mindspore::TypeError) << "ms_memcopy " << label << ": " << name << " has dtype "
                                         << DescribeDtype(type) << " but " << first_name << " has "
                                         << DescribeDtype(first_type);
    }
  }
}

// TypeError for an argument written in place that a graph does not pass as a Parameter: a graph hands
// any other tensor (an input, a constant, a slice, a result) to the kernel as a temporary, so the
// write would be lost. InferInfo keeps the abstract to itself; its DebugInfo names the abstract's
// class, which is "AbstractRefTensor" for a Parameter and "AbstractTensor" for anything else while a
// graph compiles. Eager calls are checked in Python (there a plain Tensor is written in place).
void CheckWrittenArgsAreParameters(const RouteOp &op, const char *label, const InferInfoPtrList &in) {
  static const std::string kPlainTensor = "-> AbstractTensor(";
  if (!mindspore::JitCompiling()) {
    return;
  }
  for (int a = 0; a < op.nargs; ++a) {
    const RouteArg &arg = op.args[a];
    if (!arg.written) {
      continue;
    }
    std::vector<std::pair<std::string, std::string>> tensors;  // (argument, debug info)
    if (arg.kind == ArgKind::kTensors) {
      if (in[a]->IsDynamicSequence()) {
        continue;
      }
      const auto elements = in[a]->GetSequenceElements();
      for (size_t i = 0; i < elements.size(); ++i) {
        tensors.emplace_back(std::string(arg.name) + "[" + std::to_string(i) + "]", elements[i]->DebugInfo());
      }
    } else {
      tensors.emplace_back(arg.name, in[a]->DebugInfo());
    }
    for (const auto &[name, info] : tensors) {
      if (info.find(kPlainTensor) != std::string::npos) {
        MS_EXCEPTION(mindspore::TypeError)
            << "ms_memcopy " << label << ": " << name
            << " must be a Parameter in graphs (GRAPH_MODE, ms.jit): it is written in place, and a graph hands "
               "any other tensor (an input, a constant, a slice, a result) to the kernel as a temporary, so the "
               "write would be lost";
      }
    }
  }
}

bool Known(const Shape &shape) {
  return std::all_of(shape.begin(), shape.end(), [](int64_t d) { return d >= 0; });
}

// The op body's check (op_bodies.h) on what is known while the graph compiles: the attributes, the
// shapes and dtypes, and the values of the int64 inputs that are constants (a graph input's values
// are left to the kernel, which checks again at launch). Skipped while a shape is not known. Its
// errors are ValueErrors, raised as the infer function's own.
void CheckConstants(const RouteOp &op, const OpBody &body, const InferInfoPtrList &in, const OutputSpec &spec) {
  KernelState state;
  CheckArgs args;
  for (int a = 0; a < op.nargs; ++a) {
    const RouteArg &arg = op.args[a];
    if (arg.kind == ArgKind::kInt) {
      const std::optional<int64_t> value = in[a]->GetScalarValue<int64_t>();
      if (!value.has_value()) {
        return;
      }
      SetAttr(state, arg.name, *value);
    } else if (arg.kind == ArgKind::kTensor || arg.kind == ArgKind::kHostValues) {
      if (in[a]->IsDynamicRank() || !Known(in[a]->GetShape())) {
        return;
      }
      if (arg.kind == ArgKind::kTensor) {
        args.AddTensor(in[a]->GetShape(), in[a]->GetType());
        continue;
      }
      std::optional<std::vector<int64_t>> values;
      const auto array = in[a]->GetArrayValue<int64_t>();
      if (array.has_value() && !array->HasUnknownValue()) {
        values = array->ToVector();
      }
      args.AddValues(in[a]->GetShape(), std::move(values));
    } else if (arg.kind == ArgKind::kTensors) {
      if (in[a]->IsDynamicSequence()) {
        return;
      }
      for (const auto &element : in[a]->GetSequenceElements()) {
        if (element->IsDynamicRank() || !Known(element->GetShape())) {
          return;
        }
        args.AddTensor(element->GetShape(), element->GetType());
      }
    }
  }
  for (size_t o = 0; o < spec.shapes.size(); ++o) {
    if (!Known(spec.shapes[o])) {
      return;
    }
    args.AddTensor(spec.shapes[o], spec.dtypes[o]);
  }
  try {
    CheckBody(body, state, args);
  } catch (const std::invalid_argument &e) {
    MS_EXCEPTION(mindspore::ValueError) << e.what();
  }
}

class RouteInfer : public OpFuncImpl {
 public:
  explicit RouteInfer(const char *name) : name_(name) {}

  bool GeneralInferRegistered() const override { return true; }

  std::set<int64_t> GetValueDependArgIndices() const override {
    std::set<int64_t> indices;
    const RouteOp &op = FindRouteOp(name_);
    for (int i = 0; i < op.nargs; ++i) {
      if (op.args[i].kind == ArgKind::kHostValues) {
        indices.insert(i);
      }
    }
    return indices;
  }

  int32_t CheckValidation(const PrimitivePtr &, const InferInfoPtrList &in) const override {
    const RouteOp &op = FindRouteOp(name_);
    CheckWrittenArgsAreParameters(op, BodyOf(op).label, in);
    return mindspore::OP_CHECK_SUCCESS;
  }

  ShapeArray InferShape(const PrimitivePtr &, const InferInfoPtrList &in) const override {
    OutputSpec spec = Eval(in);
    const RouteOp &op = FindRouteOp(name_);
    CheckConstants(op, BodyOf(op), in, spec);
    return spec.shapes;
  }

  TypeIdList InferType(const PrimitivePtr &, const InferInfoPtrList &in) const override { return Eval(in).dtypes; }

 private:
  OutputSpec Eval(const InferInfoPtrList &in) const {
    const RouteOp &op = FindRouteOp(name_);
    const char *label = BodyOf(op).label;
    CheckJitLevel(label);
    CheckDtypes(op, label, in);
    try {
      return EvalOutputs(op, ReaderOf(in));
    } catch (const std::invalid_argument &) {
      try {
        Rethrow(label);
      } catch (const std::exception &e) {
        MS_EXCEPTION(mindspore::ValueError) << e.what();
      }
    }
  }

  const char *name_;
};

}  // namespace
}  // namespace route
}  // namespace msmc

// The names gen_custom_ops_def.cc declares: gCustom_<op_def name>FuncImpl.
#define MSMC_ROUTE_INFER(NAME, OP_DEF)                                  \
  namespace msmc::route {                                               \
  namespace {                                                           \
  RouteInfer g_infer_##NAME(#NAME);                                     \
  }                                                                     \
  }                                                                     \
  namespace mindspore::ops {                                            \
  OpFuncImpl &gCustom_##OP_DEF##FuncImpl = msmc::route::g_infer_##NAME; \
  }
MSMC_ROUTE_OPS(MSMC_ROUTE_INFER)
