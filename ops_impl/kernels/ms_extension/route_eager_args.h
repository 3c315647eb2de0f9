// The eager entries' arguments (route_pynative.cpp): each op_def argument of a call as the caller gave
// it (ArgValue), converted from its Python object (Convert), and read as the output rules and checks
// read arguments (ReaderOf). Shared by the eager units: route_eager_args.cpp, route_runner.cpp,
// route_pynative.cpp.
#ifndef MS_MEMCOPY_KERNELS_MS_EXTENSION_ROUTE_EAGER_ARGS_H_
#define MS_MEMCOPY_KERNELS_MS_EXTENSION_ROUTE_EAGER_ARGS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

// MindSpore's extension header first, in the form the build asked for: with CUSTOM_ASCEND_OP it
// needs CANN's headers, so the compile check of the Ascend branches (MSMC_ASCEND_BRANCHES) includes
// its CPU form and turns the project's own branches on after it (route_common.h).
#include "ms_extension/api.h"
#include "route_common.h"

namespace msmc {
namespace route {

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

// Whether an op_def argument of this kind is one of the op's inputs (they come first).
bool IsInput(ArgKind kind);

// The number of op_def arguments that are inputs.
int InputCount(const RouteOp &op);

// Converts args[0..] onto the op_def arguments first..first+args.size() of op.
void Convert(const RouteOp &op, const py::args &args, int first, std::vector<ArgValue> *values);

// The arguments as the output rules and the body's check read them.
ArgReader ReaderOf(const std::vector<ArgValue> &values);

// The number of outputs the call returns, known before the frontend task runs.
size_t OutputCount(const RouteOp &op, const std::vector<ArgValue> &values);

}  // namespace route
}  // namespace msmc

#endif  // MS_MEMCOPY_KERNELS_MS_EXTENSION_ROUTE_EAGER_ARGS_H_
