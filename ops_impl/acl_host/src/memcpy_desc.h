// Memory-copy descriptors of the host runtime ("level-2 pointer" copies).
//
// Layout (host runtime's own, with a magic where CANN's rtMemcpyAddrInfo has reserved words). The first
// 32 bytes of the descriptor, native byte order, all fields naturally aligned (the descriptor is 64-byte
// aligned):
//   offset  0  uint32  magic    kDescMagic ("MSDC") once aclrtSetMemcpyDesc has written the descriptor
//   offset  4  uint32  version  kDescVersion
//   offset  8  uint64  src      source address
//   offset 16  uint64  dst      destination address
//   offset 24  uint32  count    bytes to copy, modulo 2^32 (as CANN's rtMemcpyAddrInfo::len)
//   offset 28  uint32  reserved, written as zero
// Bytes 32 .. descSize-1 (the 64-byte descriptors of the 950 profile) are reserved and written as zero.
//
// CANN's Context::SetMemcpyDesc stores the count as static_cast<uint32_t>(count) after accepting any
// count up to MAX_MEMCPY_SIZE_OF_D2D (4 GiB) inclusive, so a 4 GiB descriptor holds 0 and its copy moves
// nothing; the host runtime stores it the same way.
#ifndef MS_MEMCOPY_ACL_HOST_MEMCPY_DESC_H_
#define MS_MEMCOPY_ACL_HOST_MEMCPY_DESC_H_

#include <cstddef>
#include <cstdint>

#include "acl_limits.h"

namespace aclhost {

constexpr uint32_t kDescMagic = 0x4344534DU;  // bytes "MSDC" in little-endian order
constexpr uint32_t kDescVersion = 2;          // 2: the count became 32 bits
constexpr size_t kDescMagicOffset = 0;
constexpr size_t kDescVersionOffset = 4;
constexpr size_t kDescSrcOffset = 8;
constexpr size_t kDescDstOffset = 16;
constexpr size_t kDescCountOffset = 24;
constexpr size_t kDescReservedOffset = 28;
constexpr size_t kDescLayoutBytes = 32;
using acl_limits::kDescAlignment;
// Largest count aclrtSetMemcpyDesc accepts; the descriptor stores it in 32 bits.
constexpr uint64_t kDescMaxCount = acl_limits::kMaxDescCount;

}  // namespace aclhost

#endif  // MS_MEMCOPY_ACL_HOST_MEMCPY_DESC_H_
