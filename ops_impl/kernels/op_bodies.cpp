// What every op body shares: dtype sizes, the helpers of body_helpers.h, and the registries the bodies
// and attributes of bodies/<family>.cpp add themselves to.
#include "op_bodies.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "body_helpers.h"
#include "dtypes.inc"  // generated from configs/dtypes.yaml (setup.py)
#include "host_buffers.h"
#include "kernel_error.h"

namespace msmc {

size_t ItemSize(const char *dtype, const char *argument) {
  struct Entry {
    const char *name;
    size_t size;
  };
#define MSMC_DTYPE_SIZE(name, type_id, itemsize, supported) {#name, itemsize},
  static const Entry kSizes[] = {MSMC_DTYPES(MSMC_DTYPE_SIZE)};
#undef MSMC_DTYPE_SIZE
  for (const Entry &e : kSizes) {
    if (std::strcmp(dtype, e.name) == 0) {
      return e.size;
    }
  }
  throw InputError(argument, std::string("unsupported dtype ") + dtype);
}

size_t NumElements(const TensorArg &t, const char *argument) {
  size_t n = 1;
  for (int d = 0; d < t.ndim; ++d) {
    if (t.shape[d] < 0) {
      throw InputError(argument, "has an unknown dimension at run time");
    }
    n = CheckedMul(n, static_cast<size_t>(t.shape[d]), argument);
  }
  return n;
}

size_t NumBytes(const TensorArg &t, const char *argument) {
  return CheckedMul(NumElements(t, argument), ItemSize(t.dtype, argument), argument);
}

namespace bodies {

Matrix AsMatrix(const TensorArg &t, const char *argument) {
  const size_t itemsize = ItemSize(t.dtype, argument);
  const size_t numel = NumElements(t, argument);
  const size_t cols = t.ndim == 0 ? 1 : static_cast<size_t>(t.shape[t.ndim - 1]);
  const size_t rows =
      cols == 0 ? NumElements(TensorArg{t.data, t.shape, t.ndim - 1, t.dtype, false}, argument) : numel / cols;
  return Matrix{rows, cols, itemsize};
}

const int64_t *KnownInt64(const TensorArg &t, const char *argument, size_t expected) {
  if (std::strcmp(t.dtype, "int64") != 0) {
    throw InputError(std::string(argument) + " must be an int64 tensor, got " + t.dtype);
  }
  const size_t n = NumElements(t, argument);
  if (n != expected) {
    throw InputError(std::string(argument) + " must hold " + std::to_string(expected) + " value(s), got " +
                     std::to_string(n));
  }
  return t.host_values ? static_cast<const int64_t *>(t.data) : nullptr;
}

TensorArg ValuesOnHost(const TensorArg &t, std::vector<int64_t> *storage) {
  if (t.host_values || t.data == nullptr || std::strcmp(t.dtype, "int64") != 0) {
    return t;
  }
  const size_t n = NumElements(t, "int64 input");
  storage->resize(n);
  if (n > 0) {
    CheckAcl(aclrtMemcpy(storage->data(), n * sizeof(int64_t), t.data, n * sizeof(int64_t), ACL_MEMCPY_DEVICE_TO_HOST),
             "aclrtMemcpy");
  }
  return TensorArg{storage->data(), t.shape, t.ndim, t.dtype, true};
}

// Writes host_results into an int64 output tensor, without waiting for the stream.
void WriteResults(KernelState &s, const TensorArg &out, aclrtStream stream) {
  const size_t bytes = s.host_results.size() * sizeof(int64_t);
  if (NumBytes(out, "output") != bytes) {
    throw InputError("output",
                     "has " + std::to_string(NumBytes(out, "output")) + " bytes, expected " + std::to_string(bytes));
  }
  if (!s.discard_results) {
    s.results.Write(s.host_results.data(), s.host_results.size(), out.data, stream);
  }
}

// Checks that [offset, offset + span) lies within a HostBuffer of `capacity` bytes.
size_t CheckHostRange(int64_t offset, size_t span, size_t capacity, const std::string &argument,
                      const std::string &what) {
  if (offset < 0) {
    throw InputError(argument + " is negative (" + std::to_string(offset) + ")");
  }
  const size_t begin = static_cast<size_t>(offset);
  if (begin > capacity || span > capacity - begin) {
    throw InputError(argument + " = " + std::to_string(offset) + ": " + what + " (" + std::to_string(span) +
                     " bytes) would end at byte " + std::to_string(begin + span) +
                     ", past the end of the HostBuffer (" + std::to_string(capacity) + " bytes); nothing was copied");
  }
  return begin;
}

// The check of CheckHostRange without its message, for per-item loops: the argument names are built
// only when an item fails.
inline bool HostRangeFits(int64_t offset, size_t span, size_t capacity) {
  return offset >= 0 && static_cast<size_t>(offset) <= capacity && span <= capacity - static_cast<size_t>(offset);
}

size_t CheckItemRange(int64_t offset, size_t span, size_t capacity, size_t i) {
  if (!HostRangeFits(offset, span, capacity)) {
    CheckHostRange(offset, span, capacity, "offsets[" + std::to_string(i) + "]", "tensor " + std::to_string(i));
  }
  return static_cast<size_t>(offset);
}

void CheckSameBytes(const TensorArg &a, const TensorArg &b, const char *argument) {
  const size_t na = NumBytes(a, argument);
  const size_t nb = NumBytes(b, "output");
  if (na != nb) {
    throw InputError(argument, "has " + std::to_string(na) + " bytes but the output has " + std::to_string(nb));
  }
}

size_t CheckRegion(int64_t start, size_t extent, size_t limit, const char *argument, const char *dimension) {
  if (start < 0 || static_cast<size_t>(start) > limit || extent > limit - static_cast<size_t>(start)) {
    throw InputError(std::string(argument) + " = " + std::to_string(start) + ": the region [" + std::to_string(start) +
                     ", " + std::to_string(start) + " + " + std::to_string(extent) + ") leaves the " +
                     std::to_string(limit) + " " + dimension + " of the tensor; nothing was copied");
  }
  return static_cast<size_t>(start);
}

}  // namespace bodies

// ---- the registry of bodies: each bodies/<family>.cpp registers its ops at static-init time ----

namespace {

std::vector<const OpBody *> &Registry() {
  static std::vector<const OpBody *> bodies;  // constructed on first use: any TU may register first
  return bodies;
}

}  // namespace

bool RegisterOpBodies(const OpBody *bodies, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (FindOpBody(bodies[i].op) != nullptr) {
      std::fprintf(stderr, "ms_memcopy: two bodies are registered for op %s\n", bodies[i].op);
      std::abort();
    }
    Registry().push_back(&bodies[i]);
  }
  return true;
}

