"""The AscendCL memory-copy calls, one Python function per C function, raising AclError.

This is the thin raising layer over the ACL C API (``acl/acl.h``) as implemented by the loaded ACL library:
ms_memcopy's host runtime, or CANN's libascendcl. Every argument check of ACL itself stays in the C library,
so the codes you see are the ones C callers see. It differs from the C API in exactly these ways:

* Names are snake_case without the ``aclrt``/``acl``/``aclhost`` prefix (``aclrtMemcpy2dAsync`` ->
  ``memcpy2d_async``; ``aclGetRecentErrMsg`` -> ``get_recent_err_msg``; ``aclhostGetSocProfile`` ->
  ``soc_profile``).
* A non-zero aclError raises :class:`ms_memcopy.AclError` carrying the code, its header name, the C function
  name, the batch failIndex (when not SIZE_MAX) and the message this failure added to
  ``aclGetRecentErrMsg()``, which the wrapper reads on the failing thread right after the call (the text keeps
  older messages after it, as CANN's does; reading does not clear it). Success returns None unless the C call
  has an output parameter.
* Output parameters are return values: ``malloc``/``malloc_host`` return the pointer, ``create_stream`` the
  stream, ``create_context``/``get_current_context`` the context,
  ``get_device``/``get_device_count``/``get_run_mode``/``get_memcpy_desc_size`` the value, ``get_mem_info``
  ``(free, total)``, ``get_mem_location`` a MemLocation tuple.
* Pointer arguments accept an int address, a C-contiguous numpy array (its data pointer; a non-contiguous
  array is a TypeError) or any object with an integer ``ptr`` attribute; None and 0 are NULL. When the
  buffer's size is known (numpy arrays; ``.nbytes`` next to ``.ptr``), the bytes the call may touch (dest_max
  / dest_maxs[i] for destinations, count / sizes[i] for sources, the pitched span for 2D copies) must fit in
  it, and a destination array must be writeable: otherwise ValueError, before any C call. Keeping an array
  alive until an asynchronous copy has run is the caller's job; an ms_memcopy.HostBuffer passed to an
  asynchronous copy remembers the stream, and reading or closing it first waits for that stream.
* Streams are int handles or None (NULL). The async copies default to ``stream=None``, the default stream, as
  in C; ``memcpy_async_with_desc`` takes the stream positionally because ACL rejects NULL there (100000).
* Batch copies take Python lists instead of pointer+count pairs: numBatches is ``len(dsts)`` (dest_maxs, srcs
  and sizes must have the same length), numAttrs is ``len(attrs)`` (attrs_indexes must match). ``attrs``
  entries are dicts ``{"dst_loc": {"id": 0, "type": 1}, "src_loc": {"id": 0, "type": 0}}`` (optional
  ``"rsv"``) or ``aclrtMemcpyBatchAttr`` structs. failIndex is not an argument: the wrapper sets it to
  SIZE_MAX before the call (ACL-layer errors leave it unwritten) and reports it as ``AclError.fail_index``.
* ``set_memcpy_desc`` takes ``config`` as an optional keyword (default None, the only value ACL accepts).
* ``init`` takes a str/bytes/os.PathLike path or None.
* Python-level misuse (wrong types, negative or oversized integers, list lengths that differ) raises
  TypeError/ValueError naming the argument before any C call; values C checks itself (kinds, zero sizes, NULL)
  go to C.
* ``register_device_memory``, ``unregister_device_memory``, their ``_batch`` forms, ``get_mem_location``,
  ``set_stream_deferred``, ``launch_host_func``, ``host_wait_count``, ``live_resource_counts``,
  ``order_check_counts``, ``check_host_access``, ``complete_stream`` and ``soc_profile`` exist only with the
  host runtime (NotImplementedError naming the call otherwise). ``launch_host_func(stream, fn)`` takes any
  Python callable (no userData: use a closure); the wrapper keeps it alive until the stream has run it.
"""
import ctypes
import os
from collections import namedtuple
from typing import Any, Mapping, Optional, Sequence, Tuple, Union

