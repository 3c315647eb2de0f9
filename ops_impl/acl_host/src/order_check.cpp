// The strict ordering check's tracker (order_check.h): per stream, its clock and its queued accesses.
#include "order_check.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <unordered_map>

#include "acl/acl_rt.h"
#include "acl_host/acl_host_ext.h"
#include "error_state.h"
#include "stream.h"

namespace aclhost {
namespace {

// One past the last byte of the region (saturating).
uintptr_t End(const ByteRegion &r) {
  uintptr_t extent = 0;
  uintptr_t end = 0;
  if (__builtin_mul_overflow(r.rows - 1, r.pitch, &extent) || __builtin_add_overflow(extent, r.width, &extent) ||
      __builtin_add_overflow(r.begin, extent, &end)) {
    return UINTPTR_MAX;
  }
  return end;
}

// Whether a row of q meets the bytes [x, x_end).
bool RowMeets(const ByteRegion &q, uintptr_t x, uintptr_t x_end) {
  if (x_end <= q.begin) {
    return false;
  }
  const size_t last = std::min<size_t>(q.rows - 1, (x_end - 1 - q.begin) / q.pitch);
  const uintptr_t first_row_end = End(ByteRegion{q.begin, q.width, q.width, 1});
  const size_t first = x < first_row_end ? 0 : (x - first_row_end) / q.pitch + 1;
  return first <= last;
}

// Whether two regions share a byte (rows are compared, so the gaps between pitched rows are not bytes).
bool Overlap(ByteRegion p, ByteRegion q) {
  const uintptr_t p_end = End(p);
  const uintptr_t q_end = End(q);
  if (p.width == 0 || q.width == 0 || p_end <= q.begin || q_end <= p.begin) {
    return false;
  }
  if (p.rows == 1 && q.rows == 1) {
    return true;
  }
  if (p.rows > q.rows) {
    std::swap(p, q);
  }
  // The rows of p that reach into q's extent.
  const uintptr_t p_row_end = End(ByteRegion{p.begin, p.width, p.width, 1});
  const size_t first = q.begin < p_row_end ? 0 : (q.begin - p_row_end) / p.pitch + 1;
  const size_t last = std::min<size_t>(p.rows - 1, (q_end - 1 - p.begin) / p.pitch);
  for (size_t r = first; r <= last; ++r) {
    const uintptr_t x = p.begin + r * p.pitch;
    if (RowMeets(q, x, End(ByteRegion{x, p.width, p.width, 1}))) {
      return true;
    }
  }
  return false;
}

struct Span {
  ByteRegion region;
  uintptr_t end;
  size_t part;
};

// Regions sorted by their first byte, with the greatest end so far, so that a lookup walks back from
// the last region that starts before the query's end only while an earlier region can still reach it.
class SpanList {
 public:
  void Add(const ByteRegion &region, size_t part) {
    if (region.width > 0) {
      spans_.push_back(Span{region, End(region), part});
    }
  }
  void Seal() {
    std::sort(spans_.begin(), spans_.end(),
              [](const Span &a, const Span &b) { return a.region.begin < b.region.begin; });
    max_end_.resize(spans_.size());
    uintptr_t reach = 0;
    for (size_t k = 0; k < spans_.size(); ++k) {
      reach = std::max(reach, spans_[k].end);
      max_end_[k] = reach;
    }
  }
  const Span *Find(const ByteRegion &q) const {
    if (q.width == 0) {
      return nullptr;
    }
    const uintptr_t q_end = End(q);
    size_t k = static_cast<size_t>(std::lower_bound(spans_.begin(), spans_.end(), q_end,
                                                    [](const Span &s, uintptr_t end) { return s.region.begin < end; }) -
                                   spans_.begin());
    while (k > 0) {
      --k;
      if (max_end_[k] <= q.begin) {
        return nullptr;
      }
      if (spans_[k].end > q.begin && Overlap(spans_[k].region, q)) {
        return &spans_[k];
      }
    }
    return nullptr;
  }

