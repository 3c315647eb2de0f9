"""ctypes binding of the ACL library: prototypes, structs, one lazily loaded handle.

Loads ``_paths.get_acl_library()`` (the host runtime, or CANN's libascendcl)
once, on first use, from any thread. Every function of the ACL header subset
gets its argtypes/restype here; the host-runtime calls (aclhost*) and calls a
given library version lacks (e.g. aclrtMemcpyBatchV2 before CANN 9.1) are
looked up when present, and :func:`func` reports a missing one by name.
Nothing here raises AclError: this is the codes layer both Python layers sit on.
"""
import ctypes
import threading
from typing import Any, Dict, Optional, Tuple
from ctypes import POINTER, c_char_p, c_int, c_int32, c_size_t, c_uint8, c_uint32, c_void_p

from .._extension import _paths
from .constants import *  # noqa: F403  (the ACL_* constants, re-exported)
from .constants import SIZE_MAX  # noqa: F401


class aclrtMemLocation(ctypes.Structure):  # noqa: N801  (C name)
    _fields_ = [("id", c_uint32), ("type", c_int)]


class aclrtMemcpyBatchAttr(ctypes.Structure):  # noqa: N801  (C name)
    _fields_ = [("dstLoc", aclrtMemLocation), ("srcLoc", aclrtMemLocation), ("rsv", c_uint8 * 16)]


assert ctypes.sizeof(aclrtMemLocation) == 8, "aclrtMemLocation must be 8 bytes {uint32 id; enum type}"
assert ctypes.sizeof(aclrtMemcpyBatchAttr) == 32, "aclrtMemcpyBatchAttr must be 32 bytes {dstLoc, srcLoc, rsv[16]}"
assert ctypes.sizeof(c_size_t) == 8, "ms_memcopy supports 64-bit targets only"

aclError = c_int
_kind = c_int  # aclrtMemcpyKind
_policy = c_int  # aclrtMemMallocPolicy
_stream = c_void_p
_p_size = POINTER(c_size_t)
_p_ptr = POINTER(c_void_p)
_p_attr = POINTER(aclrtMemcpyBatchAttr)
_batch = [_p_ptr, _p_size, _p_ptr, _p_size, c_size_t, _p_attr, _p_size, c_size_t]

#: name -> (restype, argtypes) for every function declared in acl/acl.h.
PROTOTYPES = {
    "aclInit": (aclError, [c_char_p]),
    "aclFinalize": (aclError, []),
    "aclGetRecentErrMsg": (c_char_p, []),
    "aclrtGetSocName": (c_char_p, []),
    "aclrtSetDevice": (aclError, [c_int32]),
    "aclrtResetDevice": (aclError, [c_int32]),
    "aclrtGetDevice": (aclError, [POINTER(c_int32)]),
    "aclrtGetDeviceCount": (aclError, [POINTER(c_uint32)]),
    "aclrtGetRunMode": (aclError, [POINTER(c_int)]),
    "aclrtSynchronizeDevice": (aclError, []),
    "aclrtDeviceCanAccessPeer": (aclError, [POINTER(c_int32), c_int32, c_int32]),
    "aclrtDeviceEnablePeerAccess": (aclError, [c_int32, c_uint32]),
    "aclrtDeviceDisablePeerAccess": (aclError, [c_int32]),
    "aclrtDevicePeerAccessStatus": (aclError, [c_int32, c_int32, POINTER(c_int32)]),
    "aclrtCreateContext": (aclError, [_p_ptr, c_int32]),
    "aclrtDestroyContext": (aclError, [c_void_p]),
    "aclrtSetCurrentContext": (aclError, [c_void_p]),
    "aclrtGetCurrentContext": (aclError, [_p_ptr]),
    "aclrtCreateStream": (aclError, [_p_ptr]),
    "aclrtDestroyStream": (aclError, [_stream]),
    "aclrtSynchronizeStream": (aclError, [_stream]),
    "aclrtSynchronizeStreamWithTimeout": (aclError, [_stream, c_int32]),
    "aclrtCreateEvent": (aclError, [_p_ptr]),
    "aclrtCreateEventWithFlag": (aclError, [_p_ptr, c_uint32]),
    "aclrtDestroyEvent": (aclError, [c_void_p]),
    "aclrtRecordEvent": (aclError, [c_void_p, _stream]),
    "aclrtQueryEventStatus": (aclError, [c_void_p, POINTER(c_int)]),
    "aclrtSynchronizeEvent": (aclError, [c_void_p]),
    "aclrtStreamWaitEvent": (aclError, [_stream, c_void_p]),
    "aclrtMalloc": (aclError, [_p_ptr, c_size_t, _policy]),
    "aclrtMallocHost": (aclError, [_p_ptr, c_size_t]),
    "aclrtFree": (aclError, [c_void_p]),
    "aclrtFreeHost": (aclError, [c_void_p]),
    "aclrtGetMemInfo": (aclError, [c_int, _p_size, _p_size]),
    "aclrtMemset": (aclError, [c_void_p, c_size_t, c_int32, c_size_t]),
    "aclrtMemsetAsync": (aclError, [c_void_p, c_size_t, c_int32, c_size_t, _stream]),
    "aclrtHostRegister": (aclError, [c_void_p, ctypes.c_uint64, c_int, _p_ptr]),
    "aclrtHostRegisterV2": (aclError, [c_void_p, ctypes.c_uint64, c_uint32]),
    "aclrtHostGetDevicePointer": (aclError, [c_void_p, _p_ptr, c_uint32]),
    "aclrtHostUnregister": (aclError, [c_void_p]),
    "aclrtMemcpy": (aclError, [c_void_p, c_size_t, c_void_p, c_size_t, _kind]),
    "aclrtMemcpyAsync": (aclError, [c_void_p, c_size_t, c_void_p, c_size_t, _kind, _stream]),
    "aclrtMemcpyAsyncWithCondition": (aclError, [c_void_p, c_size_t, c_void_p, c_size_t, _kind, _stream]),
    "aclrtMemcpy2d": (aclError, [c_void_p, c_size_t, c_void_p, c_size_t, c_size_t, c_size_t, _kind]),
    "aclrtMemcpy2dAsync": (aclError, [c_void_p, c_size_t, c_void_p, c_size_t, c_size_t, c_size_t, _kind, _stream]),
    "aclrtGetMemcpyDescSize": (aclError, [_kind, _p_size]),
    "aclrtSetMemcpyDesc": (aclError, [c_void_p, _kind, c_void_p, c_void_p, c_size_t, c_void_p]),
    "aclrtMemcpyAsyncWithDesc": (aclError, [c_void_p, _kind, _stream]),
    "aclrtMemcpyBatch": (aclError, _batch + [_p_size]),
    "aclrtMemcpyBatchAsync": (aclError, _batch + [_p_size, _stream]),
    "aclrtMemcpyBatchV2": (aclError, list(_batch)),
    "aclrtMemcpyBatchAsyncV2": (aclError, _batch + [_stream]),
}

