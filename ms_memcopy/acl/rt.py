"""acl.rt: devices, streams, memory and memory copies in pyACL conventions (codes, never AclError).

Pointers and streams are ints (numpy arrays and objects with ``.ptr`` are also
accepted as pointers; None is NULL). Batch calls take lists plus explicit
num_batches/num_attrs as in C (None for a list passes a NULL array) and
return ``(fail_index, ret)``; fail_index starts at SIZE_MAX, which is what
it stays at when no single copy is at fault.
"""
import ctypes

from .. import _acl_lib
from .. import _convert as cv
from ..acl_constants import ACL_MEM_MALLOC_HUGE_FIRST, SIZE_MAX

__all__ = [
    "set_device", "reset_device", "get_device", "get_device_count",
    "create_stream", "destroy_stream", "synchronize_stream", "synchronize_stream_with_timeout",
    "malloc", "malloc_host", "free", "free_host",
    "memcpy", "memcpy_async", "memcpy_async_with_condition", "memcpy2d", "memcpy2d_async",
    "get_memcpy_desc_size", "set_memcpy_desc", "memcpy_async_with_desc",
    "memcpy_batch", "memcpy_batch_async", "memcpy_batch_v2", "memcpy_batch_async_v2",
]


def _c(name):
    return _acl_lib.func(name)


def set_device(device_id):
    """ret = acl.rt.set_device(device_id)"""
    return _c("aclrtSetDevice")(cv.int32(device_id, "device_id"))


def reset_device(device_id):
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


def create_stream():
    """stream, ret = acl.rt.create_stream()"""
    out = ctypes.c_void_p()
    ret = _c("aclrtCreateStream")(ctypes.byref(out))
    return out.value or 0, ret


def destroy_stream(stream):
    """ret = acl.rt.destroy_stream(stream)"""
    return _c("aclrtDestroyStream")(cv.stream(stream))


def synchronize_stream(stream):
    """ret = acl.rt.synchronize_stream(stream)"""
    return _c("aclrtSynchronizeStream")(cv.stream(stream))


def synchronize_stream_with_timeout(stream, timeout):
    """ret = acl.rt.synchronize_stream_with_timeout(stream, timeout)  (ms; -1 waits forever)"""
    return _c("aclrtSynchronizeStreamWithTimeout")(cv.stream(stream), cv.int32(timeout, "timeout"))


def malloc(size, policy=ACL_MEM_MALLOC_HUGE_FIRST):
    """dev_ptr, ret = acl.rt.malloc(size, policy)"""
    out = ctypes.c_void_p()
    ret = _c("aclrtMalloc")(ctypes.byref(out), cv.size(size, "size"), cv.int32(policy, "policy"))
    return out.value or 0, ret


def malloc_host(size):
    """host_ptr, ret = acl.rt.malloc_host(size)"""
    out = ctypes.c_void_p()
    ret = _c("aclrtMallocHost")(ctypes.byref(out), cv.size(size, "size"))
    return out.value or 0, ret


def free(dev_ptr):
    """ret = acl.rt.free(dev_ptr)"""
    return _c("aclrtFree")(cv.address(dev_ptr, "dev_ptr"))


def free_host(host_ptr):
    """ret = acl.rt.free_host(host_ptr)"""
    return _c("aclrtFreeHost")(cv.address(host_ptr, "host_ptr"))


def memcpy(dst, dest_max, src, count, kind):
    """ret = acl.rt.memcpy(dst, dest_max, src, count, kind)"""
    return _c("aclrtMemcpy")(*cv.copy_args(dst, dest_max, src, count, kind))


def memcpy_async(dst, dest_max, src, count, kind, stream):
    """ret = acl.rt.memcpy_async(dst, dest_max, src, count, kind, stream)"""
    return _c("aclrtMemcpyAsync")(*cv.copy_args(dst, dest_max, src, count, kind), cv.stream(stream))


def memcpy_async_with_condition(dst, dest_max, src, count, kind, stream):
    """ret = acl.rt.memcpy_async_with_condition(dst, dest_max, src, count, kind, stream)"""
    return _c("aclrtMemcpyAsyncWithCondition")(*cv.copy_args(dst, dest_max, src, count, kind), cv.stream(stream))


