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
    // Returns false when the tasks did not complete in time. A wait without a timeout runs the queued
    // tasks that allow it (StreamTask::RunsInWaiter) itself, in order, while the worker is idle: a
    // copy then costs no hand-off between threads.
    bool WaitIdle(int32_t timeout_ms);

    // Moves out the first task failure recorded since the last call; false when there is none.
    bool TakeFailure(aclError *code, std::string *message);

private:
    void WorkerLoop();
    // Runs the front task with the lock released; requires a non-empty queue and !busy_.
    void RunFront(std::unique_lock<std::mutex> &lock);

    const int32_t device_;
    const uint64_t context_;
    std::mutex mutex_;
    std::condition_variable work_ready_;
    std::condition_variable work_done_;
    std::deque<std::unique_ptr<StreamTask>> queue_;
    uint64_t submitted_ = 0;
    uint64_t completed_ = 0;
    bool stopping_ = false;
    bool busy_ = false;  // a task is running (on the worker or on a waiting thread)
    bool deferred_ = false;
    aclError failure_code_ = 0;
    std::string failure_message_;
    std::thread worker_;
};

}  // namespace aclhost

#endif  // MS_MEMCOPY_ACL_HOST_STREAM_H_
