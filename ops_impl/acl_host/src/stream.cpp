// Stream worker: tasks run one at a time in submission order on a thread owned by the stream.
#include "stream.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <new>
#include <utility>
#include <vector>

#include "acl/acl_rt.h"
#include "copy_engine.h"
#include "order_check.h"

namespace aclhost {
namespace {

// Runs fn() and returns its code; an exception becomes a code and *message.
template <typename Fn>
aclError Guarded(Fn fn, std::string *message) noexcept {
  try {
    return fn();
  } catch (const std::bad_alloc &) {
    try {
      *message = "a stream task ran out of host memory";
    } catch (...) {
    }
    return ACL_ERROR_RT_MEMORY_ALLOCATION;
  } catch (const std::exception &e) {
    try {
      *message = std::string("a stream task failed: ") + e.what();
    } catch (...) {
    }
    return ACL_ERROR_RT_INTERNAL_ERROR;
  } catch (...) {
    return ACL_ERROR_RT_INTERNAL_ERROR;
  }
}

aclError RunGuarded(StreamTask &task, std::string *message) noexcept {
  return Guarded([&task, message] { return task.Run(message); }, message);
}

// One copy's destination, by the index of its copy.
struct Write {
  uintptr_t begin;
  uintptr_t end;
  size_t owner;
};

// Whether the copies can run in any order: no copy writes bytes that another copy reads (its source, or
// also_read[i]) or writes. `writes` is scratch space with room for every copy.
bool Independent(const std::vector<CopyItem> &copies, const std::vector<CopyItem> &also_read,
                 std::vector<Write> &writes) {
  writes.clear();
  for (size_t i = 0; i < copies.size(); ++i) {
    const uintptr_t dst = reinterpret_cast<uintptr_t>(copies[i].dst);
    if (copies[i].size > 0) {
      writes.push_back(Write{dst, dst + copies[i].size, i});
    }
  }
  std::sort(writes.begin(), writes.end(), [](const Write &a, const Write &b) { return a.begin < b.begin; });
  for (size_t k = 1; k < writes.size(); ++k) {
    if (writes[k].begin < writes[k - 1].end) {
      return false;
    }
  }
  // The writes are disjoint and sorted, so their ends are sorted too: walk back from the last write that
  // starts before the read's end while the writes still end after its beginning.
  const auto clashes = [&writes](const void *p, size_t size, size_t reader) {
    const uintptr_t begin = reinterpret_cast<uintptr_t>(p);
    const uintptr_t end = begin + size;
    auto it =
        std::lower_bound(writes.begin(), writes.end(), end, [](const Write &w, uintptr_t e) { return w.begin < e; });
    while (size > 0 && it != writes.begin()) {
      --it;
      if (it->end <= begin) {
        return false;
      }
      if (it->owner != reader) {
        return true;
      }
    }
    return false;
  };
  for (size_t i = 0; i < copies.size(); ++i) {
    if (clashes(copies[i].src, copies[i].size, i) || clashes(also_read[i].src, also_read[i].size, i)) {
      return false;
    }
  }
  return true;
}

// Runs tasks in order, each stretch of describable copies that do not depend on each other as one
// CopyItems call; returns the first failure (its message in *message).
aclError RunInOrder(std::vector<std::unique_ptr<StreamTask>> &tasks, std::string *message) noexcept {
  aclError first = ACL_SUCCESS;
  const auto note = [&first, message](aclError code, std::string &text) {
    if (code != ACL_SUCCESS && first == ACL_SUCCESS) {
      first = code;
      message->swap(text);
    }
  };
  std::vector<CopyItem> copies;
  std::vector<CopyItem> also_read;
  std::vector<Write> writes;
  std::string text;
  const aclError reserved = Guarded(
      [&] {
        copies.reserve(tasks.size());
        also_read.reserve(tasks.size());
        writes.reserve(tasks.size());
        return ACL_SUCCESS;
      },
      &text);
  size_t i = 0;
  while (i < tasks.size()) {
    copies.clear();
    also_read.clear();
    size_t j = i;
    CopyItem copy{};
    CopyItem read{};
    for (; reserved == ACL_SUCCESS && j < tasks.size() && tasks[j]->DescribeCopy(&copy, &read); ++j) {
      copies.push_back(copy);  // within the reserved room: no allocation
      also_read.push_back(read);
      read = CopyItem{};
    }
    if (j - i >= 2 && Independent(copies, also_read, writes)) {
      text.clear();
      note(Guarded(
               [&copies] {
                 CopyItems(copies.data(), copies.size());
                 return ACL_SUCCESS;
               },
               &text),
           text);
      i = j;
      continue;
    }
    for (const size_t stop = std::max(j, i + 1); i < stop; ++i) {  // one by one, each checked when it runs
      text.clear();
      note(RunGuarded(*tasks[i], &text), text);
    }
  }
  return first;
}

// The bytes the queued tasks copy (saturating).
size_t QueuedCopyBytes(const std::deque<std::unique_ptr<StreamTask>> &queue) {
  size_t total = 0;
  for (const std::unique_ptr<StreamTask> &task : queue) {
    if (__builtin_add_overflow(total, task->CopiedBytes(), &total)) {
      return SIZE_MAX;
    }
  }
  return total;
}

uint64_t NextSerial() {
  static std::atomic<uint64_t> next{0};
  return next.fetch_add(1, std::memory_order_relaxed) + 1;
}

}  // namespace

Stream::Stream(int32_t device, uint64_t context)
    : device_(device), context_(context), serial_(NextSerial()), state_(std::make_shared<State>()) {
  state_->serial = serial_;
}

Stream::~Stream() {
  ForgetOrderedStream(serial_);
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stopping = true;
  }
  state_->work_ready.notify_all();
  if (!worker_.joinable()) {
    return;
  }
  if (worker_.get_id() == std::this_thread::get_id()) {
    worker_.detach();  // the last reference dropped in a task on this worker: it finishes on its own
  } else {
    worker_.join();
  }
}

