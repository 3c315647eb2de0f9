// Graph-side definitions of the Ascend route's ops: the infer functions (OpFuncImpl) that the
// op_def YAML's generated registration (gen_custom_ops_def.cc) refers to as gCustom_<op>FuncImpl.
// They give output shapes and dtypes from the op_def arguments (one InferInfo per argument, in the
// YAML's order: tensor inputs, attributes, output shapes/dtypes), with the rules of route_common.h
// that the PyNative entries use.
//
// Every backend needs them to load the module. They are used when an op runs in GRAPH_MODE, which
// MindSpore 2.10 supports for CustomOpBuilder ops on Ascend only, through a kernel registered in
// its Ascend kernel factory; no such kernel is registered here yet (see docs/ascend_route.md).
#include <optional>
#include <string>
#include <vector>

#include "ops/ops_func_impl/op_func_impl.h"
#include "route_common.h"

namespace msmc {
namespace route {
namespace {

using mindspore::ShapeArray;
using mindspore::ShapeVector;
using mindspore::ops::InferInfoPtr;
using mindspore::ops::InferInfoPtrList;
using mindspore::ops::OpFuncImpl;
using mindspore::ops::TypeIdList;
using mindspore::PrimitivePtr;

constexpr int64_t kDimAny = -1;

// An int argument's value, or nullopt while unknown at compile time.
std::optional<int64_t> IntArg(const InferInfoPtr &info) { return info->GetScalarValue<int64_t>(); }

// A tuple[int] argument's values, or nullopt while any is unknown.
std::optional<std::vector<int64_t>> IntsArg(const InferInfoPtr &info) {
  auto values = info->GetArrayValue<int64_t>();
  if (!values.has_value() || values->HasUnknownValue()) {
    return std::nullopt;
  }
  return values->ToVector();
}

// Turns the route's std::invalid_argument into MindSpore's ValueError at compile time.
template <typename F>
auto Checked(const char *label, F f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::invalid_argument &) {
    try {
      Rethrow(label);
    } catch (const std::exception &e) {
      MS_EXCEPTION(mindspore::ValueError) << e.what();
    }
  }
}

// An op with one output whose shape and dtype come from functions of the arguments.
class SingleOutput : public OpFuncImpl {
 public:
  bool GeneralInferRegistered() const override { return true; }
};

class BatchD2HInfer : public SingleOutput {
 public:
  ShapeArray InferShape(const PrimitivePtr &, const InferInfoPtrList &in) const override {
    if (in[0]->IsDynamicSequence()) {
      return {ShapeVector{kDimAny}};
    }
    return {NBytesShape(in[0]->GetSequenceElements().size())};
  }
  TypeIdList InferType(const PrimitivePtr &, const InferInfoPtrList &) const override {
    return {mindspore::kNumberTypeInt64};
  }
};

// Arguments: offsets, buffer_id, shapes, ranks, dtypes.
class BatchH2DInfer : public SingleOutput {
 public:
  ShapeArray InferShape(const PrimitivePtr &, const InferInfoPtrList &in) const override {
    return Checked(kLabel, [&] {
      auto shapes = IntsArg(in[2]);
      auto ranks = IntsArg(in[3]);
      if (!shapes.has_value() || !ranks.has_value()) {
        ThrowInput("shapes", "MemcpyBatch(h2d) needs its output shapes as constants");
      }
      return ShapeArray(SplitShapes(*shapes, *ranks));
    });
  }
  TypeIdList InferType(const PrimitivePtr &, const InferInfoPtrList &in) const override {
    return Checked(kLabel, [&] {
      auto dtypes = IntsArg(in[4]);
      if (!dtypes.has_value()) {
        ThrowInput("dtypes", "MemcpyBatch(h2d) needs its output dtypes as constants");
      }
      TypeIdList types;
      for (size_t i = 0; i < dtypes->size(); ++i) {
        CheckGivenOutput({}, (*dtypes)[i], "shapes", "dtypes[" + std::to_string(i) + "]");
        types.push_back(static_cast<TypeId>((*dtypes)[i]));
      }
      return types;
    });
  }

