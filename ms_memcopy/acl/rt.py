"""acl.rt: devices, contexts, streams, memory and memory copies in pyACL conventions (codes, never AclError).

The argument rules of pyACL's own binding, so that a script that runs here runs on pyACL and the reverse:

* Arguments are positional only.
* Pointers, sizes and streams are Python ints (0 is NULL); numpy integers, numpy arrays and None are a
  TypeError. Get a pointer from ``acl.util.numpy_to_ptr`` / ``bytes_to_ptr`` or from the malloc calls.
* Every argument is required (``malloc(size, policy)``, ``set_memcpy_desc(desc, kind, src, dst, count,
  config)`` with config 0).
* Calls with an output return ``(value, ret)`` (``get_mem_info``: ``(free, total, ret)``), the others
  ``ret``.

Extension of this project (pyACL has no batch wrapper): ``memcpy_batch*`` take Python lists, in pyACL's list
convention (as ``acl.op.execute_v2``): the C counts (numBatches, numAttrs) are the list lengths and are not
arguments. Lists of different lengths (dsts, dest_maxs, srcs, sizes; attrs, attrs_indexes) return
ACL_ERROR_INVALID_PARAM (100000) without calling the runtime, the ACL layer's code for inconsistent array
arguments. The calls with a failIndex return ``(fail_index, ret)``; fail_index starts at SIZE_MAX, which is
what it stays at when no single copy is at fault.
"""
import ctypes

from .. import _acl_lib
from .. import _convert as cv
from ..acl_constants import ACL_ERROR_INVALID_PARAM, SIZE_MAX

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


def _c(name):
    return _acl_lib.func(name)


_ptr = cv.pyacl_address
_size = cv.pyacl_size
_stream = cv.pyacl_stream


# --- devices and contexts --------------------------------------------------------------------------------

def set_device(device_id, /):
    """ret = acl.rt.set_device(device_id)"""
    return _c("aclrtSetDevice")(cv.int32(device_id, "device_id"))


def reset_device(device_id, /):
    """ret = acl.rt.reset_device(device_id)"""
    return _c("aclrtResetDevice")(cv.int32(device_id, "device_id"))


def get_device():
    """device_id, ret = acl.rt.get_device()"""
    out = ctypes.c_int32()
    ret = _c("aclrtGetDevice")(ctypes.byref(out))
    return out.value, ret


def get_device_count():
    """count, ret = acl.rt.get_device_count()"""
    out = ctypes.c_uint32()
    ret = _c("aclrtGetDeviceCount")(ctypes.byref(out))
    return out.value, ret


def get_run_mode():
    """run_mode, ret = acl.rt.get_run_mode()  (ACL_DEVICE 0, ACL_HOST 1)"""
    out = ctypes.c_int()
    ret = _c("aclrtGetRunMode")(ctypes.byref(out))
    return out.value, ret


def synchronize_device():
    """ret = acl.rt.synchronize_device(): waits for every stream of the current context."""
    return _c("aclrtSynchronizeDevice")()


def device_can_access_peer(device_id, peer_device_id, /):
    """can_access_peer, ret = acl.rt.device_can_access_peer(device_id, peer_device_id)  (1 can, 0 cannot)"""
    out = ctypes.c_int32()
    ret = _c("aclrtDeviceCanAccessPeer")(ctypes.byref(out), cv.int32(device_id, "device_id"),
                                         cv.int32(peer_device_id, "peer_device_id"))
    return out.value, ret


def device_enable_peer_access(peer_device_id, flags, /):
    """ret = acl.rt.device_enable_peer_access(peer_device_id, flags): from the current device to the peer."""
    return _c("aclrtDeviceEnablePeerAccess")(cv.int32(peer_device_id, "peer_device_id"), cv.uint32(flags, "flags"))


def device_disable_peer_access(peer_device_id, /):
    """ret = acl.rt.device_disable_peer_access(peer_device_id)"""
    return _c("aclrtDeviceDisablePeerAccess")(cv.int32(peer_device_id, "peer_device_id"))


