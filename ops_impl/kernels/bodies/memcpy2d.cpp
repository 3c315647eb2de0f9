// Memcpy2D: regions of the 2-D view of a tensor, between tensors and to and from a HostBuffer.
// Definitions: configs/ops/memcpy2d.yaml; primitives: ms_memcopy/ops/memcpy2d.py. The bodies, and the
// attributes they read, register themselves below (op_bodies.h) under the names of the definitions.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "body_helpers.h"
#include "host_buffers.h"
#include "kernel_error.h"
#include "op_bodies.h"

namespace msmc {

using namespace bodies;  // NOLINT(build/namespaces)

namespace {

const AttrSpec kAttrs[] = {{"buffer_id", false}, {"height", true}, {"width", true}, {"pitch", true}};
MSMC_REGISTER_ATTRS(kAttrs);

// A region of a matrix: its corner (row, col), both SIZE_MAX while one of them is not known.
struct Corner {
  size_t row;
  size_t col;
  bool known() const { return row != SIZE_MAX && col != SIZE_MAX; }
};

std::string MatrixText(size_t rows, size_t cols) { return std::to_string(rows) + " x " + std::to_string(cols); }

Corner CheckCorner(const TensorArg &row, const TensorArg &col, size_t h, size_t w, const Matrix &m) {
  const int64_t *r = KnownInt64(row, "row", 1);
  const size_t first_row = r == nullptr ? SIZE_MAX : CheckRegion(r[0], h, m.rows, "row", "rows");
  const int64_t *c = KnownInt64(col, "col", 1);
  const size_t first_col = c == nullptr ? SIZE_MAX : CheckRegion(c[0], w, m.cols, "col", "columns");
  return Corner{first_row, first_col};
}

// extract: the (h, w) region of x at the corner, into y. `attrs`: h and w are the height and width
// attributes, checked against x whatever the corner (else they come from `like`).
Corner CheckExtract(const TensorArg &x, size_t h, size_t w, const TensorArg &row, const TensorArg &col,
                    const TensorArg &y, bool attrs = true) {
  const Matrix m = AsMatrix(x, "x");
  if (attrs && h > m.rows) {
    throw InputError("height " + std::to_string(h) + " exceeds the " + std::to_string(m.rows) + " rows of x");
  }
  if (attrs && w > m.cols) {
    throw InputError("width " + std::to_string(w) + " exceeds the " + std::to_string(m.cols) + " columns of x");
  }
  const Corner corner = CheckCorner(row, col, h, w, m);
  if (NumBytes(y, "output") != CheckedMul(CheckedMul(h, w, "height"), m.itemsize, "width")) {
    throw InputError("output", "does not hold height x width elements");
  }
  return corner;
}

Corner CheckExtractLike(const TensorArg &x, const TensorArg &like, const TensorArg &row, const TensorArg &col,
                        const TensorArg &y) {
  if (std::strcmp(x.dtype, like.dtype) != 0) {
    throw InputError("like", std::string("has dtype ") + like.dtype + " but x has " + x.dtype);
  }
  const Matrix ml = AsMatrix(like, "like");
  return CheckExtract(x, ml.rows, ml.cols, row, col, y, false);
}

void LaunchExtract(const TensorArg &x, const Corner &corner, size_t h, size_t w, const TensorArg &y,
                   aclrtStream stream) {
  const Matrix m = AsMatrix(x, "x");
  const auto *src = static_cast<const char *>(x.data) + (corner.row * m.cols + corner.col) * m.itemsize;
  Copy2D(PitchedCopy{y.data, w * m.itemsize, src, m.row_bytes(), w * m.itemsize, h, ACL_MEMCPY_DEVICE_TO_DEVICE},
         stream);
}

// insert and write: src (seen as a matrix) at the corner of a matrix of dst's shape.
Corner CheckWrite(const TensorArg &dst, const TensorArg &src, const TensorArg &row, const TensorArg &col) {
  const Matrix md = AsMatrix(dst, "dst");
  const Matrix ms = AsMatrix(src, "src");
  if (std::strcmp(dst.dtype, src.dtype) != 0) {
    throw InputError("src", std::string("has dtype ") + src.dtype + " but dst has " + dst.dtype);
  }
  if (ms.rows > md.rows || ms.cols > md.cols) {  // whatever the corner
    throw InputError("src (" + MatrixText(ms.rows, ms.cols) + ") does not fit in dst (" + MatrixText(md.rows, md.cols) +
                     ")");
  }
  return CheckCorner(row, col, ms.rows, ms.cols, md);
}

// The pitched copy writing src at the corner of `target`, a matrix of dst's shape.
PitchedCopy PlanWrite(void *target, const TensorArg &dst, const TensorArg &src, const Corner &corner) {
  const Matrix md = AsMatrix(dst, "dst");
  const Matrix ms = AsMatrix(src, "src");
  auto *out = static_cast<char *>(target) + (corner.row * md.cols + corner.col) * md.itemsize;
  return PitchedCopy{
      out, md.row_bytes(), src.data, ms.row_bytes(), ms.row_bytes(), ms.rows, ACL_MEMCPY_DEVICE_TO_DEVICE};
}

void Extract2D(KernelState &s, const TensorArg &x, const TensorArg &row, const TensorArg &col, const TensorArg &y,
               aclrtStream stream) {
  std::vector<int64_t> rows;
  std::vector<int64_t> cols;
  const size_t h = static_cast<size_t>(s.Attr("height"));
  const size_t w = static_cast<size_t>(s.Attr("width"));
  const Corner corner = CheckExtract(x, h, w, ValuesOnHost(row, &rows), ValuesOnHost(col, &cols), y);
  LaunchExtract(x, corner, h, w, y, stream);
}

void ExtractLike2D(KernelState &, const TensorArg &x, const TensorArg &like, const TensorArg &row, const TensorArg &col,
                   const TensorArg &y, aclrtStream stream) {
  std::vector<int64_t> rows;
  std::vector<int64_t> cols;
  const Corner corner = CheckExtractLike(x, like, ValuesOnHost(row, &rows), ValuesOnHost(col, &cols), y);
  const Matrix ml = AsMatrix(like, "like");
  LaunchExtract(x, corner, ml.rows, ml.cols, y, stream);
}

void Insert2D(KernelState &, const TensorArg &dst, const TensorArg &src, const TensorArg &row, const TensorArg &col,
              const TensorArg &y, aclrtStream stream) {
  std::vector<int64_t> rows;
  std::vector<int64_t> cols;
  const Corner corner = CheckWrite(dst, src, ValuesOnHost(row, &rows), ValuesOnHost(col, &cols));
  CheckSameBytes(dst, y, "dst");
  const PitchedCopy region = PlanWrite(y.data, dst, src, corner);
  const size_t total = NumBytes(dst, "dst");
  if (total > 0) {
    CheckAcl(aclrtMemcpyAsync(y.data, total, dst.data, total, ACL_MEMCPY_DEVICE_TO_DEVICE, stream), "aclrtMemcpyAsync");
  }
  Copy2D(region, stream);
}

void Write2D(KernelState &s, const TensorArg &dst, const TensorArg &src, const TensorArg &row, const TensorArg &col,
             const TensorArg &out, aclrtStream stream) {
  std::vector<int64_t> rows;
  std::vector<int64_t> cols;
  const Corner corner = CheckWrite(dst, src, ValuesOnHost(row, &rows), ValuesOnHost(col, &cols));
  const PitchedCopy region = PlanWrite(dst.data, dst, src, corner);
  Copy2D(region, stream);
  s.host_results.assign(1, static_cast<int64_t>(region.height * region.width));
  WriteResults(s, out, stream);
}

// Where the pitched rows of m start in a HostBuffer of `capacity` bytes: at the offset input, row r at
// + r * pitch. Checks the pitch against a row and, when the offset is known, the whole span against
// the buffer; returns the first row's byte, or SIZE_MAX while the offset is not known.
size_t CheckPitchedRows(KernelState &s, const Matrix &m, const TensorArg &offset, size_t capacity, const char *what) {
  const size_t pitch = static_cast<size_t>(s.Attr("pitch"));
  if (m.row_bytes() > pitch) {
    throw InputError("pitch " + std::to_string(pitch) + " is smaller than a row (" + std::to_string(m.row_bytes()) +
                     " bytes)");
  }
  const int64_t *off = KnownInt64(offset, "offset", 1);
  if (off == nullptr) {
    return SIZE_MAX;
  }
  const size_t span = m.rows == 0 ? 0 : CheckedAdd(CheckedMul(m.rows - 1, pitch, what), m.row_bytes(), what);
  return CheckHostRange(off[0], span, capacity, "offset", what);
}

constexpr const char *kRowsOfX = "the pitched rows of x";
constexpr const char *kRowsOfOutput = "the pitched rows of the output";

void D2H2D(KernelState &s, const TensorArg &x, const TensorArg &offset, const TensorArg &out, aclrtStream stream) {
  HostBufferLease buffer(s.Attr("buffer_id"), "host_buffer", stream);
  std::vector<int64_t> values;
  const Matrix m = AsMatrix(x, "x");
  uint8_t *rows = buffer.data() + CheckPitchedRows(s, m, ValuesOnHost(offset, &values), buffer.nbytes(), kRowsOfX);
  Copy2D(PitchedCopy{rows, static_cast<size_t>(s.Attr("pitch")), x.data, m.row_bytes(), m.row_bytes(), m.rows,
                     ACL_MEMCPY_DEVICE_TO_HOST},
         stream);
  s.host_results.assign(1, static_cast<int64_t>(m.rows * m.row_bytes()));
  WriteResults(s, out, stream);
}

void H2D2D(KernelState &s, const TensorArg &offset, const TensorArg &y, aclrtStream stream) {
  HostBufferLease buffer(s.Attr("buffer_id"), "host_buffer", stream);
  std::vector<int64_t> values;
  const Matrix m = AsMatrix(y, "output");
  const uint8_t *rows =
      buffer.data() + CheckPitchedRows(s, m, ValuesOnHost(offset, &values), buffer.nbytes(), kRowsOfOutput);
  Copy2D(PitchedCopy{y.data, m.row_bytes(), rows, static_cast<size_t>(s.Attr("pitch")), m.row_bytes(), m.rows,
                     ACL_MEMCPY_HOST_TO_DEVICE},
         stream);
}

const OpBody kBodies[] = {
    {"memcpy2d_extract", "Memcpy2D(extract)",
     [](KernelState &s, const TensorArg *a, size_t) {
       CheckExtract(a[0], static_cast<size_t>(s.Attr("height")), static_cast<size_t>(s.Attr("width")), a[1], a[2],
                    a[3]);
     },
     [](KernelState &s, const TensorArg *a, size_t, aclrtStream st) { Extract2D(s, a[0], a[1], a[2], a[3], st); }},
    {"memcpy2d_extract_like", "Memcpy2D(extract, gradient)",
     [](KernelState &, const TensorArg *a, size_t) { CheckExtractLike(a[0], a[1], a[2], a[3], a[4]); },
     [](KernelState &s, const TensorArg *a, size_t, aclrtStream st) {
       ExtractLike2D(s, a[0], a[1], a[2], a[3], a[4], st);
     }},
    {"memcpy2d_insert", "Memcpy2D(insert)",
     [](KernelState &, const TensorArg *a, size_t) {
       CheckWrite(a[0], a[1], a[2], a[3]);
       CheckSameBytes(a[0], a[4], "dst");
     },
     [](KernelState &s, const TensorArg *a, size_t, aclrtStream st) { Insert2D(s, a[0], a[1], a[2], a[3], a[4], st); }},
    {"memcpy2d_d2h", "Memcpy2D(d2h)",
     [](KernelState &s, const TensorArg *a, size_t) {
       CheckPitchedRows(s, AsMatrix(a[0], "x"), a[1], HostBufferBytes(s.Attr("buffer_id"), "host_buffer"), kRowsOfX);
     },
     [](KernelState &s, const TensorArg *a, size_t, aclrtStream st) { D2H2D(s, a[0], a[1], a[2], st); }},
    {"memcpy2d_h2d", "Memcpy2D(h2d)",
     [](KernelState &s, const TensorArg *a, size_t) {
       CheckPitchedRows(s, AsMatrix(a[1], "output"), a[0], HostBufferBytes(s.Attr("buffer_id"), "host_buffer"),
                        kRowsOfOutput);
     },
     [](KernelState &s, const TensorArg *a, size_t, aclrtStream st) { H2D2D(s, a[0], a[1], st); }},
    {"memcpy2d_write", "Memcpy2D(write)",
     [](KernelState &, const TensorArg *a, size_t) { CheckWrite(a[0], a[1], a[2], a[3]); },
     [](KernelState &s, const TensorArg *a, size_t, aclrtStream st) { Write2D(s, a[0], a[1], a[2], a[3], a[4], st); }},
};

MSMC_REGISTER_OP_BODIES(kBodies);

}  // namespace

}  // namespace msmc
