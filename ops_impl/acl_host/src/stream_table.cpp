// Stream handle table and the stream lookups shared by every API that takes an aclrtStream.
#include "stream_table.h"

#include <algorithm>
#include <atomic>
#include <string>
#include <utility>

#include "device.h"
#include "error_state.h"
#include "order_check.h"

namespace aclhost {

StreamTable &StreamTable::Instance() {
  // Never destroyed: worker threads may still be idle at process exit.
  static StreamTable *const table = new StreamTable();
  return *table;
}

aclrtStream StreamTable::AddUserStream(std::shared_ptr<Stream> stream, size_t limit) {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t &count = streams_per_device_[stream->device()];
  if (count >= limit) {
    return nullptr;
  }
  ++count;
  return static_cast<aclrtStream>(user_streams_.Add(std::move(stream)));
}

std::shared_ptr<Stream> StreamTable::FindUserStream(aclrtStream handle) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return user_streams_.Find(handle);
}

std::shared_ptr<Stream> StreamTable::RemoveUserStream(aclrtStream handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::shared_ptr<Stream> stream = user_streams_.Remove(handle);
  if (stream != nullptr) {
    --streams_per_device_[stream->device()];
  }
  return stream;
}

void StreamTable::AddDefaultStream(const std::shared_ptr<Stream> &stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  default_streams_.push_back(stream);
  ++streams_per_device_[stream->device()];
}

void StreamTable::RemoveDefaultStream(const Stream *stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  // Erase one element at a time: the elements std::remove_if leaves past its result are moved-from
  // (null), so they cannot be read for their device.
  for (auto it = default_streams_.begin(); it != default_streams_.end();) {
    if (it->get() == stream) {
      --streams_per_device_[(*it)->device()];
      it = default_streams_.erase(it);
    } else {
      ++it;
    }
  }
}

std::vector<std::shared_ptr<Stream>> StreamTable::RemoveStreamsOfContext(uint64_t context) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::shared_ptr<Stream>> removed;
  auto &streams = user_streams_.entries();
  for (auto it = streams.begin(); it != streams.end();) {
    if (it->second->context() == context) {
      --streams_per_device_[it->second->device()];
      removed.push_back(std::move(it->second));
      it = streams.erase(it);
    } else {
      ++it;
    }
  }
  return removed;
}

std::vector<std::shared_ptr<Stream>> StreamTable::StreamsOfContext(uint64_t context) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::shared_ptr<Stream>> streams;
  for (const auto &entry : user_streams_.entries()) {
    if (entry.second->context() == context) {
      streams.push_back(entry.second);
    }
  }
  return streams;
}

std::vector<std::shared_ptr<Stream>> StreamTable::AllStreams() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::shared_ptr<Stream>> all(default_streams_);
  all.reserve(all.size() + user_streams_.entries().size());
  for (const auto &entry : user_streams_.entries()) {
    all.push_back(entry.second);
  }
  return all;
}

aclError LookupStreamHandle(const char *api, aclrtStream handle, std::shared_ptr<Stream> *out) {
  if (handle == nullptr) {
    out->reset();
    return ACL_SUCCESS;
  }
  *out = StreamTable::Instance().FindUserStream(handle);
  if (*out == nullptr) {
    return Fail(ACL_ERROR_RT_INVALID_HANDLE, api,
                "stream %p is not a live stream (never created by aclrtCreateStream, or already destroyed)", handle);
  }
  return ACL_SUCCESS;
}

aclError UseDefaultStreamIfEmpty(const char *api, std::shared_ptr<Stream> *out) {
  if (*out != nullptr) {
    return ACL_SUCCESS;
  }
  return DeviceManager::Instance().DefaultStream(api, out);
}

aclError UseCurrentContext(const char *api, std::shared_ptr<Stream> *stream) {
  int32_t device = -1;
  ACLHOST_RETURN_IF_ERROR(DeviceManager::Instance().CurrentDevice(api, &device));
  return UseDefaultStreamIfEmpty(api, stream);
}

aclError CheckStreamInCurrentContext(const char *api, const Stream &stream) {
  CurrentContextInfo context;
  ACLHOST_RETURN_IF_ERROR(DeviceManager::Instance().Current(api, &context));
  if (stream.context() != context.id) {
    return Fail(ACL_ERROR_RT_STREAM_CONTEXT, api,
                "the stream belongs to another context (on device %d) than the calling thread's current context "
                "(on device %d); use a stream created in the current context",
                static_cast<int>(stream.device()), static_cast<int>(context.device));
  }
  return ACL_SUCCESS;
}

aclError ResolveStream(const char *api, aclrtStream handle, std::shared_ptr<Stream> *out) {
  ACLHOST_RETURN_IF_ERROR(LookupStreamHandle(api, handle, out));
  return UseDefaultStreamIfEmpty(api, out);
}

namespace {

std::atomic<uint64_t> g_host_waits{0};

aclError WaitForStream(const char *api, Stream &stream, int32_t timeout_ms) {
  if (!stream.WaitIdle(timeout_ms)) {
    return Fail(ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, api, "the stream's tasks did not complete within timeout %d ms",
                static_cast<int>(timeout_ms));
  }
  RetireStreamObserved(stream);  // the host is ordered after everything the stream's clock holds
  aclError code = ACL_SUCCESS;
  std::string message;
  if (stream.TakeFailure(&code, &message)) {
    return Fail(code, api, "a task on the stream failed: %s", message.c_str());
  }
  return ACL_SUCCESS;
}

}  // namespace

void CountHostWait() { g_host_waits.fetch_add(1, std::memory_order_relaxed); }

uint64_t HostWaitCount() { return g_host_waits.load(std::memory_order_relaxed); }

aclError SynchronizeStream(const char *api, Stream &stream, int32_t timeout_ms) {
  CountHostWait();
  return WaitForStream(api, stream, timeout_ms);
}

aclError CompleteStream(const char *api, Stream &stream) { return WaitForStream(api, stream, -1); }

void DrainAllStreams() {
  for (const std::shared_ptr<Stream> &stream : StreamTable::Instance().AllStreams()) {
    (void)stream->WaitIdle(-1);
  }
}

}  // namespace aclhost