def device_peer_access_status(device_id, peer_device_id, /):
    """status, ret = acl.rt.device_peer_access_status(device_id, peer_device_id)  (1 enabled both ways, else 0)"""
    out = ctypes.c_int32()
    ret = _c("aclrtDevicePeerAccessStatus")(cv.int32(device_id, "device_id"),
                                            cv.int32(peer_device_id, "peer_device_id"), ctypes.byref(out))
    return out.value, ret


def create_context(device_id, /):
    """context, ret = acl.rt.create_context(device_id): the new context is the thread's current one."""
    out = ctypes.c_void_p()
    ret = _c("aclrtCreateContext")(ctypes.byref(out), cv.int32(device_id, "device_id"))
    return out.value or 0, ret


def destroy_context(context, /):
    """ret = acl.rt.destroy_context(context)"""
    return _c("aclrtDestroyContext")(_ptr(context, "context"))


def set_context(context, /):
    """ret = acl.rt.set_context(context): makes context the calling thread's current context."""
    return _c("aclrtSetCurrentContext")(_ptr(context, "context"))


def get_context():
    """context, ret = acl.rt.get_context(): the calling thread's current context."""
    out = ctypes.c_void_p()
    ret = _c("aclrtGetCurrentContext")(ctypes.byref(out))
    return out.value or 0, ret


# --- streams ---------------------------------------------------------------------------------------------

def create_stream():
    """stream, ret = acl.rt.create_stream()"""
    out = ctypes.c_void_p()
    ret = _c("aclrtCreateStream")(ctypes.byref(out))
    return out.value or 0, ret


def destroy_stream(stream, /):
    """ret = acl.rt.destroy_stream(stream)"""
    return _c("aclrtDestroyStream")(_stream(stream))


def synchronize_stream(stream, /):
    """ret = acl.rt.synchronize_stream(stream)"""
    return _c("aclrtSynchronizeStream")(_stream(stream))


def synchronize_stream_with_timeout(stream, timeout, /):
    """ret = acl.rt.synchronize_stream_with_timeout(stream, timeout)  (ms; -1 waits forever)"""
    return _c("aclrtSynchronizeStreamWithTimeout")(_stream(stream), cv.int32(timeout, "timeout"))


# --- events ----------------------------------------------------------------------------------------------

def create_event():
    """event, ret = acl.rt.create_event()"""
    out = ctypes.c_void_p()
    ret = _c("aclrtCreateEvent")(ctypes.byref(out))
    return out.value or 0, ret


def create_event_with_flag(flag, /):
    """event, ret = acl.rt.create_event_with_flag(flag)"""
    out = ctypes.c_void_p()
    ret = _c("aclrtCreateEventWithFlag")(ctypes.byref(out), cv.uint32(flag, "flag"))
    return out.value or 0, ret


def destroy_event(event, /):
    """ret = acl.rt.destroy_event(event)"""
    return _c("aclrtDestroyEvent")(_ptr(event, "event"))


def record_event(event, stream, /):
    """ret = acl.rt.record_event(event, stream)"""
    return _c("aclrtRecordEvent")(_ptr(event, "event"), _stream(stream))


def query_event_status(event, /):
    """status, ret = acl.rt.query_event_status(event)  (ACL_EVENT_RECORDED_STATUS_COMPLETE 1, NOT_READY 0)"""
    out = ctypes.c_int()
    ret = _c("aclrtQueryEventStatus")(_ptr(event, "event"), ctypes.byref(out))
    return out.value, ret


def synchronize_event(event, /):
    """ret = acl.rt.synchronize_event(event)"""
    return _c("aclrtSynchronizeEvent")(_ptr(event, "event"))


# --- memory ----------------------------------------------------------------------------------------------

def malloc(size, policy, /):
    """dev_ptr, ret = acl.rt.malloc(size, policy)"""
    out = ctypes.c_void_p()
    ret = _c("aclrtMalloc")(ctypes.byref(out), _size(size, "size"), cv.int32(policy, "policy"))
    return out.value or 0, ret


def malloc_host(size, /):
    """host_ptr, ret = acl.rt.malloc_host(size)"""
    out = ctypes.c_void_p()
    ret = _c("aclrtMallocHost")(ctypes.byref(out), _size(size, "size"))
    return out.value or 0, ret


