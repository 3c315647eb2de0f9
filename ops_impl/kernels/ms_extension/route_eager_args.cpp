// Converting an eager call's Python arguments onto the op_def arguments (route_eager_args.h).
#include "route_eager_args.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "include/utils/tensor_py.h"
#include "pybind11/numpy.h"
#include "route_raise.h"

namespace msmc {
namespace route {
namespace {

std::vector<int64_t> ToInts(const py::handle &obj, const char *argument) {
  if (!py::isinstance<py::tuple>(obj) && !py::isinstance<py::list>(obj)) {
    ThrowInput(argument, "must be a tuple of ints");
  }
  std::vector<int64_t> values;
  for (const py::handle &item : obj) {
    values.push_back(py::cast<int64_t>(item));
  }
  return values;
}

// The values of an int64 input given as a numpy array or a sequence of ints (a Tensor is deferred:
// HostValues).
HostValues ToHostValues(const py::handle &obj, const char *argument) {
  py::array array = py::array::ensure(obj);
  if (!array) {
    PyErr_Clear();
    throw py::type_error(std::string(argument) +
                         " must be int64 values (a numpy array, a sequence of ints or an "
                         "int64 Tensor)");
  }
  if (array.dtype().kind() != 'i' && array.dtype().kind() != 'u' && array.size() != 0) {
    throw py::type_error(std::string(argument) + " must be int64 values, got dtype " +
                         py::str(array.dtype()).cast<std::string>());
  }
  auto ints = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(array);
  if (!ints) {
    PyErr_Clear();
    throw py::type_error(std::string(argument) + " must be int64 values");
  }
  HostValues h;
  h.values.assign(ints.data(), ints.data() + ints.size());
  h.shape.assign(ints.shape(), ints.shape() + ints.ndim());
  return h;
}

// The TypeId of a Python dtype object (nullopt: a dtype the kernels have no name for). MindSpore's
// dtypes are singletons (a tensor's dtype is mindspore.float32 itself), so each is named once (a string
// conversion that cost more than the rest of a tensor's conversion) and then found by its object,
// which is kept referenced so that its address never names another. Called with the GIL held.
std::optional<TypeId> DtypeOf(const py::handle &dtype) {
  struct Named {
    PyObject *object;
    std::optional<TypeId> id;
  };
  constexpr size_t kMaxNamed = 64;                      // (more dtype objects than MindSpore has: not singletons)
  static auto *const named = new std::vector<Named>();  // never freed: it may be read until the process ends
  for (const Named &n : *named) {
    if (n.object == dtype.ptr()) {
      return n.id;
    }
  }
  std::optional<TypeId> id = DtypeOfTypeName(py::str(dtype).cast<std::string>());
  if (named->size() < kMaxNamed) {
    named->push_back(Named{dtype.inc_ref().ptr(), id});
  }
  return id;
}

const py::str &DispatchName() {
  static const auto *name = new py::str("__ms_dispatch__");  // never freed: read until the process ends
  return *name;
}

// The ms::Tensor of a Python tensor. A Parameter (a Tensor subclass) would take the cast's subclass
// path, which looks up __ms_dispatch__ on the object and clears the AttributeError it raises (formatted
// each time); a subclass that does not define it on its type converts exactly as that path then does.
ms::Tensor ToTensor(const py::handle &obj) {
  if (!mindspore::tensor::IsPyObjectPythonTensorStrict(obj.ptr()) && mindspore::tensor::IsTensorPy(obj) &&
      _PyType_Lookup(Py_TYPE(obj.ptr()), DispatchName().ptr()) == nullptr) {
    return ms::Tensor(mindspore::tensor::ConvertToTensor(obj));
  }
  return py::cast<ms::Tensor>(obj);
}

// A tensor argument with its shape and dtype: a tensor that exists in C++ has both there; the result
// of an op still queued (a stub, no C++ tensor yet) is read through its Python object, which knows
// them. (The Python reads cost about twice the C++ ones.)
void AddTensor(const py::handle &obj, ArgValue *v) {
  ms::Tensor t = ToTensor(obj);
  if (t.is_defined() && t.tensor() != nullptr) {
    v->shapes.push_back(t.shape());
    const TypeId type = t.data_type();
    v->dtypes.push_back(DtypeName(type) != nullptr ? type : mindspore::kTypeUnknown);
  } else {
    v->shapes.push_back(py::cast<Shape>(obj.attr("shape")));
    v->dtypes.push_back(DtypeOf(obj.attr("dtype")).value_or(mindspore::kTypeUnknown));
  }
  v->tensors.push_back(std::move(t));
}

// The dtype of a Python tensor as the primitives name it ("int32": MindSpore's name, lower case).
std::string DtypeText(const py::handle &obj) {
  std::string name = py::str(obj.attr("dtype")).cast<std::string>();
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  return name;
}

}  // namespace

bool IsInput(ArgKind kind) {
  return kind == ArgKind::kTensor || kind == ArgKind::kTensors || kind == ArgKind::kHostValues;
}

int InputCount(const RouteOp &op) {
  int n = 0;
  while (n < op.nargs && IsInput(op.args[n].kind)) {
    ++n;
  }
  return n;
}

void Convert(const RouteOp &op, const py::args &args, int first, std::vector<ArgValue> *values) {
  for (size_t i = 0; i < args.size(); ++i) {
    const int a = first + static_cast<int>(i);
    const RouteArg &arg = op.args[a];
    const py::handle obj = args[i];
    ArgValue &v = (*values)[static_cast<size_t>(a)];
    try {
      switch (arg.kind) {
        case ArgKind::kTensor:
          AddTensor(obj, &v);
          break;
        case ArgKind::kHostValues:
          if (py::isinstance<ms::Tensor>(obj) || py::hasattr(obj, "asnumpy")) {
            AddTensor(obj, &v);  // read at the launch (HostValues)
            if (v.dtypes.back() != mindspore::kNumberTypeInt64) {
              // An eager call's one dtype check of an int64 input (in graphs: the infer function's).
              throw py::type_error(std::string(arg.name) + " must be an int64 tensor, got " + DtypeText(obj));
            }
            v.host.shape = v.shapes.back();
            v.host.deferred = true;
          } else {
            v.host = ToHostValues(obj, arg.name);
          }
          break;
        case ArgKind::kTensors:
          for (const py::handle &item : obj) {
            AddTensor(item, &v);
          }
          break;
        case ArgKind::kInt:
        case ArgKind::kLength:
        case ArgKind::kGivenDtype:
          v.int_value = py::cast<int64_t>(obj);
          break;
        case ArgKind::kStr:
          ThrowInput(arg.name, "str attributes do not reach op bodies");
        default:
          v.ints = ToInts(obj, arg.name);
      }
    } catch (const py::cast_error &) {
      throw py::type_error(std::string(arg.name) + " has the wrong type for this op_def argument");
    }
  }
}

ArgReader ReaderOf(const std::vector<ArgValue> &values) {
  ArgReader r;
  r.shape = [&values](int i) {
    const ArgValue &v = values[static_cast<size_t>(i)];
    return v.shapes.empty() ? v.host.shape : v.shapes.at(0);
  };
  r.dtype = [&values](int i) {
    const ArgValue &v = values[static_cast<size_t>(i)];
    if (v.dtypes.empty()) {
      return mindspore::kNumberTypeInt64;
    }
    // (a dtype without a name here: the tensor's own, read in the frontend task)
    return v.dtypes.at(0) != mindspore::kTypeUnknown ? v.dtypes.at(0) : v.tensors.at(0).data_type();
  };
  r.int_value = [&values](int i) { return values[static_cast<size_t>(i)].int_value; };
  r.ints = [&values](int i) -> std::optional<std::vector<int64_t>> { return values[static_cast<size_t>(i)].ints; };
  r.length = [&values](int i) -> std::optional<size_t> { return values[static_cast<size_t>(i)].tensors.size(); };
  return r;
}

size_t OutputCount(const RouteOp &op, const std::vector<ArgValue> &values) {
  for (int a = 0; a < op.nargs; ++a) {
    if (op.args[a].kind == ArgKind::kGivenRanks) {
      return values[static_cast<size_t>(a)].ints.size();
    }
  }
  return static_cast<size_t>(op.noutputs);
}
}  // namespace route
}  // namespace msmc