from . import library as _acl_lib
from . import convert as cv
from .constants import ACL_MEM_MALLOC_HUGE_FIRST, SIZE_MAX
from .library import aclrtMemcpyBatchAttr
from .call import call as _call
from .host_extras import (  # noqa: F401  (in __all__)
    MemLocation, get_mem_location, launch_host_func, register_device_memory, register_device_memory_batch,
    set_stream_deferred, soc_profile, copy_strategy, unregister_device_memory, unregister_device_memory_batch)
from ..errors import AclError  # noqa: F401  (ms_memcopy.runtime.AclError, as before)

__all__ = [
    "init", "finalize", "get_recent_err_msg", "get_soc_name",
    "set_device", "reset_device", "get_device", "get_device_count", "get_run_mode", "synchronize_device",
    "device_can_access_peer", "device_enable_peer_access", "device_disable_peer_access", "device_peer_access_status",
    "create_context", "destroy_context", "set_current_context", "get_current_context",
    "create_stream", "destroy_stream", "synchronize_stream", "synchronize_stream_with_timeout",
    "create_event", "create_event_with_flag", "destroy_event", "record_event", "query_event_status",
    "synchronize_event", "stream_wait_event", "host_wait_count", "live_resource_counts", "order_check_counts",
    "check_host_access", "complete_stream",
    "malloc", "malloc_host", "free", "free_host", "get_mem_info", "memset", "memset_async",
    "memcpy", "memcpy_async", "memcpy_async_with_condition", "memcpy2d", "memcpy2d_async",
    "get_memcpy_desc_size", "set_memcpy_desc", "memcpy_async_with_desc",
    "memcpy_batch", "memcpy_batch_async", "memcpy_batch_v2", "memcpy_batch_async_v2",
    "register_device_memory", "unregister_device_memory", "register_device_memory_batch",
    "unregister_device_memory_batch", "get_mem_location", "set_stream_deferred",
    "launch_host_func", "soc_profile", "copy_strategy",
    "MemLocation", "LiveResourceCounts", "OrderCheckCounts",
]


#: An ``attrs`` entry of the batch copies: a dict ``{"dst_loc": {...}, "src_loc": {...}}`` or the C struct.
BatchAttr = Union[Mapping[str, Any], aclrtMemcpyBatchAttr]

#: aclhostGetLiveResourceCounts's result: the live events and the live pinned host allocations.
LiveResourceCounts = namedtuple("LiveResourceCounts", ["events", "pinned_allocations"])

#: aclhostGetOrderCheckCounts's result: the copies and memsets the strict ordering check tracks now (queued,
#: not finished), and the races it has reported in this process.
OrderCheckCounts = namedtuple("OrderCheckCounts", ["queued_accesses", "races"])


# --- initialization, devices -------------------------------------------------------------------

def init(config_path: Union[str, bytes, os.PathLike, None] = None) -> None:
    """aclInit(configPath). A second call raises ACL_ERROR_REPEAT_INITIALIZE."""
    _call("aclInit", cv.config_path(config_path))


def finalize() -> None:
    """aclFinalize()."""
    _call("aclFinalize")


def get_recent_err_msg() -> Optional[str]:
    """aclGetRecentErrMsg(): this thread's error text (newest message first), or None. Reading does not clear it."""
    return _acl_lib.recent_err_msg()


def get_soc_name() -> Optional[str]:
    """aclrtGetSocName(): the SoC name, or None when the library does not know it."""
    raw = _acl_lib.func("aclrtGetSocName")()
    return None if raw is None else raw.decode("utf-8", errors="replace")


def set_device(device_id: int) -> None:
    """aclrtSetDevice(deviceId): makes device_id the calling thread's current device."""
    _call("aclrtSetDevice", cv.int32(device_id, "device_id"))


def reset_device(device_id: int) -> None:
    """aclrtResetDevice(deviceId)."""
    _call("aclrtResetDevice", cv.int32(device_id, "device_id"))


