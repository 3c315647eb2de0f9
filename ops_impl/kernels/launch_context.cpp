#include "launch_context.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <mutex>
#include <string>

#include "kernel_error.h"
#include "op_bodies.h"
#ifdef MS_MEMCOPY_HOST_ACL
#include "acl_host/acl_host_ext.h"
#endif

namespace msmc {

int32_t HostTargetDevice() {
  static const int32_t device = [] {
    const char *text = std::getenv("DEVICE_ID");
    if (text == nullptr || *text == '\0') {
      return 0;
    }
    char *end = nullptr;
    errno = 0;
    const long value = std::strtol(text, &end, 10);
    if (errno != 0 || *end != '\0' || value < 0 || value > INT32_MAX) {
      return -1;
    }
    return static_cast<int32_t>(value);
  }();
  if (device < 0) {
    throw InputError("DEVICE_ID", std::string("is not a device id: \"") + std::getenv("DEVICE_ID") + "\"");
  }
  return device;
}

void EnsureDevice() {
  // Only success is remembered: a failed aclInit (a misspelt MS_MEMCOPY_SOC, say) is retried by the
  // next launch, so every launch reports why, and fixing the environment recovers the process.
  static std::atomic<bool> initialized{false};
  if (!initialized.load(std::memory_order_acquire)) {
    static std::mutex init_mutex;
    std::lock_guard<std::mutex> lock(init_mutex);
    if (!initialized.load(std::memory_order_relaxed)) {
      const aclError ret = aclInit(nullptr);
      CheckAcl(ret == ACL_ERROR_REPEAT_INITIALIZE ? ACL_SUCCESS : ret, "aclInit");
      initialized.store(true, std::memory_order_release);
    }
  }
  thread_local bool device_set = false;
  if (!device_set) {
    CheckAcl(aclrtSetDevice(HostTargetDevice()), "aclrtSetDevice");
    device_set = true;
  }
}

aclrtStream ThreadStream() {
  // Not destroyed at thread exit: MindSpore's runtime threads may end after the ACL runtime has
  // been torn down at process exit; the runtime releases its streams when the process ends.
  thread_local aclrtStream stream = nullptr;
  if (stream == nullptr) {
    EnsureDevice();
    CheckAcl(aclrtCreateStream(&stream), "aclrtCreateStream");
#ifdef MS_MEMCOPY_HOST_ACL
    // Every launch completes this stream before returning (CompleteLaunch), and the launching thread
    // runs the copies itself: waking the stream's own thread for each copy would only add a wake-up.
    CheckAcl(aclhostSetStreamDeferred(stream, 1), "aclhostSetStreamDeferred");
#endif
  }
  return stream;
}

DeviceMemoryScope::~DeviceMemoryScope() {
#ifdef MS_MEMCOPY_HOST_ACL
  if (!registered_.empty()) {
    (void)aclhostUnregisterDeviceMemoryBatch(registered_.data(), registered_.size());
  }
#endif
}

DeviceMemoryScope::DeviceMemoryScope(DeviceMemoryScope &&other) noexcept
    : ranges_(std::move(other.ranges_)), registered_(std::move(other.registered_)), sizes_(std::move(other.sizes_)) {
  other.ranges_.clear();
  other.registered_.clear();
  other.sizes_.clear();
}

void DeviceMemoryScope::Add(const void *ptr, size_t nbytes) {
  if (ptr != nullptr && nbytes > 0) {
    ranges_.emplace_back(static_cast<char *>(const_cast<void *>(ptr)), nbytes);
  }
}

void DeviceMemoryScope::Register() {
#ifdef MS_MEMCOPY_HOST_ACL
  std::sort(ranges_.begin(), ranges_.end());
  size_t merged = 0;
  for (size_t i = 0; i < ranges_.size(); ++i) {
    if (merged > 0) {
      auto &last = ranges_[merged - 1];
      char *last_end = last.first + last.second;
      if (ranges_[i].first <= last_end) {
        last.second = std::max(last_end, ranges_[i].first + ranges_[i].second) - last.first;
        continue;
      }
    }
    ranges_[merged++] = ranges_[i];
  }
  ranges_.resize(merged);
  // One call for all the ranges: one registry lock per launch, not one per tensor.
  registered_.resize(merged);
  sizes_.resize(merged);
  for (size_t i = 0; i < merged; ++i) {
    registered_[i] = ranges_[i].first;
    sizes_[i] = ranges_[i].second;
  }
  if (merged > 0) {
    const aclError ret = aclhostRegisterDeviceMemoryBatch(registered_.data(), sizes_.data(), merged);
    if (ret != ACL_SUCCESS) {
      registered_.clear();  // all or nothing: nothing is registered
      CheckAcl(ret, "aclhostRegisterDeviceMemoryBatch");
    }
  }
#endif
}

void Synchronize(aclrtStream stream) { CheckAcl(aclrtSynchronizeStream(stream), "aclrtSynchronizeStream"); }

bool EventCompleted(aclrtEvent event) {
  aclrtEventRecordedStatus status = ACL_EVENT_RECORDED_STATUS_NOT_READY;
  CheckAcl(aclrtQueryEventStatus(event, &status), "aclrtQueryEventStatus");
  return status == ACL_EVENT_RECORDED_STATUS_COMPLETE;
}

void SynchronizeEvent(aclrtEvent event) { CheckAcl(aclrtSynchronizeEvent(event), "aclrtSynchronizeEvent"); }

namespace {

// The end of a CPU-target launch (see RunOnHostTarget); built against CANN, where no CPU-target
// launch exists, a stream synchronization.
#ifdef MS_MEMCOPY_HOST_ACL
void CompleteLaunch(aclrtStream stream) { CheckAcl(aclhostCompleteStream(stream), "aclhostCompleteStream"); }

aclError CompleteLaunchNoThrow(aclrtStream stream) noexcept { return aclhostCompleteStream(stream); }
#else
void CompleteLaunch(aclrtStream stream) { Synchronize(stream); }

aclError CompleteLaunchNoThrow(aclrtStream stream) noexcept { return aclrtSynchronizeStream(stream); }
#endif

}  // namespace

void RegisterTensors(const TensorArg *args, size_t count, DeviceMemoryScope *memory) {
  memory->Reserve(count);
  for (size_t i = 0; i < count; ++i) {
    if (!args[i].host_values) {
      memory->Add(args[i].data, NumBytes(args[i], "tensor"));
    }
  }
  memory->Register();
}

namespace {

// The streams HoldUntilLaunchCompletes held during the CPU-target launch running on this thread.
thread_local std::vector<aclrtStream> *held_streams = nullptr;
// The device-memory declaration of that launch (TakeLaunchMemory).
thread_local DeviceMemoryScope *launch_memory = nullptr;

// Sets launch_memory for one launch.
class LaunchMemory {
 public:
  explicit LaunchMemory(DeviceMemoryScope *memory) : outer_(launch_memory) { launch_memory = memory; }
  ~LaunchMemory() { launch_memory = outer_; }
  LaunchMemory(const LaunchMemory &) = delete;
  LaunchMemory &operator=(const LaunchMemory &) = delete;

