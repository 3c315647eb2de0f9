"""HostBuffer: host memory the primitives copy into and out of.

Pinned buffers come from aclrtMallocHost (copies into them are asynchronous on
a stream); pageable ones are ordinary process memory (ACL copies them
synchronously). ``HostBuffer.wrap(obj)`` pins memory that already exists (a
numpy array, a memoryview, an mmap) by registering it (aclrtHostRegisterV2).
Each buffer is registered in the kernels' HostBuffer table, and the primitives
refer to it by that id, so a kernel launched after close() fails cleanly
instead of touching freed memory.

Ordering: a HostBuffer knows what may still be copying into or out of it: the
MindSpore launches of the primitives built on it (PYNATIVE_MODE queues them and
runs them later on its own thread) and the streams that carry its ACL copies.
Reading it (``numpy()``), ``wait()`` and ``close()`` first wait for those. Memory is released when the buffer is
closed and no numpy view of it is alive any more, so a view never dangles.
"""
import heapq
import numbers
import sys
import threading
import warnings
import weakref
from types import ModuleType
from typing import Any, Callable, List, Optional, Sequence, Union

import numpy as np

from ._acl.constants import ACL_ERROR_RT_CONTEXT_NULL, ACL_HOST_REG_PINNED
from ._closing import ClosesOnExit
from ._extension import _kernels_lib
from ._framework import acl_device, sync_launches
from .errors import AclError

_ALIGNMENT = 64
_REGISTER_ALIGNMENT = 4096  # CANN: the start of a host registration must be 4 KiB aligned


class _Allocation:
    """Owns the memory; freed when the last holder (buffer or view) lets go."""

    def __init__(self, nbytes: int, pinned: bool) -> None:
        self.nbytes = nbytes
        self.pinned = pinned
        self._keepalive: Optional[np.ndarray] = None
        if nbytes == 0:
            self.ptr = 0
        elif pinned:
            from . import runtime

            _ensure_current_context(runtime)
            self.ptr = runtime.malloc_host(nbytes)
            finalizer = weakref.finalize(self, _free_pinned, self.ptr)
            # the ACL runtime may be gone at interpreter shutdown (typeshed has finalize's atexit property
            # as an attribute outside its __slots__)
            finalizer.atexit = False  # type: ignore[misc]
        else:
            raw = np.empty(nbytes + _ALIGNMENT, dtype=np.uint8)
            shift = (-raw.ctypes.data) % _ALIGNMENT
            self._keepalive = raw
            self.ptr = raw.ctypes.data + shift


class _RegisteredMemory:
    """Memory of an existing object, pinned by aclrtHostRegisterV2(ACL_HOST_REG_PINNED) until
    unregister(). Holds the object and a buffer export of it for as long as the buffer or a numpy view
    lives, so the memory stays valid (an mmap cannot be closed, a bytearray not resized meanwhile).

    The registration starts at the page holding the object's first byte (CANN wants a 4 KiB aligned
    start) and ends at its last byte, so two wrapped objects may not share a page (507910)."""

    def __init__(self, obj: Any) -> None:
        try:
            view = memoryview(obj)
        except TypeError:
            raise TypeError(f"obj must support the buffer protocol (numpy array, memoryview, mmap, bytearray), "
                            f"not {type(obj).__name__}") from None
        if view.readonly:
            raise ValueError("obj is read-only; HostBuffer.wrap needs writable memory, as copies to host write "
                             "into it (copy the data into a writable buffer, or open the mmap with write access)")
        if not view.c_contiguous:
            raise ValueError("obj must be C-contiguous: one registration covers one contiguous range")
        if view.nbytes == 0:
            raise ValueError("obj has no bytes; a host registration needs at least one")
        self._owner = obj
        self._export = np.frombuffer(view.cast("B"), dtype=np.uint8)  # the address, and the export held
        self.nbytes = view.nbytes
        self.pinned = True
        self.ptr = self._export.ctypes.data
        self.registered_base = self.ptr - self.ptr % _REGISTER_ALIGNMENT
        from . import runtime

        _ensure_current_context(runtime)
        runtime.host_register_v2(self.registered_base, self.ptr + self.nbytes - self.registered_base,
                                 ACL_HOST_REG_PINNED)
        self._registered = True

    def unregister(self) -> None:
        """Ends the registration (idempotent); the memory stays the owner's."""
        if self._registered:
            self._registered = False
            from . import runtime

            runtime.host_unregister(self.registered_base)


