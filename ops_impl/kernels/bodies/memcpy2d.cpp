// Memcpy2D: regions of the 2-D view of a tensor, between tensors and to and from a HostBuffer.
// Definitions: configs/ops/memcpy2d.yaml; primitives: ms_memcopy/ops/memcpy2d.py. The bodies register
// themselves below (op_bodies.h), under the names of the definitions.
#include "op_bodies.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "body_helpers.h"
#include "host_buffers.h"
#include "kernel_error.h"

namespace msmc {

using namespace bodies;  // NOLINT(build/namespaces)

namespace {

void ExtractRegion(KernelState &s, const TensorArg &x, size_t h, size_t w, const TensorArg &row, const TensorArg &col,
                   const TensorArg &y, aclrtStream stream) {
  const Matrix m = AsMatrix(x, "x");
  const size_t r = CheckRegion(ReadInt64(s, row, "row", 1)[0], h, m.rows, "row", "rows");
  const size_t c = CheckRegion(ReadInt64(s, col, "col", 1)[0], w, m.cols, "col", "columns");
  if (NumBytes(y, "output") != CheckedMul(CheckedMul(h, w, "height"), m.itemsize, "width")) {
    throw InputError("output", "does not hold height x width elements");
  }
  const auto *src = static_cast<const char *>(x.data) + (r * m.cols + c) * m.itemsize;
  Copy2D(PitchedCopy{y.data, w * m.itemsize, src, m.row_bytes(), w * m.itemsize, h, ACL_MEMCPY_DEVICE_TO_DEVICE},
         stream);
}

}  // namespace

void Extract2D(KernelState &s, const TensorArg &x, const TensorArg &row, const TensorArg &col, const TensorArg &y,
               aclrtStream stream) {
  ExtractRegion(s, x, static_cast<size_t>(s.height), static_cast<size_t>(s.width), row, col, y, stream);
}

void ExtractLike2D(KernelState &s, const TensorArg &x, const TensorArg &like, const TensorArg &row,
                   const TensorArg &col, const TensorArg &y, aclrtStream stream) {
  if (std::strcmp(x.dtype, like.dtype) != 0) {
    throw InputError("like", std::string("has dtype ") + like.dtype + " but x has " + x.dtype);
  }
  const Matrix ml = AsMatrix(like, "like");
  ExtractRegion(s, x, ml.rows, ml.cols, row, col, y, stream);
}

namespace {

// The pitched copy writing src (seen as a matrix) at (row, col) of `target`, a matrix of dst's shape;
// checks the region first.
PitchedCopy PlanWrite(KernelState &s, void *target, const TensorArg &dst, const TensorArg &src, const TensorArg &row,
                      const TensorArg &col) {
  const Matrix md = AsMatrix(dst, "dst");
  const Matrix ms = AsMatrix(src, "src");
  if (std::strcmp(dst.dtype, src.dtype) != 0) {
    throw InputError("src", std::string("has dtype ") + src.dtype + " but dst has " + dst.dtype);
  }
  const size_t r = CheckRegion(ReadInt64(s, row, "row", 1)[0], ms.rows, md.rows, "row", "rows");
  const size_t c = CheckRegion(ReadInt64(s, col, "col", 1)[0], ms.cols, md.cols, "col", "columns");
  auto *out = static_cast<char *>(target) + (r * md.cols + c) * md.itemsize;
  return PitchedCopy{out, md.row_bytes(), src.data, ms.row_bytes(), ms.row_bytes(), ms.rows,
                     ACL_MEMCPY_DEVICE_TO_DEVICE};
}

}  // namespace

void Insert2D(KernelState &s, const TensorArg &dst, const TensorArg &src, const TensorArg &row, const TensorArg &col,
              const TensorArg &y, aclrtStream stream) {
  const PitchedCopy region = PlanWrite(s, y.data, dst, src, row, col);
  CheckSameBytes(dst, y, "dst");
  const size_t total = NumBytes(dst, "dst");
  if (total > 0) {
    CheckAcl(aclrtMemcpyAsync(y.data, total, dst.data, total, ACL_MEMCPY_DEVICE_TO_DEVICE, stream),
             "aclrtMemcpyAsync");
  }
  Copy2D(region, stream);
}

void Write2D(KernelState &s, const TensorArg &dst, const TensorArg &src, const TensorArg &row, const TensorArg &col,
             const TensorArg &out, aclrtStream stream) {
  const PitchedCopy region = PlanWrite(s, dst.data, dst, src, row, col);
  Copy2D(region, stream);
  s.host_results.assign(1, static_cast<int64_t>(region.height * region.width));
  WriteResults(s, out, stream);
}

namespace {

// Where the pitched rows of m start in the HostBuffer: at the offset input, row r at + r * pitch.
// Checks the pitch against a row and the whole span against the buffer.
uint8_t *PitchedRows(KernelState &s, const Matrix &m, const TensorArg &offset, const HostBufferLease &buffer,
                     const char *what) {
  const size_t pitch = static_cast<size_t>(s.pitch);
  if (m.row_bytes() > pitch) {
    throw InputError("pitch " + std::to_string(pitch) + " is smaller than a row (" + std::to_string(m.row_bytes()) +
                     " bytes)");
  }
  const int64_t off = ReadInt64(s, offset, "offset", 1)[0];
  const size_t span = m.rows == 0 ? 0 : CheckedAdd(CheckedMul(m.rows - 1, pitch, what), m.row_bytes(), what);
  return buffer.data() + CheckHostRange(off, span, buffer.nbytes(), "offset", what);
}

}  // namespace

void D2H2D(KernelState &s, const TensorArg &x, const TensorArg &offset, const TensorArg &out, aclrtStream stream) {
  HostBufferLease buffer(s.buffer_id, "host_buffer", stream);
  const Matrix m = AsMatrix(x, "x");
  uint8_t *rows = PitchedRows(s, m, offset, buffer, "the pitched rows of x");
  Copy2D(PitchedCopy{rows, static_cast<size_t>(s.pitch), x.data, m.row_bytes(), m.row_bytes(), m.rows,
                     ACL_MEMCPY_DEVICE_TO_HOST},
         stream);
  s.host_results.assign(1, static_cast<int64_t>(m.rows * m.row_bytes()));
  WriteResults(s, out, stream);
}

void H2D2D(KernelState &s, const TensorArg &offset, const TensorArg &y, aclrtStream stream) {
  HostBufferLease buffer(s.buffer_id, "host_buffer", stream);
  const Matrix m = AsMatrix(y, "output");
  const uint8_t *rows = PitchedRows(s, m, offset, buffer, "the pitched rows of the output");
  Copy2D(PitchedCopy{y.data, m.row_bytes(), rows, static_cast<size_t>(s.pitch), m.row_bytes(), m.rows,
                     ACL_MEMCPY_HOST_TO_DEVICE},
         stream);
}

namespace {

const OpBody kBodies[] = {
    {"memcpy2d_extract", "Memcpy2D(extract)",
     [](KernelState &s, const TensorArg *a, size_t, aclrtStream st) { Extract2D(s, a[0], a[1], a[2], a[3], st); }},
    {"memcpy2d_extract_like", "Memcpy2D(extract, gradient)",
     [](KernelState &s, const TensorArg *a, size_t, aclrtStream st) {
       ExtractLike2D(s, a[0], a[1], a[2], a[3], a[4], st);
     }},
    {"memcpy2d_insert", "Memcpy2D(insert)",
     [](KernelState &s, const TensorArg *a, size_t, aclrtStream st) { Insert2D(s, a[0], a[1], a[2], a[3], a[4], st); }},
    {"memcpy2d_d2h", "Memcpy2D(d2h)",
     [](KernelState &s, const TensorArg *a, size_t, aclrtStream st) { D2H2D(s, a[0], a[1], a[2], st); }},
    {"memcpy2d_h2d", "Memcpy2D(h2d)",
     [](KernelState &s, const TensorArg *a, size_t, aclrtStream st) { H2D2D(s, a[0], a[1], st); }},
    {"memcpy2d_write", "Memcpy2D(write)",
     [](KernelState &s, const TensorArg *a, size_t, aclrtStream st) { Write2D(s, a[0], a[1], a[2], a[3], a[4], st); }},
};

MSMC_REGISTER_OP_BODIES(kBodies);

}  // namespace

}  // namespace msmc