 private:
  DeviceMemoryScope *outer_;
};

// Collects the held streams for one launch and releases them when it ends, completed or failed.
class HeldStreams {
 public:
  HeldStreams() : outer_(held_streams) { held_streams = &streams_; }
  ~HeldStreams() {
    held_streams = outer_;
    for (aclrtStream stream : streams_) {
#ifdef MS_MEMCOPY_HOST_ACL
      (void)aclhostSetStreamDeferred(stream, 0);
#else
      (void)stream;
#endif
    }
  }
  HeldStreams(const HeldStreams &) = delete;
  HeldStreams &operator=(const HeldStreams &) = delete;

 private:
  std::vector<aclrtStream> *outer_;
  std::vector<aclrtStream> streams_;
};

}  // namespace

void HoldUntilLaunchCompletes(aclrtStream stream) {
#ifdef MS_MEMCOPY_HOST_ACL
  if (held_streams == nullptr || std::find(held_streams->begin(), held_streams->end(), stream) != held_streams->end()) {
    return;
  }
  held_streams->push_back(stream);
  CheckAcl(aclhostSetStreamDeferred(stream, 1), "aclhostSetStreamDeferred");
#else
  (void)stream;
#endif
}

std::unique_ptr<DeviceMemoryScope> TakeLaunchMemory() {
  if (launch_memory == nullptr) {
    return nullptr;
  }
  auto taken = std::make_unique<DeviceMemoryScope>(std::move(*launch_memory));
  launch_memory = nullptr;  // taken once: a second taker declares its own
  return taken;
}

void RunOnHostTarget(const OpBody &body, KernelState &state, const TensorArg *args, size_t count) {
  state.device = HostTargetDevice();
  aclrtStream stream = ThreadStream();
  DeviceMemoryScope memory;
  RegisterTensors(args, count, &memory);
  const LaunchMemory current(&memory);
  HeldStreams held;  // released when this returns or throws, after the launch's stream has completed
  try {
    body.run(state, args, count, stream);
  } catch (...) {
    (void)CompleteLaunchNoThrow(stream);  // drain what was enqueued before the tensors are unregistered
    throw;
  }
  CompleteLaunch(stream);
}

}  // namespace msmc
