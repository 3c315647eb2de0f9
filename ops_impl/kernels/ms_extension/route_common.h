// Shared by the translation units of the op_def route's module (built by ops.CustomOpBuilder, see
// ms_memcopy/op_def_route.py): the table of ops generated from configs/ops/*.yaml (route_ops.inc), the
// output rules every entry evaluates, dtype names, the launch protocol around an op body and the
// error text. Framework types appear only as TypeId, so this header needs no graph or PyNative header.
//
// Built with -DCUSTOM_ASCEND_OP for backend "Ascend" (tensors are device memory, launches run on the
// stream MindSpore gives); without it (backend "CPU") tensors are host memory and launches follow the
// CPU target's protocol (RunOnHostTarget, launch_context.h).
#ifndef MS_MEMCOPY_KERNELS_MS_EXTENSION_ROUTE_COMMON_H_
#define MS_MEMCOPY_KERNELS_MS_EXTENSION_ROUTE_COMMON_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "mindapi/base/type_id.h"
#include "op_bodies.h"

// The project's Ascend branches: on in the Ascend build (CustomOpBuilder adds CUSTOM_ASCEND_OP), and in
// the compile check of a unit whose MindSpore header needs CANN's headers under CUSTOM_ASCEND_OP (it
// includes that header in its CPU form, then sets MSMC_ASCEND_BRANCHES: see op_def_route.py).
#if defined(CUSTOM_ASCEND_OP) || defined(MSMC_ASCEND_BRANCHES)
#define MSMC_ASCEND 1
#else
#define MSMC_ASCEND 0
#endif

