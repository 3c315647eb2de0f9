#include "copy_pool.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "acl_host/acl_host_ext.h"

namespace aclhost {
namespace {

constexpr std::chrono::microseconds kSpinTime{200};  // how long an idle pool thread or a waiting caller spins

size_t ConfiguredThreads() {
  const size_t threads = std::min(UsableCores(), CopyPool::kMaxThreads);
  const size_t wanted = CopyThreadsFromEnv();
  return wanted > 0 ? std::min(threads, wanted) : threads;
}

// Polls done() for at most kSpinTime; true when it became true.
template <typename Done>
bool SpinUntil(Done done) {
  const auto until = std::chrono::steady_clock::now() + kSpinTime;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= until) {
      return false;
    }
    std::this_thread::yield();
  }
  return true;
}

}  // namespace

size_t UsableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) {
      return static_cast<size_t>(n);
    }
  }
  const unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? n : 1;
}

size_t CopyThreadsFromEnv() {
  const char *value = std::getenv(ACLHOST_ENV_COPY_THREADS);
  if (value == nullptr || *value == '\0') {
    return 0;
  }
  char *end = nullptr;
  const unsigned long long wanted = std::strtoull(value, &end, 10);
  return end != value && *end == '\0' ? static_cast<size_t>(wanted) : 0;
}

CopyPool &CopyPool::Instance() {
  static CopyPool *const pool = new CopyPool(ConfiguredThreads());
  return *pool;
}

CopyPool::CopyPool(size_t threads) : helpers_(threads - 1) {
  for (size_t i = 0; i < helpers_; ++i) {
    std::thread(&CopyPool::WorkerLoop, this).detach();
  }
}

void CopyPool::Run(Job &job) {
  if (helpers_ > 0) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(&job);
      submitted_.fetch_add(1, std::memory_order_release);
    }
    work_ready_.notify_all();  // no system call when every worker is spinning
  }
  job.RunParts();
  if (helpers_ == 0) {
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = std::find(queue_.begin(), queue_.end(), &job);
    if (it != queue_.end()) {
      queue_.erase(it);
    }
  }
  // A helper's part is about as long as the caller's: spin a little before sleeping, since waking
  // a sleeping thread costs tens of microseconds on a virtual machine.
  if (SpinUntil([&job] { return job.workers.load(std::memory_order_acquire) == 0; })) {
    return;
  }
  std::unique_lock<std::mutex> lock(mutex_);
  job_done_.wait(lock, [&job] { return job.workers.load(std::memory_order_acquire) == 0; });
}

void CopyPool::WorkerLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (queue_.empty()) {
      // Just finished a part: spin a little before sleeping, so that back-to-back large copies
      // find this worker awake instead of paying a thread wake-up each.
      const uint64_t seen = submitted_.load(std::memory_order_acquire);
      lock.unlock();
      SpinUntil([this, seen] { return submitted_.load(std::memory_order_acquire) != seen; });
      lock.lock();
    }
    work_ready_.wait(lock, [this] { return !queue_.empty(); });
    Job *job = queue_.front();
    if (job->Exhausted()) {
      queue_.pop_front();
      continue;
    }
    job->workers.fetch_add(1, std::memory_order_relaxed);
    lock.unlock();
    job->RunParts();
    lock.lock();
    job->workers.fetch_sub(1, std::memory_order_release);
    if (!queue_.empty() && queue_.front() == job) {
      queue_.pop_front();  // every part is claimed
    }
    job_done_.notify_all();
  }
}

}  // namespace aclhost