def free(dev_ptr, /):
    """ret = acl.rt.free(dev_ptr)"""
    return _c("aclrtFree")(_ptr(dev_ptr, "dev_ptr"))


def free_host(host_ptr, /):
    """ret = acl.rt.free_host(host_ptr)"""
    return _c("aclrtFreeHost")(_ptr(host_ptr, "host_ptr"))


def get_mem_info(attr, /):
    """free, total, ret = acl.rt.get_mem_info(attr)  (attr: an aclrtMemAttr, e.g. ACL_HBM_MEM 1)"""
    free_bytes, total = ctypes.c_size_t(), ctypes.c_size_t()
    ret = _c("aclrtGetMemInfo")(cv.int32(attr, "attr"), ctypes.byref(free_bytes), ctypes.byref(total))
    return free_bytes.value, total.value, ret


def memset(dev_ptr, max_count, value, count, /):
    """ret = acl.rt.memset(dev_ptr, max_count, value, count): count bytes set to the low byte of value."""
    return _c("aclrtMemset")(_ptr(dev_ptr, "dev_ptr"), _size(max_count, "max_count"), cv.int32(value, "value"),
                             _size(count, "count"))


def memset_async(dev_ptr, max_count, value, count, stream, /):
    """ret = acl.rt.memset_async(dev_ptr, max_count, value, count, stream)"""
    return _c("aclrtMemsetAsync")(_ptr(dev_ptr, "dev_ptr"), _size(max_count, "max_count"),
                                  cv.int32(value, "value"), _size(count, "count"), _stream(stream))


# --- copies ----------------------------------------------------------------------------------------------

def _copy_args(dst, dest_max, src, count, kind):
    return _ptr(dst, "dst"), _size(dest_max, "dest_max"), _ptr(src, "src"), _size(count, "count"), \
        cv.int32(kind, "kind")


def _copy2d_args(dst, dpitch, src, spitch, width, height, kind):
    return _ptr(dst, "dst"), _size(dpitch, "dpitch"), _ptr(src, "src"), _size(spitch, "spitch"), \
        _size(width, "width"), _size(height, "height"), cv.int32(kind, "kind")


def memcpy(dst, dest_max, src, count, kind, /):
    """ret = acl.rt.memcpy(dst, dest_max, src, count, kind)"""
    return _c("aclrtMemcpy")(*_copy_args(dst, dest_max, src, count, kind))


def memcpy_async(dst, dest_max, src, count, kind, stream, /):
    """ret = acl.rt.memcpy_async(dst, dest_max, src, count, kind, stream)"""
    return _c("aclrtMemcpyAsync")(*_copy_args(dst, dest_max, src, count, kind), _stream(stream))


def memcpy_async_with_condition(dst, dest_max, src, count, kind, stream, /):
    """ret = acl.rt.memcpy_async_with_condition(dst, dest_max, src, count, kind, stream)"""
    return _c("aclrtMemcpyAsyncWithCondition")(*_copy_args(dst, dest_max, src, count, kind), _stream(stream))


def memcpy2d(dst, dpitch, src, spitch, width, height, kind, /):
    """ret = acl.rt.memcpy2d(dst, dpitch, src, spitch, width, height, kind)"""
    return _c("aclrtMemcpy2d")(*_copy2d_args(dst, dpitch, src, spitch, width, height, kind))


def memcpy2d_async(dst, dpitch, src, spitch, width, height, kind, stream, /):
    """ret = acl.rt.memcpy2d_async(dst, dpitch, src, spitch, width, height, kind, stream)"""
    return _c("aclrtMemcpy2dAsync")(*_copy2d_args(dst, dpitch, src, spitch, width, height, kind), _stream(stream))


def get_memcpy_desc_size(kind, /):
    """desc_size, ret = acl.rt.get_memcpy_desc_size(kind)"""
    out = ctypes.c_size_t()
    ret = _c("aclrtGetMemcpyDescSize")(cv.int32(kind, "kind"), ctypes.byref(out))
    return out.value, ret


