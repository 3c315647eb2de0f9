// The op_def route's eager entries (PYNATIVE, and a primitive called from Python in any mode).
//
// KernelInstance: one per primitive instance. It holds the op's init arguments (attributes, given
// output shapes and dtypes) and the KernelState its launches reuse (result and descriptor rings,
// events, pinned slots), which lives as long as the instance and any launch still queued. Calling it
// with the op's inputs (a tensor, a tuple of tensors for a variadic input, and the values of each
// int64 input as host values) runs the op's body through a PyboostRunner on the stream MindSpore
// launches the op on. No single-op graph is compiled, so a new offset or mapping costs what a
// repeated one does, and nothing is kept per value.
//
// One Python function per op of the generated table, named like the op, takes every op_def argument
// in order and runs a fresh instance once (a debugging form; the primitives keep an instance).
//
// On the CPU target the runner launches its kernel inline in its device task, as MindSpore's built-in
// CPU kernels do: the documented form (launching from MindSpore's separate launch queue) lets a
// built-in op that follows read the outputs before they are written.
//
// KernelInstance.submit_transfer (an asynchronous form; ms_memcopy.nn.TransferQueue): the same call,
// which also returns a TransferTicket (transfer_streams.h) that the launch fills in with the ring slot
// its transfer took: done() polls that slot's end event, wait() waits for it alone, neither through
// MindSpore.
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

// MindSpore's extension header first, in the form the build asked for: with CUSTOM_ASCEND_OP it
// needs CANN's headers, so the compile check of the Ascend branches (MSMC_ASCEND_BRANCHES) includes
// its CPU form and turns the project's own branches on after it (route_common.h).
#include "kernel_counters.h"
#include "launch_context.h"
#include "ms_extension/api.h"
#include "pybind11/numpy.h"
#include "route_common.h"
#include "route_ops.inc"
#include "route_raise.h"
#include "transfer_streams.h"

namespace msmc {
namespace route {
namespace {

using Tensors = std::vector<ms::Tensor>;

// The values of an int64 input: given on the host (numpy, a sequence of ints), checked before the
// launch is queued; or deferred: given as a Tensor, which is then one of the runner's inputs and is
// read where the launch runs, in MindSpore's launch order (ReadDeferredValues), so the call never
// waits for MindSpore's queues. The call's check sees only its shape; the launch checks its values.
struct HostValues {
  std::vector<int64_t> values;
  Shape shape;
  bool deferred = false;
};

// One op_def argument as the caller gave it.
struct ArgValue {
  Tensors tensors;                   // kTensor: one; kTensors: all
  std::vector<Shape> shapes;         // ... their shapes and dtypes, read from the Python objects (a
  std::vector<TypeId> dtypes;        // tensor still being computed has them before its data)
  HostValues host;                   // kHostValues
  std::optional<int64_t> int_value;  // kInt, kGivenDtype
  std::vector<int64_t> ints;         // kInts and the other given tuples
};

bool IsInput(ArgKind kind) {
  return kind == ArgKind::kTensor || kind == ArgKind::kTensors || kind == ArgKind::kHostValues;
}

int InputCount(const RouteOp &op) {
  int n = 0;
  while (n < op.nargs && IsInput(op.args[n].kind)) {
    ++n;
  }
  return n;
}

using TicketPtr = std::shared_ptr<TransferTicket>;

class RouteRunner : public ms::pynative::PyboostRunner {
 public:
  RouteRunner(const RouteOp &op, const OpBody &body, std::shared_ptr<KernelState> state, std::vector<ArgValue> values,
              TicketPtr ticket)
      : PyboostRunner(op.name),
        op_(op),
        body_(body),
        state_(std::move(state)),
        values_(std::move(values)),
        ticket_(std::move(ticket)) {}

