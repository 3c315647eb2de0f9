// Overflow-checked size arithmetic used by every argument check of the host runtime.
#ifndef MS_MEMCOPY_ACL_HOST_CHECKED_MATH_H_
#define MS_MEMCOPY_ACL_HOST_CHECKED_MATH_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace aclhost {

// Each returns true when the result does not fit; *out is then unspecified.
inline bool AddOverflows(size_t a, size_t b, size_t *out) { return __builtin_add_overflow(a, b, out); }
inline bool MulOverflows(size_t a, size_t b, size_t *out) { return __builtin_mul_overflow(a, b, out); }

// One past the last byte of [p, p + n) as an integer address.
inline bool RangeEndOverflows(const void *p, size_t n, uintptr_t *end) {
  return __builtin_add_overflow(reinterpret_cast<uintptr_t>(p), n, end);
}

// Rounds n up to a multiple of `align` (a power of two).
inline bool RoundUpOverflows(size_t n, size_t align, size_t *out) {
  size_t bumped = 0;
  if (AddOverflows(n, align - 1, &bumped)) {
    return true;
  }
  *out = bumped & ~(align - 1);
  return false;
}

// The integer value of a C enum argument, read from its bytes. Callers from C (or ctypes) may pass any
// int in an enum parameter; reading it through its underlying type keeps out-of-range values well defined.
template <typename Enum>
inline int64_t RawEnumValue(const Enum &value) {
  static_assert(std::is_enum<Enum>::value, "RawEnumValue takes an enum");
  std::underlying_type_t<Enum> raw;
  std::memcpy(&raw, &value, sizeof(raw));
  return static_cast<int64_t>(raw);
}

}  // namespace aclhost

#endif  // MS_MEMCOPY_ACL_HOST_CHECKED_MATH_H_
