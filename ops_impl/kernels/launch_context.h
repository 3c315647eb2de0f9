// What a launch needs from the ACL runtime on the CPU target: an initialized runtime with a device
// current on the launching thread, a stream for that thread, and the framework's tensors declared as
// device memory for the duration of the launch.
#ifndef MS_MEMCOPY_KERNELS_LAUNCH_CONTEXT_H_
#define MS_MEMCOPY_KERNELS_LAUNCH_CONTEXT_H_

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "acl/acl.h"
#include "kernels_api.h"

namespace msmc {

struct KernelState;
struct OpBody;
struct TensorArg;

// The device the CPU target's kernels use: DEVICE_ID from the environment (what msrun gives each
// worker), 0 when it is unset; read once. Throws InputError naming DEVICE_ID when it is not a
// non-negative int.
MSMC_KERNELS_API int32_t HostTargetDevice();

// aclInit once per process, aclrtSetDevice once per thread; throws AclCallError on failure.
MSMC_KERNELS_API void EnsureDevice();

// A stream owned by the calling thread, created on first use and kept for the life of the process.
// With the host runtime it is deferred (aclhostSetStreamDeferred): RunOnHostTarget completes it after
// the body, and only then do the queued copies run, on the completing thread.
MSMC_KERNELS_API aclrtStream ThreadStream();

// Declares framework-owned buffers as device memory until destroyed (host ACL runtime only; with
// CANN the tensors already are device memory and this does nothing). Overlapping and adjacent ranges
// are merged before registration, so aliasing inputs are fine.
class MSMC_KERNELS_API DeviceMemoryScope {
 public:
  DeviceMemoryScope() = default;
  ~DeviceMemoryScope();
  DeviceMemoryScope(const DeviceMemoryScope &) = delete;
  DeviceMemoryScope &operator=(const DeviceMemoryScope &) = delete;
  // Takes over what `other` declared (`other` then declares nothing).
  DeviceMemoryScope(DeviceMemoryScope &&other) noexcept;

  void Reserve(size_t count) { ranges_.reserve(count); }
  void Add(const void *ptr, size_t nbytes);
  // Registers what was added; throws AclCallError if the runtime refuses a range.
  void Register();

 private:
  std::vector<std::pair<char *, size_t>> ranges_;
  std::vector<void *> registered_;
  std::vector<size_t> sizes_;
};

// Adds the tensors (all but host-value inputs) to `memory` and registers them (DeviceMemoryScope).
MSMC_KERNELS_API void RegisterTensors(const TensorArg *args, size_t count, DeviceMemoryScope *memory);

// Synchronizes stream; throws AclCallError on failure.
MSMC_KERNELS_API void Synchronize(aclrtStream stream);
// Whether the work before event's latest record has completed (aclrtQueryEventStatus), and a wait for
// it (aclrtSynchronizeEvent); both throw AclCallError on failure.
MSMC_KERNELS_API bool EventCompleted(aclrtEvent event);
MSMC_KERNELS_API void SynchronizeEvent(aclrtEvent event);

// The CPU target's launch of an op body: on the calling thread's stream (ThreadStream), with the
// tensors (all but host-value inputs) declared as device memory. Before it returns it runs the work the
// body queued, on the calling thread (aclhostCompleteStream: not a wait for a device; a MindSpore CPU
// kernel must have written its outputs when it returns, while on an NPU the same work runs on the
// device after the launch), also when the body fails, before the tensors are unregistered. Throws
// what the body throws, or AclCallError.
MSMC_KERNELS_API void RunOnHostTarget(const OpBody &body, KernelState &state, const TensorArg *args, size_t count);

// Within a CPU-target launch (RunOnHostTarget) on the host runtime: holds the tasks queued on `stream`
// (another stream than the launch's) until the launch has completed its own stream, so that the
// stream's thread is woken once, with everything queued and its wait already satisfied. Elsewhere
// (CANN, or outside such a launch) it does nothing.
MSMC_KERNELS_API void HoldUntilLaunchCompletes(aclrtStream stream);

// Within a CPU-target launch (RunOnHostTarget): the launch's declaration of its tensors as device
// memory, which the launch then no longer undeclares when it ends, for work queued on another stream
// that outlives the launch. Elsewhere (CANN, or outside such a launch), or once taken: nullptr.
MSMC_KERNELS_API std::unique_ptr<DeviceMemoryScope> TakeLaunchMemory();

}  // namespace msmc

#endif  // MS_MEMCOPY_KERNELS_LAUNCH_CONTEXT_H_