  void LaunchKernel() override {
    CountLaunch(LaunchEntry::kEager);
    std::vector<TensorArg> args;
    args.reserve(inputs().size() + outputs().size() + values_.size());
    unnamed_.clear();
    unnamed_.reserve(inputs().size() + outputs().size());  // c_str() pointers must stay valid
    size_t next = 0;
    for (int a = 0; a < InputCount(op_); ++a) {
      const ArgValue &v = values_[static_cast<size_t>(a)];
      if (op_.args[a].kind == ArgKind::kHostValues) {
        const HostValues &h = v.host;
        const int64_t *data = h.deferred ? ReadDeferredValues(inputs()[next++], a) : h.values.data();
        args.push_back(
            TensorArg{const_cast<int64_t *>(data), h.shape.data(), static_cast<int>(h.shape.size()), "int64", true});
        continue;
      }
      for (size_t i = 0; i < v.tensors.size(); ++i) {
        args.push_back(ToArg(inputs()[next++]));
      }
    }
    for (const ms::Tensor &t : outputs()) {
      args.push_back(ToArg(t));
    }
    try {
      if (read_error_ != nullptr) {
        std::rethrow_exception(read_error_);
      }
      if (ticket_ != nullptr) {
        TicketScope scope(ticket_.get(), state_);
        LaunchBody(body_, *state_, args, stream());
        ticket_->Finish(body_.label);
      } else {
        LaunchBody(body_, *state_, args, stream());
      }
    } catch (const std::exception &e) {
      if (ticket_ != nullptr) {
        ticket_->Fail(e.what());
      }
      RaiseInFramework(e);  // it leaves MindSpore's device task
    }
  }

 protected:
#if !MSMC_ASCEND
  void _DispatchLaunchTask() override { LaunchKernel(); }
#endif

 private:
  TensorArg ToArg(const ms::Tensor &t) { return ToTensorArg(t.GetDataPtr(), t.shape(), t.data_type(), &unnamed_); }

  // The values of a deferred int64 input (a Tensor), read at the launch: its producers have run (it is
  // one of the runner's inputs). CPU target: the tensor is host memory, read directly, without a wait.
  // Ascend: one device-to-host copy on the launch's stream and a wait for that stream (the launch's own
  // stream, in MindSpore's launch thread; the Python thread and MindSpore's queues do not wait). A
  // failure is kept for the launch to raise (read_error_): nothing is copied.
  const int64_t *ReadDeferredValues(const ms::Tensor &t, int arg) {
    std::vector<int64_t> &values = deferred_[static_cast<size_t>(arg)];
    size_t n = 1;
    for (int64_t d : values_[static_cast<size_t>(arg)].host.shape) {
      n *= static_cast<size_t>(d);
    }
    values.resize(n);
    const size_t bytes = n * sizeof(int64_t);
    if (bytes == 0 || read_error_ != nullptr) {
      return values.data();
    }
    try {
#if MSMC_ASCEND
      const aclError ret =
          aclrtMemcpyAsync(values.data(), bytes, t.GetDataPtr(), bytes, ACL_MEMCPY_DEVICE_TO_HOST, stream());
      if (ret != ACL_SUCCESS) {
        throw std::runtime_error("AclError: aclrtMemcpyAsync failed reading an int64 input (" + std::to_string(ret) +
                                 ")");
      }
      Synchronize(stream());
#else
      std::memcpy(values.data(), t.GetDataPtr(), bytes);
#endif
    } catch (...) {
      read_error_ = std::current_exception();
    }
    return values.data();
  }

