"""HostChunks: several HostBuffers that SwapBlocks reads as one host side, in one batch call.

A host pool larger than one allocation (one aclrtMallocHost call fails above a few hundred GB), or
made of memory registered in pieces, is a list of chunks. The kernels' HostBuffer table holds the
group under an id of its own (msmc_hostbuffer_open_chunks); SwapBlocks leases every chunk for a
launch, numbers the host blocks across the chunks (chunk k's after chunk k - 1's) and lays out each
chunk alone, so one block mapping may name host blocks of any chunk and still make one batch call.
"""
import sys
import weakref
from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy as np

from . import _kernels_lib
from ._closing import ClosesOnExit
from ._framework import sync_launches
from .host_buffer import HostBuffer, _IdLease

__all__ = ["HostChunks"]


class HostChunks(ClosesOnExit):
    """Several open HostBuffers that ``SwapBlocks`` uses as one host side.

    The chunks may come from aclrtMallocHost, be pageable, or wrap registered memory (``HostBuffer.wrap``).

    Host blocks are numbered across the chunks: chunk k holds ``H_k = chunks[k].nbytes // (F * B)``
    host blocks (B the bytes of one block of every cache, F ``blocks_per_host_block``), numbered after
    those of chunk k - 1, and each chunk is laid out alone in the SwapBlocks ``host_layout``. A chunk's
    bytes past its ``H_k * F * B`` are never touched. One SwapBlocks call moves blocks of any chunks in
    one batch call. Only SwapBlocks (and SwapBlocksAsync) take a HostChunks.

    The chunks stay the caller's: ``close()`` ends the group (after running the copies its TransferQueues
    still hold back) and leaves the chunks open; close them afterwards. While the group, or a primitive
    built on it, lives, the chunks' ids are not given to other buffers; closing a chunk first makes the
    group's later copies fail cleanly ("the HostBuffer is closed").

    Args:
        chunks (Sequence[HostBuffer]): the chunks, in order (at least one, each open, each given once).

    Raises:
        TypeError: chunks not a sequence of HostBuffers.
        ValueError: no chunk, a closed chunk, a chunk given twice.

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import mindspore as ms
        >>> from ms_memcopy import HostBuffer, HostChunks
        >>> from ms_memcopy.ops import SwapBlocks
        >>> cache = ms.Parameter(ms.Tensor([[0, 1], [2, 3], [4, 5], [6, 7]], ms.float32), name="cache")
        >>> first, second = HostBuffer(16), HostBuffer(8)   # host blocks 0, 1 and 2 of 8 bytes
        >>> chunks = HostChunks([first, second])
        >>> print(SwapBlocks("d2h", chunks, num_caches=1)(cache, [[3, 2], [1, 0]]))
        [16]
        >>> print(second.numpy("float32"), first.numpy("float32")[:2])
        [6. 7.] [2. 3.]
        >>> chunks.close(); first.close(); second.close()
    """

    def __init__(self, chunks: Sequence[HostBuffer]):
        if isinstance(chunks, HostBuffer) or not isinstance(chunks, (list, tuple)):
            raise TypeError(f"chunks must be a list of HostBuffers, not {type(chunks).__name__}")
        for k, chunk in enumerate(chunks):
            if not isinstance(chunk, HostBuffer):
                raise TypeError(f"chunks[{k}] must be an ms_memcopy.HostBuffer, not {type(chunk).__name__}")
            if chunk.closed:
                raise ValueError(f"chunks[{k}]: the HostBuffer is closed")
        if not chunks:
            raise ValueError("chunks: at least one HostBuffer is needed")
        if len({id(c) for c in chunks}) != len(chunks):
            raise ValueError("chunks: a HostBuffer appears twice")
        self._chunks = tuple(chunks)
        self._nbytes = sum(c.nbytes for c in chunks)
        # The chunks' id leases: their ids must not name other buffers while the group refers to them.
        self._chunk_leases = tuple(c._id_lease for c in chunks)
        self._id_lease: Optional[_IdLease] = _IdLease()
        self._id = self._id_lease.id
        self._before_close: List[Any] = []  # as HostBuffer's: weak methods launching copies still held back
        self._used_by_primitives = False
        chunk_ids = np.array([c.buffer_id for c in chunks], np.int64)
        if _kernels_lib.library().msmc_hostbuffer_open_chunks(self._id, chunk_ids.ctypes.data, len(chunks)) != 0:
            self._id_lease = None
            raise RuntimeError(f"the kernels library refused to register the HostChunks as id {self._id}")
        self._closed = False
        self._chunk_closing = False  # set once a chunk's close (or the group's) has begun
        # A close() of a chunk runs the copies held back for the group first, as the group's own close does.
        self._chunk_hook = weakref.WeakMethod(self._launch_held_back)
        for chunk in chunks:
            chunk._before_close.append(self._chunk_hook)

    @property
    def chunks(self) -> Tuple[HostBuffer, ...]:
        """The HostBuffers, in order."""
        return self._chunks

    @property
    def nbytes(self) -> int:
        """The bytes of all chunks."""
        return self._nbytes

    @property
    def pinned(self) -> bool:
        """True when every chunk is pinned (allocated with aclrtMallocHost or registered)."""
        return all(c.pinned for c in self._chunks)

    @property
    def closed(self) -> bool:
        """True once the group, or one of its chunks, is closed."""
        # (a chunk's close runs _launch_held_back first: until one has, no chunk can be closed, and an
        # eager call's check of the group stays one test however many chunks it has)
        return self._closed or (self._chunk_closing and any(c.closed for c in self._chunks))

    @property
    def buffer_id(self) -> int:
        """The id the copy kernels lease the chunks by."""
        self._check_open()
        return self._id

    def host_blocks(self, host_block_bytes: int) -> int:
        """The host blocks of ``host_block_bytes`` bytes the chunks hold (each chunk holding whole ones)."""
        return sum(c.nbytes // host_block_bytes for c in self._chunks)

    def __repr__(self) -> str:
        sizes = ", ".join(str(c.nbytes) for c in self._chunks)
        return f"HostChunks(nbytes=[{sizes}], {'closed' if self.closed else 'open'})"

    def wait(self) -> None:
        """Blocks until the copies in flight that read or write any chunk have completed."""
        self._check_open()
        for chunk in self._chunks:
            chunk.wait()

    def _attach_primitive(self):
        """Called by each primitive built on the group: its launches count as copies in flight of every
        chunk. Returns the leases the primitive keeps (the group's id and the chunks')."""
        self._check_open()
        self._used_by_primitives = True
        return (self._id_lease, *(chunk._attach_primitive() for chunk in self._chunks))

    def _launch_held_back(self):
        """Runs the hooks of the group's TransferQueues; returns the first error, or None."""
        self._chunk_closing = True
        error = None
        for hook in list(self._before_close):
            launch_held_back = hook()
            if launch_held_back is not None:
                error = error or launch_held_back()
        return error

    def close(self) -> None:
        """Waits for the copies the group's queues hold back, then ends the group (the chunks stay open).
        Idempotent."""
        if self._closed:
            return
        error = self._launch_held_back()
        if self._used_by_primitives:
            sync_launches()  # launches queued by MindSpore still lease the group's chunks by its id
        self._closed = True
        for chunk in self._chunks:
            if self._chunk_hook in chunk._before_close:
                chunk._before_close.remove(self._chunk_hook)
        _kernels_lib.library().msmc_hostbuffer_close(self._id)
        self._id_lease = None
        if error is not None:
            raise error

    def __del__(self, _is_finalizing: Callable[[], bool] = sys.is_finalizing) -> None:
        if _is_finalizing():
            return
        try:
            if not getattr(self, "_closed", True):
                self.close()
        except Exception:  # noqa: BLE001  (a destructor must never raise)
            pass

    def _check_open(self):
        if self._closed:
            raise ValueError("HostChunks is closed")
        for k, chunk in enumerate(self._chunks):
            if chunk.closed:
                raise ValueError(f"HostChunks: chunk {k} (a HostBuffer) is closed")
