"""acl.rt: devices, contexts, streams, events, memory and memory copies (re-exported by ms_memcopy.acl.rt).

Every call takes its arguments as pyACL's C wrapper of the same call parses them (the format strings
below, see args.py) and returns what the wrapper returns: the aclError ``ret``, or ``(value, ret)``.
"""
import ctypes
import functools
from typing import Any, Optional, Tuple

from .._acl import library as _acl_lib
from .._acl import convert as cv
from .._acl.constants import ACL_ERROR_INVALID_PARAM, SIZE_MAX
from .args import pyacl_args

__all__ = [
    "set_device", "reset_device", "get_device", "get_device_count", "get_run_mode", "synchronize_device",
    "device_can_access_peer", "device_enable_peer_access", "device_disable_peer_access", "device_peer_access_status",
    "create_context", "destroy_context", "set_context", "get_context",
    "create_stream", "destroy_stream", "synchronize_stream", "synchronize_stream_with_timeout",
    "create_event", "create_event_with_flag", "destroy_event", "record_event", "query_event_status",
    "synchronize_event",
    "malloc", "malloc_host", "free", "free_host", "get_mem_info", "memset", "memset_async",
    "memcpy", "memcpy_async", "memcpy_async_with_condition", "memcpy2d", "memcpy2d_async",
    "get_memcpy_desc_size", "set_memcpy_desc", "memcpy_async_with_desc",
    "memcpy_batch", "memcpy_batch_async", "memcpy_batch_v2", "memcpy_batch_async_v2",
]

_rt_args = functools.partial(pyacl_args, "acl.rt")


def _c(name: str) -> Any:
    return _acl_lib.func(name)


# --- devices and contexts --------------------------------------------------------------------------------

@_rt_args("i")
def set_device(device_id: int, /) -> int:
    """ret = acl.rt.set_device(device_id)"""
    return _c("aclrtSetDevice")(device_id)


@_rt_args("i")
def reset_device(device_id: int, /) -> int:
    """ret = acl.rt.reset_device(device_id)"""
    return _c("aclrtResetDevice")(device_id)


@_rt_args(None)
def get_device() -> Tuple[int, int]:
    """device_id, ret = acl.rt.get_device()"""
    out = ctypes.c_int32()
    ret = _c("aclrtGetDevice")(ctypes.byref(out))
    return out.value, ret


@_rt_args(None)
def get_device_count() -> Tuple[int, int]:
    """count, ret = acl.rt.get_device_count()"""
    out = ctypes.c_uint32()
    ret = _c("aclrtGetDeviceCount")(ctypes.byref(out))
    return out.value, ret


@_rt_args(None)
def get_run_mode() -> Tuple[int, int]:
    """run_mode, ret = acl.rt.get_run_mode()  (ACL_DEVICE 0, ACL_HOST 1)"""
    out = ctypes.c_int()
    ret = _c("aclrtGetRunMode")(ctypes.byref(out))
    return out.value, ret


@_rt_args(None)
def synchronize_device() -> int:
    """ret = acl.rt.synchronize_device(): waits for every stream of the current context."""
    return _c("aclrtSynchronizeDevice")()


@_rt_args("ii")
def device_can_access_peer(device_id: int, peer_device_id: int, /) -> Tuple[int, int]:
    """can_access_peer, ret = acl.rt.device_can_access_peer(device_id, peer_device_id)  (1 can, 0 cannot)"""
    out = ctypes.c_int32()
    ret = _c("aclrtDeviceCanAccessPeer")(ctypes.byref(out), device_id, peer_device_id)
    return out.value, ret


@_rt_args("iI")
def device_enable_peer_access(peer_device_id: int, flags: int, /) -> int:
    """ret = acl.rt.device_enable_peer_access(peer_device_id, flags): from the current device to the peer."""
    return _c("aclrtDeviceEnablePeerAccess")(peer_device_id, flags)


@_rt_args("i")
def device_disable_peer_access(peer_device_id: int, /) -> int:
    """ret = acl.rt.device_disable_peer_access(peer_device_id)"""
    return _c("aclrtDeviceDisablePeerAccess")(peer_device_id)


@_rt_args("ii")
def device_peer_access_status(device_id: int, peer_device_id: int, /) -> Tuple[int, int]:
    """status, ret = acl.rt.device_peer_access_status(device_id, peer_device_id)  (1 enabled both ways, else 0)"""
    out = ctypes.c_int32()
    ret = _c("aclrtDevicePeerAccessStatus")(device_id, peer_device_id, ctypes.byref(out))
    return out.value, ret


