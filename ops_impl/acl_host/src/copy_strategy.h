// How the copy engine moves large copies on this machine: with the platform's std::memcpy or with
// streaming stores (line after line, or four pages at a time), on one thread or split across the copy pool. Decided
// once per process, at the first large copy, from a short calibration of each way over buffers twice the size
// of the last-level cache (a few tenths of a second), unless the environment fixes it:
//   MS_MEMCOPY_STREAMING_STORES  "0": memcpy, "1": streaming stores line after line, "interleaved": four
//                                pages at a time (where the build has them); anything else: calibrated
//   MS_MEMCOPY_COPY_THREADS      the most threads a large copy may use; set: no thread calibration
// Without a reason measured on this machine, the platform's memcpy on one thread is kept: streaming
// stores must be at least kStreamingMargin faster, a split kSplitMargin faster.
#ifndef MS_MEMCOPY_ACL_HOST_COPY_STRATEGY_H_
#define MS_MEMCOPY_ACL_HOST_COPY_STRATEGY_H_

#include <cstddef>
#include <string>

#include "streaming_copy.h"

namespace aclhost {

constexpr double kStreamingMargin = 1.10;
constexpr double kSplitMargin = 1.05;

struct CopyStrategy {
  StoreKind stores = StoreKind::kMemcpy;  // the stores of the pieces of a large whole
  size_t threads = 1;                     // threads a large copy is split across (1: not split)
  std::string description;                // the choice and the measurements behind it, for reports
};

// The last-level cache of this machine (bytes; 32 MiB where it cannot be read). A whole of copies at
// least this large counts as large: its bytes will not be read again from the cache.
size_t LargeWholeBytes();

// The process's strategy; the first call calibrates (only large copies ask for it).
const CopyStrategy &GetCopyStrategy();

}  // namespace aclhost

#endif  // MS_MEMCOPY_ACL_HOST_COPY_STRATEGY_H_
