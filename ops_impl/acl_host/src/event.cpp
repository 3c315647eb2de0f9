#include "event.h"

#include <functional>
#include <utility>

namespace aclhost {
namespace {

class EventTask : public StreamTask {
 public:
  EventTask(std::function<void()> reached) : reached_(std::move(reached)) {}
  aclError Run(std::string *) override {
    reached_();
    return ACL_SUCCESS;
  }

 private:
  std::function<void()> reached_;
};

}  // namespace

void Event::Record(const std::shared_ptr<Stream> &stream) {
  uint64_t generation = 0;
  OrderClock clock;
  CaptureOrder(*stream, &clock);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    generation = ++recorded_;
    stream_ = stream;
    order_at_record_.swap(clock);
  }
  std::shared_ptr<Event> self = shared_from_this();
  stream->Enqueue(std::make_unique<EventTask>([self, generation] { self->Reached(generation); }));
}

void Event::Reached(uint64_t generation) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (generation > reached_) {
      reached_ = generation;
    }
  }
  reached_changed_.notify_all();
}

void Event::EnqueueWait(Stream &waiter) {
  uint64_t generation = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (recorded_ == 0 || reached_ >= recorded_) {
      return;  // nothing to wait for
    }
    generation = recorded_;
  }
  std::shared_ptr<Event> self = shared_from_this();
  waiter.Enqueue(std::make_unique<EventTask>([self, generation] { self->WaitReached(generation); }));
}

void Event::WaitReached(uint64_t generation) {
  std::shared_ptr<Stream> recorder;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (reached_ >= generation) {
      return;
    }
    recorder = stream_.lock();
  }
  if (recorder != nullptr) {
    (void)recorder->WaitIdle(0);  // a deferred recording stream runs its tasks only when someone waits
  }
  std::unique_lock<std::mutex> lock(mutex_);
  reached_changed_.wait(lock, [this, generation] { return reached_ >= generation; });
}

OrderClock Event::OrderAtRecord() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return order_at_record_;
}

bool Event::Complete() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return recorded_ > 0 && reached_ >= recorded_;
}

bool Event::Wait() {
  std::shared_ptr<Stream> stream;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (recorded_ == 0 || reached_ >= recorded_) {
      return false;
    }
    stream = stream_.lock();
  }
  if (stream != nullptr) {
    // The stream's tasks run in order: once those submitted so far have run, so has the record.
    (void)stream->WaitIdle(-1);
  }  // a destroyed stream ran every queued task, the record included
  return true;
}

EventTable &EventTable::Instance() {
  static EventTable *const table = new EventTable();  // never destroyed, as the stream table
  return *table;
}

aclrtEvent EventTable::Add(std::shared_ptr<Event> event) {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<aclrtEvent>(events_.Add(std::move(event)));
}

std::shared_ptr<Event> EventTable::Find(aclrtEvent handle) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_.Find(handle);
}

std::shared_ptr<Event> EventTable::Remove(aclrtEvent handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_.Remove(handle);
}

size_t EventTable::Count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_.entries().size();
}

}  // namespace aclhost