 private:
  static constexpr const char *kLabel = "MemcpyBatch(h2d)";
};

// Arguments: x, row, col, height, width.
class ExtractInfer : public SingleOutput {
 public:
  ShapeArray InferShape(const PrimitivePtr &, const InferInfoPtrList &in) const override {
    auto h = IntArg(in[3]);
    auto w = IntArg(in[4]);
    return {ShapeVector{h.value_or(kDimAny), w.value_or(kDimAny)}};
  }
  TypeIdList InferType(const PrimitivePtr &, const InferInfoPtrList &in) const override { return {in[0]->GetType()}; }
};

// Arguments: x, like, row, col.
class ExtractLikeInfer : public SingleOutput {
 public:
  ShapeArray InferShape(const PrimitivePtr &, const InferInfoPtrList &in) const override {
    return {in[1]->GetShape()};
  }
  TypeIdList InferType(const PrimitivePtr &, const InferInfoPtrList &in) const override { return {in[0]->GetType()}; }
};

// The output is shaped and typed like the first argument (insert, descriptor copy, d2d condition copy).
class LikeFirstInfer : public SingleOutput {
 public:
  ShapeArray InferShape(const PrimitivePtr &, const InferInfoPtrList &in) const override {
    return {in[0]->GetShape()};
  }
  TypeIdList InferType(const PrimitivePtr &, const InferInfoPtrList &in) const override { return {in[0]->GetType()}; }
};

// The output is the int64 count of bytes written to the HostBuffer (2-D and condition d2h).
class OneNBytesInfer : public SingleOutput {
 public:
  ShapeArray InferShape(const PrimitivePtr &, const InferInfoPtrList &) const override { return {NBytesShape(1)}; }
  TypeIdList InferType(const PrimitivePtr &, const InferInfoPtrList &) const override {
    return {mindspore::kNumberTypeInt64};
  }
};

// The output's shape and dtype are the last two arguments (2-D and condition h2d).
class GivenOutputInfer : public SingleOutput {
 public:
  explicit GivenOutputInfer(const char *label) : label_(label) {}
  ShapeArray InferShape(const PrimitivePtr &, const InferInfoPtrList &in) const override {
    return Checked(label_, [&] {
      auto shape = IntsArg(in[in.size() - 2]);
      if (!shape.has_value()) {
        ThrowInput("shape", "must be a constant");
      }
      return ShapeArray{*shape};
    });
  }
  TypeIdList InferType(const PrimitivePtr &, const InferInfoPtrList &in) const override {
    return Checked(label_, [&] {
      auto dtype = IntArg(in[in.size() - 1]);
      if (!dtype.has_value()) {
        ThrowInput("dtype", "must be a constant");
      }
      CheckGivenOutput({}, *dtype, "shape", "dtype");
      return TypeIdList{static_cast<TypeId>(*dtype)};
    });
  }

 private:
  const char *label_;
};

// Arguments: x, start, count.
class DescWindowInfer : public SingleOutput {
 public:
  ShapeArray InferShape(const PrimitivePtr &, const InferInfoPtrList &in) const override {
    return {ShapeVector{IntArg(in[2]).value_or(kDimAny)}};
  }
  TypeIdList InferType(const PrimitivePtr &, const InferInfoPtrList &in) const override { return {in[0]->GetType()}; }
};

BatchD2HInfer g_batch_d2h;
BatchH2DInfer g_batch_h2d;
ExtractInfer g_extract;
ExtractLikeInfer g_extract_like;
LikeFirstInfer g_insert;
OneNBytesInfer g_d2h2d;
GivenOutputInfer g_h2d2d("Memcpy2D(h2d)");
LikeFirstInfer g_desc_copy;
DescWindowInfer g_desc_window;
LikeFirstInfer g_cond_d2d;
OneNBytesInfer g_cond_d2h;
GivenOutputInfer g_cond_h2d("MemcpyWithCondition(h2d)");

}  // namespace
}  // namespace route
}  // namespace msmc

// The names gen_custom_ops_def.cc declares: gCustom_<op name in the op_def YAML>FuncImpl.
namespace mindspore::ops {
OpFuncImpl &gCustom_memcpy_batch_d2hFuncImpl = msmc::route::g_batch_d2h;
OpFuncImpl &gCustom_memcpy_batch_h2dFuncImpl = msmc::route::g_batch_h2d;
OpFuncImpl &gCustom_memcpy2d_extractFuncImpl = msmc::route::g_extract;
OpFuncImpl &gCustom_memcpy2d_extract_likeFuncImpl = msmc::route::g_extract_like;
OpFuncImpl &gCustom_memcpy2d_insertFuncImpl = msmc::route::g_insert;
OpFuncImpl &gCustom_memcpy2d_d2hFuncImpl = msmc::route::g_d2h2d;
OpFuncImpl &gCustom_memcpy2d_h2dFuncImpl = msmc::route::g_h2d2d;
OpFuncImpl &gCustom_memcpy_desc_copyFuncImpl = msmc::route::g_desc_copy;
OpFuncImpl &gCustom_memcpy_desc_windowFuncImpl = msmc::route::g_desc_window;
OpFuncImpl &gCustom_memcpy_cond_d2dFuncImpl = msmc::route::g_cond_d2d;
OpFuncImpl &gCustom_memcpy_cond_d2hFuncImpl = msmc::route::g_cond_d2h;
OpFuncImpl &gCustom_memcpy_cond_h2dFuncImpl = msmc::route::g_cond_h2d;
}  // namespace mindspore::ops
