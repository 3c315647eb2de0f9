// A stream of the host runtime: an in-order FIFO of tasks served by one worker thread.
#ifndef MS_MEMCOPY_ACL_HOST_STREAM_H_
#define MS_MEMCOPY_ACL_HOST_STREAM_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "acl/acl_base.h"
#include "copy_engine.h"
#include "order_ticket.h"

namespace aclhost {

// One unit of work on a stream. Run() executes on the stream's worker thread; a failure (a code other
// than ACL_SUCCESS with *message filled) is recorded on the stream and reported by the next
// aclrtSynchronizeStream on it.
class StreamTask {
 public:
  virtual ~StreamTask() = default;
  virtual aclError Run(std::string *message) = 0;
  // Whether a thread that waits for the stream without a timeout may run the task itself when the
  // worker is idle (copies: yes; host functions: no, they run on the worker thread).
  virtual bool RunsInWaiter() const { return true; }
  // About how many bytes the task copies (0 for a task that copies none): a waiting thread that runs
  // queued copies declares their total to the copy engine (CopyRunScope). A hint only.
  virtual size_t CopiedBytes() const { return 0; }
  // A task that is one copy may describe it ahead of running: true with *copy (host addresses) and, in
  // *also_read, the bytes it reads to find the copy ({NULL, 0} for none), when Run() would make exactly
  // that copy and succeed now; false otherwise (Run() then runs it). Changes nothing. A waiting thread
  // copies a stretch of such tasks together (CopyItems: split across the copy pool) when no copy of the
  // stretch writes bytes that another one reads or writes, so the order cannot show.
  virtual bool DescribeCopy(CopyItem * /*copy*/, CopyItem * /*also_read*/) const { return false; }

  // The strict ordering check's hold on the bytes the task accesses (order_check.h), released when the
  // task is destroyed; empty when the check is off.
  OrderTicket order_ticket;
};

class Stream {
 public:
  // `context`: the id of the context the stream belongs to (DeviceManager's context ids).
  Stream(int32_t device, uint64_t context);
  ~Stream();  // runs every queued task, then stops the worker
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;

  int32_t device() const { return device_; }
  uint64_t context() const { return context_; }
  // Unique for the life of the process (never reused, unlike the address): the ordering check's key.
  uint64_t serial() const { return serial_; }

  // Appends a task; the worker thread starts on the first call. The worker is woken unless the stream
  // is deferred.
  void Enqueue(std::unique_ptr<StreamTask> task);

  // Deferred launch (aclhostSetStreamDeferred): enqueueing does not wake the worker; the queued tasks
  // run when a thread waits for the stream (the waiter runs copies itself and wakes the worker for
  // the rest; a timed wait and the stream's destruction wake it too). Saves a thread wake-up per
  // task for callers that synchronize right after enqueueing.
  void SetDeferred(bool deferred);

  // Waits until every task submitted before this call has completed.
  // timeout_ms: -1 waits forever, 0 only polls, > 0 waits at most that many milliseconds.
  // On the stream's own worker (a host function) it returns true at once: every task before the
  // running one has completed, and the later ones cannot start until it returns.
  // Returns false when the tasks did not complete in time. A wait without a timeout runs the queued
  // tasks that allow it (StreamTask::RunsInWaiter) itself, in order, while the worker is idle: a
  // copy then costs no hand-off between threads, and the copies it runs count as one whole of
  // their total bytes (copy_engine.h: streaming stores for a large whole of small copies).
  bool WaitIdle(int32_t timeout_ms);

  // Moves out the first task failure recorded since the last call; false when there is none.
  bool TakeFailure(aclError *code, std::string *message);

 private:
  // Everything the worker thread touches. The worker holds its own reference, so the last reference
  // to the Stream may drop anywhere, its own worker included (a host function that destroys its
  // stream): the destructor then detaches the worker, which runs the queued tasks and ends.
  struct State {
    std::mutex mutex;
    std::condition_variable work_ready;
    std::condition_variable work_done;
    std::deque<std::unique_ptr<StreamTask>> queue;
    uint64_t submitted = 0;
    uint64_t completed = 0;
    bool stopping = false;
    bool busy = false;  // a task is running (on the worker or on a waiting thread)
    bool deferred = false;
    // While deferred, the worker runs queued tasks only up to this count of submitted tasks: the ones
    // a waiter handed it (a host function it reached, or a timed wait or poll).
    uint64_t worker_may_run_until = 0;
    aclError failure_code = 0;
    std::string failure_message;
    std::thread::id worker_id;
    uint64_t serial = 0;  // the stream's serial(), for the worker thread
  };

  static void WorkerLoop(const std::shared_ptr<State> &state);
  // Whether the worker may run the front task now (lock held): one is queued, none is running, and the
  // stream is not deferred, is stopping, or a waiter handed the worker the tasks up to the front one.
  static bool WorkerMayRunFront(const State &state);
  // Lets the worker of a deferred stream run the tasks submitted up to `until` (lock held), and wakes it.
  static void HandToWorker(State &state, uint64_t until);
  // Runs the front task with the lock released; requires a non-empty queue and !busy.
  static void RunFront(State &state, std::unique_lock<std::mutex> &lock);
  // Runs every queued task at the front that a waiter may run (up to the first other one) with the
  // lock released, stretches of independent copies together; requires !busy. Returns false, running
  // nothing, unless they are at least two and add up to kParallelMinBytes or more.
  static bool RunFrontCopies(State &state, std::unique_lock<std::mutex> &lock);
  // After running `tasks` tasks with the lock released (lock held again): records the first failure,
  // counts them completed and wakes the waiters.
  static void Finish(State &state, aclError code, std::string *message, uint64_t tasks);

  const int32_t device_;
  const uint64_t context_;
  const uint64_t serial_;
  const std::shared_ptr<State> state_;
  std::thread worker_;  // started under state_->mutex by the first Enqueue
};

}  // namespace aclhost

#endif  // MS_MEMCOPY_ACL_HOST_STREAM_H_
