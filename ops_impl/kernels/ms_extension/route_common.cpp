// The op table, output rules, launch protocol and helpers of route_common.h.
#include "route_common.h"

#include <algorithm>
#include <cstring>
#include <exception>

#include "launch_context.h"
#include "pybind11/pybind11.h"

#define MSMC_ROUTE_TABLE_DEFINITIONS
#include "dtypes.inc"     // generated from configs/dtypes.yaml into the build directory
#include "route_ops.inc"  // generated from configs/ops/*.yaml into the build directory

namespace msmc {
namespace route {
namespace {

// The names of the dtypes op_bodies.h knows (configs/dtypes.yaml; which of them the ops accept is
// kSupportedDtypes of the generated table).
struct DtypeEntry {
  TypeId type;
  const char *name;
  const char *type_name;  // MindSpore's name of the type (str(mindspore.float32) is "Float32")
};

#define MSMC_DTYPE_ENTRY(name, type_id, itemsize, supported) {mindspore::kNumberType##type_id, #name, #type_id},
constexpr DtypeEntry kDtypes[] = {MSMC_DTYPES(MSMC_DTYPE_ENTRY)};
#undef MSMC_DTYPE_ENTRY

const DtypeEntry *Find(TypeId type) {
  for (const DtypeEntry &e : kDtypes) {
    if (e.type == type) {
      return &e;
    }
  }
  return nullptr;
}

int ArgOfKind(const RouteOp &op, ArgKind kind) {
  const int index = FindArg(op, kind);
  if (index < 0) {
    throw std::logic_error(std::string(op.name) + ": the op_def has no argument for its given outputs");
  }
  return index;
}

std::vector<int64_t> GivenInts(const RouteOp &op, const ArgReader &reader, ArgKind kind) {
  const int index = ArgOfKind(op, kind);
  auto values = reader.ints(index);
  if (!values.has_value()) {
    ThrowInput(op.args[index].name, "must be a constant");
  }
  return *values;
}

void CheckGivenShape(const Shape &shape, const std::string &argument) {
  for (int64_t d : shape) {
    if (d < 0) {
      ThrowInput(argument, "has a negative dimension (" + std::to_string(d) + ")");
    }
  }
}

TypeId CheckGivenDtype(int64_t dtype, const std::string &argument) {
  const auto type = static_cast<TypeId>(dtype);
  if (!IsSupportedOutputDtype(type)) {
    ThrowInput(argument, DescribeDtype(type) + " is not a supported dtype");
  }
  return type;
}

// A variadic output's shapes: `shapes` holds every shape's dimensions one after the other, `ranks`
// the number of dimensions of each.
std::vector<Shape> SplitShapes(const std::vector<int64_t> &shapes, const std::vector<int64_t> &ranks) {
  std::vector<Shape> result;
  result.reserve(ranks.size());
  size_t next = 0;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || static_cast<size_t>(ranks[i]) > shapes.size() - next) {
      ThrowInput("ranks", "ranks[" + std::to_string(i) + "] = " + std::to_string(ranks[i]) + " does not fit the " +
                              std::to_string(shapes.size()) + " values of shapes");
    }
    Shape shape(shapes.begin() + static_cast<std::ptrdiff_t>(next),
                shapes.begin() + static_cast<std::ptrdiff_t>(next + static_cast<size_t>(ranks[i])));
    CheckGivenShape(shape, "shapes[" + std::to_string(i) + "]");
    next += static_cast<size_t>(ranks[i]);
    result.push_back(std::move(shape));
  }
  if (next != shapes.size()) {
    ThrowInput("shapes",
               "holds " + std::to_string(shapes.size()) + " values but ranks add up to " + std::to_string(next));
  }
  return result;
}

void EvalGiven(const RouteOp &op, const ArgReader &reader, OutputSpec *spec) {
  const bool variadic =
      std::any_of(op.args, op.args + op.nargs, [](const RouteArg &a) { return a.kind == ArgKind::kGivenShapes; });
  if (!variadic) {
    Shape shape = GivenInts(op, reader, ArgKind::kGivenShape);
    CheckGivenShape(shape, "shape");
    const int dtype_index = ArgOfKind(op, ArgKind::kGivenDtype);
    auto dtype = reader.int_value(dtype_index);
    if (!dtype.has_value()) {
      ThrowInput(op.args[dtype_index].name, "must be a constant");
    }
    spec->shapes.push_back(std::move(shape));
    spec->dtypes.push_back(CheckGivenDtype(*dtype, "dtype"));
    return;
  }
  spec->shapes = SplitShapes(GivenInts(op, reader, ArgKind::kGivenShapes), GivenInts(op, reader, ArgKind::kGivenRanks));
  const std::vector<int64_t> dtypes = GivenInts(op, reader, ArgKind::kGivenDtypes);
  if (dtypes.size() != spec->shapes.size()) {
    ThrowInput("dtypes", "holds " + std::to_string(dtypes.size()) + " dtypes for " +
                             std::to_string(spec->shapes.size()) + " shapes");
  }
  for (size_t i = 0; i < dtypes.size(); ++i) {
    spec->dtypes.push_back(CheckGivenDtype(dtypes[i], "dtypes[" + std::to_string(i) + "]"));
  }
}

#if MSMC_ASCEND
void LaunchOnDevice(const OpBody &body, KernelState &state, const std::vector<TensorArg> &args, aclrtStream stream) {
  int32_t device = 0;
  const aclError ret = aclrtGetDevice(&device);
  if (ret != ACL_SUCCESS) {
    throw std::runtime_error("AclError: aclrtGetDevice failed (" + std::to_string(ret) + ")");
  }
  state.device = device;
  // No wait for the stream: the body's own memory that queued work reads is guarded by events.
  body.run(state, args.data(), args.size(), stream);
}
#endif

}  // namespace

