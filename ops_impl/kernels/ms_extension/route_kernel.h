// The kernel core of the op_def route: what a graph kernel of any op does, for MindSpore's
// KernelTensors, shared by the CPU kernel (route_cpu_kernel.cpp) and the Ascend kernel
// (route_ascend_kernel.cpp). It maps the op_def arguments of the generated table onto the kernel's
// inputs (a variadic input arrives flattened, attributes arrive as inputs), reads the attributes
// once, takes value-dependent inputs as host values, and runs the op's body from op_bodies.h. It
// refuses a variadic input that arrived folded into one tensor (CheckNotFolded).
#ifndef MS_MEMCOPY_KERNELS_MS_EXTENSION_ROUTE_KERNEL_H_
#define MS_MEMCOPY_KERNELS_MS_EXTENSION_ROUTE_KERNEL_H_

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "include/runtime/hardware_abstract/kernel_base/kernel_tensor.h"
#include "kernel_counters.h"
#include "route_common.h"
#include "route_ops.inc"  // MSMC_TUPLE_PASS_NAME
#include "route_raise.h"

namespace msmc {
namespace route {

class KernelCore {
 public:
  using KernelTensor = mindspore::kernel::KernelTensor;

  explicit KernelCore(const char *name) : op_(FindRouteOp(name)), body_(BodyOf(op_)) {}

  // Reads the attributes; raises ValueError for a bad value.
  void Init(const std::vector<KernelTensor *> &inputs) {
    try {
      InitAttrs(inputs);
    } catch (const std::exception &e) {
      RaiseInFramework(e);
    }
  }

  // Runs the body on stream (nullptr on CPU); raises ValueError for bad input, RuntimeError for a
  // failed ACL call.
  void Launch(const std::vector<KernelTensor *> &inputs, const std::vector<KernelTensor *> &outputs, void *stream) {
    CountLaunch(LaunchEntry::kGraph);
    try {
      LaunchBodyOn(inputs, outputs, stream);
    } catch (const std::exception &e) {
      RaiseInFramework(e);
    }
  }

  const char *label() const { return body_.label; }

 private:
  void InitAttrs(const std::vector<KernelTensor *> &inputs) {
    try {
      Map(inputs);
      for (int a = 0; a < op_.nargs; ++a) {
        const RouteArg &arg = op_.args[a];
        if (arg.kind == ArgKind::kInt) {
          SetAttr(*state_, arg.name, inputs[first_[a]]->GetValueWithCheck<int64_t>());
        } else if (arg.kind == ArgKind::kInts || arg.kind == ArgKind::kStr) {
          throw std::logic_error(std::string("attribute ") + arg.name + ": only int attributes reach op bodies");
        }
      }
    } catch (...) {
      Rethrow(body_.label);
    }
  }

  void LaunchBodyOn(const std::vector<KernelTensor *> &inputs, const std::vector<KernelTensor *> &outputs,
                    void *stream) {
    try {
      Map(inputs);
      args_.clear();
      unnamed_.clear();
      args_.reserve(inputs.size() + outputs.size());
      unnamed_.reserve(inputs.size() + outputs.size());  // c_str() pointers must stay valid
      host_values_.resize(static_cast<size_t>(op_.nargs));
      for (int a = 0; a < op_.nargs; ++a) {
        const ArgKind kind = op_.args[a].kind;
        if (kind == ArgKind::kTensor || kind == ArgKind::kTensors) {
          for (size_t i = first_[a]; i < first_[a] + count_[a]; ++i) {
            args_.push_back(ToArg(*inputs[i]));
          }
        } else if (kind == ArgKind::kHostValues) {
          // MindSpore hands value-dependent inputs over on the host, in stream order.
          KernelTensor &t = *inputs[first_[a]];
          CountValueRead(SourceOfValue(t));
          std::vector<int64_t> &values = host_values_[static_cast<size_t>(a)];
          values = t.GetValueWithCheck<std::vector<int64_t>>();
          TensorArg arg = ToArg(t);
          arg.data = values.data();
          arg.host_values = true;
          args_.push_back(arg);
        }
      }
      for (KernelTensor *t : outputs) {
        args_.push_back(ToArg(*t));
      }
    } catch (...) {
      Rethrow(body_.label);
    }
    LaunchBody(body_, *state_, args_, stream);
  }

