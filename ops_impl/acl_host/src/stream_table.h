// Live stream handles, default-stream resolution and stream synchronization helpers.
#ifndef MS_MEMCOPY_ACL_HOST_STREAM_TABLE_H_
#define MS_MEMCOPY_ACL_HOST_STREAM_TABLE_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "acl/acl_rt.h"
#include "handle_map.h"
#include "stream.h"

namespace aclhost {

// Every stream of the process. User streams are reachable through opaque handles (small integers that
// are never reused, so a destroyed handle always reads as unknown); default streams are listed only so
// that aclrtFree can wait for them.
class StreamTable {
 public:
  static StreamTable &Instance();

  // NULL when the stream's device already has `limit` streams (its default streams included).
  aclrtStream AddUserStream(std::shared_ptr<Stream> stream, size_t limit);
  std::shared_ptr<Stream> FindUserStream(aclrtStream handle) const;  // empty when unknown
  std::shared_ptr<Stream> RemoveUserStream(aclrtStream handle);      // empty when unknown

  void AddDefaultStream(const std::shared_ptr<Stream> &stream);
  void RemoveDefaultStream(const Stream *stream);

  std::vector<std::shared_ptr<Stream>> AllStreams() const;
  // The user streams of one context (aclrtSynchronizeDevice), and their removal (aclrtDestroyContext).
  std::vector<std::shared_ptr<Stream>> StreamsOfContext(uint64_t context) const;
  std::vector<std::shared_ptr<Stream>> RemoveStreamsOfContext(uint64_t context);

 private:
  StreamTable() = default;

  mutable std::mutex mutex_;
  HandleMap<Stream> user_streams_{0x1000};
  std::vector<std::shared_ptr<Stream>> default_streams_;
  std::unordered_map<int32_t, size_t> streams_per_device_;  // user and default streams
};

// A non-NULL handle must name a live stream (else ACL_ERROR_RT_INVALID_HANDLE, as CANN's handle guard); a NULL handle
// leaves *out empty so that the caller resolves the default stream later, where CANN checks the context.
aclError LookupStreamHandle(const char *api, aclrtStream handle, std::shared_ptr<Stream> *out);

// Fills an empty *out with the current device's default stream (ACL_ERROR_RT_CONTEXT_NULL without one).
aclError UseDefaultStreamIfEmpty(const char *api, std::shared_ptr<Stream> *out);

// The calls that run in the calling thread's context (CANN's CHECK_CONTEXT_VALID): ACL_ERROR_RT_CONTEXT_NULL
// without a current device, whatever the stream; then an empty *stream becomes the default stream.
aclError UseCurrentContext(const char *api, std::shared_ptr<Stream> *stream);

// ACL_ERROR_RT_STREAM_CONTEXT (107003) when the stream belongs to another context than the calling
// thread's (CANN checks this where a task is put on the stream: aclrtMemcpyAsync, aclrtMemcpy2dAsync,
// aclrtMemsetAsync); ACL_ERROR_RT_CONTEXT_NULL without a current context.
aclError CheckStreamInCurrentContext(const char *api, const Stream &stream);

// LookupStreamHandle followed by UseDefaultStreamIfEmpty.
aclError ResolveStream(const char *api, aclrtStream handle, std::shared_ptr<Stream> *out);

// Waits for the stream like aclrtSynchronizeStream(WithTimeout): 507046 on expiry, and the first task
// failure recorded on the stream (consumed, with its message) once the tasks have completed. Counts
// one host wait.
aclError SynchronizeStream(const char *api, Stream &stream, int32_t timeout_ms);

// SynchronizeStream without a timeout and without counting a host wait (aclhostCompleteStream).
aclError CompleteStream(const char *api, Stream &stream);

// The host waits for queued device work (aclhostGetHostWaitCount): CountHostWait adds one.
void CountHostWait();
uint64_t HostWaitCount();

// Waits until every stream of the process is idle; recorded failures stay for their next synchronize.
void DrainAllStreams();

}  // namespace aclhost

#endif  // MS_MEMCOPY_ACL_HOST_STREAM_TABLE_H_
