#include "streaming_copy.h"

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace aclhost {
namespace {

#if defined(__SSE2__)
constexpr size_t kLine = 64;
constexpr size_t kPage = 4096;
// How far past the source (modulo a page) a destination may start for a forward copy's loads to meet
// its own recent stores: two 32-byte vectors, which also covers 64-byte ones.
constexpr size_t kAliasingBytes = 64;
// Below this, a copy is a few vector moves that std::memcpy loads before storing.
constexpr size_t kAliasingMinBytes = 256;

bool ForwardCopyAliases(const void *dst, const void *src) {
  const uintptr_t ahead = (reinterpret_cast<uintptr_t>(dst) - reinterpret_cast<uintptr_t>(src)) & (kPage - 1);
  return ahead != 0 && ahead < kAliasingBytes;
}

// Line by line from the end: every load then reads below the stores still in flight, never a page's
// width under them.
void CopyLinesFromTheEnd(unsigned char *dst, const unsigned char *src, size_t n) {
  size_t at = n;
  while (at >= kLine) {
    at -= kLine;
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + at + 48));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + at + 32));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + at + 16));
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + at));
    _mm_storeu_si128(reinterpret_cast<__m128i *>(dst + at + 48), d);
    _mm_storeu_si128(reinterpret_cast<__m128i *>(dst + at + 32), c);
    _mm_storeu_si128(reinterpret_cast<__m128i *>(dst + at + 16), b);
    _mm_storeu_si128(reinterpret_cast<__m128i *>(dst + at), a);
  }
  std::memcpy(dst, src, at);
}

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

void CopyPlain(void *dst, const void *src, size_t n) {
#if defined(__SSE2__)
  if (n >= kAliasingMinBytes && ForwardCopyAliases(dst, src)) {
    CopyLinesFromTheEnd(static_cast<unsigned char *>(dst), static_cast<const unsigned char *>(src), n);
    return;
  }
#endif
  std::memcpy(dst, src, n);
}

// Ordinary stores for the unaligned head and the tail.
void CopyWithStores(void *dst, const void *src, size_t n, StoreKind kind) {
#if defined(__SSE2__)
  auto *d = static_cast<unsigned char *>(dst);
  const auto *s = static_cast<const unsigned char *>(src);
  const size_t head = (kLine - (reinterpret_cast<uintptr_t>(d) & (kLine - 1))) & (kLine - 1);
  if (kind == StoreKind::kMemcpy || n < head + kStreamingMinPieceBytes) {
    CopyPlain(dst, src, n);
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
  CopyPlain(dst, src, n);
#endif
}

}  // namespace aclhost