void Stream::Enqueue(std::unique_ptr<StreamTask> task) {
  State &st = *state_;
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    if (!worker_.joinable()) {
      worker_ = std::thread(&Stream::WorkerLoop, state_);
      st.worker_id = worker_.get_id();
    }
    st.queue.push_back(std::move(task));
    ++st.submitted;
    if (st.deferred) {
      return;  // a waiter runs it, or wakes the worker
    }
  }
  st.work_ready.notify_one();
}

void Stream::SetDeferred(bool deferred) {
  State &st = *state_;
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    st.deferred = deferred;
    if (deferred || st.queue.empty()) {
      return;
    }
  }
  st.work_ready.notify_one();  // tasks queued while deferred run in the background from now on
}

bool Stream::WaitIdle(int32_t timeout_ms) {
  State &st = *state_;
  std::unique_lock<std::mutex> lock(st.mutex);
  if (st.worker_id == std::this_thread::get_id()) {
    return true;  // a task of this stream waits for it: everything before that task is done
  }
  const uint64_t target = st.submitted;
  const auto done = [&st, target] { return st.completed >= target; };
  if (timeout_ms < 0) {
    const size_t queued_bytes = QueuedCopyBytes(st.queue);
    const CopyRunScope run(queued_bytes);
    bool together = queued_bytes >= kParallelMinBytes;  // the first run of copies, once (no rescans)
    while (!done()) {
      if (!st.busy && !st.queue.empty() && st.queue.front()->RunsInWaiter()) {
        if (!together || !RunFrontCopies(st, lock)) {
          RunFront(st, lock);
        }
        together = false;
        continue;
      }
      if (st.deferred && !st.busy && !st.queue.empty()) {
        HandToWorker(st, target);  // a host function: the worker runs it
      }
      st.work_done.wait(lock);
    }
    return true;
  }
  if (st.deferred && !st.queue.empty()) {
    HandToWorker(st, target);  // a timed wait or a poll lets the worker run the deferred tasks
  }
  if (timeout_ms == 0) {
    return done();
  }
  return st.work_done.wait_for(lock, std::chrono::milliseconds(timeout_ms), done);
}