const OpBody *FindOpBody(const char *op) {
  for (const OpBody *body : Registry()) {
    if (std::strcmp(body->op, op) == 0) {
      return body;
    }
  }
  return nullptr;
}

// ---- the attributes: each bodies/<family>.cpp registers the ones it reads ----

namespace {

std::vector<AttrSpec> &AttrRegistry() {
  static std::vector<AttrSpec> attrs;  // constructed on first use, as Registry()
  return attrs;
}

const AttrSpec *FindAttr(const char *name) {
  for (const AttrSpec &a : AttrRegistry()) {
    if (std::strcmp(a.name, name) == 0) {
      return &a;
    }
  }
  return nullptr;
}

}  // namespace

bool RegisterAttrs(const AttrSpec *attrs, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    const AttrSpec *known = FindAttr(attrs[i].name);
    if (known == nullptr) {
      AttrRegistry().push_back(attrs[i]);
    } else if (known->non_negative != attrs[i].non_negative) {
      std::fprintf(stderr, "ms_memcopy: attribute %s is registered twice with different rules\n", attrs[i].name);
      std::abort();
    }
  }
  return true;
}

void SetAttr(KernelState &s, const char *name, int64_t value) {
  const AttrSpec *spec = FindAttr(name);
  if (spec == nullptr) {
    throw std::invalid_argument(std::string("attribute ") + name + " is not read by any op body (bodies/*.cpp)");
  }
  if (spec->non_negative && value < 0) {
    throw InputError(name, "must not be negative, got " + std::to_string(value));
  }
  s.StoreAttr(name, value);
}

}  // namespace msmc
