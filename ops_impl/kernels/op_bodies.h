// The body of each primitive's kernel, shared by every entry of the CustomOpBuilder module
// (ms_extension/: eager PyboostRunner functions, CPU and Ascend KernelMods). A body is a check and a
// launch. The check validates the inputs and plans the copy (InputError, before anything runs) from
// shapes, dtypes, attributes, the host values of int64 inputs and the HostBuffer registry: it makes no
// ACL call and reads no tensor data, so the infer functions run it while a graph compiles (tensor data
// nullptr, the int64 inputs known when they are constants) and the eager entry before it queues
// anything. The launch (`run`) checks again, now with every value known, and queues the copy on
// `stream` through copy_launch.h. It never waits for the stream: what queued work reads from the kernel's own memory
// (staged results, descriptors) sits in slots guarded by events (event_slots.h), and the ACL calls
// consume the batch plans before they return. The CPU target's entries then run the queued work to
// completion (MindSpore reuses tensor memory as soon as a CPU kernel returns); on Ascend the stream
// orders everything and the launch returns at once.
#ifndef MS_MEMCOPY_KERNELS_OP_BODIES_H_
#define MS_MEMCOPY_KERNELS_OP_BODIES_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "acl/acl.h"
#include "copy_launch.h"
#include "event_slots.h"
#include "kernels_api.h"

namespace msmc {

// A tensor as the framework hands it to a kernel. host_values: data is host memory holding the
// values of an int64 input (the op_def route's value-dependent inputs), read without a device copy.
struct TensorArg {
  void *data;
  const int64_t *shape;
  int ndim;
  const char *dtype;
  bool host_values = false;
};

// Bytes per element of a MindSpore dtype name; throws InputError naming `argument` for others.
MSMC_KERNELS_API size_t ItemSize(const char *dtype, const char *argument);
MSMC_KERNELS_API size_t NumElements(const TensorArg &t, const char *argument);
MSMC_KERNELS_API size_t NumBytes(const TensorArg &t, const char *argument);

// Per kernel instance: the primitive's int attributes under their names in configs/ops/<family>.yaml
// (the entries set each one from the tables generated from the definitions, SetAttr), the int64
// results every body writes, and the state of the op's family, which bodies/<family>.cpp defines and
// keeps in Family<T>() (its copiers and plans, reused across launches).
class KernelState {
 public:
  // The value of attribute `name`, 0 when the entry did not set it.
  int64_t Attr(const char *name) const {
    for (const auto &attr : attrs_) {
      if (attr.first == name) {
        return attr.second;
      }
    }
    return 0;
  }
  void StoreAttr(const char *name, int64_t value) {
    for (auto &attr : attrs_) {
      if (attr.first == name) {
        attr.second = value;
        return;
      }
    }
    attrs_.emplace_back(name, value);
  }
  // The family's own state, created on first use; a state serves the bodies of one family.
  template <class T>
  T &Family() {
    static const char tag = 0;
    if (family_ == nullptr) {
      family_ = std::make_shared<T>();
      family_tag_ = &tag;
    } else if (family_tag_ != &tag) {
      throw std::logic_error("a KernelState serves the bodies of one family");
    }
    return *static_cast<T *>(family_.get());
  }

  int32_t device = 0;
  std::vector<int64_t> host_results;  // int64 outputs computed on the host (from shapes)
  ResultStaging results;              // ... and written to the device through pinned slots
  // Nobody reads the int64 output (the synchronous body an asynchronous form runs on its lane):
  // WriteResults checks its size and writes nothing.
  bool discard_results = false;

 private:
  std::vector<std::pair<std::string, int64_t>> attrs_;
  std::shared_ptr<void> family_;
  const void *family_tag_ = nullptr;
};

// One op of configs/ops/<family>.yaml as the entry layers run it: every entry (PyNative function, CPU
// and Ascend KernelMods) finds the op's body by its op name (FindOpBody). `args` holds the op's tensors
// in op order: inputs (a variadic input's tensors one by one), then outputs.
struct OpBody {
  const char *op;     // the op's name in configs/ops/<family>.yaml
  const char *label;  // the primitive and mode, for messages ("Memcpy2D(extract)")
  // Validation and plan, without ACL calls or tensor data (see the top of this file); throws
  // InputError. Values it cannot know yet (an int64 input without host values) are skipped.
  void (*check)(KernelState &s, const TensorArg *args, size_t count);
  // The check with every value known, then the launch on `stream`.
  void (*run)(KernelState &s, const TensorArg *args, size_t count, aclrtStream stream);
};

// The body registered for op, or nullptr.
MSMC_KERNELS_API const OpBody *FindOpBody(const char *op);
// Adds `count` bodies (static storage) to the registry FindOpBody reads; a second body for one op
// aborts. Each bodies/<family>.cpp calls it at static-init time through MSMC_REGISTER_OP_BODIES, so
// no table lists the bodies: a new family is a new file (the kernels library is a shared library, so
// its translation units are all linked and initialised).
bool RegisterOpBodies(const OpBody *bodies, size_t count);
#define MSMC_REGISTER_OP_BODIES(table) \
  const bool kOpBodiesRegistered = ::msmc::RegisterOpBodies((table), sizeof(table) / sizeof((table)[0]))
// An int attribute of configs/ops/<family>.yaml that bodies/<family>.cpp reads, and whether it must
// not be negative. Each body file registers its own (MSMC_REGISTER_ATTRS, at static-init time); two
// families may register one name alike (buffer_id).
struct AttrSpec {
  const char *name;
  bool non_negative;
};
bool RegisterAttrs(const AttrSpec *attrs, size_t count);
#define MSMC_REGISTER_ATTRS(table) \
  const bool kAttrsRegistered = ::msmc::RegisterAttrs((table), sizeof(table) / sizeof((table)[0]))
// Sets attribute `name` of a KernelState; throws std::invalid_argument for a name no body registered
// and InputError for a negative value of a non-negative one.
MSMC_KERNELS_API void SetAttr(KernelState &s, const char *name, int64_t value);

}  // namespace msmc

#endif  // MS_MEMCOPY_KERNELS_OP_BODIES_H_
