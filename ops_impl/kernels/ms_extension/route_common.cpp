// The launch protocol and helpers of route_common.h (no MindSpore headers beyond TypeId).
#include "route_common.h"

#include <exception>

namespace msmc {
namespace route {
namespace {

struct DtypeEntry {
  TypeId type;
  const char *name;
  size_t size;
  bool output;  // listed in configs/ops.yaml's dtypes
};

constexpr DtypeEntry kDtypes[] = {
    {mindspore::kNumberTypeFloat16, "float16", 2, true},     {mindspore::kNumberTypeBFloat16, "bfloat16", 2, true},
    {mindspore::kNumberTypeFloat32, "float32", 4, true},     {mindspore::kNumberTypeFloat64, "float64", 8, true},
    {mindspore::kNumberTypeInt8, "int8", 1, true},           {mindspore::kNumberTypeUInt8, "uint8", 1, true},
    {mindspore::kNumberTypeInt16, "int16", 2, true},         {mindspore::kNumberTypeInt32, "int32", 4, true},
    {mindspore::kNumberTypeInt64, "int64", 8, true},         {mindspore::kNumberTypeBool, "bool", 1, true},
    {mindspore::kNumberTypeUInt16, "uint16", 2, false},      {mindspore::kNumberTypeUInt32, "uint32", 4, false},
    {mindspore::kNumberTypeUInt64, "uint64", 8, false},      {mindspore::kNumberTypeComplex64, "complex64", 8, false},
    {mindspore::kNumberTypeComplex128, "complex128", 16, false},
};

const DtypeEntry *Find(TypeId type) {
  for (const DtypeEntry &e : kDtypes) {
    if (e.type == type) {
      return &e;
    }
  }
  return nullptr;
}

#ifdef CUSTOM_ASCEND_OP
void CheckAclCall(aclError ret, const char *api) {
  if (ret != ACL_SUCCESS) {
    const char *message = aclGetRecentErrMsg();
    throw std::runtime_error(std::string("AclError: ") + api + " failed (" + std::to_string(ret) +
                             "): " + (message != nullptr ? message : ""));
  }
}
#endif

#ifndef CUSTOM_ASCEND_OP
// The CPU backend: the tensors are host memory that the host ACL runtime is told to treat as device
// memory for the launch, on the launching thread's own stream, synchronized before returning
// (MindSpore reuses the tensors' memory as soon as the launch returns).
void LaunchOnHost(KernelState &state, const std::vector<TensorArg> &args, const Body &body) {
  state.device = HostTargetDevice();
  aclrtStream stream = ThreadStream();
  DeviceMemoryScope memory;
  for (const TensorArg &t : args) {
    size_t n = 1;
    for (int d = 0; d < t.ndim; ++d) {
      n *= t.shape[d] > 0 ? static_cast<size_t>(t.shape[d]) : 0;
    }
    // An unnamed dtype is left to the body, which rejects it naming the argument.
    const size_t itemsize = [&] {
      try {
        return ItemSize(t.dtype, "tensor");
      } catch (const std::exception &) {
        return size_t{0};
      }
    }();
    memory.Add(t.data, n * itemsize);
  }
  memory.Register();
  try {
    body(state, args, stream);
  } catch (...) {
    (void)aclrtSynchronizeStream(stream);  // drain what was enqueued before the tensors are unregistered
    throw;
  }
  Synchronize(stream);
}
#else
// The Ascend backend: the stream MindSpore launches this op on; see LaunchSpec for the fences.
void LaunchOnDevice(const LaunchSpec &spec, KernelState &state, const std::vector<TensorArg> &args,
                    aclrtStream stream, const Body &body) {
  int32_t device = 0;
  CheckAclCall(aclrtGetDevice(&device), "aclrtGetDevice");
  state.device = device;
  if (spec.reads_values) {
    Synchronize(stream);
  }
  try {
    body(state, args, stream);
  } catch (...) {
    (void)aclrtSynchronizeStream(stream);  // the KernelState's host memory ends with this launch
    throw;
  }
  if (spec.holds_host_state) {
    Synchronize(stream);
  }
}
#endif

}  // namespace

const char *DtypeName(TypeId type) {
  const DtypeEntry *e = Find(type);
  return e != nullptr ? e->name : nullptr;
}

std::string DescribeDtype(TypeId type) {
  const char *name = DtypeName(type);
  return name != nullptr ? std::string(name) : "type id " + std::to_string(static_cast<int>(type));
}

size_t DtypeSize(TypeId type) {
  const DtypeEntry *e = Find(type);
  return e != nullptr ? e->size : 0;
}

bool IsSupportedOutputDtype(TypeId type) {
  const DtypeEntry *e = Find(type);
  return e != nullptr && e->output;
}

void Rethrow(const char *label) {
  const std::string prefix = std::string("ms_memcopy ") + label + ": ";
  // With launch blocking a launch's error reaches the entry that queued it: prefix it only once.
  try {
    throw;
  } catch (const std::invalid_argument &e) {
    if (std::string(e.what()).rfind(prefix, 0) == 0) {
      throw;
    }
    throw std::invalid_argument(prefix + e.what());
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

void CheckAttrs(const Attrs &a) {
  if (a.height < 0 || a.width < 0 || a.pitch < 0 || a.count < 0) {
    ThrowInput("attributes", "height, width, pitch and count must not be negative");
  }
}

std::vector<Shape> SplitShapes(const std::vector<int64_t> &shapes, const std::vector<int64_t> &ranks) {
  std::vector<Shape> result;
  result.reserve(ranks.size());
  size_t next = 0;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || static_cast<size_t>(ranks[i]) > shapes.size() - next) {
      ThrowInput("ranks", "ranks[" + std::to_string(i) + "] = " + std::to_string(ranks[i]) +
                              " does not fit the " + std::to_string(shapes.size()) + " values of shapes");
    }
    Shape shape(shapes.begin() + static_cast<std::ptrdiff_t>(next),
                shapes.begin() + static_cast<std::ptrdiff_t>(next + static_cast<size_t>(ranks[i])));
    for (int64_t d : shape) {
      if (d < 0) {
        ThrowInput("shapes", "shapes[" + std::to_string(i) + "] has a negative dimension (" + std::to_string(d) +
                                 ")");
      }
    }
    next += static_cast<size_t>(ranks[i]);
    result.push_back(std::move(shape));
  }
  if (next != shapes.size()) {
    ThrowInput("shapes", "holds " + std::to_string(shapes.size()) + " values but ranks add up to " +
                             std::to_string(next));
  }
  return result;
}

void CheckGivenOutput(const Shape &shape, int64_t dtype, const std::string &shape_arg, const std::string &dtype_arg) {
  for (int64_t d : shape) {
    if (d < 0) {
      ThrowInput(shape_arg, "has a negative dimension (" + std::to_string(d) + ")");
    }
  }
  if (!IsSupportedOutputDtype(static_cast<TypeId>(dtype))) {
    ThrowInput(dtype_arg, DescribeDtype(static_cast<TypeId>(dtype)) + " is not a supported dtype");
  }
}

void ApplyAttrs(KernelState &state, const Attrs &a) {
  state.buffer_id = a.buffer_id;
  state.height = a.height;
  state.width = a.width;
  state.pitch = a.pitch;
  state.count = a.count;
}

void LaunchBody(const LaunchSpec &spec, KernelState &state, const std::vector<TensorArg> &args, void *device_stream,
                const Body &body) {
  try {
#ifdef CUSTOM_ASCEND_OP
    LaunchOnDevice(spec, state, args, static_cast<aclrtStream>(device_stream), body);
#else
    (void)device_stream;  // the CPU backend has none
    (void)spec;
    LaunchOnHost(state, args, body);
#endif
  } catch (...) {
    Rethrow(spec.label);
  }
}

}  // namespace route
}  // namespace msmc
