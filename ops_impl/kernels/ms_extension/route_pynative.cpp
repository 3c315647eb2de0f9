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
// KernelInstance.submit_transfer (an asynchronous form; ms_memcopy.nn.TransferQueue): the same call,
// which also returns a TransferTicket (transfer_streams.h) that the launch fills in with the ring slot
// its transfer took: done() polls that slot's end event, wait() waits for it alone, neither through
// MindSpore.
//
// The units: route_eager_args (arguments), route_runner (the launch), this one (KernelInstance and the
// module).
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

// MindSpore's extension header first, in the form the build asked for: with CUSTOM_ASCEND_OP it
// needs CANN's headers, so the compile check of the Ascend branches (MSMC_ASCEND_BRANCHES) includes
// its CPU form and turns the project's own branches on after it (route_common.h).
#include "ms_extension/api.h"
#include "route_common.h"
#include "route_eager_args.h"
#include "route_ops.inc"
#include "route_raise.h"
#include "route_runner.h"
#include "utils/ms_context.h"

namespace msmc {
namespace route {
namespace {

class KernelInstance {
 public:
  // init: the op_def arguments after the inputs (attributes, then given output shapes and dtypes).
  KernelInstance(const std::string &name, const py::args &init)
      : op_(FindRouteOp(name.c_str())), body_(BodyOf(op_)), state_(new KernelState(), DeleteKernelState) {
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

  // The call of inputs that pass every check the primitives make in Python before a call (their eager
  // fast path, ms_memcopy/ops/_primitive.py), or None with nothing queued when one of those checks
  // might fail, for the primitive to make them in order and raise their error: outside PYNATIVE_MODE
  // (the jit level's check), an input that does not convert, a tensor of an unsupported dtype or of
  // another dtype than its dtype group, or a tensor read that is not laid out densely.
  py::object TryCall(const py::args &args) {
    if (!InPynativeMode() || args.size() != static_cast<size_t>(InputCount(op_))) {
      return py::none();
    }
    std::vector<ArgValue> values = init_;
    try {
      Convert(op_, args, 0, &values);
    } catch (const py::error_already_set &) {
      return py::none();  // (the error is dropped: the primitive's checks, then Call, raise it again)
    } catch (const std::exception &) {
      return py::none();
    }
    if (!PassesPythonChecks(values)) {
      return py::none();
    }
    WithLabel([&] {
      CheckVariadicLength(op_, ReaderOf(values));
      Check(values);
    });
    return Dispatch(op_, body_, state_, std::move(values), nullptr);
  }

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

  // Whether the converted inputs pass the dtype and layout checks the primitives make in Python
  // (check_dtypes, check_same_dtype and _dense of ms_memcopy/ops): each tensor input of a supported
  // dtype (its op_def dtype where it has one), the tensors of the dtype group of one dtype, and each
  // tensor that is read (not written in place) dense. Conservative: false where it cannot tell.
  bool PassesPythonChecks(const std::vector<ArgValue> &values) const {
    std::optional<TypeId> group;
    for (int a = 0; a < InputCount(op_); ++a) {
      const RouteArg &arg = op_.args[a];
      if (arg.kind != ArgKind::kTensor && arg.kind != ArgKind::kTensors) {
        continue;
      }
      const ArgValue &v = values[static_cast<size_t>(a)];
      for (size_t i = 0; i < v.dtypes.size(); ++i) {
        const TypeId type = v.dtypes[i];
        // (supported as well: the Python check asks that of every tensor, one of a fixed dtype too)
        if (!IsSupportedOutputDtype(type) || !DtypeAccepted(arg, type)) {
          return false;
        }
        if (arg.same_dtype) {
          if (group.has_value() && *group != type) {
            return false;
          }
          group = type;
        }
        if (!arg.written && !IsDense(v.tensors[i])) {
          return false;
        }
      }
    }
    return true;
  }

  static bool IsDense(const ms::Tensor &t) {
    try {
      return t.is_defined() && t.tensor() != nullptr && t.is_contiguous();
    } catch (const std::exception &) {
      return false;
    }
  }

  static bool InPynativeMode() {
    const auto context = mindspore::MsContext::GetInstance();
    return context != nullptr && context->get_param<int>(mindspore::MS_CTX_EXECUTION_MODE) == mindspore::kPynativeMode;
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
      .def("try_call", &msmc::route::KernelInstance::TryCall,
           "The call, or None with nothing queued where the primitive's Python checks must run first.")
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