  // Where KernelTensor::GetValue will take t's value from, in the order MindSpore's
  // KernelTensor::SetKernelTensorValue (kernel_tensor.cc) tries them: a constant's value, a host value
  // kept in the tensor's user data, else the tensor's memory (SyncDataFromDeviceToHost: on Ascend a
  // device-to-host copy and a stream synchronization). Counted so that tests see which one each
  // input took.
  static ValueSource SourceOfValue(const KernelTensor &t) {
    if (t.IsConstValue()) {
      return ValueSource::kHeldOnHost;
    }
    const mindspore::UserDataPtr &user_data = t.user_data();
    if (user_data != nullptr &&
        (user_data->has("variable_host_value") || user_data->has("get_value_by_user_data_handler"))) {
      return ValueSource::kHeldOnHost;
    }
    return ValueSource::kTensorMemory;
  }

  // The first kernel input and the input count of every op_def argument. A variadic input arrives
  // flattened, and so does a tuple[int] argument; the table's generator allows tuple arguments only
  // in ops without a variadic input, after every argument the kernel reads. Throws when the variadic
  // input arrived folded (CheckNotFolded).
  void Map(const std::vector<KernelTensor *> &inputs) {
    const size_t ninputs = inputs.size();
    if (mapped_inputs_ == ninputs) {
      return;
    }
    first_.assign(static_cast<size_t>(op_.nargs), 0);
    count_.assign(static_cast<size_t>(op_.nargs), 1);
    const size_t others = static_cast<size_t>(op_.nargs) - 1;
    size_t next = 0;
    for (int a = 0; a < op_.nargs; ++a) {
      if (op_.args[a].kind == ArgKind::kTensors) {
        if (ninputs < others) {
          throw std::logic_error("the kernel got fewer inputs than the op_def has arguments");
        }
        count_[a] = ninputs - others;
      }
      first_[a] = next;
      next += count_[a];
    }
    if (next > ninputs) {
      throw std::logic_error("the kernel got " + std::to_string(ninputs) + " inputs for " + std::to_string(next) +
                             " op_def arguments");
    }
    CheckNotFolded(inputs);
    mapped_inputs_ = ninputs;
  }

  // A variadic input that reaches the kernel as one tuple object (MindSpore's RealMakeTuple: a new
  // contiguous copy of the tensors) would have the body read and write that copy: in-place writes
  // would be lost. The primitive's length attribute says how many tensors the kernel must get.
  void CheckNotFolded(const std::vector<KernelTensor *> &inputs) const {
    const int variadic = FindArg(op_, ArgKind::kTensors);
    const int length_arg = FindArg(op_, ArgKind::kLength);
    if (variadic < 0 || length_arg < 0) {
      return;
    }
    const size_t first = first_[static_cast<size_t>(variadic)];
    const size_t count = count_[static_cast<size_t>(variadic)];
    const int64_t expected = inputs[first_[static_cast<size_t>(length_arg)]]->GetValueWithCheck<int64_t>();
    bool tuple_object = false;
    for (size_t i = first; i < first + count; ++i) {
      tuple_object =
          tuple_object || (inputs[i]->host_info_exist() && inputs[i]->type_id() == mindspore::kObjectTypeTuple);
    }
    if (!tuple_object && static_cast<int64_t>(count) == expected) {
      return;
    }
    throw std::runtime_error(
        std::string(op_.args[variadic].name) + " arrived folded: the kernel got " + std::to_string(count) +
        (tuple_object ? " input(s), a tuple object among them," : " input(s)") + " where the primitive was built for " +
        op_.args[length_arg].name + "=" + std::to_string(expected) +
        ". The graph passed the tensors as one folded tuple (RealMakeTuple, a temporary copy of them), so the op "
        "would read and write that copy instead of the tensors. ms_memcopy's graph pass " MSMC_TUPLE_PASS_NAME
        " unfolds this input: op_def_route.load() registers it, and it applies to graphs compiled after that");
  }

  TensorArg ToArg(const KernelTensor &t) {
    return ToTensorArg(t.device_ptr(), t.GetShapeVector(), t.dtype_id(), &unnamed_);
  }

  const RouteOp &op_;
  const OpBody &body_;
  // (freed without the GIL when MindSpore frees the kernel from a Python thread: DeleteKernelState)
  std::unique_ptr<KernelState, void (*)(KernelState *)> state_{new KernelState(), DeleteKernelState};
  size_t mapped_inputs_ = SIZE_MAX;
  std::vector<size_t> first_;
  std::vector<size_t> count_;
  std::vector<TensorArg> args_;
  std::vector<std::vector<int64_t>> host_values_;
  std::vector<std::string> unnamed_;
};

}  // namespace route
}  // namespace msmc

#endif  // MS_MEMCOPY_KERNELS_MS_EXTENSION_ROUTE_KERNEL_H_