namespace msmc {
namespace route {

using mindspore::TypeId;
using Shape = std::vector<int64_t>;

// ---- the op table (route_ops.inc, generated from configs/ops/*.yaml) ------------------------------

// What one argument of an op's op_def is, in the op_def's argument order.
enum class ArgKind {
  kTensor,       // a tensor input
  kTensors,      // a variadic input: tuple[tensor], flattened into the kernel's inputs
  kHostValues,   // an int64 tensor input whose values the kernel reads on the host (value-dependent)
  kInt,          // an int attribute (prim_init)
  kLength,       // the variadic input's length: an int attribute (prim_init, num_<input>)
  kInts,         // a tuple[int] attribute
  kStr,          // a str attribute
  kGivenShape,   // the output's shape, given by the caller (tuple[int])
  kGivenDtype,   // the output's dtype as a TypeId (int)
  kGivenShapes,  // a variadic output's shapes, every dimension one after the other (tuple[int])
  kGivenRanks,   // the rank of each of those shapes (tuple[int])
  kGivenDtypes,  // the dtype of each (tuple[int])
};

struct RouteArg {
  const char *name;
  ArgKind kind;
  TypeId dtype;     // the dtype a tensor argument must have, or kTypeUnknown for any supported dtype
  bool same_dtype;  // one of the op's inputs whose tensors must all have one dtype (args_signature: dtype_group)
  bool written;     // written in place (rw_write): a graph must pass Parameters
};

enum class ShapeRule { kGiven, kLike, kDims };
enum class DimKind { kConst, kAttr, kLen };

// One dimension of a kDims shape: a constant, the value of an int argument, or the length of a
// variadic input (value is then the argument's index).
struct Dim {
  DimKind kind;
  int64_t value;
};

constexpr int kMaxRuleDims = 4;

struct RouteOutput {
  const char *name;
  ShapeRule shape;
  int like;                // kLike: the argument whose shape the output has
  Dim dims[kMaxRuleDims];  // kDims
  int ndims;
  TypeId dtype;  // a fixed dtype, or kTypeUnknown
  int dtype_of;  // the argument whose dtype the output has, or -1 (fixed or given)
};

struct RouteOp {
  const char *name;  // the op's name in configs/ops/*.yaml and its op_def (primitive Custom_<name>)
  const RouteArg *args;
  int nargs;
  const RouteOutput *outputs;
  int noutputs;
  bool side_effect_mem;
};

// The op named name in the generated table; throws std::logic_error when it is not there.
const RouteOp &FindRouteOp(const char *name);
// The body of op (op_bodies.h); throws std::logic_error naming the op when none is registered.
const OpBody &BodyOf(const RouteOp &op);
// The index of op's first argument of `kind`, or -1 (kTensors: the variadic input; kLength: its length).
int FindArg(const RouteOp &op, ArgKind kind);

// The Custom_<op> kernels the backend's kernel factory refused because another extension had
// registered the name first; empty when every kernel is this module's (route_cpu_kernel.cpp,
// route_ascend_kernel.cpp).
std::vector<std::string> KernelsNotRegistered();

// ---- output rules ---------------------------------------------------------------------------------

// Reads the op_def arguments an output rule needs; nullopt where a value is unknown (compile time).
struct ArgReader {
  std::function<Shape(int)> shape;
  std::function<TypeId(int)> dtype;
  std::function<std::optional<int64_t>(int)> int_value;
  std::function<std::optional<std::vector<int64_t>>(int)> ints;
  std::function<std::optional<size_t>(int)> length;  // of a variadic input
};

struct OutputSpec {
  std::vector<Shape> shapes;  // -1 for a dimension not known yet
  std::vector<TypeId> dtypes;
};

// The outputs' shapes and dtypes of op. Throws std::invalid_argument ("ValueError: <arg>: ...") for
// a bad given shape or dtype, when a given one is not a constant, and (CheckVariadicLength) for a
// variadic input of another length than the op's length attribute.
OutputSpec EvalOutputs(const RouteOp &op, const ArgReader &reader);
// Throws std::invalid_argument when both op's variadic input's length and its length attribute are
// known and differ.
void CheckVariadicLength(const RouteOp &op, const ArgReader &reader);

// ---- dtypes -------------------------------------------------------------------------------------------

// The MindSpore dtype name op_bodies.h understands, or nullptr for a type it has no name for.
const char *DtypeName(TypeId type);
// The type id of a dtype of configs/dtypes.yaml given by MindSpore's name of its type ("Float32", the
// str() of mindspore.float32), or nullopt.
std::optional<TypeId> DtypeOfTypeName(const std::string &type_name);
// The name of any type id, for messages ("type id 43" when DtypeName has none).
std::string DescribeDtype(TypeId type);
// True for the dtypes configs/dtypes.yaml supports (those every op accepts and a new output may have).
bool IsSupportedOutputDtype(TypeId type);
// Whether a tensor of dtype `type` may be passed as arg: its op_def dtype where it has one, else a
// supported dtype.
bool DtypeAccepted(const RouteArg &arg, TypeId type);
// Empty when DtypeAccepted; else the error, in the primitives' words ("offsets must be an int64
// tensor, got float32", "x: dtype uint16 is not supported; ..."); `argument` names the tensor
// ("tensors[1]" for an element of a variadic input).
std::string DtypeMismatch(const std::string &argument, const RouteArg &arg, TypeId type);

// A framework tensor as a TensorArg. A dtype op_bodies.h has no name for is described in `unnamed`,
// whose strings the TensorArg points to: reserve room in it for every tensor of the launch first.
TensorArg ToTensorArg(void *data, const Shape &shape, TypeId type, std::vector<std::string> *unnamed);

// ---- errors ---------------------------------------------------------------------------------------------

// "ms_memcopy <label>: <what>", with the exception kind kept: std::invalid_argument (ValueError in
// Python) for bad input, std::runtime_error otherwise. The kernels' "ValueError: " before an input
// mistake is dropped (the exception's type says it), so a mistake reads the same from every entry.
// Text already carrying the prefix is rethrown unchanged.
[[noreturn]] void Rethrow(const char *label);
// Throws std::invalid_argument reading "ValueError: <argument>: <reason>" (the InputError form).
[[noreturn]] void ThrowInput(const std::string &argument, const std::string &reason);

// ---- checks and launches -------------------------------------------------------------------------------------------

// Deletes a kernel state, whichever owner lets go of it last (an eager KernelInstance, a TransferTicket,
// a launch, a graph kernel). Its release waits for the transfers it queued and, freeing pinned and device
// memory, drains every stream (host runtime); a transfer may wait behind a Python host function, which
// needs the GIL to return, so a thread that holds the GIL (a primitive dropped from Python, a graph freed
// from Python) lets go of it meanwhile.
void DeleteKernelState(KernelState *state) noexcept;

// Runs body on one launch's tensors (inputs, then outputs) following the backend's protocol: on CPU
// the tensors are declared device memory on the calling thread's stream, whose queued work runs before
// returning (MindSpore reuses the memory as soon as the kernel returns); on Ascend the body runs on
// `device_stream` and the launch returns without waiting. Errors are rethrown through
// Rethrow(body.label).
void LaunchBody(const OpBody &body, KernelState &state, const std::vector<TensorArg> &args, void *device_stream);

// The tensors of one call of op as its body's check reads them (op_bodies.h): every tensor with data
// nullptr, an int64 input with its host values when they are known. Holds the shapes and values the
// TensorArgs point to.
class CheckArgs {
 public:
  void AddTensor(Shape shape, TypeId type);
  void AddValues(Shape shape, std::optional<std::vector<int64_t>> values);
  const std::vector<TensorArg> &args();

 private:
  std::vector<Shape> shapes_;
  std::vector<std::optional<std::vector<int64_t>>> values_;
  std::vector<TypeId> types_;
  std::vector<std::string> unnamed_;
  std::vector<TensorArg> args_;
};

// Runs body's check on args (inputs in op order, then outputs) with the attributes in state; errors
// are rethrown through Rethrow(body.label).
void CheckBody(const OpBody &body, KernelState &state, CheckArgs &args);

}  // namespace route
}  // namespace msmc

#endif  // MS_MEMCOPY_KERNELS_MS_EXTENSION_ROUTE_COMMON_H_