def get_device() -> int:
    """aclrtGetDevice(): the calling thread's current device id."""
    out = ctypes.c_int32()
    _call("aclrtGetDevice", ctypes.byref(out))
    return out.value


def get_device_count() -> int:
    """aclrtGetDeviceCount(): the number of devices."""
    out = ctypes.c_uint32()
    _call("aclrtGetDeviceCount", ctypes.byref(out))
    return out.value


def get_run_mode() -> int:
    """aclrtGetRunMode(): ACL_DEVICE (0) or ACL_HOST (1); the host runtime reports ACL_HOST."""
    out = ctypes.c_int()
    _call("aclrtGetRunMode", ctypes.byref(out))
    return out.value


def synchronize_device() -> None:
    """aclrtSynchronizeDevice(): blocks until every stream of the current context is done."""
    _call("aclrtSynchronizeDevice")


def device_can_access_peer(device_id: int, peer_device_id: int) -> bool:
    """aclrtDeviceCanAccessPeer(&canAccessPeer, deviceId, peerDeviceId): whether the two devices can exchange data."""
    out = ctypes.c_int32()
    _call("aclrtDeviceCanAccessPeer", ctypes.byref(out), cv.int32(device_id, "device_id"),
          cv.int32(peer_device_id, "peer_device_id"))
    return bool(out.value)


def device_enable_peer_access(peer_device_id: int, flags: int = 0) -> None:
    """aclrtDeviceEnablePeerAccess(peerDeviceId, flags): enables access from the current device to the peer.

    A copy between memory of two devices runs once each has enabled the other (flags is reserved: 0)."""
    _call("aclrtDeviceEnablePeerAccess", cv.int32(peer_device_id, "peer_device_id"), cv.uint32(flags, "flags"))


def device_disable_peer_access(peer_device_id: int) -> None:
    """aclrtDeviceDisablePeerAccess(peerDeviceId): disables access from the current device to the peer."""
    _call("aclrtDeviceDisablePeerAccess", cv.int32(peer_device_id, "peer_device_id"))


def device_peer_access_status(device_id: int, peer_device_id: int) -> bool:
    """aclrtDevicePeerAccessStatus(deviceId, peerDeviceId, &status): True once each device has enabled the other."""
    out = ctypes.c_int32()
    _call("aclrtDevicePeerAccessStatus", cv.int32(device_id, "device_id"), cv.int32(peer_device_id, "peer_device_id"),
          ctypes.byref(out))
    return bool(out.value)


# --- contexts ----------------------------------------------------------------------------------

def create_context(device_id: int) -> int:
    """aclrtCreateContext(&context, deviceId): a new context (int handle), now the thread's current one."""
    out = ctypes.c_void_p()
    _call("aclrtCreateContext", ctypes.byref(out), cv.int32(device_id, "device_id"))
    return out.value or 0


def destroy_context(context: int) -> None:
    """aclrtDestroyContext(context): waits for its streams and destroys them with it."""
    _call("aclrtDestroyContext", cv.address(context, "context"))


def set_current_context(context: int) -> None:
    """aclrtSetCurrentContext(context): makes context the calling thread's current context."""
    _call("aclrtSetCurrentContext", cv.address(context, "context"))


def get_current_context() -> int:
    """aclrtGetCurrentContext(): the calling thread's current context (int handle)."""
    out = ctypes.c_void_p()
    _call("aclrtGetCurrentContext", ctypes.byref(out))
    return out.value or 0


# --- streams -----------------------------------------------------------------------------------

def create_stream() -> int:
    """aclrtCreateStream(): a new stream handle (int)."""
    out = ctypes.c_void_p()
    _call("aclrtCreateStream", ctypes.byref(out))
    return out.value or 0


def destroy_stream(stream: Optional[int]) -> None:
    """aclrtDestroyStream(stream)."""
    _call("aclrtDestroyStream", cv.stream(stream))