  const RouteOp &op_;
  const OpBody &body_;
  std::shared_ptr<KernelState> state_;
  std::vector<ArgValue> values_;
  TicketPtr ticket_;  // set for KernelInstance.submit_transfer
  std::vector<std::string> unnamed_;
  std::vector<std::vector<int64_t>> deferred_ = std::vector<std::vector<int64_t>>(values_.size());
  std::exception_ptr read_error_;
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

// The values of an int64 input given as a numpy array or a sequence of ints (a Tensor is deferred:
// HostValues).
HostValues ToHostValues(const py::handle &obj, const char *argument) {
  py::array array = py::array::ensure(obj);
  if (!array) {
    PyErr_Clear();
    throw py::type_error(std::string(argument) +
                         " must be int64 values (a numpy array, a sequence of ints or an "
                         "int64 Tensor)");
  }
  if (array.dtype().kind() != 'i' && array.dtype().kind() != 'u' && array.size() != 0) {
    throw py::type_error(std::string(argument) + " must be int64 values, got dtype " +
                         py::str(array.dtype()).cast<std::string>());
  }
  auto ints = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(array);
  if (!ints) {
    PyErr_Clear();
    throw py::type_error(std::string(argument) + " must be int64 values");
  }
  HostValues h;
  h.values.assign(ints.data(), ints.data() + ints.size());
  h.shape.assign(ints.shape(), ints.shape() + ints.ndim());
  return h;
}

// A tensor argument with its shape and dtype. A PYNATIVE result may still be a stub whose C++ tensor
// has no dtype yet; its Python object knows both.
void AddTensor(const py::handle &obj, ArgValue *v) {
  v->tensors.push_back(py::cast<ms::Tensor>(obj));
  v->shapes.push_back(py::cast<Shape>(obj.attr("shape")));
  const std::optional<TypeId> dtype = DtypeOfTypeName(py::str(obj.attr("dtype")).cast<std::string>());
  v->dtypes.push_back(dtype.value_or(mindspore::kTypeUnknown));
}

// Converts args[0..] onto the op_def arguments first..first+args.size() of op.
void Convert(const RouteOp &op, const py::args &args, int first, std::vector<ArgValue> *values) {
  for (size_t i = 0; i < args.size(); ++i) {
    const int a = first + static_cast<int>(i);
    const RouteArg &arg = op.args[a];
    const py::handle obj = args[i];
    ArgValue &v = (*values)[static_cast<size_t>(a)];
    try {
      switch (arg.kind) {
        case ArgKind::kTensor:
          AddTensor(obj, &v);
          break;
        case ArgKind::kHostValues:
          if (py::isinstance<ms::Tensor>(obj) || py::hasattr(obj, "asnumpy")) {
            AddTensor(obj, &v);  // read at the launch (HostValues)
            if (v.dtypes.back() != mindspore::kNumberTypeInt64) {
              throw py::type_error(std::string(arg.name) + " must be an int64 tensor");
            }
            v.host.shape = v.shapes.back();
            v.host.deferred = true;
          } else {
            v.host = ToHostValues(obj, arg.name);
          }
          break;
        case ArgKind::kTensors:
          for (const py::handle &item : obj) {
            AddTensor(item, &v);
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
      throw py::type_error(std::string(arg.name) + " has the wrong type for this op_def argument");
    }
  }
}

ArgReader ReaderOf(const std::vector<ArgValue> &values) {
  ArgReader r;
  r.shape = [&values](int i) {
    const ArgValue &v = values[static_cast<size_t>(i)];
    return v.shapes.empty() ? v.host.shape : v.shapes.at(0);
  };
  r.dtype = [&values](int i) {
    const ArgValue &v = values[static_cast<size_t>(i)];
    if (v.dtypes.empty()) {
      return mindspore::kNumberTypeInt64;
    }
    // (a dtype without a name here: the tensor's own, read in the frontend task)
    return v.dtypes.at(0) != mindspore::kTypeUnknown ? v.dtypes.at(0) : v.tensors.at(0).data_type();
  };
  r.int_value = [&values](int i) { return values[static_cast<size_t>(i)].int_value; };
  r.ints = [&values](int i) -> std::optional<std::vector<int64_t>> { return values[static_cast<size_t>(i)].ints; };
  r.length = [&values](int i) -> std::optional<size_t> { return values[static_cast<size_t>(i)].tensors.size(); };
  return r;
}

// Runs in MindSpore's frontend task, where the inputs' shapes are known.
Tensors Run(const RouteOp &op, const OpBody &body, const std::shared_ptr<KernelState> &state,
            const std::vector<ArgValue> &values, const TicketPtr &ticket) {
  try {
    Tensors inputs;
    for (int a = 0; a < InputCount(op); ++a) {
      for (const ms::Tensor &t : values[static_cast<size_t>(a)].tensors) {
        inputs.push_back(t);
      }
    }
    const OutputSpec spec = EvalOutputs(op, ReaderOf(values));
    Tensors outputs;
    outputs.reserve(spec.shapes.size());
    for (size_t i = 0; i < spec.shapes.size(); ++i) {
      outputs.emplace_back(spec.dtypes[i], spec.shapes[i]);
    }
    std::make_shared<RouteRunner>(op, body, state, values, ticket)->Run(inputs, outputs);
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

void MarkFailed(const TicketPtr &ticket, const std::string &what) {
  if (ticket != nullptr) {
    ticket->Fail(what);
  }
}

py::object Dispatch(const RouteOp &op, const OpBody &body, const std::shared_ptr<KernelState> &state,
                    std::vector<ArgValue> values, TicketPtr ticket = nullptr) {
  auto py_output = mindspore::tensor::MakeVector<false>(OutputCount(op, values));
  auto promises = mindspore::tensor::TransformVectorPromise(py_output);
  mindspore::pynative::DispatchOp(std::make_shared<mindspore::pynative::PassthroughFrontendTask>(
      [&op, &body, state, values = std::move(values), promises, ticket]() {
        for (const ArgValue &v : values) {
          for (const ms::Tensor &t : v.tensors) {
            t.ConvertStubNodeToTensor();
          }
        }
        Tensors outputs;
        try {
          outputs = Run(op, body, state, values, ticket);
        } catch (const std::exception &e) {
          MarkFailed(ticket, e.what());
          throw;
        }
        std::vector<mindspore::tensor::TensorPtr> results;
        results.reserve(outputs.size());
        for (const ms::Tensor &t : outputs) {
          results.push_back(t.tensor());
        }
        mindspore::tensor::SetPromise(promises, results);
      },
      [promises, ticket]() {
        MarkFailed(ticket, "MindSpore's queue failed before the launch was made");
        mindspore::tensor::SetException(promises);
      }));
  return py::reinterpret_steal<py::object>(mindspore::tensor::TransformVectorOutput(py_output));
}

class KernelInstance {
 public:
  // init: the op_def arguments after the inputs (attributes, then given output shapes and dtypes).
  KernelInstance(const std::string &name, const py::args &init)
      : op_(FindRouteOp(name.c_str())), body_(BodyOf(op_)), state_(std::make_shared<KernelState>()) {
    const int inputs = InputCount(op_);
    if (init.size() != static_cast<size_t>(op_.nargs - inputs)) {
      throw py::type_error(std::string(name) + " takes " + std::to_string(op_.nargs - inputs) +
                           " init arguments, got " + std::to_string(init.size()));
    }
    init_.resize(static_cast<size_t>(op_.nargs));
    WithLabel([&] {
      Convert(op_, init, inputs, &init_);
      for (int a = inputs; a < op_.nargs; ++a) {
        if (op_.args[a].kind == ArgKind::kInt) {
          SetAttr(*state_, op_.args[a].name, *init_[static_cast<size_t>(a)].int_value);
          SetAttr(check_state_, op_.args[a].name, *init_[static_cast<size_t>(a)].int_value);
        }
      }
    });
  }

  py::object Call(const py::args &args) { return Dispatch(op_, body_, state_, Checked(args), nullptr); }

  // The checks of a call, without the launch.
  void CheckOnly(const py::args &args) { (void)Checked(args); }

  // submit_transfer(*inputs) -> (outputs, TransferTicket): an asynchronous form's call and its ticket.
  py::tuple SubmitTransfer(const py::args &args) {
    std::vector<ArgValue> values = Checked(args);
    auto ticket = std::make_shared<TransferTicket>();
    py::object outputs = Dispatch(op_, body_, state_, std::move(values), ticket);
    return py::make_tuple(outputs, ticket);
  }

  const char *op_name() const { return op_.name; }

 private:
  // Runs f; Python's own exceptions pass unchanged, the kernels' get the op's label (Rethrow).
  template <typename F>
  void WithLabel(F &&f) const {
    try {
      f();
    } catch (const py::error_already_set &) {
      throw;
    } catch (const py::builtin_exception &) {
      throw;
    } catch (...) {
      Rethrow(body_.label);
    }
  }

  // The call's inputs converted and checked: their number, the variadic input's length and the body's
  // check. Here, not in the frontend task, where an error loses its text.
  std::vector<ArgValue> Checked(const py::args &args) {
    const int inputs = InputCount(op_);
    if (args.size() != static_cast<size_t>(inputs)) {
      throw py::type_error(std::string("ms_memcopy ") + body_.label + ": takes " + std::to_string(inputs) +
                           " inputs, got " + std::to_string(args.size()));
    }
    std::vector<ArgValue> values = init_;
    WithLabel([&] {
      Convert(op_, args, 0, &values);
      CheckVariadicLength(op_, ReaderOf(values));
      Check(values);
    });
    return values;
  }

  // The body's check on the call's shapes and host values (the launch checks again).
  void Check(const std::vector<ArgValue> &values) {
    CheckArgs args;
    for (int a = 0; a < InputCount(op_); ++a) {
      const ArgValue &v = values[static_cast<size_t>(a)];
      if (op_.args[a].kind == ArgKind::kHostValues) {
        // (a deferred input's values: checked at the launch)
        args.AddValues(v.host.shape, v.host.deferred ? std::nullopt : std::make_optional(v.host.values));
        continue;
      }
      for (size_t i = 0; i < v.shapes.size(); ++i) {
        if (v.dtypes[i] == mindspore::kTypeUnknown) {
          return;  // a dtype the kernels have no name for: the launch refuses it
        }
        args.AddTensor(v.shapes[i], v.dtypes[i]);
      }
    }
    const OutputSpec spec = EvalOutputs(op_, ReaderOf(values));
    for (size_t o = 0; o < spec.shapes.size(); ++o) {
      args.AddTensor(spec.shapes[o], spec.dtypes[o]);
    }
    CheckBody(body_, check_state_, args);
  }

  const RouteOp &op_;
  const OpBody &body_;
  std::shared_ptr<KernelState> state_;  // shared with the launches still queued
  KernelState check_state_;             // the checks' own (a check runs while launches may)
  std::vector<ArgValue> init_;
};

py::object CallOnce(const char *name, const py::args &args) {
  const RouteOp &op = FindRouteOp(name);
  const int inputs = InputCount(op);
  if (args.size() != static_cast<size_t>(op.nargs)) {
    throw py::type_error(std::string(name) + " takes " + std::to_string(op.nargs) + " arguments, got " +
                         std::to_string(args.size()));
  }
  py::tuple init(op.nargs - inputs);
  py::tuple call(inputs);
  for (int a = 0; a < op.nargs; ++a) {
    if (a < inputs) {
      call[static_cast<size_t>(a)] = args[static_cast<size_t>(a)];
    } else {
      init[static_cast<size_t>(a - inputs)] = args[static_cast<size_t>(a)];
    }
  }
  KernelInstance instance(name, py::args(init));
  return instance.Call(py::args(call));
}

}  // namespace
}  // namespace route
}  // namespace msmc

#define MSMC_ROUTE_FUNCTION(NAME, OP_DEF) \
  m.def(#NAME, [](const py::args &args) { return msmc::route::CallOnce(#NAME, args); });

PYBIND11_MODULE(MS_EXTENSION_NAME, m) {
  const std::vector<std::string> taken = msmc::route::KernelsNotRegistered();
  if (!taken.empty()) {
    std::string names;
    for (const std::string &name : taken) {
      names += (names.empty() ? "" : ", ") + name;
    }
    throw py::import_error("ms_memcopy: MindSpore's kernel factory already holds kernels named " + names +
                           ", registered by another extension loaded before ms_memcopy; they would run instead "
                           "of ms_memcopy's, so the module refuses to load");
  }
  m.doc() = "ms_memcopy's op_def route: the copy ops as CustomOpBuilder functions and kernels";
  py::class_<msmc::route::KernelInstance>(m, "KernelInstance",
                                          "One primitive's kernel: its init arguments and the state its eager "
                                          "launches reuse. KernelInstance(op, *init)(*inputs).")
      .def(py::init<const std::string &, const py::args &>())
      .def("__call__", &msmc::route::KernelInstance::Call)
      .def("check", &msmc::route::KernelInstance::CheckOnly, "The checks of a call, without the launch.")
      .def_property_readonly("op", &msmc::route::KernelInstance::op_name)
      .def("submit_transfer", &msmc::route::KernelInstance::SubmitTransfer,
           "submit_transfer(*inputs) -> (outputs, TransferTicket): an asynchronous form's call, whose ticket "
           "follows its transfer without going through MindSpore");
  py::class_<msmc::TransferTicket, std::shared_ptr<msmc::TransferTicket>>(
      m, "TransferTicket",
      "One transfer: done() polls its event without waiting, wait() waits for it alone (without the GIL).")
      .def("done", &msmc::TransferTicket::Done)
      .def("wait", &msmc::TransferTicket::Wait, py::call_guard<py::gil_scoped_release>());
  MSMC_ROUTE_OPS(MSMC_ROUTE_FUNCTION)
}
