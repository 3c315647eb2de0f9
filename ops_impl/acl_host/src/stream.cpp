// Stream worker: tasks run one at a time in submission order on a thread owned by the stream.
#include "stream.h"

#include <chrono>
#include <exception>
#include <new>
#include <utility>

#include "acl/acl_rt.h"

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

}  // namespace

Stream::Stream(int32_t device, uint64_t context) : device_(device), context_(context) {}

Stream::~Stream()
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    work_ready_.notify_all();
    if (worker_.joinable()) {
        worker_.join();
    }
}

void Stream::Enqueue(std::unique_ptr<StreamTask> task)
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!worker_.joinable()) {
            worker_ = std::thread(&Stream::WorkerLoop, this);
        }
        queue_.push_back(std::move(task));
        ++submitted_;
        if (deferred_) {
            return;  // a waiter runs it, or wakes the worker
        }
    }
    work_ready_.notify_one();
}

void Stream::SetDeferred(bool deferred)
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        deferred_ = deferred;
        if (deferred || queue_.empty()) {
            return;
        }
    }
    work_ready_.notify_one();  // tasks queued while deferred run in the background from now on
}

bool Stream::WaitIdle(int32_t timeout_ms)
{
    std::unique_lock<std::mutex> lock(mutex_);
    const uint64_t target = submitted_;
    const auto done = [this, target] { return completed_ >= target; };
    if (timeout_ms < 0) {
        while (!done()) {
            if (!busy_ && !queue_.empty() && queue_.front()->RunsInWaiter()) {
                RunFront(lock);
                continue;
            }
            if (deferred_ && !busy_ && !queue_.empty()) {
                work_ready_.notify_one();  // a host function: the worker runs it
            }
            work_done_.wait(lock);
        }
        return true;
    }
    if (deferred_ && !queue_.empty()) {
        work_ready_.notify_one();  // a timed wait or a poll lets the worker run the deferred tasks
    }
    if (timeout_ms == 0) {
        return done();
    }
    return work_done_.wait_for(lock, std::chrono::milliseconds(timeout_ms), done);
}

bool Stream::TakeFailure(aclError *code, std::string *message)
{
    std::lock_guard<std::mutex> lock(mutex_);
    if (failure_code_ == ACL_SUCCESS) {
        return false;
    }
    *code = failure_code_;
    message->swap(failure_message_);
    failure_message_.clear();
    failure_code_ = ACL_SUCCESS;
    return true;
}

void Stream::WorkerLoop()
{
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
        work_ready_.wait(lock, [this] { return (!queue_.empty() && !busy_) || (stopping_ && queue_.empty()); });
        if (queue_.empty()) {
            return;  // stopping, and every queued task has run
        }
        RunFront(lock);
    }
}

void Stream::RunFront(std::unique_lock<std::mutex> &lock)
{
    std::unique_ptr<StreamTask> task = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    std::string message;
    const aclError code = RunGuarded(*task, &message);
    task.reset();  // staging buffers are released outside the lock
    lock.lock();
    busy_ = false;
    if (code != ACL_SUCCESS && failure_code_ == ACL_SUCCESS) {
        failure_code_ = code;
        failure_message_.swap(message);
    }
    ++completed_;
    work_done_.notify_all();
    if (!queue_.empty() && !deferred_) {
        work_ready_.notify_one();  // the next task may be the worker's (a waiter ran this one)
    }
}

}  // namespace aclhost
