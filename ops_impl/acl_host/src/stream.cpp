// Stream worker: tasks run one at a time in submission order on a thread owned by the stream.
#include "stream.h"

#include <chrono>
#include <cstdint>
#include <exception>
#include <new>
#include <utility>

#include "acl/acl_rt.h"
#include "copy_engine.h"

namespace aclhost {
namespace {

aclError RunGuarded(StreamTask &task, std::string *message) noexcept
{
    try {
        return task.Run(message);
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

// The bytes the queued tasks copy (saturating).
size_t QueuedCopyBytes(const std::deque<std::unique_ptr<StreamTask>> &queue)
{
    size_t total = 0;
    for (const std::unique_ptr<StreamTask> &task : queue) {
        if (__builtin_add_overflow(total, task->CopiedBytes(), &total)) {
            return SIZE_MAX;
        }
    }
    return total;
}

}  // namespace

Stream::Stream(int32_t device, uint64_t context)
    : device_(device), context_(context), state_(std::make_shared<State>())
{
}

Stream::~Stream()
{
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

void Stream::Enqueue(std::unique_ptr<StreamTask> task)
{
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

void Stream::SetDeferred(bool deferred)
{
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

bool Stream::WaitIdle(int32_t timeout_ms)
{
    State &st = *state_;
    std::unique_lock<std::mutex> lock(st.mutex);
    if (st.worker_id == std::this_thread::get_id()) {
        return true;  // a task of this stream waits for it: everything before that task is done
    }
    const uint64_t target = st.submitted;
    const auto done = [&st, target] { return st.completed >= target; };
    if (timeout_ms < 0) {
        const CopyRunScope run(QueuedCopyBytes(st.queue));
        while (!done()) {
            if (!st.busy && !st.queue.empty() && st.queue.front()->RunsInWaiter()) {
                RunFront(st, lock);
                continue;
            }
            if (st.deferred && !st.busy && !st.queue.empty()) {
                st.work_ready.notify_one();  // a host function: the worker runs it
            }
            st.work_done.wait(lock);
        }
        return true;
    }
    if (st.deferred && !st.queue.empty()) {
        st.work_ready.notify_one();  // a timed wait or a poll lets the worker run the deferred tasks
    }
    if (timeout_ms == 0) {
        return done();
    }
    return st.work_done.wait_for(lock, std::chrono::milliseconds(timeout_ms), done);
}

bool Stream::TakeFailure(aclError *code, std::string *message)
{
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

void Stream::WorkerLoop(const std::shared_ptr<State> &state)
{
    State &st = *state;
    std::unique_lock<std::mutex> lock(st.mutex);
    for (;;) {
        st.work_ready.wait(lock,
                           [&st] { return (!st.queue.empty() && !st.busy) || (st.stopping && st.queue.empty()); });
        if (st.queue.empty()) {
            return;  // stopping, and every queued task has run
        }
        RunFront(st, lock);
    }
}

void Stream::RunFront(State &st, std::unique_lock<std::mutex> &lock)
{
    std::unique_ptr<StreamTask> task = std::move(st.queue.front());
    st.queue.pop_front();
    st.busy = true;
    lock.unlock();
    std::string message;
    const aclError code = RunGuarded(*task, &message);
    task.reset();  // staging buffers are released outside the lock
    lock.lock();
    st.busy = false;
    if (code != ACL_SUCCESS && st.failure_code == ACL_SUCCESS) {
        st.failure_code = code;
        st.failure_message.swap(message);
    }
    ++st.completed;
    st.work_done.notify_all();
    if (!st.queue.empty() && !st.deferred) {
        st.work_ready.notify_one();  // the next task may be the worker's (a waiter ran this one)
    }
}

}  // namespace aclhost
