// The kernels' event-guarded slots (ops_impl/kernels/event_slots.h): descriptor sets and staged results
// are reused across launches without waiting for the stream, and a slot is never rewritten while a
// queued copy still reads it. The stream is held busy by a host function, so every launch below is
// queued ahead of the stream: the first ring's worth of launches must not wait (aclhostGetHostWaitCount
// unchanged), the next one must wait for the oldest slot's event (one wait), and every copy must read
// the data its own launch wrote into its slot. A ring holds one event (and, for staged results, one
// pinned block) per slot however many launches it serves, and gives them back when it is destroyed
// (aclhostGetLiveResourceCounts).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "../cpp/check.h"
#include "acl/acl.h"
#include "acl_host/acl_host_ext.h"
#include "copy_launch.h"
#include "event_slots.h"

namespace {

using test::Expect;
using test::Require;

// Holds a stream until Release(): a host function that blocks its worker.
class Hold {
 public:
  explicit Hold(aclrtStream stream) {
    Require(aclhostLaunchHostFunc(stream, &Hold::Block, this), "aclhostLaunchHostFunc");
  }
  // Releases the stream from another thread after a delay (a launch may be waiting on this thread).
  std::thread ReleaseLater() {
    return std::thread([this] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      open_.store(true);
    });
  }

 private:
  static void Block(void *self) {
    while (!static_cast<Hold *>(self)->open_.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  std::atomic<bool> open_{false};
};

struct Live {
  uint64_t events = 0;
  uint64_t pinned = 0;
  bool operator==(const Live &other) const { return events == other.events && pinned == other.pinned; }
};

Live LiveNow() {
  Live live;
  Require(aclhostGetLiveResourceCounts(&live.events, &live.pinned), "aclhostGetLiveResourceCounts");
  return live;
}

void *DeviceAlloc(size_t n) {
  void *p = nullptr;
  Require(aclrtMalloc(&p, n, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
  return p;
}

std::vector<int64_t> Download(const void *dev, size_t count) {
  std::vector<int64_t> out(count);
  Require(aclrtMemcpy(out.data(), count * sizeof(int64_t), dev, count * sizeof(int64_t), ACL_MEMCPY_DEVICE_TO_HOST),
          "aclrtMemcpy");
  return out;
}

// launch(i) for i in [0, launches) on a held stream: a ring of `slots` launches queues without a host wait,
// the launch after it waits once (for the oldest slot); the stream then goes on and is synchronized.
template <typename Launch>
void ExpectOneWaitPastTheRing(aclrtStream stream, size_t slots, size_t launches, const std::string &what,
                              Launch launch) {
  Hold hold(stream);
  const uint64_t before = test::HostWaits();
  std::thread releaser;
  for (size_t i = 0; i < launches; ++i) {
    if (i == slots) {
      Expect(test::HostWaits() == before, "a ring of " + what + " queued without a wait");
      releaser = hold.ReleaseLater();
    }
    launch(i);
  }
  Expect(test::HostWaits() == before + 1, "the launch after a full ring of " + what + " waits once, for the oldest");
  releaser.join();
  Require(aclrtSynchronizeStream(stream), "aclrtSynchronizeStream");
}

void TestResultStagingRing(aclrtStream stream) {
  constexpr size_t kLaunches = msmc::ResultStaging::kSlots + 3;
  msmc::ResultStaging staging;
  std::vector<void *> outs;
  for (size_t i = 0; i < kLaunches; ++i) {
    outs.push_back(DeviceAlloc(2 * sizeof(int64_t)));
  }
  ExpectOneWaitPastTheRing(stream, msmc::ResultStaging::kSlots, kLaunches, "staged results", [&](size_t i) {
    const int64_t values[2] = {static_cast<int64_t>(100 + i), static_cast<int64_t>(-i)};
    staging.Write(values, 2, outs[i], stream);
  });
  const Live live = LiveNow();
  for (size_t i = 0; i < kLaunches; ++i) {  // another round of the same launches adds nothing
    const int64_t values[2] = {static_cast<int64_t>(100 + i), static_cast<int64_t>(-i)};
    staging.Write(values, 2, outs[i], stream);
  }
  Require(aclrtSynchronizeStream(stream), "aclrtSynchronizeStream");
  Expect(LiveNow() == live, "more staged results hold no more events or pinned blocks");
  for (size_t i = 0; i < kLaunches; ++i) {
    const std::vector<int64_t> got = Download(outs[i], 2);
    Expect(got[0] == static_cast<int64_t>(100 + i) && got[1] == -static_cast<int64_t>(i),
           "staged result " + std::to_string(i) + " holds its own launch's values");
    Require(aclrtFree(outs[i]), "aclrtFree");
  }
}

void TestDescriptorRing(aclrtStream stream) {
  constexpr size_t kLaunches = msmc::DescCopier::kSlots + 2;
  constexpr size_t kBytes = 4096;
  msmc::DescCopier copier;
  std::vector<void *> srcs, dsts;
  for (size_t i = 0; i < kLaunches; ++i) {
    std::vector<int64_t> pattern(kBytes / sizeof(int64_t), static_cast<int64_t>(7000 + i));
    srcs.push_back(DeviceAlloc(kBytes));
    dsts.push_back(DeviceAlloc(kBytes));
    Require(aclrtMemcpy(srcs[i], kBytes, pattern.data(), kBytes, ACL_MEMCPY_HOST_TO_DEVICE), "aclrtMemcpy");
  }
  ExpectOneWaitPastTheRing(stream, msmc::DescCopier::kSlots, kLaunches, "descriptor copies",
                           [&](size_t i) { copier.Copy(dsts[i], srcs[i], kBytes, stream); });
  for (size_t i = 0; i < kLaunches; ++i) {
    const std::vector<int64_t> got = Download(dsts[i], kBytes / sizeof(int64_t));
    bool same = true;
    for (int64_t v : got) {
      same = same && v == static_cast<int64_t>(7000 + i);
    }
    Expect(same, "descriptor copy " + std::to_string(i) + " copied its own source");
  }
  const Live live = LiveNow();
  for (size_t i = 0; i < kLaunches; ++i) {  // another round of the same copies adds nothing
    copier.Copy(dsts[i], srcs[i], kBytes, stream);
  }
  Require(aclrtSynchronizeStream(stream), "aclrtSynchronizeStream");
  Expect(LiveNow() == live, "more descriptor copies hold no more events");
  for (size_t i = 0; i < kLaunches; ++i) {
    Require(aclrtFree(srcs[i]), "aclrtFree");
    Require(aclrtFree(dsts[i]), "aclrtFree");
  }
}

}  // namespace

int main() {
  aclrtStream stream = test::StreamOnDevice0();
  const Live start = LiveNow();
  TestResultStagingRing(stream);
  Expect(LiveNow() == start, "a destroyed result ring gives its events and pinned blocks back");
  TestDescriptorRing(stream);
  Expect(LiveNow() == start, "a destroyed descriptor ring gives its events back");
  Require(aclrtDestroyStream(stream), "aclrtDestroyStream");
  Require(aclrtResetDevice(0), "aclrtResetDevice");
  return test::Finish();
}
