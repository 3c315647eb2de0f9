// CANN's limits on the ACL calls ms_memcopy makes, in one place: the host ACL runtime (ops_impl/acl_host)
// enforces them as CANN does, the kernels plan their calls within them, and Python reads them from this
// file (ms_memcopy/acl_limits.py parses the `constexpr ... k<Name> = <value>;` lines: keep each value a
// single integer expression of literals, `<<` and `*`).
//
// Sources: CANN 9.1 (runtime/api, runtime/driver, acl/aclrt_impl).
#ifndef MS_MEMCOPY_ACL_LIMITS_H_
#define MS_MEMCOPY_ACL_LIMITS_H_

#include <cstddef>
#include <cstdint>

namespace acl_limits {

// Items of one aclrtMemcpyBatch(Async) call (DEVMM_MEMCPY_BATCH_MAX_COUNT).
constexpr size_t kMaxBatchItems = 4096;
// Rows and bytes per row of one aclrtMemcpy2d(Async) call (5 * 1024 * 1024 rows).
constexpr size_t kMax2DHeight = 5242880;
constexpr size_t kMax2DWidth = 5000000;
// Largest count aclrtSetMemcpyDesc accepts, inclusive (MAX_MEMCPY_SIZE_OF_D2D, 4 GiB) ...
constexpr uint64_t kMaxDescCount = uint64_t{4} << 30;
// ... but the descriptor holds the count in 32 bits (rtMemcpyAddrInfo::len): a copy of this many bytes
// or more wraps around (a 4 GiB descriptor copies nothing).
constexpr uint64_t kDescCountWrap = uint64_t{1} << 32;
// Alignment of a memory-copy descriptor's address.
constexpr size_t kDescAlignment = 64;
// Device ids the peer-access calls accept (RT_MAX_DEV_NUM).
constexpr int64_t kMaxRuntimeDevices = 64;

// Bytes per descriptor copy of the kernels (MemcpyWithDesc): below kDescCountWrap, and 2 GiB rather than
// the largest aligned size (4 GiB - 64) because, as a power of two, every chunk starts with the alignment
// the whole copy had.
constexpr size_t kDescChunkBytes = size_t{2} << 30;
static_assert(kDescChunkBytes < kDescCountWrap, "a descriptor chunk must fit the 32-bit count");

}  // namespace acl_limits

#endif  // MS_MEMCOPY_ACL_LIMITS_H_
