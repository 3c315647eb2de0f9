#include "host_buffers.h"

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

#include "kernel_counters.h"
#include "kernel_error.h"

namespace msmc {
namespace {

// ACL_ERROR_RT_INVALID_HANDLE: what CANN returns for a destroyed stream (older headers lack the name).
constexpr aclError kInvalidStreamHandle = 107017;

// The copies a buffer has in flight are fenced per stream: an event recorded on the stream after the
// copies that touch the buffer were queued (re-recorded by each later launch on that stream). Waiting
// for the buffer waits for those events only, on whichever thread, never for a whole stream; a stream
// whose event could not be recorded is synchronized instead.
struct Entry {
  uint8_t *data = nullptr;
  size_t nbytes = 0;
  bool pinned = false;
  bool closing = false;
  int leases = 0;
  std::unordered_map<aclrtStream, aclrtEvent> fences;
  std::set<aclrtStream> unfenced;
  std::vector<int64_t> chunks;  // a pool of host chunks: their ids (the entry holds no memory itself)
};

// Records stream's fence of e (creating its event on first use); a stream whose event cannot be
// recorded joins the unfenced ones.
void Fence(Entry &e, aclrtStream stream) noexcept {
  aclrtEvent &event = e.fences[stream];
  if (event == nullptr) {
    if (aclrtCreateEvent(&event) == ACL_SUCCESS) {
      CountOwned(OwnedResource::kEvents, 1);
    } else {
      event = nullptr;
    }
  }
  if (event == nullptr || aclrtRecordEvent(event, stream) != ACL_SUCCESS) {
    e.unfenced.insert(stream);
  }
}

class HostBufferTable {
 public:
  int32_t Open(int64_t id, void *ptr, size_t nbytes, bool pinned) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto inserted = entries_.try_emplace(id);
    if (!inserted.second) {
      return -1;
    }
    Entry &e = inserted.first->second;
    e.data = static_cast<uint8_t *>(ptr);
    e.nbytes = nbytes;
    e.pinned = pinned;
    return 0;
  }

  int32_t OpenChunks(int64_t id, const int64_t *chunk_ids, size_t count) {
    std::lock_guard<std::mutex> lock(mu_);
    if (count == 0 || entries_.count(id) != 0) {
      return -1;
    }
    size_t total = 0;
    for (size_t k = 0; k < count; ++k) {
      const auto it = entries_.find(chunk_ids[k]);
      if (it == entries_.end() || it->second.closing || !it->second.chunks.empty() ||
          it->second.nbytes > SIZE_MAX - total) {
        return -1;
      }
      total += it->second.nbytes;
    }
    Entry &e = entries_[id];
    e.nbytes = total;
    e.chunks.assign(chunk_ids, chunk_ids + count);
    return 0;
  }

  int32_t Close(int64_t id) {
    std::unique_lock<std::mutex> lock(mu_);
    auto it = entries_.find(id);
    if (it == entries_.end()) {
      return -1;
    }
    it->second.closing = true;
    // Looked up again after every wake-up: an Open on another thread may rehash the map meanwhile.
    idle_.wait(lock, [&] { return entries_.at(id).leases == 0; });
    const int32_t ret = WaitLocked(lock, id);
    for (const auto &fence : entries_.at(id).fences) {
      if (fence.second != nullptr) {
        (void)aclrtDestroyEvent(fence.second);
        CountOwned(OwnedResource::kEvents, -1);
      }
    }
    entries_.erase(id);
    return ret;
  }

  int32_t Wait(int64_t id) {
    std::unique_lock<std::mutex> lock(mu_);
    if (entries_.find(id) == entries_.end()) {
      return -1;
    }
    return WaitLocked(lock, id);
  }

  int32_t NoteStream(int64_t id, aclrtStream stream) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(id);
    if (it == entries_.end()) {
      return -1;
    }
    Fence(it->second, stream);
    return 0;
  }

  struct Leased {
    uint8_t *data;
    size_t nbytes;
    bool pinned;
  };

  Leased Lease(int64_t id, const char *argument) {
    std::lock_guard<std::mutex> lock(mu_);
    const Entry &e = OpenEntry(id, argument);
    if (!e.chunks.empty()) {
      throw InputError(argument, "a HostChunks (a pool of several host chunks) is read by SwapBlocks only");
    }
    auto it = entries_.find(id);
    ++it->second.leases;
    return Leased{it->second.data, it->second.nbytes, it->second.pinned};
  }

  // The size of an open buffer, for a check that plans without copying (no lease is taken).
  size_t Bytes(int64_t id, const char *argument) {
    std::lock_guard<std::mutex> lock(mu_);
    return OpenEntry(id, argument).nbytes;
  }