bool Stream::TakeFailure(aclError *code, std::string *message) {
  State &st = *state_;
  std::lock_guard<std::mutex> lock(st.mutex);
  if (st.failure_code == ACL_SUCCESS) {
    return false;
  }
  *code = st.failure_code;
  message->swap(st.failure_message);
  st.failure_message.clear();
  st.failure_code = ACL_SUCCESS;
  return true;
}

namespace {

// A stream's worker stands for the device: a host thread that queues work must not lose its core to
// it at every notify (a launch woke the worker, which preempted the launch on a busy core, a
// thread switch each way per call). SCHED_BATCH keeps the worker's fair share and drops its wakeup
// preemption; where the call fails the worker keeps the default policy.
void RunAsDeviceWorker() {
#ifdef SCHED_BATCH
  const sched_param param{};
  (void)pthread_setschedparam(pthread_self(), SCHED_BATCH, &param);
#endif
}

}  // namespace

void Stream::WorkerLoop(const std::shared_ptr<State> &state) {
  State &st = *state;
  RunAsDeviceWorker();
  SetOrderWorkerStream(st.serial);  // host functions run here, in the stream's order
  std::unique_lock<std::mutex> lock(st.mutex);
  for (;;) {
    st.work_ready.wait(lock, [&st] { return WorkerMayRunFront(st) || (st.stopping && st.queue.empty()); });
    if (st.queue.empty()) {
      return;  // stopping, and every queued task has run
    }
    RunFront(st, lock);
  }
}

void Stream::RunFront(State &st, std::unique_lock<std::mutex> &lock) {
  std::unique_ptr<StreamTask> task = std::move(st.queue.front());
  st.queue.pop_front();
  st.busy = true;
  lock.unlock();
  std::string message;
  const aclError code = RunGuarded(*task, &message);
  task.reset();  // staging buffers are released outside the lock
  lock.lock();
  Finish(st, code, &message, 1);
}

bool Stream::WorkerMayRunFront(const State &st) {
  // (a deferred stream's worker, on its creation or a spurious wake-up, runs nothing it was not handed)
  return !st.queue.empty() && !st.busy && (!st.deferred || st.stopping || st.completed < st.worker_may_run_until);
}

void Stream::HandToWorker(State &st, uint64_t until) {
  st.worker_may_run_until = std::max(st.worker_may_run_until, until);
  st.work_ready.notify_one();
}

void Stream::Finish(State &st, aclError code, std::string *message, uint64_t tasks) {
  st.busy = false;
  if (code != ACL_SUCCESS && st.failure_code == ACL_SUCCESS) {
    st.failure_code = code;
    st.failure_message.swap(*message);
  }
  st.completed += tasks;
  st.work_done.notify_all();
  if (!st.queue.empty() && !st.deferred) {
    st.work_ready.notify_one();  // the next task may be the worker's (a waiter ran these)
  }
}

bool Stream::RunFrontCopies(State &st, std::unique_lock<std::mutex> &lock) {
  size_t count = 0;
  size_t total = 0;
  for (const std::unique_ptr<StreamTask> &task : st.queue) {
    if (!task->RunsInWaiter()) {
      break;
    }
    ++count;
    if (__builtin_add_overflow(total, task->CopiedBytes(), &total)) {
      total = SIZE_MAX;
    }
  }
  if (count < 2 || total < kParallelMinBytes) {
    return false;
  }
  std::vector<std::unique_ptr<StreamTask>> tasks;
  tasks.reserve(count);  // may throw bad_alloc, like the queue's own push_back: nothing was taken yet
  for (size_t i = 0; i < count; ++i) {
    tasks.push_back(std::move(st.queue.front()));
    st.queue.pop_front();
  }
  st.busy = true;
  lock.unlock();
  std::string message;
  const aclError code = RunInOrder(tasks, &message);
  tasks.clear();  // staging buffers are released outside the lock
  lock.lock();
  Finish(st, code, &message, count);
  return true;
}

}  // namespace aclhost
