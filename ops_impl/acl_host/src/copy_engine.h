// The copy engine: every byte the host runtime moves goes through these two functions, so that they
// can be optimized (narrow-row 2D loops, large copies split across threads) without touching callers.
#ifndef MS_MEMCOPY_ACL_HOST_COPY_ENGINE_H_
#define MS_MEMCOPY_ACL_HOST_COPY_ENGINE_H_

#include <cstddef>

namespace aclhost {

// Copies n bytes. Overlapping ranges are allowed (the result is as if through a temporary buffer).
void CopyBytes(void *dst, const void *src, size_t n);

// Copies `height` rows of `width` bytes: row r goes from src + r * spitch to dst + r * dpitch.
// Callers guarantee width <= spitch, width <= dpitch and that the extents do not overflow.
void Copy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height);

}  // namespace aclhost

#endif  // MS_MEMCOPY_ACL_HOST_COPY_ENGINE_H_
