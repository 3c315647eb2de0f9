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
  {
    std::lock_guard<std::mutex> lock(mutex_);
    generation = ++recorded_;
    stream_ = stream;
  }
  std::shared_ptr<Event> self = shared_from_this();
  stream->Enqueue(std::make_unique<EventTask>([self, generation] { self->Reached(generation); }));
}

void Event::Reached(uint64_t generation) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (generation > reached_) {
    reached_ = generation;
  }
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