def memcpy2d(dst, dpitch, src, spitch, width, height, kind):
    """ret = acl.rt.memcpy2d(dst, dpitch, src, spitch, width, height, kind)"""
    return _c("aclrtMemcpy2d")(*cv.copy2d_args(dst, dpitch, src, spitch, width, height, kind))


def memcpy2d_async(dst, dpitch, src, spitch, width, height, kind, stream):
    """ret = acl.rt.memcpy2d_async(dst, dpitch, src, spitch, width, height, kind, stream)"""
    return _c("aclrtMemcpy2dAsync")(*cv.copy2d_args(dst, dpitch, src, spitch, width, height, kind),
                                    cv.stream(stream))


def get_memcpy_desc_size(kind):
    """desc_size, ret = acl.rt.get_memcpy_desc_size(kind)"""
    out = ctypes.c_size_t()
    ret = _c("aclrtGetMemcpyDescSize")(cv.int32(kind, "kind"), ctypes.byref(out))
    return out.value, ret


def set_memcpy_desc(desc, kind, src_addr, dst_addr, count, config=0):
    """desc, ret = acl.rt.set_memcpy_desc(desc, kind, src_addr, dst_addr, count, config)  (config: 0)"""
    count = cv.size(count, "count")
    c_desc = cv.address(desc, "desc", write=True)
    ret = _c("aclrtSetMemcpyDesc")(c_desc, cv.int32(kind, "kind"), cv.address(src_addr, "src_addr", need=count),
                                   cv.address(dst_addr, "dst_addr", need=count, write=True), count,
                                   cv.address(config, "config"))
    return c_desc, ret


def memcpy_async_with_desc(desc, kind, stream):
    """ret = acl.rt.memcpy_async_with_desc(desc, kind, stream)"""
    return _c("aclrtMemcpyAsyncWithDesc")(cv.address(desc, "desc"), cv.int32(kind, "kind"), cv.stream(stream))


def _batch(name, args, stream=()):
    fail_index = ctypes.c_size_t(SIZE_MAX)
    ret = _c(name)(*args, ctypes.byref(fail_index), *stream)
    return fail_index.value, ret


def memcpy_batch(dsts, dest_maxs, srcs, sizes, num_batches, attrs, attrs_indexes, num_attrs):
    """fail_index, ret = acl.rt.memcpy_batch(dsts, dest_maxs, srcs, sizes, num_batches,
    attrs, attrs_indexes, num_attrs)"""
    args = cv.batch_arrays(dsts, dest_maxs, srcs, sizes, num_batches, attrs, attrs_indexes, num_attrs)
    return _batch("aclrtMemcpyBatch", args)


def memcpy_batch_async(dsts, dest_maxs, srcs, sizes, num_batches, attrs, attrs_indexes, num_attrs, stream):
    """fail_index, ret = acl.rt.memcpy_batch_async(dsts, dest_maxs, srcs, sizes, num_batches,
    attrs, attrs_indexes, num_attrs, stream)"""
    args = cv.batch_arrays(dsts, dest_maxs, srcs, sizes, num_batches, attrs, attrs_indexes, num_attrs)
    return _batch("aclrtMemcpyBatchAsync", args, (cv.stream(stream),))


def memcpy_batch_v2(dsts, dest_maxs, srcs, sizes, num_batches, attrs, attrs_indexes, num_attrs):
    """ret = acl.rt.memcpy_batch_v2(...): memcpy_batch without fail_index (CANN 9.1+)."""
    args = cv.batch_arrays(dsts, dest_maxs, srcs, sizes, num_batches, attrs, attrs_indexes, num_attrs)
    return _c("aclrtMemcpyBatchV2")(*args)


def memcpy_batch_async_v2(dsts, dest_maxs, srcs, sizes, num_batches, attrs, attrs_indexes, num_attrs, stream):
    """ret = acl.rt.memcpy_batch_async_v2(...): memcpy_batch_async without fail_index (CANN 9.1+)."""
    args = cv.batch_arrays(dsts, dest_maxs, srcs, sizes, num_batches, attrs, attrs_indexes, num_attrs)
    return _c("aclrtMemcpyBatchAsyncV2")(*args, cv.stream(stream))