#: What a HostBuffer's memory is: its own allocation, or the registered memory of another object.
_Memory = Union[_Allocation, _RegisteredMemory]


def _ensure_current_context(runtime: ModuleType) -> None:
    """aclrtMallocHost needs a current context on the calling thread (CANN's ApiImpl::HostMalloc): on a
    thread without one, set MindSpore's device there first."""
    try:
        runtime.get_current_context()
    except AclError as exc:
        if exc.code != ACL_ERROR_RT_CONTEXT_NULL:
            raise
        runtime.set_device(acl_device())


def _free_pinned(ptr: int) -> None:
    from . import runtime

    try:
        runtime.free_host(ptr)
    except AclError:
        pass  # a finalizer must not raise; the runtime already reported the reason to its log


class _ByteView:
    """Exposes an allocation to numpy and keeps it alive for as long as the array lives."""

    def __init__(self, allocation: "_Memory", offset: int, nbytes: int) -> None:
        self._allocation = allocation
        self.__array_interface__ = {
            "data": (allocation.ptr + offset, False),
            "shape": (nbytes,),
            "typestr": "|u1",
            "version": 3,
        }


class _BufferIds:
    """The ids the kernels lease HostBuffers by, smallest free first. A primitive's id is one of its
    attributes, and MindSpore keeps what it builds per distinct attribute value for the life of the
    process (about 100 KiB per id seen in PYNATIVE_MODE): reusing ids bounds that by the number of
    buffers in use at once instead of the number ever created."""

    def __init__(self) -> None:
        self._free: List[int] = []
        self._next = 1
        self._lock = threading.Lock()

    def acquire(self) -> int:
        with self._lock:
            if self._free:
                return heapq.heappop(self._free)
            self._next += 1
            return self._next - 1

    def release(self, buffer_id: int) -> None:
        with self._lock:
            heapq.heappush(self._free, buffer_id)


_IDS = _BufferIds()


class _IdLease:
    """Holds a buffer id until every holder is gone: the HostBuffer until it is closed, and each
    primitive built on it for as long as the primitive lives (a compiled graph may still launch it, so
    its id must not name another buffer meanwhile)."""

    __slots__ = ("id", "__weakref__")

    def __init__(self) -> None:
        self.id = _IDS.acquire()
        weakref.finalize(self, _IDS.release, self.id).atexit = False  # type: ignore[misc]  # as above


