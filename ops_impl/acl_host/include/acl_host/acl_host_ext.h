/*
 * ms_memcopy host ACL runtime: calls outside the ACL names.
 *
 * These exist only in the host runtime (never in CANN). Kernels use them
 * under `#ifdef ACL_HOST_RUNTIME` so that the same source builds against
 * real CANN headers, where the macro is not defined.
 */
#ifndef MS_MEMCOPY_ACL_HOST_EXT_H_
#define MS_MEMCOPY_ACL_HOST_EXT_H_

#include "acl/acl_base.h"

#define ACL_HOST_RUNTIME 1

/*
 * The environment variables the host runtime reads (docs/host_runtime.md), named once for the runtime
 * and the C++ test programs (Python: ms_memcopy/_runtime_env.py).
 *   ACLHOST_ENV_SOC            the emulated SoC profile, resolved once (default: configs/soc_profiles.yaml)
 *   ACLHOST_ENV_DEVICE_COUNT   the device count, 1..1024 (default 8)
 *   ACLHOST_ENV_STRICT_DEVICE  "1": aclrtMalloc memory the host cannot access
 *   ACLHOST_ENV_COPY_THREADS   at most this many threads per large copy (1: no copy pool)
 *   ACLHOST_ENV_STRICT_ORDER   "1": a call that touches bytes a queued copy of another stream accesses,
 *                              with no event between them, fails (docs/host_runtime.md)
 */
#define ACLHOST_ENV_SOC "MS_MEMCOPY_SOC"
#define ACLHOST_ENV_DEVICE_COUNT "MS_MEMCOPY_DEVICE_COUNT"
#define ACLHOST_ENV_STRICT_DEVICE "MS_MEMCOPY_STRICT_DEVICE"
#define ACLHOST_ENV_COPY_THREADS "MS_MEMCOPY_COPY_THREADS"
#define ACLHOST_ENV_STRICT_ORDER "MS_MEMCOPY_STRICT_ORDER"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Declares [ptr, ptr + size) as device memory of the calling thread's current
 * device until aclhostUnregisterDeviceMemory(ptr). Used by kernels for memory
 * the framework owns (MindSpore CPU tensors), so that ACL direction checks
 * treat it as the device side of a copy.
 *
 * Registrations of the same device may overlap each other in any way and in
 * any order; each is released by its own unregistration, and an address is
 * device memory while some registration covers it. The same base registered
 * again counts a reference. A range inside an aclrtMalloc allocation of the
 * same device is counted; one overlapping pinned memory, part of an
 * aclrtMalloc allocation or another device's memory returns 107000.
 * size 0 or ptr NULL returns 100000.
 */
ACL_FUNC_VISIBILITY aclError aclhostRegisterDeviceMemory(void *ptr, size_t size);

/* Drops one reference of a registration made at ptr. Unknown ptr: 107000. */
ACL_FUNC_VISIBILITY aclError aclhostUnregisterDeviceMemory(void *ptr);

/*
 * aclhostRegisterDeviceMemory of count ranges under one lock of the runtime's memory registry (kernels
 * register every tensor of a launch with it). All or nothing: when range i is refused, the ranges this
 * call registered are released again and range i's error is returned, its message naming "item i".
 * count 0: success. ptrs or sizes NULL (count > 0), a NULL ptrs[i] or a zero sizes[i]: 100000, nothing
 * registered. No current device: 107002.
 */
ACL_FUNC_VISIBILITY aclError aclhostRegisterDeviceMemoryBatch(void *const *ptrs, const size_t *sizes, size_t count);

/*
 * aclhostUnregisterDeviceMemory of count pointers under one lock. Every known pointer is released; the
 * first unknown one is then reported (107000, "item i"). count 0: success. ptrs NULL (count > 0) or a
 * NULL ptrs[i]: 100000, nothing released.
 */
ACL_FUNC_VISIBILITY aclError aclhostUnregisterDeviceMemoryBatch(void *const *ptrs, size_t count);

/*
 * Location of ptr as the runtime sees it: *type is an aclrtMemLocationType
 * (HOST for aclrtMallocHost memory, DEVICE for aclrtMalloc or registered
 * memory, UNREGISTERED otherwise), *deviceId the device for DEVICE memory
 * (-1 otherwise).
 * base/size (optional, may be NULL) receive the allocation that holds ptr.
 */
ACL_FUNC_VISIBILITY aclError aclhostGetMemLocation(const void *ptr, int32_t *type, int32_t *deviceId, void **base,
                                                   size_t *size);

