// The copy pool: worker threads (started once, at most one per usable core counting the caller) that
// run the parts of a split copy together with the calling thread.
#ifndef MS_MEMCOPY_ACL_HOST_COPY_POOL_H_
#define MS_MEMCOPY_ACL_HOST_COPY_POOL_H_

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>

namespace aclhost {

// Cores this process may run on (its affinity mask).
size_t UsableCores();

// MS_MEMCOPY_COPY_THREADS as a positive count, or 0 when it is unset, empty, 0 or malformed.
size_t CopyThreadsFromEnv();

// One split copy: `parts` parts, claimed by index by the caller and by pool workers.
class Job {
 public:
  explicit Job(size_t parts) : parts_(parts) {}
  virtual ~Job() = default;
  Job(const Job &) = delete;
  Job &operator=(const Job &) = delete;

  // Runs unclaimed parts until none is left.
  void RunParts() {
    for (size_t part = next_.fetch_add(1); part < parts_; part = next_.fetch_add(1)) {
      RunPart(part);
    }
  }
  bool Exhausted() const { return next_.load() >= parts_; }

  // Pool workers inside RunParts: changed under the pool's mutex, read without it by a caller that spins.
  std::atomic<size_t> workers{0};

 protected:
  virtual void RunPart(size_t part) = 0;

 private:
  const size_t parts_;
  std::atomic<size_t> next_{0};
};

class CopyPool {
 public:
  // The process's pool, started at the first call: one thread per usable core (at most kMaxThreads,
  // MS_MEMCOPY_COPY_THREADS lowers that), the caller included. Never destroyed: its threads wait for work
  // until the process ends (like the stream workers).
  static CopyPool &Instance();

  static constexpr size_t kMaxThreads = 8;

  size_t threads() const { return helpers_ + 1; }

  // Runs every part of job on the calling thread and on idle workers; returns when all are done.
  void Run(Job &job);

 private:
  explicit CopyPool(size_t threads);
  void WorkerLoop();

  const size_t helpers_;
  std::atomic<uint64_t> submitted_{0};  // jobs ever queued (lets a spinning worker see new work)
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable job_done_;
  std::deque<Job *> queue_;
};

}  // namespace aclhost

#endif  // MS_MEMCOPY_ACL_HOST_COPY_POOL_H_