 private:
  std::vector<Span> spans_;
  std::vector<uintptr_t> max_end_;
};

struct Access {
  const char *api = nullptr;
  bool several = false;  // more than one part: reports name the item
  SpanList reads;
  SpanList writes;
};

Access MakeAccess(const char *api, const AccessPart *parts, size_t count) {
  Access access;
  access.api = api;
  access.several = count > 1;
  for (size_t i = 0; i < count; ++i) {
    access.reads.Add(parts[i].read, i);
    access.writes.Add(parts[i].write, i);
  }
  access.reads.Seal();
  access.writes.Seal();
  return access;
}

thread_local uint64_t t_worker_stream = 0;  // SetOrderWorkerStream

struct StreamOrder {
  const void *handle = nullptr;
  int32_t device = -1;
  uint64_t launches = 0;
  OrderClock clock;                   // the other streams' launches ordered before this one's next launch
  std::map<uint64_t, Access> queued;  // by launch number
};

uint64_t ClockValue(const OrderClock &clock, uint64_t stream) {
  const auto it = std::lower_bound(clock.begin(), clock.end(), std::make_pair(stream, uint64_t{0}));
  return it != clock.end() && it->first == stream ? it->second : 0;
}

void Label(char *out, size_t size, const StreamOrder &s) {
  if (s.handle != nullptr) {
    (void)std::snprintf(out, size, "stream %p", s.handle);
  } else {
    (void)std::snprintf(out, size, "the default stream of device %d", static_cast<int>(s.device));
  }
}

void Describe(char *out, size_t size, const ByteRegion &r) {
  const unsigned long long begin = r.begin;
  const unsigned long long end = End(r);
  if (r.rows == 1) {
    (void)std::snprintf(out, size, "bytes [%#llx, %#llx)", begin, end);
  } else {
    (void)std::snprintf(out, size, "%zu rows of %zu bytes, pitch %zu, in [%#llx, %#llx)", r.rows, r.width, r.pitch,
                        begin, end);
  }
}

// A part of the new call that meets a queued access.
struct Clash {
  size_t part;
  bool writes;  // the new call's part writes (else reads) the bytes
  const Access *other;
  const StreamOrder *other_stream;
  const Span *other_span;
  bool other_writes;
};

class Tracker {
 public:
  static Tracker &Instance() {
    static Tracker *const tracker = new Tracker();  // never destroyed, like the stream table
    return *tracker;
  }

  aclError CheckLaunch(const char *api, StreamRef on, const AccessPart *parts, size_t count, OrderTicket *ticket,
                       size_t *racing_part) {
    Access access = MakeAccess(api, parts, count);
    std::lock_guard<std::mutex> lock(mutex_);
    StreamOrder &self = State(on.stream);
    self.handle = on.handle;
    self.device = on.stream.device();
    Clash clash{};
    if (FindClash(parts, count, on.stream.serial(), &self, &clash)) {
      return Report(api, &self, parts, count, clash, racing_part);
    }
    const uint64_t launch = ++self.launches;
    self.queued.emplace(launch, std::move(access));
    ++queued_;
    *ticket = OrderTicket(on.stream.serial(), launch);
    return ACL_SUCCESS;
  }

  aclError CheckHost(const char *api, const StreamRef *after, const AccessPart *parts, size_t count,
                     size_t *racing_part) {
    std::lock_guard<std::mutex> lock(mutex_);
    StreamOrder *drained = nullptr;
    uint64_t drained_serial = 0;
    if (after != nullptr) {
      drained = &State(after->stream);
      drained->handle = after->handle;
      drained->device = after->stream.device();
      drained_serial = after->stream.serial();
    } else if (t_worker_stream != 0) {  // a host function: in its stream's order
      const auto it = streams_.find(t_worker_stream);
      if (it != streams_.end()) {
        drained = &it->second;
        drained_serial = t_worker_stream;
      }
    }
    Clash clash{};
    if (FindClash(parts, count, drained_serial, drained, &clash)) {
      return Report(api, drained, parts, count, clash, racing_part);
    }
    return ACL_SUCCESS;
  }

  void Release(uint64_t stream, uint64_t launch) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = streams_.find(stream);
    if (it != streams_.end() && it->second.queued.erase(launch) > 0) {
      --queued_;
    }
  }