def synchronize_stream(stream: Optional[int]) -> None:
    """aclrtSynchronizeStream(stream): blocks until every task on the stream is done."""
    _call("aclrtSynchronizeStream", cv.stream(stream))


def synchronize_stream_with_timeout(stream: Optional[int], timeout: int) -> None:
    """aclrtSynchronizeStreamWithTimeout(stream, timeout): timeout in ms, -1 waits forever."""
    _call("aclrtSynchronizeStreamWithTimeout", cv.stream(stream), cv.int32(timeout, "timeout"))


# --- events ------------------------------------------------------------------------------------

def create_event() -> int:
    """aclrtCreateEvent(): a new event handle (int) on the current device."""
    out = ctypes.c_void_p()
    _call("aclrtCreateEvent", ctypes.byref(out))
    return out.value or 0


def create_event_with_flag(flag: int) -> int:
    """aclrtCreateEventWithFlag(flag): a new event handle (int); flag is an OR of ACL_EVENT_SYNC,
    ACL_EVENT_CAPTURE_STREAM_PROGRESS, 0x4 and ACL_EVENT_TIME_LINE, or ACL_EVENT_DEVICE_USE_ONLY or
    ACL_EVENT_EXTERNAL alone."""
    out = ctypes.c_void_p()
    _call("aclrtCreateEventWithFlag", ctypes.byref(out), cv.uint32(flag, "flag"))
    return out.value or 0


def destroy_event(event: int) -> None:
    """aclrtDestroyEvent(event)."""
    _call("aclrtDestroyEvent", cv.address(event, "event"))


def record_event(event: int, stream: Optional[int] = None) -> None:
    """aclrtRecordEvent(event, stream): marks the point the stream has reached (None: default stream)."""
    _call("aclrtRecordEvent", cv.address(event, "event"), cv.stream(stream))


def query_event_status(event: int) -> int:
    """aclrtQueryEventStatus(event): ACL_EVENT_RECORDED_STATUS_COMPLETE (1) once the stream has reached
    the latest record, ACL_EVENT_RECORDED_STATUS_NOT_READY (0) before (and for an event never recorded)."""
    out = ctypes.c_int()
    _call("aclrtQueryEventStatus", cv.address(event, "event"), ctypes.byref(out))
    return out.value


def synchronize_event(event: int) -> None:
    """aclrtSynchronizeEvent(event): blocks until the stream has reached the event's latest record."""
    _call("aclrtSynchronizeEvent", cv.address(event, "event"))


def stream_wait_event(stream: Optional[int], event: int) -> None:
    """aclrtStreamWaitEvent(stream, event): the stream's later tasks wait until the event's latest record
    (at this call) is reached; the host does not wait (None: default stream)."""
    _call("aclrtStreamWaitEvent", cv.stream(stream), cv.address(event, "event"))


def complete_stream(stream: Optional[int]) -> None:
    """aclhostCompleteStream(stream): runs the stream's queued tasks on the calling thread and reports the
    first failure, as synchronize_stream, without counting a host wait (the CPU target's end of a kernel
    launch). Host runtime only."""
    _call("aclhostCompleteStream", cv.stream(stream))


def host_wait_count() -> int:
    """aclhostGetHostWaitCount(): how many times a host thread has waited for queued device work in
    this process (stream, device and event synchronizations, and the stream drains of asynchronous
    copies with a pageable endpoint). Host runtime only."""
    out = ctypes.c_uint64()
    _call("aclhostGetHostWaitCount", ctypes.byref(out))
    return out.value


def live_resource_counts() -> LiveResourceCounts:
    """aclhostGetLiveResourceCounts(): a LiveResourceCounts tuple, the number of live events and of live
    pinned host allocations (aclrtMallocHost not yet freed) in this process, for showing that repeated
    calls accumulate neither. Host runtime only."""
    events, pinned = ctypes.c_uint64(), ctypes.c_uint64()
    _call("aclhostGetLiveResourceCounts", ctypes.byref(events), ctypes.byref(pinned))
    return LiveResourceCounts(events.value, pinned.value)