#: void (*aclhostHostFunc)(void *userData)
aclhostHostFunc = ctypes.CFUNCTYPE(None, c_void_p)

#: The host runtime's own calls (acl_host/acl_host_ext.h); absent from CANN's libascendcl.
HOST_PROTOTYPES = {
    "aclhostRegisterDeviceMemory": (aclError, [c_void_p, c_size_t]),
    "aclhostUnregisterDeviceMemory": (aclError, [c_void_p]),
    "aclhostRegisterDeviceMemoryBatch": (aclError, [_p_ptr, _p_size, c_size_t]),
    "aclhostUnregisterDeviceMemoryBatch": (aclError, [_p_ptr, c_size_t]),
    "aclhostGetMemLocation": (aclError, [c_void_p, POINTER(c_int32), POINTER(c_int32), _p_ptr, _p_size]),
    "aclhostSetStreamDeferred": (aclError, [_stream, c_int32]),
    "aclhostLaunchHostFunc": (aclError, [_stream, aclhostHostFunc, c_void_p]),
    "aclhostCompleteStream": (aclError, [_stream]),
    "aclhostGetHostWaitCount": (aclError, [POINTER(ctypes.c_uint64)]),
    "aclhostGetLiveResourceCounts": (aclError, [POINTER(ctypes.c_uint64), POINTER(ctypes.c_uint64)]),
    "aclhostGetOrderCheckCounts": (aclError, [POINTER(ctypes.c_uint64), POINTER(ctypes.c_uint64)]),
    "aclhostCheckHostAccess": (aclError, [c_void_p, c_size_t, c_int32]),
    "aclhostGetSocProfile": (c_char_p, []),
    "aclhostGetCopyStrategy": (c_char_p, []),
}

_lock = threading.Lock()
_lib: Optional[ctypes.CDLL] = None
_functions: Dict[str, Any] = {}


def _load() -> Tuple[ctypes.CDLL, Dict[str, Any]]:
    path = _paths.get_acl_library()
    lib = ctypes.CDLL(path)
    functions = {}
    for table in (PROTOTYPES, HOST_PROTOTYPES):
        for name, (restype, argtypes) in table.items():
            try:
                fn = getattr(lib, name)
            except AttributeError:
                continue
            fn.restype = restype
            fn.argtypes = argtypes
            functions[name] = fn
    return lib, functions


def lib() -> ctypes.CDLL:
    """The loaded ACL library (ctypes.CDLL), loading it on first call."""
    global _lib, _functions
    if _lib is None:
        with _lock:
            if _lib is None:
                loaded, functions = _load()
                _functions = functions
                _lib = loaded
    return _lib


def has(name: str) -> bool:
    """True when the loaded library exports the ACL function ``name``."""
    lib()
    return name in _functions


def func(name: str) -> Any:
    """The declared ctypes function ``name``; NotImplementedError naming it when the library lacks it."""
    lib()
    try:
        return _functions[name]
    except KeyError:
        if name not in PROTOTYPES and name not in HOST_PROTOTYPES:
            raise AttributeError(f"{name} is not an ACL function that ms_memcopy declares") from None
        raise NotImplementedError(
            f"{name} is not exported by the ACL library {lib()._name}") from None


def recent_err_msg() -> Optional[str]:
    """aclGetRecentErrMsg() of the calling thread as str, or None.

    As in CANN, reading does not clear the text, and each failure's message is put in front of the older
    ones (new + "\n" + old).
    """
    raw = func("aclGetRecentErrMsg")()
    text = None if raw is None else raw.decode("utf-8", errors="replace")
    _seen.text = text
    return text


_seen = threading.local()


def new_err_msg() -> Optional[str]:
    """After a failing call: the part of this thread's aclGetRecentErrMsg() text added since ms_memcopy last
    read it on the thread (that failure's message without the older ones), or None."""
    previous = getattr(_seen, "text", None)
    text = recent_err_msg()
    if text is None:
        return None
    if previous:
        # text is new + "\n" + previous, with previous's oldest end cut when the runtime bounds the text.
        end = text.find("\n")
        while end >= 0:
            if previous.startswith(text[end + 1:]):
                return text[:end]
            end = text.find("\n", end + 1)
    return text
