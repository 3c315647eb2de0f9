#include "kernel_counters.h"

#include <atomic>

namespace msmc {
namespace {

std::atomic<uint64_t> g_graph_launches{0};
std::atomic<uint64_t> g_eager_launches{0};
std::atomic<uint64_t> g_held_value_reads{0};
std::atomic<uint64_t> g_memory_value_reads{0};
std::atomic<int64_t> g_live_events{0};
std::atomic<int64_t> g_live_pinned_bytes{0};
std::atomic<int64_t> g_live_descriptor_bytes{0};

std::atomic<int64_t> &CounterOf(OwnedResource resource) {
  switch (resource) {
    case OwnedResource::kEvents:
      return g_live_events;
    case OwnedResource::kPinnedBytes:
      return g_live_pinned_bytes;
    case OwnedResource::kDescriptorBytes:
      break;
  }
  return g_live_descriptor_bytes;
}

}  // namespace

void CountLaunch(LaunchEntry entry) noexcept {
  (entry == LaunchEntry::kGraph ? g_graph_launches : g_eager_launches).fetch_add(1, std::memory_order_relaxed);
}

void CountOwned(OwnedResource resource, int64_t delta) noexcept {
  CounterOf(resource).fetch_add(delta, std::memory_order_relaxed);
}

void CountValueRead(ValueSource source) noexcept {
  (source == ValueSource::kHeldOnHost ? g_held_value_reads : g_memory_value_reads)
      .fetch_add(1, std::memory_order_relaxed);
}

}  // namespace msmc

MSMC_EXPORT uint64_t msmc_graph_launch_count(void) { return msmc::g_graph_launches.load(); }
MSMC_EXPORT uint64_t msmc_eager_launch_count(void) { return msmc::g_eager_launches.load(); }
MSMC_EXPORT uint64_t msmc_graph_held_value_reads(void) { return msmc::g_held_value_reads.load(); }
MSMC_EXPORT uint64_t msmc_graph_memory_value_reads(void) { return msmc::g_memory_value_reads.load(); }
MSMC_EXPORT int64_t msmc_live_kernel_events(void) { return msmc::g_live_events.load(); }
MSMC_EXPORT int64_t msmc_live_kernel_pinned_bytes(void) { return msmc::g_live_pinned_bytes.load(); }
MSMC_EXPORT int64_t msmc_live_kernel_descriptor_bytes(void) { return msmc::g_live_descriptor_bytes.load(); }
