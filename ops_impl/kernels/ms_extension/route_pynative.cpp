// PyNative entries of the Ascend route: one Python function per op of configs/ops.yaml, named by its
// `ascend_function`, registered in this CustomOpBuilder module. Each takes the op's tensor inputs
// (a list of tensors for a variadic input), then its attribute values as ints, then, for the h2d
// forms whose outputs no input describes, the output shapes and dtypes (TypeId values); it allocates
// the outputs and runs the same op body as aot_entry.cpp through a PyboostRunner, on the stream
// MindSpore launches the op on (backend Ascend) or on the launching thread's stream with
// synchronization (backend CPU). The argument order is the op_def YAML's (ms_memcopy/ascend_route.py).
//
// Errors keep the aot entry's text: "ms_memcopy <primitive>(<mode>): ValueError: <argument>: ..."
// raised as ValueError for bad input, "...: AclError: ..." as RuntimeError for a failed ACL call.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ms_extension/api.h"
#include "route_common.h"

namespace msmc {
namespace route {
namespace {

using Tensors = std::vector<ms::Tensor>;
using Args = std::vector<TensorArg>;

// label, reads int64 inputs back (fence before), leaves stream work on host state (fence after)
const LaunchSpec kBatchD2H{"MemcpyBatch(d2h)", true, true};
const LaunchSpec kBatchH2D{"MemcpyBatch(h2d)", true, true};
const LaunchSpec kExtract{"Memcpy2D(extract)", true, false};
const LaunchSpec kExtractLike{"Memcpy2D(extract, gradient)", true, false};
const LaunchSpec kInsert{"Memcpy2D(insert)", true, false};
const LaunchSpec kD2H2D{"Memcpy2D(d2h)", true, true};
const LaunchSpec kH2D2D{"Memcpy2D(h2d)", true, false};
const LaunchSpec kDescCopy{"MemcpyWithDesc", false, true};
const LaunchSpec kDescWindow{"MemcpyWithDesc(window)", true, true};
const LaunchSpec kCondD2D{"MemcpyWithCondition(d2d)", false, false};
const LaunchSpec kCondD2H{"MemcpyWithCondition(d2h)", true, true};
const LaunchSpec kCondH2D{"MemcpyWithCondition(h2d)", true, false};

// One launch: the KernelState lives as long as the runner, i.e. until the launch task has run.
class RouteRunner : public ms::pynative::PyboostRunner {
 public:
  RouteRunner(const LaunchSpec &spec, const Attrs &attrs, Body body)
      : PyboostRunner(spec.label), spec_(spec), body_(std::move(body)) {
    ApplyAttrs(state_, attrs);
  }

  void LaunchKernel() override {
    Args args;
    args.reserve(inputs().size() + outputs().size());
    unnamed_.clear();
    unnamed_.reserve(inputs().size() + outputs().size());  // c_str() pointers must stay valid
    for (const ms::Tensor &t : inputs()) {
      args.push_back(ToArg(t));
    }
    for (const ms::Tensor &t : outputs()) {
      args.push_back(ToArg(t));
    }
    LaunchBody(spec_, state_, args, stream(), body_);
  }

 private:
  TensorArg ToArg(const ms::Tensor &t) {
    const char *name = DtypeName(t.data_type());
    if (name == nullptr) {
      unnamed_.push_back(DescribeDtype(t.data_type()));
      name = unnamed_.back().c_str();
    }
    const Shape &shape = t.shape();
    return TensorArg{t.GetDataPtr(), shape.data(), static_cast<int>(shape.size()), name};
  }