def set_memcpy_desc(desc, kind, src_addr, dst_addr, count, config, /):
    """desc, ret = acl.rt.set_memcpy_desc(desc, kind, src_addr, dst_addr, count, config)  (config: 0)"""
    c_desc = _ptr(desc, "desc")
    ret = _c("aclrtSetMemcpyDesc")(c_desc, cv.int32(kind, "kind"), _ptr(src_addr, "src_addr"),
                                   _ptr(dst_addr, "dst_addr"), _size(count, "count"), _ptr(config, "config"))
    return c_desc, ret


def memcpy_async_with_desc(desc, kind, stream, /):
    """ret = acl.rt.memcpy_async_with_desc(desc, kind, stream)"""
    return _c("aclrtMemcpyAsyncWithDesc")(_ptr(desc, "desc"), cv.int32(kind, "kind"), _stream(stream))


# --- batch copies (this project's extension, pyACL's list convention) -----------------------------------

def _batch_arrays(dsts, dest_maxs, srcs, sizes, attrs, attrs_indexes):
    """The C arguments of a batch call, or None when the list lengths disagree."""
    lists = {"dsts": dsts, "dest_maxs": dest_maxs, "srcs": srcs, "sizes": sizes, "attrs": attrs,
             "attrs_indexes": attrs_indexes}
    for name, value in lists.items():
        cv.pyacl_list(value, name)
    if not len(dsts) == len(dest_maxs) == len(srcs) == len(sizes) or len(attrs) != len(attrs_indexes):
        return None
    for name in ("dsts", "srcs"):
        for i, v in enumerate(lists[name]):
            _ptr(v, f"{name}[{i}]")
    for name in ("dest_maxs", "sizes", "attrs_indexes"):
        for i, v in enumerate(lists[name]):
            _size(v, f"{name}[{i}]")
    return cv.batch_arrays(dsts, dest_maxs, srcs, sizes, len(sizes), attrs, attrs_indexes, len(attrs))


def _batch(name, arrays, stream=()):
    fail_index = ctypes.c_size_t(SIZE_MAX)
    if arrays is None:
        return SIZE_MAX, ACL_ERROR_INVALID_PARAM
    ret = _c(name)(*arrays, ctypes.byref(fail_index), *stream)
    return fail_index.value, ret


def memcpy_batch(dsts, dest_maxs, srcs, sizes, attrs, attrs_indexes, /):
    """fail_index, ret = acl.rt.memcpy_batch(dsts, dest_maxs, srcs, sizes, attrs, attrs_indexes)"""
    return _batch("aclrtMemcpyBatch", _batch_arrays(dsts, dest_maxs, srcs, sizes, attrs, attrs_indexes))


def memcpy_batch_async(dsts, dest_maxs, srcs, sizes, attrs, attrs_indexes, stream, /):
    """fail_index, ret = acl.rt.memcpy_batch_async(dsts, dest_maxs, srcs, sizes, attrs, attrs_indexes, stream)"""
    arrays = _batch_arrays(dsts, dest_maxs, srcs, sizes, attrs, attrs_indexes)
    return _batch("aclrtMemcpyBatchAsync", arrays, (_stream(stream),))


def memcpy_batch_v2(dsts, dest_maxs, srcs, sizes, attrs, attrs_indexes, /):
    """ret = acl.rt.memcpy_batch_v2(dsts, dest_maxs, srcs, sizes, attrs, attrs_indexes): no fail_index."""
    arrays = _batch_arrays(dsts, dest_maxs, srcs, sizes, attrs, attrs_indexes)
    return ACL_ERROR_INVALID_PARAM if arrays is None else _c("aclrtMemcpyBatchV2")(*arrays)


def memcpy_batch_async_v2(dsts, dest_maxs, srcs, sizes, attrs, attrs_indexes, stream, /):
    """ret = acl.rt.memcpy_batch_async_v2(dsts, dest_maxs, srcs, sizes, attrs, attrs_indexes, stream)"""
    arrays = _batch_arrays(dsts, dest_maxs, srcs, sizes, attrs, attrs_indexes)
    return ACL_ERROR_INVALID_PARAM if arrays is None else _c("aclrtMemcpyBatchAsyncV2")(*arrays, _stream(stream))