  void Capture(const Stream &stream, OrderClock *clock) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = streams_.find(stream.serial());
    clock->clear();
    if (it == streams_.end()) {
      return;
    }
    *clock = it->second.clock;
    const auto at = std::lower_bound(clock->begin(), clock->end(), std::make_pair(stream.serial(), uint64_t{0}));
    clock->insert(at, std::make_pair(stream.serial(), it->second.launches));
  }

  void Merge(const Stream &stream, const OrderClock &clock) {
    std::lock_guard<std::mutex> lock(mutex_);
    StreamOrder &self = State(stream);
    OrderClock merged;
    merged.reserve(self.clock.size() + clock.size());
    auto a = self.clock.begin();
    auto b = clock.begin();
    while (a != self.clock.end() || b != clock.end()) {
      if (b == clock.end() || (a != self.clock.end() && a->first < b->first)) {
        merged.push_back(*a++);
      } else if (a == self.clock.end() || b->first < a->first) {
        if (b->first != stream.serial() && streams_.count(b->first) > 0) {  // live streams only
          merged.push_back(*b);
        }
        ++b;
      } else {
        merged.emplace_back(a->first, std::max(a->second, b->second));
        ++a;
        ++b;
      }
    }
    self.clock.swap(merged);
  }

  void Retire(const OrderClock &clock) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto &entry : clock) {
      RetireUpTo(entry.first, entry.second);
    }
  }

  void RetireStream(const Stream &stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = streams_.find(stream.serial());
    if (it == streams_.end()) {
      return;
    }
    for (const auto &entry : it->second.clock) {
      RetireUpTo(entry.first, entry.second);
    }
    RetireUpTo(stream.serial(), it->second.launches);
  }

  void Forget(uint64_t serial) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = streams_.find(serial);
    if (it == streams_.end()) {
      return;
    }
    queued_ -= it->second.queued.size();
    streams_.erase(it);
    for (auto &entry : streams_) {
      OrderClock &clock = entry.second.clock;
      clock.erase(std::remove_if(clock.begin(), clock.end(), [serial](const auto &e) { return e.first == serial; }),
                  clock.end());
    }
  }

  void Counts(uint64_t *queued, uint64_t *races) {
    std::lock_guard<std::mutex> lock(mutex_);
    *queued = queued_;
    *races = races_;
  }

 private:
  Tracker() = default;

  StreamOrder &State(const Stream &stream) { return streams_[stream.serial()]; }

  void RetireUpTo(uint64_t serial, uint64_t launch) {
    const auto it = streams_.find(serial);
    if (it == streams_.end()) {
      return;
    }
    std::map<uint64_t, Access> &queued = it->second.queued;
    const auto stop = queued.upper_bound(launch);
    queued_ -= static_cast<uint64_t>(std::distance(queued.begin(), stop));
    queued.erase(queued.begin(), stop);
  }

  // The first part (in order) that meets a queued access of another stream than `self_serial` that
  // `self`'s clock does not order before it (every queued access when self is NULL: the host).
  bool FindClash(const AccessPart *parts, size_t count, uint64_t self_serial, const StreamOrder *self,
                 Clash *clash) const {
    for (size_t i = 0; i < count; ++i) {
      if (parts[i].read.width == 0 && parts[i].write.width == 0) {
        continue;  // a batch item outside the run being checked
      }
      for (const auto &entry : streams_) {
        if (self != nullptr && entry.first == self_serial) {
          continue;  // the stream orders its own accesses
        }
        const uint64_t known = self != nullptr ? ClockValue(self->clock, entry.first) : 0;
        const std::map<uint64_t, Access> &queued = entry.second.queued;
        for (auto it = queued.upper_bound(known); it != queued.end(); ++it) {
          const Access &other = it->second;
          const Span *hit = nullptr;
          bool other_writes = true;
          bool writes = true;
          if ((hit = other.writes.Find(parts[i].write)) == nullptr) {
            if ((hit = other.reads.Find(parts[i].write)) != nullptr) {
              other_writes = false;
            } else if ((hit = other.writes.Find(parts[i].read)) != nullptr) {
              writes = false;
            }
          }
          if (hit != nullptr) {
            *clash = Clash{i, writes, &other, &entry.second, hit, other_writes};
            return true;
          }
        }
      }
    }
    return false;
  }

  aclError Report(const char *api, const StreamOrder *self, const AccessPart *parts, size_t count, const Clash &clash,
                  size_t *racing_part) {
    ++races_;
    if (racing_part != nullptr) {
      *racing_part = clash.part;
    }
    char where[64] = "on the host";
    if (self != nullptr) {
      char label[48];
      Label(label, sizeof(label), *self);
      (void)std::snprintf(where, sizeof(where), "on %s", label);
    }
    char other_where[48];
    Label(other_where, sizeof(other_where), *clash.other_stream);
    char item[32] = "";
    char other_item[32] = "";
    if (count > 1) {
      (void)std::snprintf(item, sizeof(item), " (item %zu)", clash.part);
    }
    if (clash.other->several) {
      (void)std::snprintf(other_item, sizeof(other_item), " (item %zu)", clash.other_span->part);
    }
    char mine[96];
    char theirs[96];
    Describe(mine, sizeof(mine), clash.writes ? parts[clash.part].write : parts[clash.part].read);
    Describe(theirs, sizeof(theirs), clash.other_span->region);
    char remedy[192];
    if (self != nullptr) {
      (void)std::snprintf(remedy, sizeof(remedy),
                          "record an event on %s after %s and make this stream wait for it with "
                          "aclrtStreamWaitEvent, or synchronize first",
                          other_where, clash.other->api);
    } else {
      (void)std::snprintf(remedy, sizeof(remedy),
                          "synchronize %s, an event recorded on it after %s, or the device first", other_where,
                          clash.other->api);
    }
    return Fail(ACL_ERROR_RT_PARAM_INVALID, api,
                "ordering race: %s%s %s %s %s, which %s%s on %s %s %s and has not finished, with nothing ordering "
                "the two (%s)",
                api, item, where, clash.writes ? "writes" : "reads", mine, clash.other->api, other_item, other_where,
                clash.other_writes ? "writes" : "reads", theirs, remedy);
  }

  std::mutex mutex_;
  std::unordered_map<uint64_t, StreamOrder> streams_;
  uint64_t queued_ = 0;
  uint64_t races_ = 0;
};

