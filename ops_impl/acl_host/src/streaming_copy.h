// A copy with streaming (non-temporal) stores, one of the two store kinds the copy strategy chooses
// between (copy_strategy.h).
#ifndef MS_MEMCOPY_ACL_HOST_STREAMING_COPY_H_
#define MS_MEMCOPY_ACL_HOST_STREAMING_COPY_H_

#include <cstddef>

namespace aclhost {

// Whether this build has streaming stores (x86-64 with SSE2); elsewhere CopyStreaming is std::memcpy.
bool HaveStreamingStores();

// Pieces smaller than this are copied with std::memcpy even when the whole streams.
constexpr size_t kStreamingMinPieceBytes = size_t{4} << 10;

// Copies n bytes between non-overlapping ranges: the destination's lines are written without being read
// first and without displacing cached data. The stores are fenced before returning, so the bytes are
// visible to whichever thread later observes the copy as complete.
void CopyStreaming(void *dst, const void *src, size_t n);

}  // namespace aclhost

#endif  // MS_MEMCOPY_ACL_HOST_STREAMING_COPY_H_
