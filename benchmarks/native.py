"""ctypes binding of libms_memcopy_bench.so: loops timed in C, returned as Python loops.

Every function here returns a loop (``loop(iters) -> seconds``, see ``timing``). The ACL loops take
the ACL functions as addresses from the loaded ACL library, so the C side calls exactly what
ms_memcopy.runtime calls, minus Python.
"""
import ctypes
from ctypes import c_int, c_int64, c_size_t, c_void_p

from ms_memcopy import _acl_lib, _paths

LIBRARY = _paths.LIB_DIR / "libms_memcopy_bench.so"
_lib = None
_P = c_void_p
_SIGNATURES = {
    "msmc_bench_memcpy_items": [_P, _P, _P, c_size_t, c_int64],
    "msmc_bench_memcpy_rows": [_P, c_size_t, _P, c_size_t, c_size_t, c_size_t, c_int64],
    "msmc_bench_memcpy_threads": [_P, _P, c_size_t, c_int, c_int64],
    "msmc_bench_acl_memcpy": [_P, _P, c_size_t, _P, c_size_t, c_int, c_int64],
    "msmc_bench_acl_memcpy_async": [_P, _P, _P, c_size_t, _P, c_size_t, c_int, _P, c_int64],
    "msmc_bench_acl_memcpy2d": [_P, _P, c_size_t, _P, c_size_t, c_size_t, c_size_t, c_int, c_int64],
    "msmc_bench_acl_memcpy2d_async": [_P, _P, _P, c_size_t, _P, c_size_t, c_size_t, c_size_t, c_int, _P, c_int64],
    "msmc_bench_acl_batch": [_P, _P, _P, _P, _P, c_size_t, _P, c_int64],
    "msmc_bench_acl_batch_async": [_P, _P, _P, _P, _P, _P, c_size_t, _P, _P, c_int64],
    "msmc_bench_acl_desc": [_P, _P, _P, _P, c_int, _P, _P, c_size_t, _P, c_int64],
}


class BenchError(RuntimeError):
    """An ACL call failed inside a timing loop."""


def lib():
    global _lib
    if _lib is None:
        if not LIBRARY.exists():
            raise FileNotFoundError(f"{LIBRARY} is missing: build it with `python setup.py build_ext --inplace` "
                                    "or reinstall ms_memcopy")
        loaded = ctypes.CDLL(str(LIBRARY))
        for name, argtypes in _SIGNATURES.items():
            fn = getattr(loaded, name)
            fn.argtypes = argtypes
            fn.restype = c_int64
        _lib = loaded
    return _lib


def acl_address(name):
    """The address of ACL function `name` in the loaded ACL library."""
    return ctypes.cast(_acl_lib.func(name), c_void_p).value


def _loop(name, *args, what=None):
    fn = getattr(lib(), name)

    def loop(iters):
        ns = fn(*args, iters)
        if ns < 0:
            raise BenchError(f"{what or name}: ACL error {-ns} ({_acl_lib.recent_err_msg()})")
        return ns * 1e-9
    loop.keepalive = args  # ctypes arrays passed by pointer must outlive the loop
    return loop


def pointer_array(values):
    return (c_void_p * len(values))(*values)


def size_array(values):
    return (c_size_t * len(values))(*values)


# --- baselines ---------------------------------------------------------------------------------------

def memcpy_items(dsts, srcs, sizes):
    """std::memcpy over each item (the floor of a batch, or of one copy when there is one item)."""
    return _loop("msmc_bench_memcpy_items", pointer_array(dsts), pointer_array(srcs), size_array(sizes), len(sizes))


def memcpy_rows(dst, dpitch, src, spitch, width, height):
    """std::memcpy per row (the floor of a 2D copy)."""
    return _loop("msmc_bench_memcpy_rows", dst, dpitch, src, spitch, width, height)


def memcpy_threads(dst, src, nbytes, threads):
    """One copy split across `threads` threads (started before timing), each with std::memcpy."""
    return _loop("msmc_bench_memcpy_threads", dst, src, nbytes, threads)


# --- our calls ---------------------------------------------------------------------------------------

def acl_memcpy(dst, dest_max, src, count, kind):
    return _loop("msmc_bench_acl_memcpy", acl_address("aclrtMemcpy"), dst, dest_max, src, count, kind,
                 what="aclrtMemcpy")


def acl_memcpy_async(dst, dest_max, src, count, kind, stream, api="aclrtMemcpyAsync"):
    return _loop("msmc_bench_acl_memcpy_async", acl_address(api), acl_address("aclrtSynchronizeStream"), dst,
                 dest_max, src, count, kind, stream, what=api)


def acl_memcpy2d(dst, dpitch, src, spitch, width, height, kind):
    return _loop("msmc_bench_acl_memcpy2d", acl_address("aclrtMemcpy2d"), dst, dpitch, src, spitch, width, height,
                 kind, what="aclrtMemcpy2d")


def acl_memcpy2d_async(dst, dpitch, src, spitch, width, height, kind, stream):
    return _loop("msmc_bench_acl_memcpy2d_async", acl_address("aclrtMemcpy2dAsync"),
                 acl_address("aclrtSynchronizeStream"), dst, dpitch, src, spitch, width, height, kind, stream,
                 what="aclrtMemcpy2dAsync")


def _batch_arrays(dsts, srcs, sizes, attr):
    return (pointer_array(dsts), size_array(sizes), pointer_array(srcs), size_array(sizes), len(sizes),
            ctypes.cast(ctypes.pointer(attr), c_void_p))


def acl_batch(dsts, srcs, sizes, attr):
    """aclrtMemcpyBatch with one attribute (an aclrtMemcpyBatchAttr) for every item."""
    args = _batch_arrays(dsts, srcs, sizes, attr)
    loop = _loop("msmc_bench_acl_batch", acl_address("aclrtMemcpyBatch"), *args, what="aclrtMemcpyBatch")
    loop.keepalive = (args, attr)
    return loop


def acl_batch_async(dsts, srcs, sizes, attr, stream):
    args = _batch_arrays(dsts, srcs, sizes, attr)
    loop = _loop("msmc_bench_acl_batch_async", acl_address("aclrtMemcpyBatchAsync"),
                 acl_address("aclrtSynchronizeStream"), *args, stream, what="aclrtMemcpyBatchAsync")
    loop.keepalive = (args, attr)
    return loop


def acl_desc(desc, kind, src, dst, count, stream):
    return _loop("msmc_bench_acl_desc", acl_address("aclrtSetMemcpyDesc"), acl_address("aclrtMemcpyAsyncWithDesc"),
                 acl_address("aclrtSynchronizeStream"), desc, kind, src, dst, count, stream,
                 what="aclrtSetMemcpyDesc + aclrtMemcpyAsyncWithDesc")
