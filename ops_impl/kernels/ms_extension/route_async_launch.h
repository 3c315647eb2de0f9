// AsyncLaunch (CPU target only): one eager launch submitted on a transfer stream of the caller's
// (KernelInstance.submit, ms_memcopy.nn.TransferQueue), which Python polls or waits for.
#ifndef MS_MEMCOPY_KERNELS_MS_EXTENSION_ROUTE_ASYNC_LAUNCH_H_
#define MS_MEMCOPY_KERNELS_MS_EXTENSION_ROUTE_ASYNC_LAUNCH_H_

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

// MindSpore's extension header first, in the form the build asked for: with CUSTOM_ASCEND_OP it
// needs CANN's headers, so the compile check of the Ascend branches (MSMC_ASCEND_BRANCHES) includes
// its CPU form and turns the project's own branches on after it (route_common.h).
#include "launch_context.h"
#include "ms_extension/api.h"
#include "route_common.h"
#include "route_eager_args.h"  // Tensors
#include "route_raise.h"

namespace msmc {
namespace route {

#if !MSMC_ASCEND
// One submitted launch on a transfer stream: queued in MindSpore's queue, then launched (its work
// queued on the stream, the event recorded after it) or failed. Until the event has completed it keeps
// the launch's tensors alive and declared as device memory.
class AsyncLaunch {
 public:
  AsyncLaunch(aclrtStream stream, aclrtEvent event, const char *label)
      : stream_(stream), event_(event), label_(label) {}
  AsyncLaunch(const AsyncLaunch &) = delete;
  AsyncLaunch &operator=(const AsyncLaunch &) = delete;
  ~AsyncLaunch() {
    std::lock_guard<std::mutex> lock(mu_);
    if (memory_ != nullptr) {
      (void)aclrtSynchronizeEvent(event_);  // never unregister memory a copy in flight uses
    }
  }

  // From MindSpore's device task; throws (with the op's label) after recording the failure.
  void Launch(const OpBody &body, KernelState &state, const std::vector<TensorArg> &args, Tensors keep) {
    try {
      auto memory = LaunchOnHostStream(body, state, args.data(), args.size(), stream_, event_);
      std::lock_guard<std::mutex> lock(mu_);
      memory_ = std::move(memory);
      keep_ = std::move(keep);
      state_ = kLaunched;
      cv_.notify_all();
    } catch (...) {
      try {
        Rethrow(label_);
      } catch (const std::exception &e) {
        Fail(e.what());
        throw;
      }
    }
  }

  void Fail(const std::string &what) {
    std::lock_guard<std::mutex> lock(mu_);
    if (state_ == kQueued) {
      state_ = kFailed;
      error_ = what;
      cv_.notify_all();
    }
  }

  // Without waiting: whether the work has completed (then the tensors are let go). Throws RuntimeError
  // with the launch's error when it failed.
  bool Done() {
    std::lock_guard<std::mutex> lock(mu_);
    if (state_ == kQueued) {
      return false;
    }
    ThrowIfFailed();
    if (memory_ == nullptr) {
      return true;
    }
    if (!EventCompleted(event_)) {
      return false;
    }
    ReleaseLocked();
    return true;
  }

  // Blocks (without the GIL) until the launch has been made and its work has completed.
  void Wait() {
    py::gil_scoped_release release;
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return state_ != kQueued; });
    ThrowIfFailed();
    if (memory_ != nullptr) {
      SynchronizeEvent(event_);
      ReleaseLocked();
    }
  }

 private:
  enum State { kQueued, kLaunched, kFailed };

  void ThrowIfFailed() const {
    if (state_ == kFailed) {
      throw std::runtime_error(error_);
    }
  }

  void ReleaseLocked() {
    memory_.reset();
    keep_.clear();
  }

  aclrtStream stream_;
  aclrtEvent event_;
  const char *label_;
  std::mutex mu_;
  std::condition_variable cv_;
  State state_ = kQueued;
  std::string error_;
  std::unique_ptr<DeviceMemoryScope> memory_;
  Tensors keep_;
};
#else
class AsyncLaunch;
#endif

}  // namespace route
}  // namespace msmc

#endif  // MS_MEMCOPY_KERNELS_MS_EXTENSION_ROUTE_ASYNC_LAUNCH_H_
