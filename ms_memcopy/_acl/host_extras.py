"""The calls of the host ACL runtime only (acl_host/acl_host_ext.h): registrations of framework memory,
memory locations, deferred streams, host functions on a stream, the emulated SoC profile; re-exported by
ms_memcopy.runtime."""
import ctypes
import itertools
import threading
from collections import namedtuple
from typing import Any, Callable, Dict, Optional, Sequence

from . import convert as cv
from . import library as _acl_lib
from .call import call as _call

#: aclhostGetMemLocation's result: an aclrtMemLocationType, the device id (DEVICE memory), and the
#: allocation holding the pointer (base address and size; 0 for UNREGISTERED memory).
MemLocation = namedtuple("MemLocation", ["type", "device_id", "base", "size"])


# --- host runtime extras (acl_host/acl_host_ext.h) -----------------------------------------------

def register_device_memory(ptr: cv.Pointer, size: int) -> None:
    """aclhostRegisterDeviceMemory(ptr, size): treat [ptr, ptr+size) as memory of the current device."""
    size = cv.size(size, "size")
    _call("aclhostRegisterDeviceMemory", cv.address(ptr, "ptr", need=size), size)


def unregister_device_memory(ptr: cv.Pointer) -> None:
    """aclhostUnregisterDeviceMemory(ptr): drops one reference of a registration made at ptr."""
    _call("aclhostUnregisterDeviceMemory", cv.address(ptr, "ptr"))


def register_device_memory_batch(ptrs: Sequence[cv.Pointer], sizes: Sequence[int]) -> None:
    """aclhostRegisterDeviceMemoryBatch(ptrs, sizes, count): register_device_memory of every range under
    one lock; all or nothing (a refused range i is reported with "item i" and nothing stays registered)."""
    ptrs, sizes = cv.sequence(ptrs, "ptrs"), cv.sequence(sizes, "sizes")
    if len(ptrs) != len(sizes):
        raise ValueError(f"ptrs and sizes must have the same length, got {len(ptrs)} and {len(sizes)}")
    c_sizes = (ctypes.c_size_t * len(sizes))(*[cv.size(v, f"sizes[{i}]") for i, v in enumerate(sizes)])
    c_ptrs = (ctypes.c_void_p * len(ptrs))(*[cv.address(v, f"ptrs[{i}]", need=c_sizes[i])
                                              for i, v in enumerate(ptrs)])
    _call("aclhostRegisterDeviceMemoryBatch", c_ptrs, c_sizes, len(ptrs))


def unregister_device_memory_batch(ptrs: Sequence[cv.Pointer]) -> None:
    """aclhostUnregisterDeviceMemoryBatch(ptrs, count): unregister_device_memory of every pointer under one
    lock; the first unknown one is reported after the others are released."""
    ptrs = cv.sequence(ptrs, "ptrs")
    c_ptrs = (ctypes.c_void_p * len(ptrs))(*[cv.address(v, f"ptrs[{i}]") for i, v in enumerate(ptrs)])
    _call("aclhostUnregisterDeviceMemoryBatch", c_ptrs, len(ptrs))


def get_mem_location(ptr: cv.Pointer) -> MemLocation:
    """aclhostGetMemLocation(ptr, ...): where the runtime thinks ptr lives, as a MemLocation."""
    loc_type, device_id = ctypes.c_int32(), ctypes.c_int32()
    base, size = ctypes.c_void_p(), ctypes.c_size_t()
    _call("aclhostGetMemLocation", cv.address(ptr, "ptr"), ctypes.byref(loc_type), ctypes.byref(device_id),
          ctypes.byref(base), ctypes.byref(size))
    return MemLocation(loc_type.value, device_id.value, base.value or 0, size.value)


def set_stream_deferred(stream: Optional[int], deferred: bool) -> None:
    """aclhostSetStreamDeferred(stream, deferred): with deferred True, enqueueing on stream wakes no thread
    and the queued tasks run when a thread waits for the stream (synchronize, free, destroy); False
    restores background execution. For callers that synchronize right after enqueueing."""
    if not isinstance(deferred, bool):
        raise TypeError(f"deferred must be a bool, not {type(deferred).__name__}")
    _call("aclhostSetStreamDeferred", cv.stream(stream), int(deferred))


_host_funcs: Dict[int, Callable[[], Any]] = {}  # key -> callable, until the stream runs it
_host_func_keys = itertools.count(1)
_host_funcs_lock = threading.Lock()


@_acl_lib.aclhostHostFunc
def _run_host_func(key: int) -> None:
    with _host_funcs_lock:
        fn = _host_funcs.pop(key, None)
    if fn is not None:
        fn()  # an exception is reported by ctypes (sys.unraisablehook); the stream goes on


def launch_host_func(stream: Optional[int], fn: Callable[[], Any]) -> None:
    """aclhostLaunchHostFunc(stream, fn, userData): runs fn() on the stream's worker after every task
    submitted before it; later tasks wait for it. fn must not wait for streams (synchronize, destroy, free)."""
    if not callable(fn):
        raise TypeError(f"fn must be callable, not {type(fn).__name__}")
    handle = cv.stream(stream)
    with _host_funcs_lock:
        key = next(_host_func_keys)
        _host_funcs[key] = fn
    try:
        _call("aclhostLaunchHostFunc", handle, _run_host_func, key)
    except BaseException:
        with _host_funcs_lock:
            _host_funcs.pop(key, None)
        raise


def soc_profile() -> Optional[str]:
    """aclhostGetSocProfile(): the emulated SoC profile (MS_MEMCOPY_SOC, default Ascend910B)."""
    raw = _acl_lib.func("aclhostGetSocProfile")()
    return None if raw is None else raw.decode("utf-8", errors="replace")


def copy_strategy() -> str:
    """aclhostGetCopyStrategy(): how this process copies large copies (std::memcpy or streaming stores,
    threads), with the calibration's measurements or the variable that fixed the choice. The first
    call calibrates when no large copy has yet (tens of milliseconds)."""
    raw = _acl_lib.func("aclhostGetCopyStrategy")()
    return "" if raw is None else raw.decode("utf-8", errors="replace")