@_rt_args("i")
def create_context(device_id: int, /) -> Tuple[int, int]:
    """context, ret = acl.rt.create_context(device_id): the new context is the thread's current one."""
    out = ctypes.c_void_p()
    ret = _c("aclrtCreateContext")(ctypes.byref(out), device_id)
    return out.value or 0, ret


@_rt_args("k")
def destroy_context(context: int, /) -> int:
    """ret = acl.rt.destroy_context(context)"""
    return _c("aclrtDestroyContext")(context)


@_rt_args("k")
def set_context(context: int, /) -> int:
    """ret = acl.rt.set_context(context): makes context the calling thread's current context."""
    return _c("aclrtSetCurrentContext")(context)


@_rt_args(None)
def get_context() -> Tuple[int, int]:
    """context, ret = acl.rt.get_context(): the calling thread's current context."""
    out = ctypes.c_void_p()
    ret = _c("aclrtGetCurrentContext")(ctypes.byref(out))
    return out.value or 0, ret


# --- streams ---------------------------------------------------------------------------------------------

@_rt_args(None)
def create_stream() -> Tuple[int, int]:
    """stream, ret = acl.rt.create_stream()"""
    out = ctypes.c_void_p()
    ret = _c("aclrtCreateStream")(ctypes.byref(out))
    return out.value or 0, ret


@_rt_args("k")
def destroy_stream(stream: int, /) -> int:
    """ret = acl.rt.destroy_stream(stream)"""
    return _c("aclrtDestroyStream")(stream)


@_rt_args("k")
def synchronize_stream(stream: int, /) -> int:
    """ret = acl.rt.synchronize_stream(stream)"""
    return _c("aclrtSynchronizeStream")(stream)


@_rt_args("ki")
def synchronize_stream_with_timeout(stream: int, timeout: int, /) -> int:
    """ret = acl.rt.synchronize_stream_with_timeout(stream, timeout)  (ms; -1 waits forever)"""
    return _c("aclrtSynchronizeStreamWithTimeout")(stream, timeout)


# --- events ----------------------------------------------------------------------------------------------

@_rt_args(None)
def create_event() -> Tuple[int, int]:
    """event, ret = acl.rt.create_event()"""
    out = ctypes.c_void_p()
    ret = _c("aclrtCreateEvent")(ctypes.byref(out))
    return out.value or 0, ret


@_rt_args("I")
def create_event_with_flag(flag: int, /) -> Tuple[int, int]:
    """event, ret = acl.rt.create_event_with_flag(flag)"""
    out = ctypes.c_void_p()
    ret = _c("aclrtCreateEventWithFlag")(ctypes.byref(out), flag)
    return out.value or 0, ret


@_rt_args("k")
def destroy_event(event: int, /) -> int:
    """ret = acl.rt.destroy_event(event)"""
    return _c("aclrtDestroyEvent")(event)


@_rt_args("kk")
def record_event(event: int, stream: int, /) -> int:
    """ret = acl.rt.record_event(event, stream)"""
    return _c("aclrtRecordEvent")(event, stream)


@_rt_args("k")
def query_event_status(event: int, /) -> Tuple[int, int]:
    """status, ret = acl.rt.query_event_status(event)  (ACL_EVENT_RECORDED_STATUS_COMPLETE 1, NOT_READY 0)"""
    out = ctypes.c_int()
    ret = _c("aclrtQueryEventStatus")(event, ctypes.byref(out))
    return out.value, ret


@_rt_args("k")
def synchronize_event(event: int, /) -> int:
    """ret = acl.rt.synchronize_event(event)"""
    return _c("aclrtSynchronizeEvent")(event)


# --- memory ----------------------------------------------------------------------------------------------

@_rt_args("ki")
def malloc(size: int, policy: int, /) -> Tuple[int, int]:
    """dev_ptr, ret = acl.rt.malloc(size, policy)"""
    out = ctypes.c_void_p()
    ret = _c("aclrtMalloc")(ctypes.byref(out), size, policy)
    return out.value or 0, ret


