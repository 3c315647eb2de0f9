// SwapBlocks and CopyBlocks: blocks of L caches moved by a block mapping.
// Definitions: configs/ops/blocks.yaml; primitives: ms_memcopy/ops/blocks.py. The bodies, and the
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

// The plan of one kernel instance's block calls, reused across launches.
struct BlocksState {
  BatchCopier batch;  // SwapBlocks
  DescCopier desc;    // CopyBlocks
  std::vector<BatchItem> items;
  std::vector<std::pair<int64_t, size_t>> destinations;  // (block, pair index) of a block mapping, sorted
};

const AttrSpec kAttrs[] = {{"buffer_id", false}};
MSMC_REGISTER_ATTRS(kAttrs);

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
      throw InputError(CacheName(l) + " has shape " + ShapeText(c) + " and dtype " + c.dtype + " but caches[0] has " +
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

// block_mapping ([n, 2] int64) on the host: its n pairs (host values from the entry layer, or device
// memory read back at launch, as the C++ tests pass it).
struct BlockMapping {
  const int64_t *pairs;  // 2 * n values
  size_t n;
};

// The mapping's pairs when its values are known (else pairs is nullptr), after checking its dtype and shape.
BlockMapping KnownMapping(const TensorArg &mapping) {
  if (std::strcmp(mapping.dtype, "int64") != 0) {
    throw InputError(std::string("block_mapping must be an int64 tensor, got ") + mapping.dtype);
  }
  if (mapping.ndim != 2 || mapping.shape[1] != 2) {
    throw InputError("block_mapping must have shape [n, 2], got " + ShapeText(mapping));
  }
  const size_t n = static_cast<size_t>(mapping.shape[0]);
  return BlockMapping{KnownInt64(mapping, "block_mapping", CheckedMul(size_t{2}, n, "block_mapping")), n};
}

struct BlockSide {
  const char *name;  // "device" or "host"
  size_t limit;      // blocks on that side
};

void CheckBlock(int64_t block, const BlockSide &side, size_t pair, int column) {
  if (block < 0 || static_cast<uint64_t>(block) >= side.limit) {
    throw InputError("block_mapping[" + std::to_string(pair) + "][" + std::to_string(column) +
                     "] = " + std::to_string(block) + ": " + side.name + " block out of range [0, " +
                     std::to_string(side.limit) + "); nothing was copied");
  }
}

// Checks every pair of the mapping: sources and destinations within their side, no destination twice
// and, when copying within a cache, no block both read and written.
void CheckMapping(BlocksState &s, const BlockMapping &mapping, const BlockSide &from, const BlockSide &to,
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
void PlanBlocks(BlocksState &s, size_t num_caches, const BlockMapping &mapping, size_t block_bytes,
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

// The host caches of a SwapBlocks call: L equal parts of a HostBuffer of `capacity` bytes, each of H
// blocks; InputError when H is 0.
size_t HostBlocks(size_t capacity, size_t num_caches, size_t block_bytes) {
  const size_t cache_block_bytes = CheckedMul(num_caches, block_bytes, "caches");
  const size_t host_blocks = capacity / cache_block_bytes;
  if (host_blocks == 0) {
    throw InputError("host_buffer", "its " + std::to_string(capacity) + " bytes hold no host block: each of the " +
                                        std::to_string(num_caches) + " host caches needs at least one block of " +
                                        std::to_string(block_bytes) + " bytes; give a HostBuffer of at least " +
                                        std::to_string(cache_block_bytes) +
                                        " bytes (num_caches x host blocks x block bytes)");
  }
  return host_blocks;
}

// The check of a block call: the caches, the mapping, and every pair when the mapping's values are
// known (capacity: the HostBuffer's bytes for SwapBlocks; 0 for CopyBlocks, which has none).
struct BlockPlan {
  BlockCaches caches;
  size_t host_blocks;
  BlockMapping mapping;
};

BlockPlan CheckBlocks(BlocksState &s, const TensorArg *caches, size_t num_caches, const TensorArg &block_mapping,
                      const size_t *capacity, bool to_host) {
  const BlockCaches c = CheckCaches(caches, num_caches);
  const size_t host_blocks = capacity != nullptr ? HostBlocks(*capacity, num_caches, c.block_bytes) : 0;
  const BlockMapping mapping = KnownMapping(block_mapping);
  if (mapping.pairs != nullptr) {
    const BlockSide device_side{"device", c.num_blocks};
    if (capacity == nullptr) {
      CheckMapping(s, mapping, device_side, device_side, true);
    } else {
      const BlockSide host_side{"host", host_blocks};
      CheckMapping(s, mapping, to_host ? device_side : host_side, to_host ? host_side : device_side, false);
    }
  }
  return BlockPlan{c, host_blocks, mapping};
}

void FinishBlocks(KernelState &s, size_t num_caches, size_t n, size_t block_bytes, const TensorArg &out,
                  aclrtStream stream) {
  s.host_results.assign(
      1, static_cast<int64_t>(CheckedMul(CheckedMul(num_caches, n, "block_mapping"), block_bytes, "block_mapping")));
  WriteResults(s, out, stream);
}

void SwapBlocks(KernelState &s, const TensorArg *caches, size_t num_caches, const TensorArg &block_mapping,
                const TensorArg &out, bool to_host, aclrtStream stream) {
  BlocksState &b = s.Family<BlocksState>();
  HostBufferLease buffer(s.Attr("buffer_id"), "host_buffer", stream);
  std::vector<int64_t> values;
  const size_t capacity = buffer.nbytes();
  const BlockPlan p = CheckBlocks(b, caches, num_caches, ValuesOnHost(block_mapping, &values), &capacity, to_host);
  const BlockBase device{caches, nullptr, 0};
  const BlockBase host{nullptr, buffer.data(), p.host_blocks * p.caches.block_bytes};
  PlanBlocks(b, num_caches, p.mapping, p.caches.block_bytes, to_host ? device : host, to_host ? host : device);
  b.batch.Run(b.items.data(), b.items.size(), to_host ? ACL_MEMCPY_DEVICE_TO_HOST : ACL_MEMCPY_HOST_TO_DEVICE, s.device,
              nullptr, stream);
  FinishBlocks(s, num_caches, p.mapping.n, p.caches.block_bytes, out, stream);
}

void CheckSwapBlocks(KernelState &s, const TensorArg *a, size_t n, bool to_host) {
  const size_t capacity = HostBufferBytes(s.Attr("buffer_id"), "host_buffer");
  CheckBlocks(s.Family<BlocksState>(), a, n - 2, a[n - 2], &capacity, to_host);
}

// CopyBlocks: block m[i][0] of caches[l] -> block m[i][1] of caches[l], in place.
void CopyBlocks(KernelState &s, const TensorArg *caches, size_t num_caches, const TensorArg &block_mapping,
                const TensorArg &out, aclrtStream stream) {
  BlocksState &b = s.Family<BlocksState>();
  std::vector<int64_t> values;
  const BlockPlan p = CheckBlocks(b, caches, num_caches, ValuesOnHost(block_mapping, &values), nullptr, false);
  const BlockBase device{caches, nullptr, 0};
  PlanBlocks(b, num_caches, p.mapping, p.caches.block_bytes, device, device);
  b.desc.CopyItems(b.items.data(), b.items.size(), stream);
  FinishBlocks(s, num_caches, p.mapping.n, p.caches.block_bytes, out, stream);
}

const OpBody kBodies[] = {
    {"swap_blocks_d2h", "SwapBlocks(d2h)",
     [](KernelState &s, const TensorArg *a, size_t n) { CheckSwapBlocks(s, a, n, true); },
     [](KernelState &s, const TensorArg *a, size_t n, aclrtStream st) {
       SwapBlocks(s, a, n - 2, a[n - 2], a[n - 1], true, st);
     }},
    {"swap_blocks_h2d", "SwapBlocks(h2d)",
     [](KernelState &s, const TensorArg *a, size_t n) { CheckSwapBlocks(s, a, n, false); },
     [](KernelState &s, const TensorArg *a, size_t n, aclrtStream st) {
       SwapBlocks(s, a, n - 2, a[n - 2], a[n - 1], false, st);
     }},
    {"copy_blocks", "CopyBlocks",
     [](KernelState &s, const TensorArg *a, size_t n) {
       CheckBlocks(s.Family<BlocksState>(), a, n - 2, a[n - 2], nullptr, false);
     },
     [](KernelState &s, const TensorArg *a, size_t n, aclrtStream st) {
       CopyBlocks(s, a, n - 2, a[n - 2], a[n - 1], st);
     }},
};

MSMC_REGISTER_OP_BODIES(kBodies);

}  // namespace

}  // namespace msmc
