// Shared by the two translation units of the Ascend route's entry layer (route_pynative.cpp and
// route_graph.cpp): the launch protocol around an op body, dtype names, output shapes and the
// error text. Framework types appear only as TypeId and ShapeVector, so the graph-mode side can use
// this header without the PyNative headers.
//
// The route is built by ops.CustomOpBuilder (see ms_memcopy/ascend_route.py), with -DCUSTOM_ASCEND_OP
// for backend "Ascend"; without it (backend "CPU") tensors are host memory and launches follow the
// CPU protocol of aot_entry.cpp.
#ifndef MS_MEMCOPY_KERNELS_MS_EXTENSION_ROUTE_COMMON_H_
#define MS_MEMCOPY_KERNELS_MS_EXTENSION_ROUTE_COMMON_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "launch_context.h"
#include "op_bodies.h"
#include "mindapi/base/type_id.h"

namespace msmc {
namespace route {

using mindspore::TypeId;
using Shape = std::vector<int64_t>;

// How a launch must be fenced on a device stream (CUSTOM_ASCEND_OP builds). The op bodies read int64
// inputs (offsets, row, col, start) back with a synchronous aclrtMemcpy, which does not wait for the
// stream that produces them; and some leave work on the stream that reads host memory owned by the
// KernelState (int64 results staged on the host, batch plans, memory-copy descriptors), which ends
// with the launch. On the CPU backend every launch synchronizes anyway, as in aot_entry.cpp.
struct LaunchSpec {
  const char *label;      // the primitive and mode, as in aot_entry.cpp's error prefixes
  bool reads_values;      // synchronize the stream before the body
  bool holds_host_state;  // synchronize the stream after the body
};

// A body runs on the flattened tensors: inputs first, then outputs (the aot parameter order).
using Body = std::function<void(KernelState &, const std::vector<TensorArg> &, aclrtStream)>;

// Attributes of a launch (KernelState is neither copyable nor movable).
struct Attrs {
  int64_t buffer_id = 0;
  int64_t height = 0;
  int64_t width = 0;
  int64_t pitch = 0;
  int64_t count = 0;
};

// The MindSpore dtype name op_bodies.h understands, or nullptr for a type it has no name for.
const char *DtypeName(TypeId type);
// The name of any type id, for messages ("type id 43" when DtypeName has none).
std::string DescribeDtype(TypeId type);
// Bytes per element for the types DtypeName knows, else 0.
size_t DtypeSize(TypeId type);
// True for the dtypes configs/ops.yaml lists (those a new output may have).
bool IsSupportedOutputDtype(TypeId type);

// "ms_memcopy <label>: <what>", with the exception kind kept: std::invalid_argument (ValueError in
// Python) for bad input, std::runtime_error otherwise. Text already carrying the prefix is rethrown
// unchanged.
[[noreturn]] void Rethrow(const char *label);
// Throws std::invalid_argument reading "ValueError: <argument>: <reason>" (the InputError form).
[[noreturn]] void ThrowInput(const std::string &argument, const std::string &reason);

// Validates the attribute values the primitive passed (same rule as aot_entry.cpp's Init).
void CheckAttrs(const Attrs &attrs);

// Output shapes, shared by the PyNative entries and the graph-mode infer functions.
inline Shape NBytesShape(size_t tensors) { return Shape{static_cast<int64_t>(tensors)}; }
inline Shape ExtractShape(const Attrs &a) { return Shape{a.height, a.width}; }
inline Shape WindowShape(const Attrs &a) { return Shape{a.count}; }
// The shapes of MemcpyBatch(h2d)'s outputs: `shapes` holds every shape's dimensions one after the
// other, `ranks` the number of dimensions of each. Throws on a mismatch or a negative dimension.
std::vector<Shape> SplitShapes(const std::vector<int64_t> &shapes, const std::vector<int64_t> &ranks);
// Checks a single given output shape and dtype (the h2d forms); argument names the failing one.
void CheckGivenOutput(const Shape &shape, int64_t dtype, const std::string &shape_arg, const std::string &dtype_arg);

// Runs body on one launch's tensors following the backend's protocol (see LaunchSpec); errors are
// rethrown through Rethrow(spec.label).
void LaunchBody(const LaunchSpec &spec, KernelState &state, const std::vector<TensorArg> &args, void *device_stream,
                const Body &body);

// Sets state's attributes from attrs.
void ApplyAttrs(KernelState &state, const Attrs &attrs);

}  // namespace route
}  // namespace msmc

#endif  // MS_MEMCOPY_KERNELS_MS_EXTENSION_ROUTE_COMMON_H_
