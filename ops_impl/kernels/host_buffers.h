// The table of HostBuffers the kernels may read or write.
//
// Python registers each ms_memcopy.HostBuffer here (msmc_hostbuffer_open) and passes its id to the
// primitives as an attribute, so a kernel never trusts a raw address: it leases the buffer for the
// launch (failing cleanly if it was closed), and closing waits for every lease and for the streams
// that still have copies touching the buffer in flight (fenced by events, see host_buffers.cpp).
#ifndef MS_MEMCOPY_KERNELS_HOST_BUFFERS_H_
#define MS_MEMCOPY_KERNELS_HOST_BUFFERS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "acl/acl.h"

#define MSMC_EXPORT extern "C" __attribute__((visibility("default")))

// Registers [ptr, ptr + nbytes) under id (> 0, chosen by the caller, which reuses the ids of closed
// buffers); returns 0, or -1 when id is not positive or in use, or ptr is NULL with nbytes > 0.
MSMC_EXPORT int32_t msmc_hostbuffer_open(int64_t id, void *ptr, uint64_t nbytes, int32_t pinned);
// Registers id (> 0, unused) as a pool of host chunks: the open buffers chunk_ids[0 .. count), in order,
// which SwapBlocks reads as one host side (HostBufferChunks); no other op takes it. Returns 0, or -1 when
// id is not positive or in use, count is 0, or a chunk is unknown, closing or itself a pool of chunks.
MSMC_EXPORT int32_t msmc_hostbuffer_open_chunks(int64_t id, const int64_t *chunk_ids, uint64_t count);
// Waits for the launches using the buffer and for its in-flight copies, then forgets it.
// Returns ACL_SUCCESS, the failing aclrtSynchronizeEvent/Stream code, or -1 for an unknown id.
MSMC_EXPORT int32_t msmc_hostbuffer_close(int64_t id);
// Waits for the in-flight copies touching the buffer (their streams' fence events).
MSMC_EXPORT int32_t msmc_hostbuffer_wait(int64_t id);
// Records that a copy touching the buffer was enqueued on stream and may still be running: records the
// buffer's fence event on stream (call it on a thread where stream's device is current).
MSMC_EXPORT int32_t msmc_hostbuffer_note_stream(int64_t id, void *stream);

namespace msmc {

// A HostBuffer held open for the duration of one launch whose copies run on `stream`. A close() waits
// for the lease to end; the end records the buffer's fence on `stream` after everything the launch
// queued, even when the launch fails part way.
class HostBufferLease {
 public:
  // Throws InputError naming `argument` when id is unknown, the buffer is closed, or id is a pool of
  // host chunks (lease each of HostBufferChunks instead).
  HostBufferLease(int64_t id, const char *argument, aclrtStream stream);
  ~HostBufferLease();
  HostBufferLease(const HostBufferLease &) = delete;
  HostBufferLease &operator=(const HostBufferLease &) = delete;

  uint8_t *data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  bool pinned() const { return pinned_; }

 private:
  int64_t id_;
  aclrtStream stream_;
  uint8_t *data_;
  size_t nbytes_;
  bool pinned_;
};

// The bytes of HostBuffer id, for the op bodies' checks (they plan without copying, so they take no
// lease); throws InputError naming `argument` when id is unknown or the buffer is closed, as
// HostBufferLease does.
size_t HostBufferBytes(int64_t id, const char *argument);

// The buffers that make up buffer id: the chunks of a pool of host chunks (msmc_hostbuffer_open_chunks),
// in order, else id itself; throws InputError naming `argument` as HostBufferBytes does.
std::vector<int64_t> HostBufferChunks(int64_t id, const char *argument);

}  // namespace msmc

#endif  // MS_MEMCOPY_KERNELS_HOST_BUFFERS_H_