@_rt_args("k")
def malloc_host(size: int, /) -> Tuple[int, int]:
    """host_ptr, ret = acl.rt.malloc_host(size)"""
    out = ctypes.c_void_p()
    ret = _c("aclrtMallocHost")(ctypes.byref(out), size)
    return out.value or 0, ret


@_rt_args("k")
def free(dev_ptr: int, /) -> int:
    """ret = acl.rt.free(dev_ptr)"""
    return _c("aclrtFree")(dev_ptr)


@_rt_args("k")
def free_host(host_ptr: int, /) -> int:
    """ret = acl.rt.free_host(host_ptr)"""
    return _c("aclrtFreeHost")(host_ptr)


@_rt_args("i")
def get_mem_info(attr: int, /) -> Tuple[int, int, int]:
    """free, total, ret = acl.rt.get_mem_info(attr)  (attr: an aclrtMemAttr, e.g. ACL_HBM_MEM 1)"""
    free_bytes, total = ctypes.c_size_t(), ctypes.c_size_t()
    ret = _c("aclrtGetMemInfo")(attr, ctypes.byref(free_bytes), ctypes.byref(total))
    return free_bytes.value, total.value, ret


@_rt_args("kkik")
def memset(dev_ptr: int, max_count: int, value: int, count: int, /) -> int:
    """ret = acl.rt.memset(dev_ptr, max_count, value, count): count bytes set to the low byte of value."""
    return _c("aclrtMemset")(dev_ptr, max_count, value, count)


@_rt_args("kkikk")
def memset_async(dev_ptr: int, max_count: int, value: int, count: int, stream: int, /) -> int:
    """ret = acl.rt.memset_async(dev_ptr, max_count, value, count, stream)"""
    return _c("aclrtMemsetAsync")(dev_ptr, max_count, value, count, stream)


# --- copies ----------------------------------------------------------------------------------------------

@_rt_args("kkkki")
def memcpy(dst: int, dest_max: int, src: int, count: int, kind: int, /) -> int:
    """ret = acl.rt.memcpy(dst, dest_max, src, count, kind)"""
    return _c("aclrtMemcpy")(dst, dest_max, src, count, kind)


@_rt_args("kkkkik")
def memcpy_async(dst: int, dest_max: int, src: int, count: int, kind: int, stream: int, /) -> int:
    """ret = acl.rt.memcpy_async(dst, dest_max, src, count, kind, stream)"""
    return _c("aclrtMemcpyAsync")(dst, dest_max, src, count, kind, stream)


@_rt_args("kkkkik")
def memcpy_async_with_condition(dst: int, dest_max: int, src: int, count: int, kind: int, stream: int, /) -> int:
    """ret = acl.rt.memcpy_async_with_condition(dst, dest_max, src, count, kind, stream)"""
    return _c("aclrtMemcpyAsyncWithCondition")(dst, dest_max, src, count, kind, stream)


@_rt_args("kkkkkki")
def memcpy2d(dst: int, dpitch: int, src: int, spitch: int, width: int, height: int, kind: int, /) -> int:
    """ret = acl.rt.memcpy2d(dst, dpitch, src, spitch, width, height, kind)"""
    return _c("aclrtMemcpy2d")(dst, dpitch, src, spitch, width, height, kind)


@_rt_args("kkkkkkik")
def memcpy2d_async(dst: int, dpitch: int, src: int, spitch: int, width: int, height: int, kind: int,
                   stream: int, /) -> int:
    """ret = acl.rt.memcpy2d_async(dst, dpitch, src, spitch, width, height, kind, stream)"""
    return _c("aclrtMemcpy2dAsync")(dst, dpitch, src, spitch, width, height, kind, stream)


@_rt_args("i")
def get_memcpy_desc_size(kind: int, /) -> Tuple[int, int]:
    """desc_size, ret = acl.rt.get_memcpy_desc_size(kind)"""
    out = ctypes.c_size_t()
    ret = _c("aclrtGetMemcpyDescSize")(kind, ctypes.byref(out))
    return out.value, ret


@_rt_args("kikkkk")
def set_memcpy_desc(desc: int, kind: int, src_addr: int, dst_addr: int, count: int, config: int, /) -> Tuple[int, int]:
    """desc, ret = acl.rt.set_memcpy_desc(desc, kind, src_addr, dst_addr, count, config)  (config: 0)"""
    ret = _c("aclrtSetMemcpyDesc")(desc, kind, src_addr, dst_addr, count, config)
    return desc, ret