class HostBuffer(ClosesOnExit):
    """Host memory for the copy primitives, pinned (aclrtMallocHost) or pageable.

    Use it as a context manager or call :meth:`close`; any use after close raises ValueError.
    ``numpy()`` is a zero-copy view, taken after the copies in flight that touch the buffer are done.

    aclrtMallocHost needs a current ACL context on the calling thread. When the thread has none, a
    pinned buffer first sets MindSpore's device on it (``aclrtSetDevice``, kept for the life of the
    thread): with the host ACL runtime (CPU target) that is ``DEVICE_ID`` from the environment, default
    0, the device the copy kernels use; with CANN, MindSpore's current device. A thread that already has
    a context (a device set, or a context made current) allocates on it unchanged.

    Args:
        nbytes (int): size in bytes (0 is allowed: an empty buffer).
        pinned (bool): True (default) for page-locked memory from aclrtMallocHost, False for pageable
            memory.

    Raises:
        TypeError: nbytes not an int, pinned not a bool.
        ValueError: nbytes negative, or (pinned, on a thread without a context) DEVICE_ID is not a
            device id.
        AclError: aclrtSetDevice or aclrtMallocHost failed.

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import numpy as np
        >>> from ms_memcopy import HostBuffer
        >>> with HostBuffer(16) as buf:
        ...     buf.numpy(np.int32)[:] = [1, 2, 3, 4]
        ...     print(buf.nbytes, buf.pinned, buf.numpy(np.int32, shape=(2,), offset=8))
        16 True [3 4]
        >>> print(buf.closed)
        True
    """

    _allocation: Optional[_Memory]  # None once closed
    _id_lease: Optional[_IdLease]  # None once closed

    def __init__(self, nbytes: int, pinned: bool = True) -> None:
        if isinstance(nbytes, bool) or not isinstance(nbytes, numbers.Integral):
            raise TypeError(f"nbytes must be an int, not {type(nbytes).__name__}")
        if nbytes < 0:
            raise ValueError(f"nbytes must be >= 0, got {nbytes}")
        if not isinstance(pinned, bool):
            raise TypeError(f"pinned must be a bool, not {type(pinned).__name__}")
        self._open(_Allocation(int(nbytes), pinned))

    @classmethod
    def wrap(cls, obj: object) -> "HostBuffer":
        """A pinned HostBuffer over the memory of an existing object, registered with aclrtHostRegisterV2.

        obj: a writable, C-contiguous object with the buffer protocol and at least one byte: a numpy
        array, a ``memoryview``, an ``mmap.mmap`` (for example of a file in /dev/shm), a ``bytearray``.
        The buffer's bytes are obj's bytes (no copy): copies into and out of it take the pinned,
        asynchronous path, like a buffer from aclrtMallocHost. obj is kept alive, and its buffer
        exported, while the buffer or a numpy view of it lives; ``close()`` unregisters the memory.
        The registration covers obj's bytes from the start of the 4 KiB page holding its first byte
        (CANN wants an aligned start), so two wrapped objects may not share a page.

        Raises:
            TypeError: obj has no buffer protocol.
            ValueError: obj is read-only (refused: copies to host write into the buffer), not
                C-contiguous, or empty.
            AclError: the registration failed, e.g. 507910 when the memory overlaps another
                registration.
        """
        buffer = cls.__new__(cls)
        buffer._allocation = None  # closed, until _open succeeds
        buffer._open(_RegisteredMemory(obj))
        return buffer

    def _open(self, allocation: "_Memory") -> None:
        self._allocation = allocation
        self._nbytes = allocation.nbytes
        self._pinned = allocation.pinned
        self._registered = isinstance(allocation, _RegisteredMemory)
        self._used_by_primitives = False
        self._id_lease = _IdLease()
        # weak methods that launch copies into or out of the buffer still held back
        self._before_close: List[Callable[[], Optional[Callable[[], Optional[BaseException]]]]] = []
        self._id = self._id_lease.id
        if _kernels_lib.library().msmc_hostbuffer_open(self._id, allocation.ptr, self._nbytes, int(self._pinned)) != 0:
            self._release_registration()
            self._allocation = None
            raise RuntimeError(f"the kernels library refused to register the HostBuffer as id {self._id}")

    # -- properties ---------------------------------------------------------------------------
    @property
    def nbytes(self) -> int:
        return self._nbytes

    @property
    def pinned(self) -> bool:
        return self._pinned

    @property
    def registered(self) -> bool:
        """True for a buffer made by :meth:`wrap` (memory of another object, pinned by registration)."""
        return self._registered

    @property
    def closed(self) -> bool:
        return self._allocation is None

    @property
    def ptr(self) -> int:
        """The buffer's address (an int), for ms_memcopy.runtime and ms_memcopy.acl calls."""
        return self._check_open().ptr

    @property
    def buffer_id(self) -> int:
        """The id the copy kernels lease this buffer by."""
        self._check_open()
        return self._id

    def __repr__(self) -> str:
        state = "closed" if self._allocation is None else f"ptr=0x{self._allocation.ptr:x}"
        return f"HostBuffer(nbytes={self._nbytes}, pinned={self._pinned}, {state})"

    # -- data ------------------------------------------------------------------------------------
    def numpy(self, dtype: Any = np.uint8, shape: Union[int, Sequence[int], None] = None,
              offset: int = 0) -> np.ndarray:
        """A zero-copy numpy view of the buffer, after the copies in flight that touch it are done.

        dtype: numpy dtype of the view; shape: its shape (default: as many elements as fit from
        offset to the end); offset: byte offset of the first element.
        """
        allocation = self._check_open()
        dtype = np.dtype(dtype)
        if isinstance(offset, bool) or not isinstance(offset, numbers.Integral):
            raise TypeError(f"offset must be an int, not {type(offset).__name__}")
        if not 0 <= offset <= self._nbytes:
            raise ValueError(f"offset {offset} is outside the buffer of {self._nbytes} bytes")
        available = self._nbytes - offset
        if shape is None:
            shape = (available // dtype.itemsize,)
        shape = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
        if any(isinstance(d, bool) or not isinstance(d, numbers.Integral) or d < 0 for d in shape):
            raise ValueError(f"shape must hold non-negative ints, got {shape}")
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if nbytes > available:
            raise ValueError(f"shape {shape} of {dtype} needs {nbytes} bytes from offset {offset}, "
                             f"but the buffer has {available}")
        self.wait()
        if nbytes == 0:
            return np.empty(shape, dtype=dtype)
        raw = np.asarray(_ByteView(allocation, offset, nbytes))
        return raw.view(dtype).reshape(shape)

    def wait(self) -> None:
        """Blocks until the copies in flight that read or write this buffer have completed."""
        self._check_open()
        if self._used_by_primitives:
            sync_launches()
        ret = _kernels_lib.library().msmc_hostbuffer_wait(self._id)
        if ret != 0:
            raise AclError(ret, "aclrtSynchronizeStream")

    def _attach_primitive(self) -> Optional[_IdLease]:
        """Called by each primitive built on this buffer: its launches count as copies in flight. Returns
        the buffer's id lease, which the primitive keeps for as long as it lives."""
        self._check_open()
        self._used_by_primitives = True
        return self._id_lease

    def _note_stream(self, stream: Optional[int]) -> None:
        """Records that a copy touching the buffer was enqueued on stream (a handle int, or None)."""
        self._check_open()
        _kernels_lib.library().msmc_hostbuffer_note_stream(self._id, stream or None)

    # -- lifetime --------------------------------------------------------------------------------
    def close(self) -> None:
        """Waits for the copies in flight, then releases the buffer. Idempotent."""
        if self._allocation is None:
            return
        error = None
        for hook in list(self._before_close):
            launch_held_back = hook()
            if launch_held_back is not None:
                error = error or launch_held_back()
        if self._used_by_primitives:
            sync_launches()
        ret = _kernels_lib.library().msmc_hostbuffer_close(self._id)
        try:
            self._release_registration()
        finally:
            self._allocation = None
        self._id_lease = None  # the id is free again once no primitive built on this buffer is alive
        if ret not in (0, -1):
            raise AclError(ret, "aclrtSynchronizeStream")
        if error is not None:
            raise error

    def _release_registration(self) -> None:
        if isinstance(self._allocation, _RegisteredMemory):
            self._allocation.unregister()

    # _is_finalizing is bound early: module globals may be gone at exit
    def __del__(self, _is_finalizing: Callable[[], bool] = sys.is_finalizing) -> None:
        if _is_finalizing():
            return  # at interpreter shutdown the process releases everything
        try:
            if getattr(self, "_allocation", None) is not None:
                self.close()
        except Exception as exc:  # noqa: BLE001  (a destructor must never raise)
            warnings.warn(f"HostBuffer could not be closed when collected: {exc}", ResourceWarning, stacklevel=1)

    def _check_open(self) -> _Memory:
        """The buffer's memory; ValueError once it is closed."""
        if self._allocation is None:
            raise ValueError("HostBuffer is closed")
        return self._allocation
