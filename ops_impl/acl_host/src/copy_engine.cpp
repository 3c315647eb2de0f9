// Copy engine, first version: plain std::memcpy / std::memmove loops.
#include "copy_engine.h"

#include <cstdint>
#include <cstring>

namespace aclhost {
namespace {

bool Overlaps(const void *dst, const void *src, size_t n)
{
    const uintptr_t d = reinterpret_cast<uintptr_t>(dst);
    const uintptr_t s = reinterpret_cast<uintptr_t>(src);
    return d < s ? s - d < n : d - s < n;
}

}  // namespace

void CopyBytes(void *dst, const void *src, size_t n)
{
    if (n == 0 || dst == src) {
        return;
    }
    if (Overlaps(dst, src, n)) {
        std::memmove(dst, src, n);
    } else {
        std::memcpy(dst, src, n);
    }
}

void Copy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height)
{
    auto *out = static_cast<unsigned char *>(dst);
    const auto *in = static_cast<const unsigned char *>(src);
    for (size_t row = 0; row < height; ++row) {
        CopyBytes(out + row * dpitch, in + row * spitch, width);
    }
}

}  // namespace aclhost