/*
 * Deferred launch of a stream's tasks (deferred != 0), for callers that synchronize the stream right
 * after enqueueing, such as ms_memcopy's CPU kernels: enqueueing then wakes no thread. The queued tasks
 * run when a thread waits for the stream: aclrtSynchronizeStream runs the queued copies on the calling
 * thread (host functions still run on the stream's thread), and a timed synchronize, a pageable copy's
 * drain, aclrtFree/aclrtFreeHost and aclrtDestroyStream let them run too. Without a wait they do not
 * run, unlike a CANN stream; deferred 0 restores background execution. NULL stream: 100000; unknown
 * or destroyed stream: 107017.
 */
ACL_FUNC_VISIBILITY aclError aclhostSetStreamDeferred(aclrtStream stream, int32_t deferred);

/*
 * Enqueues fn(userData) on a stream (NULL: the current device's default stream). It runs on the
 * stream's worker thread after every task submitted before it, and the tasks submitted after it wait
 * for it to return. Tests use it to hold a stream busy deterministically. A wait for its own stream
 * from fn (synchronize, destroy, free) returns at once; fn may destroy its own stream (the tasks after
 * it still run). fn NULL: 100000.
 */
typedef void (*aclhostHostFunc)(void *userData);
ACL_FUNC_VISIBILITY aclError aclhostLaunchHostFunc(aclrtStream stream, aclhostHostFunc fn, void *userData);

/*
 * Runs the queued tasks of a stream on the calling thread and returns the first failure recorded on
 * it, as aclrtSynchronizeStream does, without counting a host wait (aclhostGetHostWaitCount). It is
 * how the CPU target finishes a kernel launch: MindSpore's CPU kernels must have written their
 * outputs when they return, while on an NPU the same work runs on the device after the launch has
 * returned. stream NULL: 100000; an unknown or destroyed stream: 107017.
 */
ACL_FUNC_VISIBILITY aclError aclhostCompleteStream(aclrtStream stream);

/*
 * The number of times since the process started that a host thread waited for queued device work:
 * each aclrtSynchronizeStream(WithTimeout), each stream aclrtSynchronizeDevice waits for, each
 * aclrtSynchronizeEvent of an event not yet complete, and each drain of a stream that an asynchronous
 * copy with a pageable host endpoint makes (CANN synchronizes the stream there too). Tests use it to
 * show that a kernel launch never stalls its stream. count NULL: 100000.
 */
ACL_FUNC_VISIBILITY aclError aclhostGetHostWaitCount(uint64_t *count);

/*
 * The number of live events (created by aclrtCreateEvent / aclrtCreateEventWithFlag and not yet
 * destroyed) and of live pinned host allocations (aclrtMallocHost not yet freed) in the process. Tests
 * use it to show that repeated calls accumulate neither. events or pinnedAllocations NULL: 100000.
 */
ACL_FUNC_VISIBILITY aclError aclhostGetLiveResourceCounts(uint64_t *events, uint64_t *pinnedAllocations);

/*
 * Strict ordering (MS_MEMCOPY_STRICT_ORDER=1): the copies and memsets queued and not yet finished that
 * the runtime tracks, and the races it has reported since the process started (each one an
 * ACL_ERROR_RT_PARAM_INVALID returned by the call that raced). Both 0 while the check is off. Tests use
 * the first to show that the tracker does not grow with the number of launches. Either pointer NULL:
 * 100000.
 */
ACL_FUNC_VISIBILITY aclError aclhostGetOrderCheckCounts(uint64_t *queuedAccesses, uint64_t *races);

/*
 * Strict ordering: declares that the calling thread is about to read (write 0) or write (write != 0) size
 * bytes at ptr outside any ACL call (numpy, a framework kernel). Returns ACL_ERROR_RT_PARAM_INVALID
 * (107000) with the race report when that access races with a queued copy or memset, as a synchronous
 * aclrtMemcpy would; 0 otherwise, and always 0 while the check is off. size 0: 0; ptr NULL: 100000.
 */
ACL_FUNC_VISIBILITY aclError aclhostCheckHostAccess(const void *ptr, size_t size, int32_t write);

/* The emulated SoC profile name (MS_MEMCOPY_SOC, default Ascend910B). */
ACL_FUNC_VISIBILITY const char *aclhostGetSocProfile(void);

#ifdef __cplusplus
}
#endif

#endif  // MS_MEMCOPY_ACL_HOST_EXT_H_
