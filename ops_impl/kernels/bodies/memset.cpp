// MemsetAsync: a byte range of a device tensor set in place through aclrtMemsetAsync.
// Definitions: configs/ops/memset.yaml; primitives: ms_memcopy/ops/memset.py. The bodies, and the
// attributes they read, register themselves below (op_bodies.h) under the names of the definitions.
#include <string>
#include <vector>

#include "body_helpers.h"
#include "kernel_error.h"
#include "op_bodies.h"

namespace msmc {

using namespace bodies;  // NOLINT(build/namespaces)

namespace {

const AttrSpec kAttrs[] = {{"value", true}};
MSMC_REGISTER_ATTRS(kAttrs);

// The bytes of dst a call sets: begin and count, known = false while offset or count is not known.
struct ByteRange {
  size_t begin;
  size_t count;
  bool known;
};

// The check: value is a byte, count is not negative and [offset, offset + count) lies within dst.
ByteRange CheckMemset(const KernelState &s, const TensorArg &dst, const TensorArg &offset, const TensorArg &count,
                      const TensorArg &out) {
  const int64_t value = s.Attr("value");
  if (value > 255) {
    throw InputError("value must be a byte in [0, 255], got " + std::to_string(value));
  }
  if (NumBytes(out, "output") != sizeof(int64_t)) {
    throw InputError("output", "must hold one int64 value");
  }
  const size_t nbytes = NumBytes(dst, "dst");
  const int64_t *first = KnownInt64(offset, "offset", 1);
  const int64_t *n = KnownInt64(count, "count", 1);
  if (n != nullptr && n[0] < 0) {
    throw InputError("count is negative (" + std::to_string(n[0]) + "); nothing was written");
  }
  if (first == nullptr || n == nullptr) {
    return ByteRange{0, 0, false};
  }
  const size_t span = static_cast<size_t>(n[0]);
  if (first[0] < 0 || static_cast<uint64_t>(first[0]) > nbytes || span > nbytes - static_cast<size_t>(first[0])) {
    throw InputError("offset = " + std::to_string(first[0]) + ": the bytes [" + std::to_string(first[0]) + ", " +
                     std::to_string(first[0]) + " + " + std::to_string(span) + ") leave the " + std::to_string(nbytes) +
                     " bytes of dst; nothing was written");
  }
  return ByteRange{static_cast<size_t>(first[0]), span, true};
}

void Memset(KernelState &s, const TensorArg &dst, const TensorArg &offset, const TensorArg &count, const TensorArg &out,
            aclrtStream stream) {
  std::vector<int64_t> offsets;
  std::vector<int64_t> counts;
  const ByteRange range = CheckMemset(s, dst, ValuesOnHost(offset, &offsets), ValuesOnHost(count, &counts), out);
  if (range.count > 0) {
    const size_t nbytes = NumBytes(dst, "dst");
    CheckAcl(aclrtMemsetAsync(static_cast<char *>(dst.data) + range.begin, nbytes - range.begin,
                              static_cast<int32_t>(s.Attr("value")), range.count, stream),
             "aclrtMemsetAsync");
  }
  s.host_results.assign(1, static_cast<int64_t>(range.count));
  WriteResults(s, out, stream);
}

const OpBody kBodies[] = {
    {"memset_async", "MemsetAsync",
     [](KernelState &s, const TensorArg *a, size_t) { CheckMemset(s, a[0], a[1], a[2], a[3]); },
     [](KernelState &s, const TensorArg *a, size_t, aclrtStream st) { Memset(s, a[0], a[1], a[2], a[3], st); }},
};

MSMC_REGISTER_OP_BODIES(kBodies);

}  // namespace

}  // namespace msmc