  const LaunchSpec &spec_;
  Body body_;
  KernelState state_;
  std::vector<std::string> unnamed_;
};

// Allocates nothing itself: PyboostRunner::Run allocates the outputs' memory and queues the launch.
Tensors Launch(const LaunchSpec &spec, const Attrs &attrs, const Tensors &inputs, const Tensors &outputs,
               Body body) {
  auto runner = std::make_shared<RouteRunner>(spec, attrs, std::move(body));
  runner->Run(inputs, outputs);
  return outputs;
}

ms::Tensor Like(const ms::Tensor &t) { return ms::Tensor(t.data_type(), t.shape()); }
ms::Tensor NBytes(size_t tensors) { return ms::Tensor(mindspore::kNumberTypeInt64, NBytesShape(tensors)); }

// ---- MemcpyBatch -------------------------------------------------------------------------------

ms::Tensor BatchD2HEntry(const Tensors &tensors, const ms::Tensor &offsets, int64_t buffer_id) {
  try {
    Attrs a;
    a.buffer_id = buffer_id;
    Tensors inputs(tensors);
    inputs.push_back(offsets);
    return Launch(kBatchD2H, a, inputs, {NBytes(tensors.size())},
                  [](KernelState &s, const Args &x, aclrtStream st) {
                    const size_t k = x.size() - 2;
                    BatchD2H(s, x.data(), k, x[k], x[k + 1], st);
                  })[0];
  } catch (...) {
    Rethrow(kBatchD2H.label);
  }
}

Tensors BatchH2DEntry(const ms::Tensor &offsets, int64_t buffer_id, const std::vector<Shape> &shapes,
                      const std::vector<int64_t> &dtypes) {
  try {
    Attrs a;
    a.buffer_id = buffer_id;
    Tensors outputs;
    outputs.reserve(shapes.size());
    for (size_t i = 0; i < shapes.size(); ++i) {
      outputs.emplace_back(static_cast<TypeId>(dtypes[i]), shapes[i]);
    }
    return Launch(kBatchH2D, a, {offsets}, outputs, [](KernelState &s, const Args &x, aclrtStream st) {
      BatchH2D(s, x[0], x.data() + 1, x.size() - 1, st);
    });
  } catch (...) {
    Rethrow(kBatchH2D.label);
  }
}

// MemcpyBatch(h2d) returns as many tensors as it was given shapes, a number known only at run time,
// so it registers its outputs with the vector forms of the promise helpers PyboostRunner::Call uses
// for a fixed count. The shapes and dtypes are checked here, in the calling thread.
py::object BatchH2DCall(const ms::Tensor &offsets, int64_t buffer_id, const std::vector<int64_t> &shapes,
                        const std::vector<int64_t> &ranks, const std::vector<int64_t> &dtypes) {
  std::vector<Shape> split;
  try {
    split = SplitShapes(shapes, ranks);
    if (dtypes.size() != split.size()) {
      ThrowInput("dtypes", "holds " + std::to_string(dtypes.size()) + " dtypes for " +
                               std::to_string(split.size()) + " shapes");
    }
    for (size_t i = 0; i < split.size(); ++i) {
      CheckGivenOutput(split[i], dtypes[i], "shapes[" + std::to_string(i) + "]", "dtypes[" + std::to_string(i) + "]");
    }
  } catch (...) {
    Rethrow(kBatchH2D.label);
  }
  auto py_output = mindspore::tensor::MakeVector<false>(split.size());
  auto promises = mindspore::tensor::TransformVectorPromise(py_output);
  mindspore::pynative::DispatchOp(std::make_shared<mindspore::pynative::PassthroughFrontendTask>(
      [offsets, buffer_id, split, dtypes, promises]() {
        ms::inner::ConvertStubNodeToTensor(offsets);
        const Tensors outputs = BatchH2DEntry(offsets, buffer_id, split, dtypes);
        std::vector<mindspore::tensor::TensorPtr> values;
        values.reserve(outputs.size());
        for (const ms::Tensor &t : outputs) {
          values.push_back(t.tensor());
        }
        mindspore::tensor::SetPromise(promises, values);
      },
      [promises]() { mindspore::tensor::SetException(promises); }));
  return py::reinterpret_steal<py::object>(mindspore::tensor::TransformVectorOutput(py_output));
}

// ---- Memcpy2D ----------------------------------------------------------------------------------

ms::Tensor ExtractEntry(const ms::Tensor &x, const ms::Tensor &row, const ms::Tensor &col, int64_t height,
                        int64_t width) {
  try {
    Attrs a;
    a.height = height;
    a.width = width;
    CheckAttrs(a);
    return Launch(kExtract, a, {x, row, col}, {ms::Tensor(x.data_type(), ExtractShape(a))},
                  [](KernelState &s, const Args &v, aclrtStream st) { Extract2D(s, v[0], v[1], v[2], v[3], st); })[0];
  } catch (...) {
    Rethrow(kExtract.label);
  }
}

ms::Tensor ExtractLikeEntry(const ms::Tensor &x, const ms::Tensor &like, const ms::Tensor &row,
                            const ms::Tensor &col) {
  try {
    return Launch(kExtractLike, Attrs{}, {x, like, row, col}, {ms::Tensor(x.data_type(), like.shape())},
                  [](KernelState &s, const Args &v, aclrtStream st) {
                    ExtractLike2D(s, v[0], v[1], v[2], v[3], v[4], st);
                  })[0];
  } catch (...) {
    Rethrow(kExtractLike.label);
  }
}

ms::Tensor InsertEntry(const ms::Tensor &dst, const ms::Tensor &src, const ms::Tensor &row, const ms::Tensor &col) {
  try {
    return Launch(kInsert, Attrs{}, {dst, src, row, col}, {Like(dst)},
                  [](KernelState &s, const Args &v, aclrtStream st) {
                    Insert2D(s, v[0], v[1], v[2], v[3], v[4], st);
                  })[0];
  } catch (...) {
    Rethrow(kInsert.label);
  }
}

ms::Tensor D2H2DEntry(const ms::Tensor &x, const ms::Tensor &offset, int64_t buffer_id, int64_t pitch) {
  try {
    Attrs a;
    a.buffer_id = buffer_id;
    a.pitch = pitch;
    CheckAttrs(a);
    return Launch(kD2H2D, a, {x, offset}, {NBytes(1)},
                  [](KernelState &s, const Args &v, aclrtStream st) { D2H2D(s, v[0], v[1], v[2], st); })[0];
  } catch (...) {
    Rethrow(kD2H2D.label);
  }
}

ms::Tensor H2D2DEntry(const ms::Tensor &offset, int64_t buffer_id, int64_t pitch, const std::vector<int64_t> &shape,
                      int64_t dtype) {
  try {
    Attrs a;
    a.buffer_id = buffer_id;
    a.pitch = pitch;
    CheckAttrs(a);
    CheckGivenOutput(shape, dtype, "shape", "dtype");
    return Launch(kH2D2D, a, {offset}, {ms::Tensor(static_cast<TypeId>(dtype), shape)},
                  [](KernelState &s, const Args &v, aclrtStream st) { H2D2D(s, v[0], v[1], st); })[0];
  } catch (...) {
    Rethrow(kH2D2D.label);
  }
}

// ---- MemcpyWithDesc ----------------------------------------------------------------------------

ms::Tensor DescCopyEntry(const ms::Tensor &x) {
  try {
    return Launch(kDescCopy, Attrs{}, {x}, {Like(x)},
                  [](KernelState &s, const Args &v, aclrtStream st) { DescCopy(s, v[0], v[1], st); })[0];
  } catch (...) {
    Rethrow(kDescCopy.label);
  }
}

ms::Tensor DescWindowEntry(const ms::Tensor &x, const ms::Tensor &start, int64_t count) {
  try {
    Attrs a;
    a.count = count;
    CheckAttrs(a);
    return Launch(kDescWindow, a, {x, start}, {ms::Tensor(x.data_type(), WindowShape(a))},
                  [](KernelState &s, const Args &v, aclrtStream st) { DescWindow(s, v[0], v[1], v[2], st); })[0];
  } catch (...) {
    Rethrow(kDescWindow.label);
  }
}

// ---- MemcpyWithCondition -----------------------------------------------------------------------

ms::Tensor CondD2DEntry(const ms::Tensor &x) {
  try {
    return Launch(kCondD2D, Attrs{}, {x}, {Like(x)},
                  [](KernelState &s, const Args &v, aclrtStream st) { CondD2D(s, v[0], v[1], st); })[0];
  } catch (...) {
    Rethrow(kCondD2D.label);
  }
}

ms::Tensor CondD2HEntry(const ms::Tensor &x, const ms::Tensor &offset, int64_t buffer_id) {
  try {
    Attrs a;
    a.buffer_id = buffer_id;
    return Launch(kCondD2H, a, {x, offset}, {NBytes(1)},
                  [](KernelState &s, const Args &v, aclrtStream st) { CondD2H(s, v[0], v[1], v[2], st); })[0];
  } catch (...) {
    Rethrow(kCondD2H.label);
  }
}

ms::Tensor CondH2DEntry(const ms::Tensor &offset, int64_t buffer_id, const std::vector<int64_t> &shape,
                        int64_t dtype) {
  try {
    Attrs a;
    a.buffer_id = buffer_id;
    CheckGivenOutput(shape, dtype, "shape", "dtype");
    return Launch(kCondH2D, a, {offset}, {ms::Tensor(static_cast<TypeId>(dtype), shape)},
                  [](KernelState &s, const Args &v, aclrtStream st) { CondH2D(s, v[0], v[1], st); })[0];
  } catch (...) {
    Rethrow(kCondH2D.label);
  }
}

}  // namespace
}  // namespace route
}  // namespace msmc