@_rt_args("kik")
def memcpy_async_with_desc(desc: int, kind: int, stream: int, /) -> int:
    """ret = acl.rt.memcpy_async_with_desc(desc, kind, stream)"""
    return _c("aclrtMemcpyAsyncWithDesc")(desc, kind, stream)


# --- batch copies (this project's extension, pyACL's list convention) -----------------------------------

def _batch_arrays(dsts: Any, dest_maxs: Any, srcs: Any, sizes: Any, attrs: Any,
                  attrs_indexes: Any) -> Optional[Tuple[Any, ...]]:
    """The C arguments of a batch call, or None when the list lengths disagree."""
    lists = {"dsts": dsts, "dest_maxs": dest_maxs, "srcs": srcs, "sizes": sizes, "attrs": attrs,
             "attrs_indexes": attrs_indexes}
    for name, value in lists.items():
        cv.pyacl_list(value, name)
    if not len(dsts) == len(dest_maxs) == len(srcs) == len(sizes) or len(attrs) != len(attrs_indexes):
        return None
    for name in ("dsts", "srcs"):
        for i, v in enumerate(lists[name]):
            cv.pyacl_address(v, f"{name}[{i}]")
    for name in ("dest_maxs", "sizes", "attrs_indexes"):
        for i, v in enumerate(lists[name]):
            cv.pyacl_size(v, f"{name}[{i}]")
    return cv.batch_arrays(dsts, dest_maxs, srcs, sizes, len(sizes), attrs, attrs_indexes, len(attrs))


def _batch(name: str, arrays: Optional[Tuple[Any, ...]], stream: Tuple[int, ...] = ()) -> Tuple[int, int]:
    fail_index = ctypes.c_size_t(SIZE_MAX)
    if arrays is None:
        return SIZE_MAX, ACL_ERROR_INVALID_PARAM
    ret = _c(name)(*arrays, ctypes.byref(fail_index), *stream)
    return fail_index.value, ret


@_rt_args("OOOOOO")
def memcpy_batch(dsts: Any, dest_maxs: Any, srcs: Any, sizes: Any, attrs: Any, attrs_indexes: Any,
                 /) -> Tuple[int, int]:
    """fail_index, ret = acl.rt.memcpy_batch(dsts, dest_maxs, srcs, sizes, attrs, attrs_indexes)"""
    return _batch("aclrtMemcpyBatch", _batch_arrays(dsts, dest_maxs, srcs, sizes, attrs, attrs_indexes))


@_rt_args("OOOOOOk")
def memcpy_batch_async(dsts: Any, dest_maxs: Any, srcs: Any, sizes: Any, attrs: Any, attrs_indexes: Any,
                       stream: int, /) -> Tuple[int, int]:
    """fail_index, ret = acl.rt.memcpy_batch_async(dsts, dest_maxs, srcs, sizes, attrs, attrs_indexes, stream)"""
    arrays = _batch_arrays(dsts, dest_maxs, srcs, sizes, attrs, attrs_indexes)
    return _batch("aclrtMemcpyBatchAsync", arrays, (stream,))


@_rt_args("OOOOOO")
def memcpy_batch_v2(dsts: Any, dest_maxs: Any, srcs: Any, sizes: Any, attrs: Any, attrs_indexes: Any, /) -> int:
    """ret = acl.rt.memcpy_batch_v2(dsts, dest_maxs, srcs, sizes, attrs, attrs_indexes): no fail_index."""
    arrays = _batch_arrays(dsts, dest_maxs, srcs, sizes, attrs, attrs_indexes)
    return ACL_ERROR_INVALID_PARAM if arrays is None else _c("aclrtMemcpyBatchV2")(*arrays)


@_rt_args("OOOOOOk")
def memcpy_batch_async_v2(dsts: Any, dest_maxs: Any, srcs: Any, sizes: Any, attrs: Any, attrs_indexes: Any,
                          stream: int, /) -> int:
    """ret = acl.rt.memcpy_batch_async_v2(dsts, dest_maxs, srcs, sizes, attrs, attrs_indexes, stream)"""
    arrays = _batch_arrays(dsts, dest_maxs, srcs, sizes, attrs, attrs_indexes)
    return ACL_ERROR_INVALID_PARAM if arrays is None else _c("aclrtMemcpyBatchAsyncV2")(*arrays, stream)
