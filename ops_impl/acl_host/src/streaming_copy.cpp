#include "streaming_copy.h"

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace aclhost {
namespace {

#if defined(__SSE2__)
// One 64-byte line with streaming stores; dst is 16-byte aligned.
inline void StreamLine(unsigned char *dst, const unsigned char *src) {
  const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src));
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + 16));
  const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + 32));
  const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + 48));
  _mm_stream_si128(reinterpret_cast<__m128i *>(dst), a);
  _mm_stream_si128(reinterpret_cast<__m128i *>(dst + 16), b);
  _mm_stream_si128(reinterpret_cast<__m128i *>(dst + 32), c);
  _mm_stream_si128(reinterpret_cast<__m128i *>(dst + 48), d);
}
#endif

}  // namespace

const char *StoreKindName(StoreKind kind) {
  switch (kind) {
    case StoreKind::kStreaming:
      return "streaming";
    case StoreKind::kInterleaved:
      return "interleaved";
    default:
      return "memcpy";
  }
}

bool HaveStreamingStores() {
#if defined(__SSE2__)
  return true;
#else
  return false;
#endif
}

// Ordinary stores for the unaligned head and the tail.
void CopyWithStores(void *dst, const void *src, size_t n, StoreKind kind) {
#if defined(__SSE2__)
  constexpr size_t kLine = 64;
  constexpr size_t kPage = 4096;
  auto *d = static_cast<unsigned char *>(dst);
  const auto *s = static_cast<const unsigned char *>(src);
  const size_t head = (kLine - (reinterpret_cast<uintptr_t>(d) & (kLine - 1))) & (kLine - 1);
  if (kind == StoreKind::kMemcpy || n < head + kStreamingMinPieceBytes) {
    std::memcpy(dst, src, n);
    return;
  }
  std::memcpy(d, s, head);
  d += head;
  s += head;
  n -= head;
  if (kind == StoreKind::kInterleaved) {
    for (; n >= 4 * kPage; d += 4 * kPage, s += 4 * kPage, n -= 4 * kPage) {
      for (size_t off = 0; off < kPage; off += kLine) {
        StreamLine(d + off, s + off);
        StreamLine(d + kPage + off, s + kPage + off);
        StreamLine(d + 2 * kPage + off, s + 2 * kPage + off);
        StreamLine(d + 3 * kPage + off, s + 3 * kPage + off);
      }
    }
  }
  for (; n >= kLine; d += kLine, s += kLine, n -= kLine) {
    StreamLine(d, s);
  }
  _mm_sfence();
  std::memcpy(d, s, n);
#else
  (void)kind;
  std::memcpy(dst, src, n);
#endif
}

}  // namespace aclhost