#define MSMC_ROUTE_FUNCTION(NAME, FUNC) \
  m.def(NAME, PYBOOST_CALLER_WITH_NAME(1, msmc::route::FUNC, NAME))

PYBIND11_MODULE(MS_EXTENSION_NAME, m) {
  m.doc() = "ms_memcopy's Ascend route: the copy primitives as CustomOpBuilder functions";
  MSMC_ROUTE_FUNCTION("memcpy_batch_d2h", BatchD2HEntry);
  m.def("memcpy_batch_h2d", &msmc::route::BatchH2DCall);
  MSMC_ROUTE_FUNCTION("memcpy2d_extract", ExtractEntry);
  MSMC_ROUTE_FUNCTION("memcpy2d_extract_like", ExtractLikeEntry);
  MSMC_ROUTE_FUNCTION("memcpy2d_insert", InsertEntry);
  MSMC_ROUTE_FUNCTION("memcpy2d_d2h", D2H2DEntry);
  MSMC_ROUTE_FUNCTION("memcpy2d_h2d", H2D2DEntry);
  MSMC_ROUTE_FUNCTION("memcpy_desc_copy", DescCopyEntry);
  MSMC_ROUTE_FUNCTION("memcpy_desc_window", DescWindowEntry);
  MSMC_ROUTE_FUNCTION("memcpy_cond_d2d", CondD2DEntry);
  MSMC_ROUTE_FUNCTION("memcpy_cond_d2h", CondD2HEntry);
  MSMC_ROUTE_FUNCTION("memcpy_cond_h2d", CondH2DEntry);
}
