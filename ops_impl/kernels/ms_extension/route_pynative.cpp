// The op_def route's PyNative entries: one Python function per op of the generated table, named
// like the op, registered in this CustomOpBuilder module. Each takes the op_def arguments in order
// (a tensor, a tuple of tensors for a variadic input, then the attribute and given-output values as
// ints or tuples of ints) and returns a tuple of the op's output tensors. It evaluates the output
// rules of configs/ops.yaml on the actual inputs, allocates the outputs, and runs the op's body
// through a PyboostRunner on the stream MindSpore launches the op on.
//
// On the CPU target the runner launches its kernel inline in its device task, as MindSpore's built-in
// CPU kernels do: the documented form (launching from MindSpore's separate launch queue) lets a
// built-in op that follows read the outputs before they are written.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ms_extension/api.h"
#include "route_common.h"
#include "route_ops.inc"

namespace msmc {
namespace route {
namespace {

using Tensors = std::vector<ms::Tensor>;

// One op_def argument as the caller gave it.
struct ArgValue {
  Tensors tensors;                    // kTensor, kHostValues: one; kTensors: all
  std::optional<int64_t> int_value;   // kInt, kGivenDtype
  std::vector<int64_t> ints;          // kInts and the other given tuples
};

class RouteRunner : public ms::pynative::PyboostRunner {
 public:
  RouteRunner(const RouteOp &op, const OpBody &body) : PyboostRunner(op.name), body_(body) {}

  KernelState &state() { return state_; }
  void set_host_value_inputs(std::vector<bool> flags) { host_value_inputs_ = std::move(flags); }

  void LaunchKernel() override {
    std::vector<TensorArg> args;
    args.reserve(inputs().size() + outputs().size());
    unnamed_.clear();
    unnamed_.reserve(inputs().size() + outputs().size());  // c_str() pointers must stay valid
    bool reads_values = false;
    for (size_t i = 0; i < inputs().size(); ++i) {
      args.push_back(ToArg(inputs()[i]));
      reads_values = reads_values || host_value_inputs_[i];
    }
    for (const ms::Tensor &t : outputs()) {
      args.push_back(ToArg(t));
    }
#ifdef CUSTOM_ASCEND_OP
    // The body reads int64 inputs back with a synchronous copy, which does not wait for the stream
    // that produces them.
    if (reads_values) {
      try {
        Synchronize(static_cast<aclrtStream>(stream()));
      } catch (...) {
        Rethrow(body_.label);
      }
    }
#else
    (void)reads_values;  // the CPU body reads host memory in stream order
#endif
    LaunchBody(body_, state_, args, stream());
  }

 protected:
#ifndef CUSTOM_ASCEND_OP
  void _DispatchLaunchTask() override { LaunchKernel(); }
#endif

 private:
  TensorArg ToArg(const ms::Tensor &t) { return ToTensorArg(t.GetDataPtr(), t.shape(), t.data_type(), &unnamed_); }