# --- memory ------------------------------------------------------------------------------------

def order_check_counts() -> OrderCheckCounts:
    """aclhostGetOrderCheckCounts(): an OrderCheckCounts tuple, the accesses the strict ordering check
    (MS_MEMCOPY_STRICT_ORDER=1) tracks now and the races it has reported; both 0 while it is off. Host
    runtime only."""
    queued, races = ctypes.c_uint64(), ctypes.c_uint64()
    _call("aclhostGetOrderCheckCounts", ctypes.byref(queued), ctypes.byref(races))
    return OrderCheckCounts(queued.value, races.value)


def check_host_access(ptr: cv.Pointer, size: int, write: bool = False) -> None:
    """aclhostCheckHostAccess(ptr, size, write): under strict ordering (MS_MEMCOPY_STRICT_ORDER=1), raises
    AclError 107000 naming both accesses when reading (or, with write, writing) size bytes at ptr on the
    host now would race with a queued copy or memset; returns None otherwise. Host runtime only."""
    _call("aclhostCheckHostAccess", cv.address(ptr, "ptr"), cv.size(size, "size"), 1 if write else 0)


def malloc(size: int, policy: int = ACL_MEM_MALLOC_HUGE_FIRST) -> int:
    """aclrtMalloc(&ptr, size, policy): device memory of the current device; returns its address."""
    out = ctypes.c_void_p()
    _call("aclrtMalloc", ctypes.byref(out), cv.size(size, "size"), cv.int32(policy, "policy"))
    return out.value or 0


def malloc_host(size: int) -> int:
    """aclrtMallocHost(&ptr, size): page-locked host memory; returns its address. Needs a current context
    on the calling thread (107002 without one)."""
    out = ctypes.c_void_p()
    _call("aclrtMallocHost", ctypes.byref(out), cv.size(size, "size"))
    return out.value or 0


def free(ptr: cv.Pointer) -> None:
    """aclrtFree(devPtr)."""
    _call("aclrtFree", cv.address(ptr, "ptr"))


def free_host(ptr: cv.Pointer) -> None:
    """aclrtFreeHost(hostPtr)."""
    _call("aclrtFreeHost", cv.address(ptr, "ptr"))


def get_mem_info(attr: int) -> Tuple[int, int]:
    """aclrtGetMemInfo(attr, &free, &total): (free, total) bytes of the current device's memory."""
    free_bytes, total = ctypes.c_size_t(), ctypes.c_size_t()
    _call("aclrtGetMemInfo", cv.int32(attr, "attr"), ctypes.byref(free_bytes), ctypes.byref(total))
    return free_bytes.value, total.value


def memset(ptr: cv.Pointer, max_count: int, value: int, count: int) -> None:
    """aclrtMemset(devPtr, maxCount, value, count): count bytes set to the low byte of value."""
    max_count, count = cv.size(max_count, "max_count"), cv.size(count, "count")
    _call("aclrtMemset", cv.address(ptr, "ptr", need=max_count, write=True), max_count,
          cv.int32(value, "value"), count)


def memset_async(ptr: cv.Pointer, max_count: int, value: int, count: int, stream: Optional[int] = None) -> None:
    """aclrtMemsetAsync(devPtr, maxCount, value, count, stream): the memset of device memory, in stream order;
    host memory (pinned or pageable) is set before the call returns, without waiting for the stream, as in
    CANN."""
    max_count, count = cv.size(max_count, "max_count"), cv.size(count, "count")
    c_stream = cv.stream(stream)
    _call("aclrtMemsetAsync", cv.address(ptr, "ptr", need=max_count, write=True), max_count,
          cv.int32(value, "value"), count, c_stream)
    _note_in_flight(c_stream, ptr)


# --- copies ------------------------------------------------------------------------------------

def _note_in_flight(stream: Optional[int], *buffers: object) -> None:
    """HostBuffers given to an asynchronous copy remember its stream: reading them waits for it."""
    for buf in buffers:
        note = getattr(buf, "_note_stream", None)
        if note is not None:
            note(stream)