const RouteOp &FindRouteOp(const char *name) {
  for (const RouteOp &op : kRouteOps) {
    if (std::strcmp(op.name, name) == 0) {
      return op;
    }
  }
  throw std::logic_error(std::string("ms_memcopy: op ") + name + " is not in the generated op table");
}

const OpBody &BodyOf(const RouteOp &op) {
  const OpBody *body = FindOpBody(op.name);
  if (body == nullptr) {
    throw std::logic_error(std::string("ms_memcopy: op ") + op.name +
                           " has no body registered in libms_memcopy_kernels (ops_impl/kernels/bodies/)");
  }
  return *body;
}

int FindArg(const RouteOp &op, ArgKind kind) {
  for (int i = 0; i < op.nargs; ++i) {
    if (op.args[i].kind == kind) {
      return i;
    }
  }
  return -1;
}

void CheckVariadicLength(const RouteOp &op, const ArgReader &reader) {
  const int variadic = FindArg(op, ArgKind::kTensors);
  const int length_arg = FindArg(op, ArgKind::kLength);
  if (variadic < 0 || length_arg < 0) {
    return;
  }
  const std::optional<size_t> length = reader.length(variadic);
  const std::optional<int64_t> expected = reader.int_value(length_arg);
  if (length.has_value() && expected.has_value() && static_cast<int64_t>(*length) != *expected) {
    ThrowInput(op.args[variadic].name, "holds " + std::to_string(*length) +
                                           " tensor(s) but the primitive was built for " + op.args[length_arg].name +
                                           "=" + std::to_string(*expected));
  }
}

OutputSpec EvalOutputs(const RouteOp &op, const ArgReader &reader) {
  CheckVariadicLength(op, reader);
  OutputSpec spec;
  for (int o = 0; o < op.noutputs; ++o) {
    const RouteOutput &out = op.outputs[o];
    if (out.shape == ShapeRule::kGiven) {
      EvalGiven(op, reader, &spec);
      continue;
    }
    if (out.shape == ShapeRule::kLike) {
      spec.shapes.push_back(reader.shape(out.like));
    } else {
      Shape shape;
      for (int d = 0; d < out.ndims; ++d) {
        const Dim &dim = out.dims[d];
        if (dim.kind == DimKind::kConst) {
          shape.push_back(dim.value);
        } else if (dim.kind == DimKind::kAttr) {
          shape.push_back(reader.int_value(static_cast<int>(dim.value)).value_or(-1));
        } else {
          auto n = reader.length(static_cast<int>(dim.value));
          shape.push_back(n.has_value() ? static_cast<int64_t>(*n) : -1);
        }
      }
      spec.shapes.push_back(std::move(shape));
    }
    spec.dtypes.push_back(out.dtype_of >= 0 ? reader.dtype(out.dtype_of) : out.dtype);
  }
  return spec;
}

const char *DtypeName(TypeId type) {
  const DtypeEntry *e = Find(type);
  return e != nullptr ? e->name : nullptr;
}

std::optional<TypeId> DtypeOfTypeName(const std::string &type_name) {
  for (const DtypeEntry &e : kDtypes) {
    if (type_name == e.type_name) {
      return e.type;
    }
  }
  return std::nullopt;
}

