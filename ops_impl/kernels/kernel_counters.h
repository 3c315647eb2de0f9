// Counters of the kernels library, read from Python (ms_memcopy/_kernels_lib.py) by
// `python -m ms_memcopy npu-check`:
// - launches by entry: a graph KernelMod (route_kernel.h) or an eager PyboostRunner
//   (route_runner.cpp), so that a check can tell MindSpore ran this project's kernel and by which
//   path;
// - how the graph kernels obtained each value-dependent input (route_kernel.h): from a value
//   MindSpore held on the host, or from the tensor's memory (on Ascend, MindSpore's device-to-host
//   copy and stream synchronization; docs/ascend_route.md, "Host values in graphs");
// - the ACL resources the kernels own and hold now (events, pinned host bytes, descriptor bytes in
//   device memory), counted here because CANN reports none of them (the host runtime's own counts
//   exist only without CANN).
// Every counter is process-wide and atomic; nothing here throws.
#ifndef MS_MEMCOPY_KERNELS_KERNEL_COUNTERS_H_
#define MS_MEMCOPY_KERNELS_KERNEL_COUNTERS_H_

#include <cstdint>

#include "host_buffers.h"  // MSMC_EXPORT
#include "kernels_api.h"

namespace msmc {

enum class LaunchEntry { kGraph, kEager };

enum class OwnedResource { kEvents, kPinnedBytes, kDescriptorBytes };

// Where a graph kernel's value-dependent input came from: a host value MindSpore held for the
// KernelTensor, or the tensor's memory.
enum class ValueSource { kHeldOnHost, kTensorMemory };

MSMC_KERNELS_API void CountLaunch(LaunchEntry entry) noexcept;
// delta > 0 when the kernels create or allocate, < 0 when they destroy or free.
MSMC_KERNELS_API void CountOwned(OwnedResource resource, int64_t delta) noexcept;
MSMC_KERNELS_API void CountValueRead(ValueSource source) noexcept;

}  // namespace msmc

// Launches so far through the graph kernels (KernelMods of Custom_<op>) and through the eager entries.
MSMC_EXPORT uint64_t msmc_graph_launch_count(void);
MSMC_EXPORT uint64_t msmc_eager_launch_count(void);
// Value-dependent inputs the graph kernels read from a host value MindSpore held, and from tensor memory.
MSMC_EXPORT uint64_t msmc_graph_held_value_reads(void);
MSMC_EXPORT uint64_t msmc_graph_memory_value_reads(void);
// Events the kernels created and have not destroyed (result and descriptor slots, HostBuffer fences).
MSMC_EXPORT int64_t msmc_live_kernel_events(void);
// Pinned host bytes (aclrtMallocHost) the kernels' result slots hold.
MSMC_EXPORT int64_t msmc_live_kernel_pinned_bytes(void);
// Device bytes (aclrtMalloc) the kernels' memory-copy descriptors hold.
MSMC_EXPORT int64_t msmc_live_kernel_descriptor_bytes(void);

#endif  // MS_MEMCOPY_KERNELS_KERNEL_COUNTERS_H_
