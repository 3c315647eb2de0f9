// The eager launch (route_runner.h): RouteRunner, the PyboostRunner of one call, and its dispatch.
//
// On the CPU target the runner launches its kernel inline in its device task, as MindSpore's built-in
// CPU kernels do: the documented form (launching from MindSpore's separate launch queue) lets a
// built-in op that follows read the outputs before they are written.
#include "route_runner.h"

#include <cstring>
#include <exception>
#include <string>
#include <utility>

#if !MSMC_ASCEND
#include "include/runtime/pipeline/pipeline.h"
#endif
#include "kernel_counters.h"
#include "route_raise.h"

namespace msmc {
namespace route {
namespace {

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
    } catch (...) {
      if (ticket_ != nullptr) {  // a failing ticket waits for its error: it must never be left without one
        ticket_->Fail(std::string("ms_memcopy ") + body_.label + ": the launch failed with an unknown error");
      }
      throw;
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

void MarkFailed(const TicketPtr &ticket, const std::string &what) {
  if (ticket != nullptr) {
    ticket->Fail(what);
  }
}

// The error of a frontend task, labelled (Rethrow), marking an asynchronous form's ticket failed.
[[noreturn]] void RethrowFailed(const char *label, const TicketPtr &ticket) {
  try {
    Rethrow(label);
  } catch (const std::exception &e) {
    MarkFailed(ticket, e.what());
    throw;
  }
}

// True when MindSpore's frontend queue holds no task, queued or running (its worker dequeues a task
// after running it): an eager call's frontend part then has nothing to order after and runs in the
// caller, as the built-in ops' does. Queued instead, it wakes the frontend worker, whose spin beside
// the backend worker's and the caller's costs a time slice per call on two cores (about 1 ms a call
// then sync, against 50 us for ops.Identity). CPU target only: the libraries an Ascend build links do
// not export Pipeline::Get (the Ascend link check).
bool FrontendQueueIdle() {
#if MSMC_ASCEND
  return false;
#else
  const auto &stage = mindspore::runtime::Pipeline::Get().frontend_stage();
  return stage != nullptr && stage->Empty();
#endif
}

}  // namespace

py::object Dispatch(const RouteOp &op, const OpBody &body, const std::shared_ptr<KernelState> &state,
                    std::vector<ArgValue> values, TicketPtr ticket) {
  auto py_output = mindspore::tensor::MakeVector<false>(OutputCount(op, values));
  auto promises = mindspore::tensor::TransformVectorPromise(py_output);
  // (mutable: the one run of the task moves the values on to its runner instead of copying them)
  auto frontend = [&op, &body, state, values = std::move(values), promises, ticket]() mutable {
    // MindSpore's frontend task, where the inputs' shapes are known: the outputs, and the runner
    // whose launch runs the body.
    Tensors outputs;
    try {
      Tensors inputs;  // (only the op's inputs hold tensors)
      for (const ArgValue &v : values) {
        for (const ms::Tensor &t : v.tensors) {
          t.ConvertStubNodeToTensor();
          inputs.push_back(t);
        }
      }
      const OutputSpec spec = EvalOutputs(op, ReaderOf(values));
      outputs.reserve(spec.shapes.size());
      for (size_t i = 0; i < spec.shapes.size(); ++i) {
        outputs.emplace_back(spec.dtypes[i], spec.shapes[i]);
      }
      std::make_shared<RouteRunner>(op, body, state, std::move(values), ticket)->Run(inputs, outputs);
    } catch (...) {
      RethrowFailed(body.label, ticket);
    }
    std::vector<mindspore::tensor::TensorPtr> results;
    results.reserve(outputs.size());
    for (const ms::Tensor &t : outputs) {
      results.push_back(t.tensor());
    }
    mindspore::tensor::SetPromise(promises, results);
  };
  if (FrontendQueueIdle()) {
    py::gil_scoped_release release;
    frontend();
  } else {
    mindspore::pynative::DispatchOp(
        std::make_shared<mindspore::pynative::PassthroughFrontendTask>(std::move(frontend), [promises, ticket]() {
          MarkFailed(ticket, "MindSpore's queue failed before the launch was made");
          mindspore::tensor::SetException(promises);
        }));
  }
  return py::reinterpret_steal<py::object>(mindspore::tensor::TransformVectorOutput(py_output));
}

}  // namespace route
}  // namespace msmc
