#include <algorithm>
#include <atomic>

#include "copy_launch.h"
#include "kernel_error.h"

namespace msmc {
namespace {

// Whether aclrtMemcpy2dAsync takes device-to-device copies here: -1 not yet known, 0 no, 1 yes.
std::atomic<int> g_2d_d2d_supported{-1};

void CopyRowsWithMemcpy(const PitchedCopy &c, aclrtStream stream) {
  auto *dst = static_cast<char *>(c.dst);
  const auto *src = static_cast<const char *>(c.src);
  if (c.width == c.dpitch && c.width == c.spitch) {
    const size_t total = CheckedMul(c.width, c.height, "height");
    CheckAcl(aclrtMemcpyAsync(dst, total, src, total, c.kind, stream), "aclrtMemcpyAsync");
    return;
  }
  for (size_t r = 0; r < c.height; ++r) {
    CheckAcl(aclrtMemcpyAsync(dst + r * c.dpitch, c.width, src + r * c.spitch, c.width, c.kind, stream),
             "aclrtMemcpyAsync");
  }
}

}  // namespace

void Copy2D(const PitchedCopy &c, aclrtStream stream) {
  if (c.width == 0 || c.height == 0) {
    return;
  }
  // The last byte touched on each side must be addressable; this also bounds every r * pitch below.
  CheckedAdd(CheckedMul(c.height - 1, c.dpitch, "height"), c.width, "width");
  CheckedAdd(CheckedMul(c.height - 1, c.spitch, "height"), c.width, "width");
  const bool d2d = c.kind == ACL_MEMCPY_DEVICE_TO_DEVICE;
  if (d2d && g_2d_d2d_supported.load(std::memory_order_relaxed) == 0) {
    CopyRowsWithMemcpy(c, stream);
    return;
  }
  auto *dst = static_cast<char *>(c.dst);
  const auto *src = static_cast<const char *>(c.src);
  for (size_t col = 0; col < c.width; col += kMax2DWidth) {
    const size_t w = std::min(kMax2DWidth, c.width - col);
    for (size_t row = 0; row < c.height; row += kMax2DHeight) {
      const size_t h = std::min(kMax2DHeight, c.height - row);
      const aclError ret = aclrtMemcpy2dAsync(dst + row * c.dpitch + col, c.dpitch, src + row * c.spitch + col,
                                              c.spitch, w, h, c.kind, stream);
      if (ret == ACL_ERROR_RT_FEATURE_NOT_SUPPORT && d2d && col == 0 && row == 0) {
        g_2d_d2d_supported.store(0, std::memory_order_relaxed);
        CopyRowsWithMemcpy(c, stream);
        return;
      }
      CheckAcl(ret, "aclrtMemcpy2dAsync");
      if (d2d) {
        g_2d_d2d_supported.store(1, std::memory_order_relaxed);
      }
    }
  }
}

}  // namespace msmc
