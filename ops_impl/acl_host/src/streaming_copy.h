// The kinds of stores a large copy can use, among which the copy strategy chooses (copy_strategy.h):
// the platform's std::memcpy, or streaming (non-temporal) stores, line after line or four pages at a time.
#ifndef MS_MEMCOPY_ACL_HOST_STREAMING_COPY_H_
#define MS_MEMCOPY_ACL_HOST_STREAMING_COPY_H_

#include <cstddef>

namespace aclhost {

enum class StoreKind {
  kMemcpy,       // std::memcpy, which picks its own stores per CPU
  kStreaming,    // streaming stores, one line after the other
  kInterleaved,  // streaming stores, a line of each of four pages in turn (four read streams at once)
};

// "memcpy", "streaming", "interleaved".
const char *StoreKindName(StoreKind kind);

// Whether this build has streaming stores (x86-64 with SSE2); elsewhere CopyStreaming is std::memcpy.
bool HaveStreamingStores();

// Pieces smaller than this are copied with std::memcpy even when the whole streams.
constexpr size_t kStreamingMinPieceBytes = size_t{4} << 10;

// Copies n bytes between non-overlapping ranges with ordinary stores: std::memcpy, except where a
// forward copy would stall (x86-64): when the destination starts 1 to 63 bytes past the source modulo
// 4 KiB, each load of a forward copy waits on a store just issued to an address with the same low 12
// bits (4 KiB aliasing; std::memcpy ran 3.5-18x slower so on an AMD EPYC, docs/performance.md finding
// 18), so those copies go from the last 64-byte line to the first.
void CopyPlain(void *dst, const void *src, size_t n);

// Copies n bytes between non-overlapping ranges with the given stores. Streaming stores write the
// destination's lines without reading them first and without displacing cached data; they are fenced
// before returning, so the bytes are visible to whichever thread later observes the copy as complete.
// Pieces below kStreamingMinPieceBytes, and every piece where the build has no streaming stores, are
// CopyPlain's.
void CopyWithStores(void *dst, const void *src, size_t n, StoreKind kind);

}  // namespace aclhost

#endif  // MS_MEMCOPY_ACL_HOST_STREAMING_COPY_H_
