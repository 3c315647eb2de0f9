#include "op_bodies.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "host_buffers.h"
#include "kernel_error.h"

namespace msmc {

size_t ItemSize(const char *dtype, const char *argument) {
  struct Entry {
    const char *name;
    size_t size;
  };
  static const Entry kSizes[] = {
      {"float16", 2}, {"bfloat16", 2}, {"float32", 4}, {"float64", 8},    {"int8", 1},       {"uint8", 1},
      {"int16", 2},   {"uint16", 2},   {"int32", 4},   {"uint32", 4},     {"int64", 8},      {"uint64", 8},
      {"bool", 1},    {"complex64", 8}, {"complex128", 16},
  };
  for (const Entry &e : kSizes) {
    if (std::strcmp(dtype, e.name) == 0) {
      return e.size;
    }
  }
  throw InputError(argument, std::string("unsupported dtype ") + dtype);
}

size_t NumElements(const TensorArg &t, const char *argument) {
  size_t n = 1;
  for (int d = 0; d < t.ndim; ++d) {
    if (t.shape[d] < 0) {
      throw InputError(argument, "has an unknown dimension at run time");
    }
    n = CheckedMul(n, static_cast<size_t>(t.shape[d]), argument);
  }
  return n;
}

size_t NumBytes(const TensorArg &t, const char *argument) {
  return CheckedMul(NumElements(t, argument), ItemSize(t.dtype, argument), argument);
}

namespace {

// The 2-D view every primitive uses: rows = all leading dimensions, columns = the last one.
struct Matrix {
  size_t rows;
  size_t cols;
  size_t itemsize;
  size_t row_bytes() const { return cols * itemsize; }
};

Matrix AsMatrix(const TensorArg &t, const char *argument) {
  const size_t itemsize = ItemSize(t.dtype, argument);
  const size_t numel = NumElements(t, argument);
  const size_t cols = t.ndim == 0 ? 1 : static_cast<size_t>(t.shape[t.ndim - 1]);
  const size_t rows = cols == 0 ? NumElements(TensorArg{t.data, t.shape, t.ndim - 1, t.dtype, false}, argument)
                                : numel / cols;
  return Matrix{rows, cols, itemsize};
}

// Copies an int64 input to the host (it is device memory on every target) and checks its length.
const int64_t *ReadInt64(KernelState &s, const TensorArg &t, const char *argument, size_t expected) {
  if (std::strcmp(t.dtype, "int64") != 0) {
    throw InputError(argument, std::string("must be an int64 tensor, got ") + t.dtype);
  }
  const size_t n = NumElements(t, argument);
  if (n != expected) {
    throw InputError(std::string(argument) + " must hold " + std::to_string(expected) + " value(s), got " +
                     std::to_string(n));
  }
  if (t.host_values) {
    return static_cast<const int64_t *>(t.data);
  }
  s.host_values.resize(n);
  if (n > 0) {
    CheckAcl(aclrtMemcpy(s.host_values.data(), n * sizeof(int64_t), t.data, n * sizeof(int64_t),
                         ACL_MEMCPY_DEVICE_TO_HOST),
             "aclrtMemcpy");
  }
  return s.host_values.data();
}

// Writes host_results into an int64 output tensor, without waiting for the stream.
void WriteResults(KernelState &s, const TensorArg &out, aclrtStream stream) {
  const size_t bytes = s.host_results.size() * sizeof(int64_t);
  if (NumBytes(out, "output") != bytes) {
    throw InputError("output", "has " + std::to_string(NumBytes(out, "output")) + " bytes, expected " +
                                   std::to_string(bytes));
  }
  s.results.Write(s.host_results.data(), s.host_results.size(), out.data, stream);
}

// Checks that [offset, offset + span) lies within a HostBuffer of `capacity` bytes.
size_t CheckHostRange(int64_t offset, size_t span, size_t capacity, const std::string &argument,
                      const std::string &what) {
  if (offset < 0) {
    throw InputError(argument + " is negative (" + std::to_string(offset) + ")");
  }
  const size_t begin = static_cast<size_t>(offset);
  if (begin > capacity || span > capacity - begin) {
    throw InputError(argument + " = " + std::to_string(offset) + ": " + what + " (" + std::to_string(span) +
                                   " bytes) would end at byte " + std::to_string(begin + span) +
                                   ", past the end of the HostBuffer (" + std::to_string(capacity) +
                                   " bytes); nothing was copied");
  }
  return begin;
}

// The check of CheckHostRange without its message, for per-item loops: the argument names are built
// only when an item fails.
inline bool HostRangeFits(int64_t offset, size_t span, size_t capacity) {
  return offset >= 0 && static_cast<size_t>(offset) <= capacity && span <= capacity - static_cast<size_t>(offset);
}

size_t CheckItemRange(int64_t offset, size_t span, size_t capacity, size_t i) {
  if (!HostRangeFits(offset, span, capacity)) {
    CheckHostRange(offset, span, capacity, "offsets[" + std::to_string(i) + "]", "tensor " + std::to_string(i));
  }
  return static_cast<size_t>(offset);
}

void CheckSameBytes(const TensorArg &a, const TensorArg &b, const char *argument) {
  const size_t na = NumBytes(a, argument);
  const size_t nb = NumBytes(b, "output");
  if (na != nb) {
    throw InputError(argument, "has " + std::to_string(na) + " bytes but the output has " + std::to_string(nb));
  }
}

size_t CheckRegion(int64_t start, size_t extent, size_t limit, const char *argument, const char *dimension) {
  if (start < 0 || static_cast<size_t>(start) > limit || extent > limit - static_cast<size_t>(start)) {
    throw InputError(std::string(argument) + " = " + std::to_string(start) + ": the region [" +
                     std::to_string(start) + ", " +
                                   std::to_string(start) + " + " + std::to_string(extent) + ") leaves the " +
                                   std::to_string(limit) + " " + dimension + " of the tensor; nothing was copied");
  }
  return static_cast<size_t>(start);
}

}  // namespace

void BatchD2H(KernelState &s, const TensorArg *tensors, size_t k, const TensorArg &offsets, const TensorArg &out,
              aclrtStream stream) {
  HostBufferLease buffer(s.buffer_id, "host_buffer", stream);
  const size_t given = NumElements(offsets, "offsets");
  if (given != k) {
    throw InputError("tensors", "got " + std::to_string(k) + " tensor(s) for " + std::to_string(given) +
                                    " offsets: MemcpyBatch(d2h) takes one tensor per offset");
  }
  const int64_t *offs = ReadInt64(s, offsets, "offsets", k);
  s.items.resize(k);
  s.host_results.resize(k);
  for (size_t i = 0; i < k; ++i) {
    const size_t n = NumBytes(tensors[i], "tensors");
    const size_t begin = CheckItemRange(offs[i], n, buffer.nbytes(), i);
    s.items[i] = BatchItem{buffer.data() + begin, tensors[i].data, n};
    s.host_results[i] = static_cast<int64_t>(n);
  }
  s.batch.Run(s.items.data(), k, ACL_MEMCPY_DEVICE_TO_HOST, s.device, "offsets", stream);
  WriteResults(s, out, stream);
}

void BatchH2D(KernelState &s, const TensorArg &offsets, const TensorArg *outputs, size_t k, aclrtStream stream) {
  HostBufferLease buffer(s.buffer_id, "host_buffer", stream);
  const int64_t *offs = ReadInt64(s, offsets, "offsets", k);
  s.items.resize(k);
  for (size_t i = 0; i < k; ++i) {
    const size_t n = NumBytes(outputs[i], "outputs");
    const size_t begin = CheckItemRange(offs[i], n, buffer.nbytes(), i);
    s.items[i] = BatchItem{outputs[i].data, buffer.data() + begin, n};
  }
  s.batch.Run(s.items.data(), k, ACL_MEMCPY_HOST_TO_DEVICE, s.device, nullptr, stream);
}

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

void DescCopy(KernelState &s, const TensorArg &x, const TensorArg &y, aclrtStream stream) {
  CheckSameBytes(x, y, "x");
  s.desc.Copy(y.data, x.data, NumBytes(x, "x"), stream);
}

void DescWindow(KernelState &s, const TensorArg &x, const TensorArg &start, const TensorArg &y, aclrtStream stream) {
  const size_t itemsize = ItemSize(x.dtype, "x");
  const size_t count = static_cast<size_t>(s.count);
  const size_t first = CheckRegion(ReadInt64(s, start, "start", 1)[0], count, NumElements(x, "x"), "start",
                                   "elements");
  if (NumBytes(y, "output") != count * itemsize) {
    throw InputError("output", "does not hold count elements");
  }
  s.desc.Copy(y.data, static_cast<const char *>(x.data) + first * itemsize, count * itemsize, stream);
}

void CondD2D(KernelState &, const TensorArg &x, const TensorArg &y, aclrtStream stream) {
  CheckSameBytes(x, y, "x");
  const size_t n = NumBytes(x, "x");
  CopyWithCondition(y.data, n, x.data, n, ACL_MEMCPY_DEVICE_TO_DEVICE, stream);
}

void CondD2H(KernelState &s, const TensorArg &x, const TensorArg &offset, const TensorArg &out, aclrtStream stream) {
  HostBufferLease buffer(s.buffer_id, "host_buffer", stream);
  const size_t n = NumBytes(x, "x");
  const size_t begin = CheckHostRange(ReadInt64(s, offset, "offset", 1)[0], n, buffer.nbytes(), "offset", "x");
  CopyWithCondition(buffer.data() + begin, buffer.nbytes() - begin, x.data, n, ACL_MEMCPY_DEVICE_TO_HOST, stream);
  s.host_results.assign(1, static_cast<int64_t>(n));
  WriteResults(s, out, stream);
}

void CondH2D(KernelState &s, const TensorArg &offset, const TensorArg &y, aclrtStream stream) {
  HostBufferLease buffer(s.buffer_id, "host_buffer", stream);
  const size_t n = NumBytes(y, "output");
  const size_t begin =
      CheckHostRange(ReadInt64(s, offset, "offset", 1)[0], n, buffer.nbytes(), "offset", "the output");
  CopyWithCondition(y.data, n, buffer.data() + begin, n, ACL_MEMCPY_HOST_TO_DEVICE, stream);
}

namespace {

std::string ShapeText(const TensorArg &t) {
  std::string text = "[";
  for (int d = 0; d < t.ndim; ++d) {
    text += (d > 0 ? ", " : "") + std::to_string(t.shape[d]);
  }
  return text + "]";
}

std::string CacheName(size_t l) { return "caches[" + std::to_string(l) + "]"; }

// The caches of one block call: the same shape [num_blocks, *block_shape] and dtype for all.
struct BlockCaches {
  size_t num_blocks;
  size_t block_bytes;
};

BlockCaches CheckCaches(const TensorArg *caches, size_t count) {
  if (count == 0) {
    throw InputError("caches", "at least one cache is needed");
  }
  const TensorArg &first = caches[0];
  if (first.ndim < 1) {
    throw InputError("caches[0]", "must have shape [num_blocks, *block_shape], got a scalar");
  }
  for (size_t l = 1; l < count; ++l) {
    const TensorArg &c = caches[l];
    const bool same_shape = c.ndim == first.ndim && std::equal(c.shape, c.shape + c.ndim, first.shape);
    if (!same_shape || std::strcmp(c.dtype, first.dtype) != 0) {
      throw InputError(CacheName(l), "has shape " + ShapeText(c) + " and dtype " + c.dtype + " but caches[0] has " +
                                         ShapeText(first) + " and " + first.dtype +
                                         "; all caches of one call have the same shape and dtype");
    }
  }
  NumBytes(first, "caches[0]");  // the whole cache's size does not overflow, so no block offset does
  const size_t num_blocks = static_cast<size_t>(first.shape[0]);
  const size_t block_bytes = NumBytes(TensorArg{first.data, first.shape + 1, first.ndim - 1, first.dtype}, "caches[0]");
  if (block_bytes == 0) {
    throw InputError("caches[0]", "a block of shape " + ShapeText(first) + " holds no bytes");
  }
  return BlockCaches{num_blocks, block_bytes};
}

// block_mapping ([n, 2] int64) on the host: its n pairs, read from wherever the entry layer put them
// (host values from the entry layer, or device memory read back, as the C++ tests pass it).
struct BlockMapping {
  const int64_t *pairs;  // 2 * n values
  size_t n;
};

BlockMapping ReadMapping(KernelState &s, const TensorArg &mapping) {
  if (std::strcmp(mapping.dtype, "int64") != 0) {
    throw InputError("block_mapping", std::string("must be an int64 tensor, got ") + mapping.dtype);
  }
  if (mapping.ndim != 2 || mapping.shape[1] != 2) {
    throw InputError("block_mapping", "must have shape [n, 2], got " + ShapeText(mapping));
  }
  const size_t n = static_cast<size_t>(mapping.shape[0]);
  return BlockMapping{ReadInt64(s, mapping, "block_mapping", CheckedMul(size_t{2}, n, "block_mapping")), n};
}

struct BlockSide {
  const char *name;  // "device" or "host"
  size_t limit;      // blocks on that side
};

void CheckBlock(int64_t block, const BlockSide &side, size_t pair, int column) {
  if (block < 0 || static_cast<uint64_t>(block) >= side.limit) {
    throw InputError("block_mapping[" + std::to_string(pair) + "][" + std::to_string(column) + "] = " +
                     std::to_string(block) + ": " + side.name + " block out of range [0, " +
                     std::to_string(side.limit) + "); nothing was copied");
  }
}

// Checks every pair of the mapping: sources and destinations within their side, no destination twice
// and, when copying within a cache, no block both read and written.
void CheckMapping(KernelState &s, const BlockMapping &mapping, const BlockSide &from, const BlockSide &to,
                  bool same_cache) {
  const int64_t *m = mapping.pairs;
  const size_t n = mapping.n;
  s.destinations.resize(n);
  for (size_t i = 0; i < n; ++i) {
    CheckBlock(m[2 * i], from, i, 0);
    CheckBlock(m[2 * i + 1], to, i, 1);
    s.destinations[i] = {m[2 * i + 1], i};
  }
  std::sort(s.destinations.begin(), s.destinations.end());
  for (size_t k = 1; k < n; ++k) {
    if (s.destinations[k].first == s.destinations[k - 1].first) {
      throw InputError("block_mapping", std::string(to.name) + " block " + std::to_string(s.destinations[k].first) +
                                            " is written twice (pairs " + std::to_string(s.destinations[k - 1].second) +
                                            " and " + std::to_string(s.destinations[k].second) +
                                            "); nothing was copied");
    }
  }
  if (!same_cache) {
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    const auto hit =
        std::lower_bound(s.destinations.begin(), s.destinations.end(), std::make_pair(m[2 * i], size_t{0}));
    if (hit != s.destinations.end() && hit->first == m[2 * i]) {
      throw InputError("block_mapping", "block " + std::to_string(m[2 * i]) + " is read by pair " + std::to_string(i) +
                                            " and written by pair " + std::to_string(hit->second) +
                                            " (copies run in no order); nothing was copied");
    }
  }
}

// Where the blocks of cache l start on one side: in caches[l], or in the l-th host cache of a HostBuffer.
struct BlockBase {
  const TensorArg *caches;  // NULL on the host side
  uint8_t *host;
  size_t host_cache_bytes;
  char *At(size_t l) const {
    return caches != nullptr ? static_cast<char *>(caches[l].data)
                             : reinterpret_cast<char *>(host) + l * host_cache_bytes;
  }
};

// One item per (cache, pair): block m[i][0] of `from` cache l -> block m[i][1] of `to` cache l.
void PlanBlocks(KernelState &s, size_t num_caches, const BlockMapping &mapping, size_t block_bytes,
                const BlockBase &from, const BlockBase &to) {
  const int64_t *m = mapping.pairs;
  const size_t n = mapping.n;
  s.items.resize(CheckedMul(num_caches, n, "block_mapping"));
  for (size_t l = 0; l < num_caches; ++l) {
    const char *src = from.At(l);
    char *dst = to.At(l);
    for (size_t i = 0; i < n; ++i) {
      s.items[l * n + i] = BatchItem{dst + static_cast<size_t>(m[2 * i + 1]) * block_bytes,
                                     src + static_cast<size_t>(m[2 * i]) * block_bytes, block_bytes};
    }
  }
}

// The host caches of a SwapBlocks call: L equal parts of the HostBuffer, each of H blocks.
size_t HostBlocks(const HostBufferLease &buffer, size_t num_caches, size_t block_bytes) {
  return buffer.nbytes() / CheckedMul(num_caches, block_bytes, "caches");
}

void FinishBlocks(KernelState &s, size_t num_caches, size_t n, size_t block_bytes, const TensorArg &out,
                  aclrtStream stream) {
  s.host_results.assign(1, static_cast<int64_t>(CheckedMul(CheckedMul(num_caches, n, "block_mapping"), block_bytes,
                                                           "block_mapping")));
  WriteResults(s, out, stream);
}

void SwapBlocks(KernelState &s, const TensorArg *caches, size_t num_caches, const TensorArg &block_mapping,
                const TensorArg &out, bool to_host, aclrtStream stream) {
  HostBufferLease buffer(s.buffer_id, "host_buffer", stream);
  const BlockCaches c = CheckCaches(caches, num_caches);
  const size_t host_blocks = HostBlocks(buffer, num_caches, c.block_bytes);
  const BlockMapping mapping = ReadMapping(s, block_mapping);
  const BlockSide device_side{"device", c.num_blocks};
  const BlockSide host_side{"host", host_blocks};
  const BlockBase device{caches, nullptr, 0};
  const BlockBase host{nullptr, buffer.data(), host_blocks * c.block_bytes};
  CheckMapping(s, mapping, to_host ? device_side : host_side, to_host ? host_side : device_side, false);
  PlanBlocks(s, num_caches, mapping, c.block_bytes, to_host ? device : host, to_host ? host : device);
  s.batch.Run(s.items.data(), s.items.size(), to_host ? ACL_MEMCPY_DEVICE_TO_HOST : ACL_MEMCPY_HOST_TO_DEVICE,
              s.device, nullptr, stream);
  FinishBlocks(s, num_caches, mapping.n, c.block_bytes, out, stream);
}

}  // namespace

void SwapBlocksD2H(KernelState &s, const TensorArg *caches, size_t num_caches, const TensorArg &block_mapping,
                   const TensorArg &out, aclrtStream stream) {
  SwapBlocks(s, caches, num_caches, block_mapping, out, true, stream);
}

void SwapBlocksH2D(KernelState &s, const TensorArg *caches, size_t num_caches, const TensorArg &block_mapping,
                   const TensorArg &out, aclrtStream stream) {
  SwapBlocks(s, caches, num_caches, block_mapping, out, false, stream);
}

void CopyBlocks(KernelState &s, const TensorArg *caches, size_t num_caches, const TensorArg &block_mapping,
                const TensorArg &out, aclrtStream stream) {
  const BlockCaches c = CheckCaches(caches, num_caches);
  const BlockMapping mapping = ReadMapping(s, block_mapping);
  CheckMapping(s, mapping, BlockSide{"device", c.num_blocks}, BlockSide{"device", c.num_blocks}, true);
  const BlockBase device{caches, nullptr, 0};
  PlanBlocks(s, num_caches, mapping, c.block_bytes, device, device);
  s.desc.CopyItems(s.items.data(), s.items.size(), stream);
  FinishBlocks(s, num_caches, mapping.n, c.block_bytes, out, stream);
}

// ---- the registry of bodies: one entry per op of configs/ops.yaml ------------------------------

namespace {

using Body = void (*)(KernelState &, const TensorArg *, size_t, aclrtStream);

const OpBody kOpBodies[] = {
    {"memcpy_batch_d2h", "MemcpyBatch(d2h)",
     [](KernelState &s, const TensorArg *a, size_t n, aclrtStream st) { BatchD2H(s, a, n - 2, a[n - 2], a[n - 1], st); }},
    {"memcpy_batch_h2d", "MemcpyBatch(h2d)",
     [](KernelState &s, const TensorArg *a, size_t n, aclrtStream st) { BatchH2D(s, a[0], a + 1, n - 1, st); }},
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
    {"memcpy_desc_copy", "MemcpyWithDesc",
     [](KernelState &s, const TensorArg *a, size_t, aclrtStream st) { DescCopy(s, a[0], a[1], st); }},
    {"memcpy_desc_window", "MemcpyWithDesc(window)",
     [](KernelState &s, const TensorArg *a, size_t, aclrtStream st) { DescWindow(s, a[0], a[1], a[2], st); }},
    {"memcpy_cond_d2d", "MemcpyWithCondition(d2d)",
     [](KernelState &s, const TensorArg *a, size_t, aclrtStream st) { CondD2D(s, a[0], a[1], st); }},
    {"memcpy_cond_d2h", "MemcpyWithCondition(d2h)",
     [](KernelState &s, const TensorArg *a, size_t, aclrtStream st) { CondD2H(s, a[0], a[1], a[2], st); }},
    {"memcpy_cond_h2d", "MemcpyWithCondition(h2d)",
     [](KernelState &s, const TensorArg *a, size_t, aclrtStream st) { CondH2D(s, a[0], a[1], st); }},
    {"memcpy2d_write", "Memcpy2D(write)",
     [](KernelState &s, const TensorArg *a, size_t, aclrtStream st) { Write2D(s, a[0], a[1], a[2], a[3], a[4], st); }},
    {"swap_blocks_d2h", "SwapBlocks(d2h)",
     [](KernelState &s, const TensorArg *a, size_t n, aclrtStream st) {
       SwapBlocksD2H(s, a, n - 2, a[n - 2], a[n - 1], st);
     }},
    {"swap_blocks_h2d", "SwapBlocks(h2d)",
     [](KernelState &s, const TensorArg *a, size_t n, aclrtStream st) {
       SwapBlocksH2D(s, a, n - 2, a[n - 2], a[n - 1], st);
     }},
    {"copy_blocks", "CopyBlocks",
     [](KernelState &s, const TensorArg *a, size_t n, aclrtStream st) { CopyBlocks(s, a, n - 2, a[n - 2], a[n - 1], st); }},
};

}  // namespace

const OpBody *FindOpBody(const char *op) {
  for (const OpBody &body : kOpBodies) {
    if (std::strcmp(body.op, op) == 0) {
      return &body;
    }
  }
  return nullptr;
}

namespace {

struct AttrField {
  const char *name;
  int64_t KernelState::*member;
  bool non_negative;
};

const AttrField kAttrFields[] = {{"buffer_id", &KernelState::buffer_id, false}, {"height", &KernelState::height, true},
                                 {"width", &KernelState::width, true},          {"pitch", &KernelState::pitch, true},
                                 {"count", &KernelState::count, true}};

}  // namespace

const char *const *AttrNames() {
  static const auto names = [] {
    std::vector<const char *> v;
    for (const AttrField &f : kAttrFields) {
      v.push_back(f.name);
    }
    v.push_back(nullptr);
    return v;
  }();
  return names.data();
}

void SetAttr(KernelState &s, const char *name, int64_t value) {
  for (const AttrField &f : kAttrFields) {
    if (std::strcmp(f.name, name) == 0) {
      if (f.non_negative && value < 0) {
        throw InputError(name, "must not be negative, got " + std::to_string(value));
      }
      s.*f.member = value;
      return;
    }
  }
  throw std::invalid_argument(std::string("attribute ") + name + " is not read by any op body (op_bodies.cpp)");
}

}  // namespace msmc