  std::vector<int64_t> Chunks(int64_t id, const char *argument) {
    std::lock_guard<std::mutex> lock(mu_);
    const Entry &e = OpenEntry(id, argument);
    return e.chunks.empty() ? std::vector<int64_t>{id} : e.chunks;
  }

  // The end of a launch's lease: fences what the launch queued on stream (all of it, even when the
  // launch failed part way), then lets a waiting close go on.
  void Release(int64_t id, aclrtStream stream) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(id);
    if (it == entries_.end()) {
      return;
    }
    Fence(it->second, stream);
    if (--it->second.leases == 0) {
      idle_.notify_all();
    }
  }

 private:
  // The entry of an open buffer (mu_ held); InputError naming argument when it is unknown or closing.
  const Entry &OpenEntry(int64_t id, const char *argument) const {
    const auto it = entries_.find(id);
    if (it == entries_.end() || it->second.closing) {
      throw InputError(argument, "the HostBuffer is closed");
    }
    return it->second;
  }

  // Waits outside the lock: a copy in flight may need to lease another buffer. The events stay in the
  // entry (later launches re-record them; only Close destroys them, with no lease left).
  int32_t WaitLocked(std::unique_lock<std::mutex> &lock, int64_t id) {
    std::set<aclrtStream> streams;
    Entry &entry = entries_.at(id);
    streams.swap(entry.unfenced);
    std::vector<aclrtEvent> events;
    for (const auto &fence : entry.fences) {
      if (fence.second != nullptr && streams.count(fence.first) == 0) {
        events.push_back(fence.second);
      }
    }
    lock.unlock();
    int32_t ret = ACL_SUCCESS;
    for (aclrtEvent event : events) {
      const aclError r = aclrtSynchronizeEvent(event);
      if (r != ACL_SUCCESS && ret == ACL_SUCCESS) {
        ret = r;
      }
    }
    for (aclrtStream s : streams) {
      const aclError r = aclrtSynchronizeStream(s);
      // A stream destroyed since it ran a copy of this buffer has nothing left to wait for: destroying a
      // stream waits for its tasks. Its handle is now invalid, which is not an error of this buffer.
      if (r == ACL_ERROR_RT_PARAM_INVALID || r == kInvalidStreamHandle) {
        continue;
      }
      if (r != ACL_SUCCESS && ret == ACL_SUCCESS) {
        ret = r;
      }
    }
    lock.lock();
    return ret;
  }

  std::mutex mu_;
  std::condition_variable idle_;
  std::unordered_map<int64_t, Entry> entries_;
};

HostBufferTable &Table() {
  // Never destroyed: kernels may still run while the process exits.
  static HostBufferTable *table = new HostBufferTable();
  return *table;
}

}  // namespace

HostBufferLease::HostBufferLease(int64_t id, const char *argument, aclrtStream stream) : id_(id), stream_(stream) {
  const auto e = Table().Lease(id, argument);
  data_ = e.data;
  nbytes_ = e.nbytes;
  pinned_ = e.pinned;
}

HostBufferLease::~HostBufferLease() { Table().Release(id_, stream_); }

size_t HostBufferBytes(int64_t id, const char *argument) { return Table().Bytes(id, argument); }

std::vector<int64_t> HostBufferChunks(int64_t id, const char *argument) { return Table().Chunks(id, argument); }

}  // namespace msmc

int32_t msmc_hostbuffer_open(int64_t id, void *ptr, uint64_t nbytes, int32_t pinned) {
  if (id <= 0 || (ptr == nullptr && nbytes > 0)) {
    return -1;
  }
  try {
    return msmc::Table().Open(id, ptr, nbytes, pinned != 0);
  } catch (...) {
    return -1;
  }
}

int32_t msmc_hostbuffer_open_chunks(int64_t id, const int64_t *chunk_ids, uint64_t count) {
  if (id <= 0 || chunk_ids == nullptr) {
    return -1;
  }
  try {
    return msmc::Table().OpenChunks(id, chunk_ids, static_cast<size_t>(count));
  } catch (...) {
    return -1;
  }
}

int32_t msmc_hostbuffer_close(int64_t id) {
  try {
    return msmc::Table().Close(id);
  } catch (...) {
    return -1;
  }
}

int32_t msmc_hostbuffer_wait(int64_t id) {
  try {
    return msmc::Table().Wait(id);
  } catch (...) {
    return -1;
  }
}

int32_t msmc_hostbuffer_note_stream(int64_t id, void *stream) {
  try {
    return msmc::Table().NoteStream(id, stream);
  } catch (...) {
    return -1;
  }
}
