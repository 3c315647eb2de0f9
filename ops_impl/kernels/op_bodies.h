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

// Per kernel instance: the primitive's attributes, and buffers reused across launches.
struct KernelState {
  int64_t buffer_id = 0;
  int64_t height = 0;
  int64_t width = 0;
  int64_t pitch = 0;
  int64_t count = 0;
  int32_t device = 0;
  BatchCopier batch;
  DescCopier desc;
  std::vector<BatchItem> items;
  std::vector<int64_t> host_results;  // int64 outputs computed on the host (from shapes)
  ResultStaging results;              // ... and written to the device through pinned slots
  std::vector<size_t> nbytes;         // a batch plan: the bytes of each item
  std::vector<size_t> host_offsets;   // ... and where it lies in the HostBuffer (empty: offsets unknown)
  std::vector<std::pair<int64_t, size_t>> destinations;  // (block, pair index) of a block mapping, sorted
};

// MemcpyBatch d2h: tensors[i] -> HostBuffer[offsets[i]:], out[i] = bytes of tensors[i].
MSMC_KERNELS_API void BatchD2H(KernelState &s, const TensorArg *tensors, size_t k, const TensorArg &offsets,
                               const TensorArg &out, aclrtStream stream);
// MemcpyBatch h2d: HostBuffer[offsets[i]:] -> outputs[i].
MSMC_KERNELS_API void BatchH2D(KernelState &s, const TensorArg &offsets, const TensorArg *outputs, size_t k,
                               aclrtStream stream);
// Memcpy2D extract: y = x[row:row+height, col:col+width] on the 2-D view of x.
MSMC_KERNELS_API void Extract2D(KernelState &s, const TensorArg &x, const TensorArg &row, const TensorArg &col,
                                const TensorArg &y, aclrtStream stream);
// Memcpy2D extract with the region shaped like the 2-D view of `like` (the gradient of insert).
MSMC_KERNELS_API void ExtractLike2D(KernelState &s, const TensorArg &x, const TensorArg &like, const TensorArg &row,
                                    const TensorArg &col, const TensorArg &y, aclrtStream stream);
// Memcpy2D insert: y = dst with y[row:row+h, col:col+w] = src (h, w from the 2-D view of src).
MSMC_KERNELS_API void Insert2D(KernelState &s, const TensorArg &dst, const TensorArg &src, const TensorArg &row,
                               const TensorArg &col, const TensorArg &y, aclrtStream stream);
// Memcpy2D write: dst[row:row+h, col:col+w] = src in place (h, w from the 2-D view of src);
// out[0] = bytes written.
MSMC_KERNELS_API void Write2D(KernelState &s, const TensorArg &dst, const TensorArg &src, const TensorArg &row,
                              const TensorArg &col, const TensorArg &out, aclrtStream stream);
// Memcpy2D d2h: rows of x -> HostBuffer[offset + r*pitch:], out[0] = bytes written.
MSMC_KERNELS_API void D2H2D(KernelState &s, const TensorArg &x, const TensorArg &offset, const TensorArg &out,
                            aclrtStream stream);
// Memcpy2D h2d: HostBuffer[offset + r*pitch:] -> rows of y.
MSMC_KERNELS_API void H2D2D(KernelState &s, const TensorArg &offset, const TensorArg &y, aclrtStream stream);
// MemcpyWithDesc: y = x.
MSMC_KERNELS_API void DescCopy(KernelState &s, const TensorArg &x, const TensorArg &y, aclrtStream stream);
// MemcpyWithDesc window: y = x.flat[start:start+count].
MSMC_KERNELS_API void DescWindow(KernelState &s, const TensorArg &x, const TensorArg &start, const TensorArg &y,
                                 aclrtStream stream);
// MemcpyWithCondition: y = x; x -> HostBuffer[offset:] (out[0] = bytes); HostBuffer[offset:] -> y.
MSMC_KERNELS_API void CondD2D(KernelState &s, const TensorArg &x, const TensorArg &y, aclrtStream stream);
MSMC_KERNELS_API void CondD2H(KernelState &s, const TensorArg &x, const TensorArg &offset, const TensorArg &out,
                              aclrtStream stream);
MSMC_KERNELS_API void CondH2D(KernelState &s, const TensorArg &offset, const TensorArg &y, aclrtStream stream);

// Block movement over L caches of shape [num_blocks, *block_shape] (all of one shape and dtype) with a
// block_mapping int64 [n, 2] of (source block, destination block) pairs applied to every cache; the
// mapping is checked whole before any byte moves; out[0] = bytes moved.
// SwapBlocks d2h: block m[i][0] of caches[l] -> host block m[i][1] of host cache l, where host cache l
// is the l-th of L equal parts of the HostBuffer (host block h of cache l at (l * H + h) * block bytes).
MSMC_KERNELS_API void SwapBlocksD2H(KernelState &s, const TensorArg *caches, size_t num_caches,
                                    const TensorArg &block_mapping, const TensorArg &out, aclrtStream stream);
// SwapBlocks h2d: host block m[i][0] of host cache l -> block m[i][1] of caches[l], in place.
MSMC_KERNELS_API void SwapBlocksH2D(KernelState &s, const TensorArg *caches, size_t num_caches,
                                    const TensorArg &block_mapping, const TensorArg &out, aclrtStream stream);
// CopyBlocks: block m[i][0] of caches[l] -> block m[i][1] of caches[l], in place.
MSMC_KERNELS_API void CopyBlocks(KernelState &s, const TensorArg *caches, size_t num_caches,
                                 const TensorArg &block_mapping, const TensorArg &out, aclrtStream stream);

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
// Sets attribute `name` of a KernelState; throws std::invalid_argument for a name no body reads
// and InputError for a negative value.
MSMC_KERNELS_API void SetAttr(KernelState &s, const char *name, int64_t value);
// The attribute names SetAttr knows, ending with nullptr.
MSMC_KERNELS_API const char *const *AttrNames();

}  // namespace msmc

#endif  // MS_MEMCOPY_KERNELS_OP_BODIES_H_
