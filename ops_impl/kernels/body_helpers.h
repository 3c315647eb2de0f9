// What the op bodies (bodies/<family>.cpp) share: the 2-D view of a tensor, reading int64 inputs
// (in a check and at launch), writing int64 results, and the range checks whose messages every family
// uses. Defined in op_bodies.cpp; internal to the kernels library.
#ifndef MS_MEMCOPY_KERNELS_BODY_HELPERS_H_
#define MS_MEMCOPY_KERNELS_BODY_HELPERS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "op_bodies.h"

namespace msmc {
namespace bodies {

// The 2-D view every primitive uses: rows = all leading dimensions, columns = the last one.
struct Matrix {
  size_t rows;
  size_t cols;
  size_t itemsize;
  size_t row_bytes() const { return cols * itemsize; }
};

Matrix AsMatrix(const TensorArg &t, const char *argument);

// An int64 input as a check reads it: checks its dtype and number of values and returns its host
// values, or nullptr when they are unknown (a graph input at compile time: data without host_values).
// Never reads device memory.
const int64_t *KnownInt64(const TensorArg &t, const char *argument, size_t expected);

// The launch side of an int64 input: t with its values on the host. The entries pass host values;
// device memory (as the C++ tests pass it) is read back into *storage first. A tensor of another dtype
// is returned unchanged, for the check to refuse.
TensorArg ValuesOnHost(const TensorArg &t, std::vector<int64_t> *storage);

// Writes host_results into an int64 output tensor, without waiting for the stream (nothing when the
// state discards its results; the output's size is checked either way).
void WriteResults(KernelState &s, const TensorArg &out, aclrtStream stream);

// Checks that [offset, offset + span) lies within a HostBuffer of `capacity` bytes; returns offset.
size_t CheckHostRange(int64_t offset, size_t span, size_t capacity, const std::string &argument,
                      const std::string &what);

// CheckHostRange for item i of a batch (offsets[i], tensor i), its names built only when it fails.
size_t CheckItemRange(int64_t offset, size_t span, size_t capacity, size_t i);

// Checks that a and b hold the same number of bytes (b is the output).
void CheckSameBytes(const TensorArg &a, const TensorArg &b, const char *argument);

// Checks that [start, start + extent) lies within `limit` (rows, columns or elements of a tensor).
size_t CheckRegion(int64_t start, size_t extent, size_t limit, const char *argument, const char *dimension);

}  // namespace bodies
}  // namespace msmc

#endif  // MS_MEMCOPY_KERNELS_BODY_HELPERS_H_