def memcpy(dst: cv.Pointer, dest_max: int, src: cv.Pointer, count: int, kind: int) -> None:
    """aclrtMemcpy(dst, destMax, src, count, kind): synchronous copy."""
    _call("aclrtMemcpy", *cv.copy_args(dst, dest_max, src, count, kind))


def memcpy_async(dst: cv.Pointer, dest_max: int, src: cv.Pointer, count: int, kind: int,
                 stream: Optional[int] = None) -> None:
    """aclrtMemcpyAsync(...): enqueued on stream for pinned/device memory; with a pageable
    endpoint ACL drains the stream and copies before returning."""
    args = cv.copy_args(dst, dest_max, src, count, kind)
    _note_in_flight(stream, dst, src)
    _call("aclrtMemcpyAsync", *args, cv.stream(stream))


def memcpy_async_with_condition(dst: cv.Pointer, dest_max: int, src: cv.Pointer, count: int, kind: int,
                                stream: Optional[int] = None) -> None:
    """aclrtMemcpyAsyncWithCondition(...) (deprecated in CANN 9.1 in favour of aclrtMemcpyAsync)."""
    args = cv.copy_args(dst, dest_max, src, count, kind)
    _note_in_flight(stream, dst, src)
    _call("aclrtMemcpyAsyncWithCondition", *args, cv.stream(stream))


def memcpy2d(dst: cv.Pointer, dpitch: int, src: cv.Pointer, spitch: int, width: int, height: int, kind: int) -> None:
    """aclrtMemcpy2d(...): synchronous pitched copy of height rows of width bytes."""
    _call("aclrtMemcpy2d", *cv.copy2d_args(dst, dpitch, src, spitch, width, height, kind))


def memcpy2d_async(dst: cv.Pointer, dpitch: int, src: cv.Pointer, spitch: int, width: int, height: int, kind: int,
                   stream: Optional[int] = None) -> None:
    """aclrtMemcpy2dAsync(...): pitched copy of height rows of width bytes on stream."""
    args = cv.copy2d_args(dst, dpitch, src, spitch, width, height, kind)
    _note_in_flight(stream, dst, src)
    _call("aclrtMemcpy2dAsync", *args, cv.stream(stream))


# --- descriptor copies -------------------------------------------------------------------------

def get_memcpy_desc_size(kind: int) -> int:
    """aclrtGetMemcpyDescSize(kind, &size): bytes of device memory one descriptor needs."""
    out = ctypes.c_size_t()
    _call("aclrtGetMemcpyDescSize", cv.int32(kind, "kind"), ctypes.byref(out))
    return out.value


def set_memcpy_desc(desc: cv.Pointer, kind: int, src: cv.Pointer, dst: cv.Pointer, count: int,
                    config: cv.Pointer = None) -> None:
    """aclrtSetMemcpyDesc(desc, kind, srcAddr, dstAddr, count, config): note src before dst, as in C."""
    count = cv.size(count, "count")
    _call("aclrtSetMemcpyDesc", cv.address(desc, "desc", write=True), cv.int32(kind, "kind"),
          cv.address(src, "src", need=count), cv.address(dst, "dst", need=count, write=True), count,
          cv.address(config, "config"))


def memcpy_async_with_desc(desc: cv.Pointer, kind: int, stream: Optional[int]) -> None:
    """aclrtMemcpyAsyncWithDesc(desc, kind, stream): the copy reads the descriptor when it runs."""
    _call("aclrtMemcpyAsyncWithDesc", cv.address(desc, "desc"), cv.int32(kind, "kind"), cv.stream(stream))


# --- batch copies ------------------------------------------------------------------------------