  const OpBody &body_;
  KernelState state_;
  std::vector<bool> host_value_inputs_;
  std::vector<std::string> unnamed_;
};

std::vector<int64_t> ToInts(const py::handle &obj, const char *argument) {
  if (!py::isinstance<py::tuple>(obj) && !py::isinstance<py::list>(obj)) {
    ThrowInput(argument, "must be a tuple of ints");
  }
  std::vector<int64_t> values;
  for (const py::handle &item : obj) {
    values.push_back(py::cast<int64_t>(item));
  }
  return values;
}

std::vector<ArgValue> Convert(const RouteOp &op, const py::args &args) {
  if (args.size() != static_cast<size_t>(op.nargs)) {
    ThrowInput("arguments", "takes " + std::to_string(op.nargs) + " arguments, got " + std::to_string(args.size()));
  }
  std::vector<ArgValue> values(args.size());
  for (int a = 0; a < op.nargs; ++a) {
    const RouteArg &arg = op.args[a];
    const py::handle obj = args[static_cast<size_t>(a)];
    ArgValue &v = values[static_cast<size_t>(a)];
    try {
      switch (arg.kind) {
        case ArgKind::kTensor:
        case ArgKind::kHostValues:
          v.tensors.push_back(py::cast<ms::Tensor>(obj));
          break;
        case ArgKind::kTensors:
          for (const py::handle &item : obj) {
            v.tensors.push_back(py::cast<ms::Tensor>(item));
          }
          break;
        case ArgKind::kInt:
        case ArgKind::kLength:
        case ArgKind::kGivenDtype:
          v.int_value = py::cast<int64_t>(obj);
          break;
        case ArgKind::kStr:
          ThrowInput(arg.name, "str attributes do not reach op bodies");
        default:
          v.ints = ToInts(obj, arg.name);
      }
    } catch (const py::cast_error &) {
      ThrowInput(arg.name, "has the wrong type for this op_def argument");
    }
  }
  return values;
}

ArgReader ReaderOf(const std::vector<ArgValue> &values) {
  ArgReader r;
  r.shape = [&values](int i) { return values[i].tensors.at(0).shape(); };
  r.dtype = [&values](int i) { return values[i].tensors.at(0).data_type(); };
  r.int_value = [&values](int i) { return values[i].int_value; };
  r.ints = [&values](int i) -> std::optional<std::vector<int64_t>> { return values[i].ints; };
  r.length = [&values](int i) -> std::optional<size_t> { return values[i].tensors.size(); };
  return r;
}

// Runs in MindSpore's frontend task, where the inputs' shapes are known.
Tensors Run(const RouteOp &op, const OpBody &body, const std::vector<ArgValue> &values) {
  try {
    auto runner = std::make_shared<RouteRunner>(op, body);
    Tensors inputs;
    std::vector<bool> host_value_inputs;
    for (int a = 0; a < op.nargs; ++a) {
      const RouteArg &arg = op.args[a];
      const ArgValue &v = values[static_cast<size_t>(a)];
      if (arg.kind == ArgKind::kInt) {
        SetAttr(runner->state(), arg.name, *v.int_value);
      }
      for (const ms::Tensor &t : v.tensors) {
        inputs.push_back(t);
        host_value_inputs.push_back(arg.kind == ArgKind::kHostValues);
      }
    }
    runner->set_host_value_inputs(std::move(host_value_inputs));
    const OutputSpec spec = EvalOutputs(op, ReaderOf(values));
    Tensors outputs;
    outputs.reserve(spec.shapes.size());
    for (size_t i = 0; i < spec.shapes.size(); ++i) {
      outputs.emplace_back(spec.dtypes[i], spec.shapes[i]);
    }
    runner->Run(inputs, outputs);
    return outputs;
  } catch (...) {
    Rethrow(body.label);
  }
}

// The number of outputs the call returns, known before the frontend task runs.
size_t OutputCount(const RouteOp &op, const std::vector<ArgValue> &values) {
  for (int a = 0; a < op.nargs; ++a) {
    if (op.args[a].kind == ArgKind::kGivenRanks) {
      return values[static_cast<size_t>(a)].ints.size();
    }
  }
  return static_cast<size_t>(op.noutputs);
}

py::object Call(const char *name, const py::args &args) {
  const RouteOp &op = FindRouteOp(name);
  const OpBody &body = BodyOf(op);
  std::vector<ArgValue> values;
  try {
    values = Convert(op, args);
    CheckVariadicLength(op, ReaderOf(values));  // here, not in the frontend task, which loses the error's text
  } catch (...) {
    Rethrow(body.label);
  }
  auto py_output = mindspore::tensor::MakeVector<false>(OutputCount(op, values));
  auto promises = mindspore::tensor::TransformVectorPromise(py_output);
  mindspore::pynative::DispatchOp(std::make_shared<mindspore::pynative::PassthroughFrontendTask>(
      [&op, &body, values, promises]() {
        for (const ArgValue &v : values) {
          for (const ms::Tensor &t : v.tensors) {
            t.ConvertStubNodeToTensor();
          }
        }
        const Tensors outputs = Run(op, body, values);
        std::vector<mindspore::tensor::TensorPtr> results;
        results.reserve(outputs.size());
        for (const ms::Tensor &t : outputs) {
          results.push_back(t.tensor());
        }
        mindspore::tensor::SetPromise(promises, results);
      },
      [promises]() { mindspore::tensor::SetException(promises); }));
  return py::reinterpret_steal<py::object>(mindspore::tensor::TransformVectorOutput(py_output));
}

}  // namespace
}  // namespace route
}  // namespace msmc

#define MSMC_ROUTE_FUNCTION(NAME) \
  m.def(#NAME, [](const py::args &args) { return msmc::route::Call(#NAME, args); });

PYBIND11_MODULE(MS_EXTENSION_NAME, m) {
  m.doc() = "ms_memcopy's op_def route: the copy ops as CustomOpBuilder functions and kernels";
  MSMC_ROUTE_OPS(MSMC_ROUTE_FUNCTION)
}
