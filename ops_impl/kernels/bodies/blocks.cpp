// SwapBlocks and CopyBlocks: blocks of L caches moved by a block mapping.
// Definitions: configs/ops/blocks.yaml; primitives: ms_memcopy/ops/blocks.py. The bodies, and the
// attributes they read, register themselves below (op_bodies.h) under the names of the definitions.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "body_helpers.h"
#include "host_buffers.h"
#include "kernel_error.h"
#include "op_bodies.h"

namespace msmc {

using namespace bodies;  // NOLINT(build/namespaces)

namespace {

// The host side of a SwapBlocks call: one HostBuffer, or the chunks of a HostChunks, each laid out
// alone. The mapping's host column names a slot of one device block: slot s is device block s % F of
// host block s / F (F = blocks_per_host_block). With b_l the block bytes of cache l, P_l = b_0 + ... +
// b_{l-1}, B = P_L and H = capacity / (F * B) host blocks in a chunk, slot s of cache l starts at byte
//   cache-major: H * F * P_l + s * b_l                      (host cache l: H * F slots of cache l)
//   block-major: (s / F) * F * B + F * P_l + (s % F) * b_l  (host block h: one range of F * B bytes)
// of its chunk, s counted from the chunk's first slot (chunk k's slots follow chunk k - 1's).
struct HostLayout {
  uint8_t *data;
  bool block_major;
  size_t per_host_block;  // F
  size_t host_blocks;     // H
  size_t total_block_bytes;
  size_t Slots() const { return host_blocks * per_host_block; }
  size_t Offset(size_t slot, size_t prefix, size_t block_bytes) const {
    const size_t f = per_host_block;
    return block_major ? (slot / f) * f * total_block_bytes + f * prefix + (slot % f) * block_bytes
                       : Slots() * prefix + slot * block_bytes;
  }
};

struct HostSide {
  std::vector<HostLayout> chunks;
  std::vector<size_t> first_slot;  // of each chunk
  size_t slots = 0;
  // The address of slot `slot` of the cache whose blocks start at P_l = prefix.
  uint8_t *At(size_t slot, size_t prefix, size_t block_bytes) const {
    const size_t k =
        static_cast<size_t>(std::upper_bound(first_slot.begin(), first_slot.end(), slot) - first_slot.begin()) - 1;
    return chunks[k].data + chunks[k].Offset(slot - first_slot[k], prefix, block_bytes);
  }
};

// The plan of one kernel instance's block calls, reused across launches.
struct BlocksState {
  BatchCopier batch;  // SwapBlocks
  DescCopier desc;    // CopyBlocks
  std::vector<BatchItem> items;
  std::vector<std::pair<int64_t, size_t>> destinations;  // (block, pair index) of a block mapping, sorted
  std::vector<size_t> block_bytes;                       // of each cache
  HostSide host;                                         // SwapBlocks
};

// host_layout: 0 cache-major, 1 block-major; blocks_per_host_block: device blocks per host block (SwapBlocks).
const AttrSpec kAttrs[] = {{"buffer_id", false}, {"host_layout", true}, {"blocks_per_host_block", true}};
MSMC_REGISTER_ATTRS(kAttrs);

std::string ShapeText(const TensorArg &t) {
  std::string text = "[";
  for (int d = 0; d < t.ndim; ++d) {
    text += (d > 0 ? ", " : "") + std::to_string(t.shape[d]);
  }
  return text + "]";
}

std::string CacheName(size_t l) { return "caches[" + std::to_string(l) + "]"; }

// The caches of one block call: [num_blocks, *block_shape_l] each, one num_blocks for all; each cache
// has its own block shape and dtype (its block bytes go to s.block_bytes).
struct BlockCaches {
  size_t num_blocks;
  size_t total_block_bytes;  // one block of every cache
  bool uniform;              // all caches have the same block bytes
};

BlockCaches CheckCaches(BlocksState &s, const TensorArg *caches, size_t count) {
  if (count == 0) {
    throw InputError("caches", "at least one cache is needed");
  }
  s.block_bytes.resize(count);
  size_t total = 0;
  for (size_t l = 0; l < count; ++l) {
    const TensorArg &c = caches[l];
    const std::string name = CacheName(l);
    if (c.ndim < 1) {
      throw InputError(name, "must have shape [num_blocks, *block_shape], got a scalar");
    }
    if (c.shape[0] != caches[0].shape[0]) {
      throw InputError(name + " has shape " + ShapeText(c) + " but caches[0] has " + ShapeText(caches[0]) +
                       "; all caches of one call have the same number of blocks (first dimension)");
    }
    NumBytes(c, name.c_str());  // the whole cache's size does not overflow, so no block offset does
    const size_t bytes = NumBytes(TensorArg{c.data, c.shape + 1, c.ndim - 1, c.dtype}, name.c_str());
    if (bytes == 0) {
      throw InputError(name, "a block of shape " + ShapeText(c) + " holds no bytes");
    }
    s.block_bytes[l] = bytes;
    total = CheckedAdd(total, bytes, "caches");
  }
  const bool uniform =
      std::all_of(s.block_bytes.begin(), s.block_bytes.end(), [&](size_t b) { return b == s.block_bytes[0]; });
  return BlockCaches{static_cast<size_t>(caches[0].shape[0]), total, uniform};
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

// The layout of host chunks of `capacities` bytes; InputError when together they hold no host block.
void PlanHost(const KernelState &k, const std::vector<size_t> &capacities, const BlockCaches &c,
              const std::vector<size_t> &bytes, HostSide *host) {
  const int64_t layout = k.Attr("host_layout");
  const int64_t per_host_block = k.Attr("blocks_per_host_block");
  if (layout != 0 && layout != 1) {
    throw InputError("host_layout", "must be 0 (cache_major) or 1 (block_major), got " + std::to_string(layout));
  }
  if (per_host_block < 1) {
    throw InputError("blocks_per_host_block", "must be >= 1, got " + std::to_string(per_host_block));
  }
  const size_t f = static_cast<size_t>(per_host_block);
  const size_t host_block_bytes = CheckedMul(f, c.total_block_bytes, "blocks_per_host_block");
  host->chunks.clear();
  host->first_slot.clear();
  host->slots = 0;
  size_t capacity = 0;
  for (const size_t chunk : capacities) {
    const size_t host_blocks = chunk / host_block_bytes;
    host->chunks.push_back(HostLayout{nullptr, layout == 1, f, host_blocks, c.total_block_bytes});
    host->first_slot.push_back(host->slots);
    host->slots += host_blocks * f;  // within the chunk's bytes: no overflow
    capacity += chunk;               // the chunks' sizes were added without overflow when registered
  }
  if (host->slots > 0) {
    return;
  }
  const std::string caches = std::to_string(bytes.size());
  if (c.uniform && f == 1) {
    throw InputError("host_buffer", "its " + std::to_string(capacity) + " bytes hold no host block: each of the " +
                                        caches + " host caches needs at least one block of " +
                                        std::to_string(bytes[0]) + " bytes; give a HostBuffer of at least " +
                                        std::to_string(host_block_bytes) +
                                        " bytes (num_caches x host blocks x block bytes)");
  }
  throw InputError("host_buffer", "its " + std::to_string(capacity) + " bytes hold no host block: a host block " +
                                      "holds " + std::to_string(f) + " block(s) of each of the " + caches +
                                      " caches; give a HostBuffer of at least " + std::to_string(host_block_bytes) +
                                      " bytes (host blocks x blocks_per_host_block x the caches' block bytes)");
}

// The check of a block call: the caches, the host layout (capacities: the bytes of the HostBuffer or
// of each host chunk for SwapBlocks, the layout going to *host; nullptr for CopyBlocks, which has
// none), the mapping, and every pair when the mapping's values are known.
struct BlockPlan {
  BlockCaches caches;
  BlockMapping mapping;
};

BlockPlan CheckBlocks(KernelState &k, const TensorArg *caches, size_t num_caches, const TensorArg &block_mapping,
                      const std::vector<size_t> *capacities, bool to_host, HostSide *host) {
  BlocksState &s = k.Family<BlocksState>();
  const BlockCaches c = CheckCaches(s, caches, num_caches);
  if (capacities != nullptr) {
    PlanHost(k, *capacities, c, s.block_bytes, host);
  }
  const BlockMapping mapping = KnownMapping(block_mapping);
  if (mapping.pairs != nullptr) {
    const BlockSide device_side{"device", c.num_blocks};
    if (capacities == nullptr) {
      CheckMapping(s, mapping, device_side, device_side, true);
    } else {
      const BlockSide host_side{"host", host->slots};
      CheckMapping(s, mapping, to_host ? device_side : host_side, to_host ? host_side : device_side, false);
    }
  }
  return BlockPlan{c, mapping};
}

// One item per (cache, pair): block m[i][0] of cache l -> block m[i][1] of cache l, both on the device
// (host nullptr) or one of them in the host layout (the destination when to_host, else the source).
void PlanBlocks(BlocksState &s, const TensorArg *caches, size_t num_caches, const BlockMapping &mapping,
                const HostSide *host, bool to_host) {
  const int64_t *m = mapping.pairs;
  const size_t n = mapping.n;
  s.items.resize(CheckedMul(num_caches, n, "block_mapping"));
  size_t prefix = 0;  // P_l
  for (size_t l = 0; l < num_caches; ++l) {
    const size_t b = s.block_bytes[l];
    char *device = static_cast<char *>(caches[l].data);
    for (size_t i = 0; i < n; ++i) {
      const auto from = static_cast<size_t>(m[2 * i]);
      const auto to = static_cast<size_t>(m[2 * i + 1]);
      char *src = device + from * b;
      char *dst = device + to * b;
      if (host != nullptr) {
        char *at = reinterpret_cast<char *>(host->At(to_host ? to : from, prefix, b));
        (to_host ? dst : src) = at;
      }
      s.items[l * n + i] = BatchItem{dst, src, b};
    }
    prefix += b;
  }
}

void FinishBlocks(KernelState &s, size_t n, size_t total_block_bytes, const TensorArg &out, aclrtStream stream) {
  s.host_results.assign(1, static_cast<int64_t>(CheckedMul(n, total_block_bytes, "block_mapping")));
  WriteResults(s, out, stream);
}

// The bytes of each chunk of the host side (a HostBuffer is one chunk).
std::vector<size_t> HostCapacities(const std::vector<int64_t> &chunks) {
  std::vector<size_t> capacities;
  capacities.reserve(chunks.size());
  for (const int64_t chunk : chunks) {
    capacities.push_back(HostBufferBytes(chunk, "host_buffer"));
  }
  return capacities;
}

// The bodies (OpBody's check and run): args are the caches, block_mapping and the output, in op order.
template <bool kToHost>
void CheckSwapBlocks(KernelState &s, const TensorArg *args, size_t count) {
  const std::vector<size_t> capacities = HostCapacities(HostBufferChunks(s.Attr("buffer_id"), "host_buffer"));
  CheckBlocks(s, args, count - 2, args[count - 2], &capacities, kToHost, &s.Family<BlocksState>().host);
}

// SwapBlocks: block m[i][0] of caches[l] -> host slot m[i][1] of host cache l (d2h), or back (h2d).
template <bool kToHost>
void SwapBlocks(KernelState &s, const TensorArg *args, size_t count, aclrtStream stream) {
  const size_t num_caches = count - 2;
  const std::vector<int64_t> chunks = HostBufferChunks(s.Attr("buffer_id"), "host_buffer");
  std::vector<std::unique_ptr<HostBufferLease>> leases;  // every chunk, held for the launch
  std::vector<size_t> capacities;
  for (const int64_t chunk : chunks) {
    leases.push_back(std::make_unique<HostBufferLease>(chunk, "host_buffer", stream));
    capacities.push_back(leases.back()->nbytes());
  }
  std::vector<int64_t> values;
  BlocksState &b = s.Family<BlocksState>();
  HostSide &host = b.host;
  const BlockPlan p =
      CheckBlocks(s, args, num_caches, ValuesOnHost(args[num_caches], &values), &capacities, kToHost, &host);
  for (size_t k = 0; k < leases.size(); ++k) {
    host.chunks[k].data = leases[k]->data();
  }
  PlanBlocks(b, args, num_caches, p.mapping, &host, kToHost);
  b.batch.Run(b.items.data(), b.items.size(), kToHost ? ACL_MEMCPY_DEVICE_TO_HOST : ACL_MEMCPY_HOST_TO_DEVICE, s.device,
              nullptr, stream);
  FinishBlocks(s, p.mapping.n, p.caches.total_block_bytes, args[count - 1], stream);
}

void CheckCopyBlocks(KernelState &s, const TensorArg *args, size_t count) {
  CheckBlocks(s, args, count - 2, args[count - 2], nullptr, false, nullptr);
}

// CopyBlocks: block m[i][0] of caches[l] -> block m[i][1] of caches[l], in place.
void CopyBlocks(KernelState &s, const TensorArg *args, size_t count, aclrtStream stream) {
  const size_t num_caches = count - 2;
  std::vector<int64_t> values;
  const BlockPlan p =
      CheckBlocks(s, args, num_caches, ValuesOnHost(args[num_caches], &values), nullptr, false, nullptr);
  BlocksState &b = s.Family<BlocksState>();
  PlanBlocks(b, args, num_caches, p.mapping, nullptr, false);
  b.desc.CopyItems(b.items.data(), b.items.size(), stream);
  FinishBlocks(s, p.mapping.n, p.caches.total_block_bytes, args[count - 1], stream);
}

const OpBody kBodies[] = {
    {"swap_blocks_d2h", "SwapBlocks(d2h)", CheckSwapBlocks<true>, SwapBlocks<true>},
    {"swap_blocks_h2d", "SwapBlocks(h2d)", CheckSwapBlocks<false>, SwapBlocks<false>},
    {"copy_blocks", "CopyBlocks", CheckCopyBlocks, CopyBlocks},
};

MSMC_REGISTER_OP_BODIES(kBodies);

}  // namespace

}  // namespace msmc