bool ReadStrictOrderEnv() {
  const char *value = std::getenv(ACLHOST_ENV_STRICT_ORDER);
  return value != nullptr && std::strcmp(value, "1") == 0;
}

}  // namespace

bool OrderCheckOn() {
  static const bool on = ReadStrictOrderEnv();
  return on;
}

void SetOrderWorkerStream(uint64_t stream_serial) noexcept { t_worker_stream = stream_serial; }

void ReleaseOrderedAccess(uint64_t stream, uint64_t launch) noexcept { Tracker::Instance().Release(stream, launch); }

namespace order_detail {

aclError CheckLaunch(const char *api, StreamRef on, const AccessPart *parts, size_t count, OrderTicket *ticket,
                     size_t *racing_part) {
  return Tracker::Instance().CheckLaunch(api, on, parts, count, ticket, racing_part);
}

aclError CheckHost(const char *api, const StreamRef *after, const AccessPart *parts, size_t count,
                   size_t *racing_part) {
  return Tracker::Instance().CheckHost(api, after, parts, count, racing_part);
}

void Capture(const Stream &stream, OrderClock *clock) { Tracker::Instance().Capture(stream, clock); }
void Merge(const Stream &stream, const OrderClock &clock) { Tracker::Instance().Merge(stream, clock); }
void Retire(const OrderClock &clock) { Tracker::Instance().Retire(clock); }
void RetireStream(const Stream &stream) { Tracker::Instance().RetireStream(stream); }
void Forget(uint64_t stream_serial) { Tracker::Instance().Forget(stream_serial); }

}  // namespace order_detail

void OrderCheckCounts(uint64_t *queued_accesses, uint64_t *races) {
  if (!OrderCheckOn()) {
    *queued_accesses = 0;
    *races = 0;
    return;
  }
  Tracker::Instance().Counts(queued_accesses, races);
}

}  // namespace aclhost