def _batch_args(dsts: Sequence[cv.Pointer], dest_maxs: Sequence[int], srcs: Sequence[cv.Pointer],
                sizes: Sequence[int], attrs: Sequence[BatchAttr], attrs_indexes: Sequence[int]) -> Tuple[Any, ...]:
    lists = {"dsts": dsts, "dest_maxs": dest_maxs, "srcs": srcs, "sizes": sizes}
    lengths = {name: len(cv.sequence(value, name)) for name, value in lists.items()}
    if len(set(lengths.values())) != 1:
        raise ValueError(f"dsts, dest_maxs, srcs and sizes must have the same length, got {lengths}")
    num_attrs = len(cv.sequence(attrs, "attrs"))
    if len(cv.sequence(attrs_indexes, "attrs_indexes")) != num_attrs:
        raise ValueError(f"attrs and attrs_indexes must have the same length, "
                         f"got {num_attrs} and {len(attrs_indexes)}")
    return cv.batch_arrays(dsts, dest_maxs, srcs, sizes, lengths["dsts"], attrs, attrs_indexes, num_attrs)


def _batch(api: str, args: Tuple[Any, ...], stream: Tuple[Optional[int], ...] = (),
           with_fail_index: bool = True) -> None:
    if not with_fail_index:
        _call(api, *args, *stream)
        return
    fail_index = ctypes.c_size_t(SIZE_MAX)
    _call(api, *args, ctypes.byref(fail_index), *stream, fail_index=fail_index)


def memcpy_batch(dsts: Sequence[cv.Pointer], dest_maxs: Sequence[int], srcs: Sequence[cv.Pointer],
                 sizes: Sequence[int], attrs: Sequence[BatchAttr], attrs_indexes: Sequence[int]) -> None:
    """aclrtMemcpyBatch(...): synchronous batch of H2D/D2H copies (at most 4096)."""
    _batch("aclrtMemcpyBatch", _batch_args(dsts, dest_maxs, srcs, sizes, attrs, attrs_indexes))


def memcpy_batch_async(dsts: Sequence[cv.Pointer], dest_maxs: Sequence[int], srcs: Sequence[cv.Pointer],
                       sizes: Sequence[int], attrs: Sequence[BatchAttr], attrs_indexes: Sequence[int],
                       stream: Optional[int] = None) -> None:
    """aclrtMemcpyBatchAsync(...): batch of H2D/D2H copies on stream (unordered within the batch)."""
    args = _batch_args(dsts, dest_maxs, srcs, sizes, attrs, attrs_indexes)
    _note_in_flight(stream, *dsts, *srcs)  # a failing item may follow copies already enqueued
    _batch("aclrtMemcpyBatchAsync", args, (cv.stream(stream),))


def memcpy_batch_v2(dsts: Sequence[cv.Pointer], dest_maxs: Sequence[int], srcs: Sequence[cv.Pointer],
                    sizes: Sequence[int], attrs: Sequence[BatchAttr], attrs_indexes: Sequence[int]) -> None:
    """aclrtMemcpyBatchV2(...): memcpy_batch without failIndex (CANN 9.1+)."""
    _batch("aclrtMemcpyBatchV2", _batch_args(dsts, dest_maxs, srcs, sizes, attrs, attrs_indexes),
           with_fail_index=False)


def memcpy_batch_async_v2(dsts: Sequence[cv.Pointer], dest_maxs: Sequence[int], srcs: Sequence[cv.Pointer],
                          sizes: Sequence[int], attrs: Sequence[BatchAttr], attrs_indexes: Sequence[int],
                          stream: Optional[int] = None) -> None:
    """aclrtMemcpyBatchAsyncV2(...): memcpy_batch_async without failIndex (CANN 9.1+)."""
    args = _batch_args(dsts, dest_maxs, srcs, sizes, attrs, attrs_indexes)
    _note_in_flight(stream, *dsts, *srcs)
    _batch("aclrtMemcpyBatchAsyncV2", args, (cv.stream(stream),), with_fail_index=False)


from . import host_register as _host_register  # noqa: E402  (the aclrtHostRegister family)
from .host_register import *  # noqa: E402,F403
__all__ += _host_register.__all__