std::string DescribeDtype(TypeId type) {
  const char *name = DtypeName(type);
  return name != nullptr ? std::string(name) : "type id " + std::to_string(static_cast<int>(type));
}

bool IsSupportedOutputDtype(TypeId type) {
  return std::find(std::begin(kSupportedDtypes), std::end(kSupportedDtypes), type) != std::end(kSupportedDtypes);
}

bool DtypeAccepted(const RouteArg &arg, TypeId type) {
  return arg.dtype != mindspore::kTypeUnknown ? type == arg.dtype : IsSupportedOutputDtype(type);
}

std::string DtypeMismatch(const std::string &argument, const RouteArg &arg, TypeId type) {
  if (DtypeAccepted(arg, type)) {
    return "";
  }
  if (arg.dtype != mindspore::kTypeUnknown) {
    return argument + " must be an " + DescribeDtype(arg.dtype) + " tensor, got " + DescribeDtype(type);
  }
  std::string names;
  for (TypeId supported : kSupportedDtypes) {
    names += (names.empty() ? "'" : ", '") + DescribeDtype(supported) + "'";
  }
  return argument + ": dtype " + DescribeDtype(type) + " is not supported; use one of [" + names + "]";
}

TensorArg ToTensorArg(void *data, const Shape &shape, TypeId type, std::vector<std::string> *unnamed) {
  const char *name = DtypeName(type);
  if (name == nullptr) {
    unnamed->push_back(DescribeDtype(type));
    name = unnamed->back().c_str();
  }
  return TensorArg{data, shape.data(), static_cast<int>(shape.size()), name, false};
}

void Rethrow(const char *label) {
  static const std::string kValueError = "ValueError: ";
  const std::string prefix = std::string("ms_memcopy ") + label + ": ";
  try {
    throw;
  } catch (const std::invalid_argument &e) {
    const std::string what = e.what();
    if (what.rfind(prefix, 0) == 0) {
      throw;
    }
    throw std::invalid_argument(prefix + (what.rfind(kValueError, 0) == 0 ? what.substr(kValueError.size()) : what));
  } catch (const std::exception &e) {
    if (std::string(e.what()).rfind(prefix, 0) == 0) {
      throw;
    }
    throw std::runtime_error(prefix + e.what());
  }
}

void ThrowInput(const std::string &argument, const std::string &reason) {
  throw std::invalid_argument("ValueError: " + argument + ": " + reason);
}

void LaunchBody(const OpBody &body, KernelState &state, const std::vector<TensorArg> &args, void *device_stream) {
  try {
#if MSMC_ASCEND
    LaunchOnDevice(body, state, args, static_cast<aclrtStream>(device_stream));
#else
    (void)device_stream;  // the CPU backend has none
    RunOnHostTarget(body, state, args.data(), args.size());
#endif
  } catch (...) {
    Rethrow(body.label);
  }
}

void CheckArgs::AddTensor(Shape shape, TypeId type) {
  shapes_.push_back(std::move(shape));
  values_.emplace_back(std::nullopt);
  types_.push_back(type);
}

void CheckArgs::AddValues(Shape shape, std::optional<std::vector<int64_t>> values) {
  shapes_.push_back(std::move(shape));
  values_.push_back(std::move(values));
  types_.push_back(mindspore::kNumberTypeInt64);
}

const std::vector<TensorArg> &CheckArgs::args() {
  args_.clear();
  unnamed_.clear();
  unnamed_.reserve(shapes_.size());  // c_str() pointers must stay valid
  for (size_t i = 0; i < shapes_.size(); ++i) {
    TensorArg arg = ToTensorArg(nullptr, shapes_[i], types_[i], &unnamed_);
    if (values_[i].has_value()) {
      arg.data = values_[i]->data();
      arg.host_values = true;
    }
    args_.push_back(arg);
  }
  return args_;
}

void CheckBody(const OpBody &body, KernelState &state, CheckArgs &args) {
  try {
    const std::vector<TensorArg> &tensors = args.args();
    body.check(state, tensors.data(), tensors.size());
  } catch (...) {
    Rethrow(body.label);
  }
}

void DeleteKernelState(KernelState *state) noexcept {
  if (Py_IsInitialized() != 0 && PyGILState_Check() != 0) {
    pybind11::gil_scoped_release release;
    delete state;
  } else {
    delete state;
  }
}

}  // namespace route
}  // namespace msmc
