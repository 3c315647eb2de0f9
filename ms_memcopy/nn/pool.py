"""BlockPool: a paged cache (vLLM's block manager) of L device caches and a host pool, and the error
of blocks held by transfers in flight (TransferPending; OutOfBlocks is the block numbers')."""
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import mindspore as ms
from mindspore import nn, ops

from ..host_buffer import HostBuffer
from ..ops import CopyBlocks, SwapBlocks
from ..ops._args import check_int
from ..ops._dtypes import DtypeLike
from ..ops.blocks import HOST_LAYOUTS
from ._block_numbers import OutOfBlocks, _as_list, _BlockNumbers
from ._pool_host import PoolHost, cache_specs

__all__ = ["BlockPool", "OutOfBlocks", "TransferPending"]


class TransferPending(RuntimeError):
    """Blocks of a TransferQueue job still in flight were to be read, written, moved or freed (nothing was done).

    The blocks a swap-in or fork writes cannot be read, and the blocks a swap-out or swap-in gives up
    cannot be handed out again, until the job has finished: ``wait(job)`` on the queue, or poll
    ``finished()`` until it lists the job.

    Args:
        message (str): the blocks, the job and what to do.

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import mindspore as ms
        >>> from ms_memcopy.nn import BlockPool, TransferPending, TransferQueue
        >>> pool = BlockPool(num_caches=1, num_blocks=2, num_host_blocks=2, block_shape=(4,), dtype=ms.int8)
        >>> queue = TransferQueue(pool)
        >>> job = queue.submit("swap_in", pool.swap_out(pool.allocate(1)))
        >>> try:
        ...     pool.check_readable(queue.destination(job))
        ... except TransferPending as error:
        ...     print(str(error).split(":")[0], "->", "wait(0)" in str(error))
        blocks -> True
        >>> print(queue.wait(job))
        [0]
        >>> pool.close()
    """


def _choose_copy_strategy():
    """The host runtime chooses how it copies large copies at its first one (a calibration of about a
    tenth of a second, once per process): a pool makes that happen now rather than in its first swap."""
    from .._extension import _paths

    if _paths.uses_host_runtime():
        from .._acl import runtime

        runtime.copy_strategy()


class BlockPool(nn.Cell):
    """A paged cache with swap-out, swap-in and fork, handing out block numbers as vLLM's block manager does.

    L device caches of num_blocks blocks each, and a host pool of num_host_blocks blocks per cache.

    ``caches`` are Parameters of shape ``[num_blocks, *block_shape_l]`` (one per cache, e.g. key and
    value of every layer): give them to the model, which writes them in place (for example with
    ``Memcpy2D("write")``). The caches share num_blocks; each may have its own block shape and dtype
    (``block_shape`` and ``dtype`` given per cache: an MLA latent and rope cache, an int8 K with a
    bf16 V). A block number refers to the same block of every cache, ``bytes_per_block`` bytes in all.

    The host pool is in SwapBlocks' ``host_layout`` and, allocated, holds exactly ``num_host_blocks *
    bytes_per_block`` bytes (``host_nbytes``): one HostBuffer from aclrtMallocHost (``host_buffer``), or chunks of at
    most ``host_chunk_bytes`` bytes each (whole host blocks; ``host_buffer`` is then a HostChunks over
    ``host_chunks``), or the caller's HostBuffers (``host_buffers``, e.g. ``HostBuffer.wrap`` of
    memory registered in place), which must hold num_host_blocks host blocks together and stay the
    caller's to close. Host blocks are numbered across the chunks in order; a swap over blocks of
    several chunks is still one SwapBlocks call.

    ``allocate``/``free`` manage device block numbers; ``swap_out(blocks)`` moves blocks to newly
    allocated host blocks and frees them on the device, ``swap_in(host_blocks)`` the reverse,
    ``fork(blocks)`` copies blocks into newly allocated device blocks. Each returns the new block
    numbers in the order of its argument. The copies run eagerly, in one SwapBlocks or CopyBlocks
    call, in place; bad block numbers raise ValueError before any copy, and a pool without enough
    free blocks raises OutOfBlocks with nothing allocated or moved. A :class:`TransferQueue` over the
    pool makes the same moves without waiting for them; meanwhile the pool refuses (TransferPending)
    to read, move, free or hand out the blocks of its jobs in flight (``check_readable`` and
    ``check_writable`` check a block table before a model step).

    Args:
        num_caches (int): L, the device caches (>= 1).
        num_blocks (int): the blocks of each device cache (>= 1).
        num_host_blocks (int): the blocks of each host cache (>= 0).
        block_shape (Union[tuple[int], list[tuple[int]]]): the shape of one block, or of one block of
            each cache (L shapes).
        dtype (Union[mindspore.dtype, list[mindspore.dtype]]): the caches' dtype, or each cache's (L).
        pinned (bool): page-locked host pool (default) or pageable memory (allocated chunks).
        name (str): the prefix of the caches' Parameter names.
        host_layout (str): SwapBlocks' ``"cache_major"`` (default) or ``"block_major"``, in each chunk.
        host_chunk_bytes (int, optional): the most bytes of one host allocation (None: one allocation).
        host_buffers (Union[HostBuffer, list[HostBuffer]], optional): the caller's host chunks, in
            order, instead of allocated ones.

    Inputs:
        None: a BlockPool is not called; its methods move blocks eagerly.

    Outputs:
        None.

    Raises:
        TypeError: an argument of the wrong type, an unsupported dtype.
        ValueError: a count out of range, an empty block, L block shapes or dtypes for another L,
            host_buffers too small (or given with host_chunk_bytes), host_chunk_bytes smaller than one
            host block, a block number that is not allocated or appears twice in one call.
        OutOfBlocks: fewer free blocks than asked for.

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import mindspore as ms
        >>> from ms_memcopy.nn import BlockPool
        >>> pool = BlockPool(num_caches=2, num_blocks=4, num_host_blocks=4, block_shape=(2,), dtype=ms.float32)
        >>> k_cache, v_cache = pool.caches
        >>> _ = k_cache.set_data(ms.Tensor([[0, 1], [2, 3], [4, 5], [6, 7]], ms.float32))
        >>> table = pool.allocate(2)
        >>> host_table = pool.swap_out(table)
        >>> print(table, host_table, pool.num_free_blocks)
        [0, 1] [0, 1] 4
        >>> table = pool.swap_in(host_table)
        >>> print(table, k_cache.asnumpy()[table].tolist())
        [0, 1] [[0.0, 1.0], [2.0, 3.0]]
        >>> print(pool.fork(table), pool.num_free_blocks)
        [2, 3] 0
        >>> pool.close()

        An MLA-like pair (latent and rope caches of one layer) with a host pool of two chunks:

        >>> pool = BlockPool(num_caches=2, num_blocks=4, num_host_blocks=3, block_shape=[(16, 512), (16, 64)],
        ...                  dtype=ms.bfloat16, host_chunk_bytes=2 * 18432)
        >>> print(pool.bytes_per_block, pool.host_nbytes, [c.nbytes for c in pool.host_chunks])
        18432 55296 [36864, 18432]
        >>> print(pool.swap_out(pool.allocate(3)))  # host blocks 0 and 1 in one chunk, 2 in the other
        [0, 1, 2]
        >>> pool.close()
    """

    def __init__(self, num_caches: int, num_blocks: int, num_host_blocks: int,
                 block_shape: Union[Sequence[int], Sequence[Sequence[int]]],
                 dtype: Union[DtypeLike, Sequence[DtypeLike]], *, pinned: bool = True, name: str = "block_pool",
                 host_layout: str = "cache_major", host_chunk_bytes: Optional[int] = None,
                 host_buffers: Union[HostBuffer, Sequence[HostBuffer], None] = None):
        super().__init__()
        self.num_caches = check_int(num_caches, "num_caches", 1)
        #: each cache's block shape, dtype and bytes of one block
        self.block_shapes, self.dtypes, self.cache_block_bytes = cache_specs(self.num_caches, block_shape, dtype)
        uniform = len(set(zip(self.block_shapes, self.dtypes))) == 1
        # one cache's block shape, dtype and bytes when the caches share them, else None
        self.block_shape = self.block_shapes[0] if uniform else None
        self.dtype = self.dtypes[0] if uniform else None
        self.block_bytes = self.cache_block_bytes[0] if uniform else None
        self.bytes_per_block = sum(self.cache_block_bytes)  # one block of every cache
        if host_layout not in HOST_LAYOUTS:
            raise ValueError(f"host_layout must be one of {HOST_LAYOUTS}, got {host_layout!r}")
        self.host_layout = host_layout
        self._device = _BlockNumbers(check_int(num_blocks, "num_blocks", 1), "device")
        self._host = _BlockNumbers(check_int(num_host_blocks, "num_host_blocks"), "host")
        self._host_side = PoolHost(num_host_blocks, self.bytes_per_block, pinned=pinned,
                                   host_chunk_bytes=host_chunk_bytes, host_buffers=host_buffers)
        self.host_buffer = self._host_side.host_buffer  # a HostBuffer, or a HostChunks over several chunks
        self.host_chunks = self._host_side.chunks
        self.host_nbytes = self._host_side.nbytes
        self.caches = ms.ParameterTuple(
            ms.Parameter(ops.zeros((num_blocks, *shape), dtype), name=f"{name}.cache{l}")
            for l, (shape, dtype) in enumerate(zip(self.block_shapes, self.dtypes)))
        _choose_copy_strategy()
        self._swap_out = self.swap_op("d2h")
        self._swap_in = self.swap_op("h2d")
        self._copy = CopyBlocks(num_caches=self.num_caches)
        # The blocks of TransferQueue jobs in flight, per side: block -> (job, kind, role), role
        # "source" or "destination"; and the queues to close with the pool.
        self._pending: Dict[str, Dict[int, Any]] = {"device": {}, "host": {}}
        self._queues: List[Any] = []

    def swap_op(self, direction: str) -> SwapBlocks:
        """A SwapBlocks over the pool's caches and host side, in its host layout (``"d2h"`` or ``"h2d"``)."""
        return SwapBlocks(direction, self.host_buffer, num_caches=self.num_caches, host_layout=self.host_layout)

    @property
    def num_blocks(self) -> int:
        return self._device.count

    @property
    def num_host_blocks(self) -> int:
        return self._host.count

    @property
    def num_free_blocks(self) -> int:
        return self._device.num_free

    @property
    def num_free_host_blocks(self) -> int:
        return self._host.num_free

    def allocate(self, n: int) -> List[int]:
        """n free device block numbers (OutOfBlocks when fewer are free)."""
        return self._device.allocate(n)

    def free(self, blocks: Sequence[int]) -> None:
        """Gives device blocks back (ValueError for a block that is not allocated, TransferPending for one
        a TransferQueue job in flight reads or writes)."""
        self._check_pending("device", blocks, "blocks", "freeing")
        self._device.free(blocks)

    def free_host(self, host_blocks: Sequence[int]) -> None:
        """Gives host blocks back, e.g. of a swapped-out sequence that was dropped."""
        self._check_pending("host", host_blocks, "host_blocks", "freeing")
        self._host.free(host_blocks, "host_blocks")

    def check_readable(self, blocks: Sequence[int]) -> Any:
        """Checks that the model may read these device blocks now: allocated (ValueError) and not written
        by a TransferQueue job in flight (TransferPending naming the job: ``wait(job)`` first). Returns the
        block numbers as a list of ints. A scheduler calls it on a sequence's block table before a step.

        Examples:
            >>> import mindspore as ms
            >>> from ms_memcopy.nn import BlockPool
            >>> pool = BlockPool(num_caches=1, num_blocks=4, num_host_blocks=0, block_shape=(2,), dtype=ms.int8)
            >>> print(pool.check_readable(pool.allocate(2)))
            [0, 1]
            >>> pool.close()
        """
        self._check_pending("device", blocks, "blocks", "reading")
        return self._device.check_allocated(_as_list(blocks, "blocks"), "blocks")

    def check_writable(self, blocks: Sequence[int]) -> Any:
        """As :meth:`check_readable`, for blocks the model writes: not read or written by a job in flight
        (a fork's source blocks are read until the fork has finished)."""
        self._check_pending("device", blocks, "blocks", "writing")
        return self._device.check_allocated(_as_list(blocks, "blocks"), "blocks")

    def _check_pending(self, side, blocks, argument, action):
        """TransferPending when a job in flight holds one of blocks: for "reading", a block it writes;
        for any other action, a block it reads or writes."""
        pending = self._pending[side]
        if not pending:
            return
        held: Dict[Tuple[Any, ...], List[int]] = {}
        for b in _as_list(blocks, argument):
            entry = pending.get(b) if isinstance(b, int) else None
            if entry is not None and (action != "reading" or entry[2] == "destination"):
                held.setdefault(entry, []).append(b)
        if not held:
            return
        (job, kind, role), numbers = next(iter(held.items()))
        if role == "destination":
            what = f"written by {kind} job {job}"
        elif kind == "fork":
            what = f"read by fork job {job}"
        else:
            what = f"being moved out by {kind} job {job} (free again once it finishes)"
        raise TransferPending(f"{argument}: {side} block(s) {numbers} are {what}, still in flight: call "
                              f"wait({job}) on the TransferQueue (or poll finished() until it lists job {job}) "
                              f"before {action} them")

    def allocate_host(self, n: int) -> List[int]:
        """n free host block numbers (OutOfBlocks when fewer are free), for swaps a graph makes itself
        with SwapBlocks on ``pool.host_buffer`` in the pool's ``host_layout`` (``pool.swap_op(direction)``
        builds one; ``swap_out``/``swap_in`` allocate their own).

        Examples:
            >>> import mindspore as ms
            >>> from mindspore import nn
            >>> from ms_memcopy.nn import BlockPool
            >>> from ms_memcopy.ops import SwapBlocks
            >>> pool = BlockPool(num_caches=1, num_blocks=4, num_host_blocks=2, block_shape=(2,), dtype=ms.float32)
            >>> (cache,) = pool.caches
            >>> _ = cache.set_data(ms.Tensor([[0, 1], [2, 3], [4, 5], [6, 7]], ms.float32))
            >>> class SwapOutStep(nn.Cell):  # a graph step that swaps blocks out itself
            ...     def __init__(self, pool):
            ...         super().__init__()
            ...         self.cache = pool.caches[0]
            ...         self.swap_out = SwapBlocks("d2h", pool.host_buffer, num_caches=1)
            ...     def construct(self, mapping):
            ...         return self.swap_out(self.cache, mapping)
            >>> blocks, host_blocks = pool.allocate(2), pool.allocate_host(2)
            >>> mapping = ms.Tensor(list(zip(blocks, host_blocks)), ms.int64)
            >>> print(SwapOutStep(pool)(mapping))
            [16]
            >>> print(pool.host_buffer.numpy("float32")[:4])
            [0. 1. 2. 3.]
            >>> pool.free(blocks)
            >>> pool.free_host(host_blocks)
            >>> pool.close()
        """
        return self._host.allocate(n)

    def swap_out(self, blocks: Sequence[int]) -> List[int]:
        """Moves device blocks to new host blocks (returned, in order) and frees the device blocks."""
        self._check_pending("device", blocks, "blocks", "moving")
        blocks = self._device.check_allocated(blocks, "blocks")
        host_blocks = self._host.allocate(len(blocks))
        self._move(self._swap_out, blocks, host_blocks, self._host, host_blocks)
        self._device.free(blocks)
        return host_blocks

    def swap_in(self, host_blocks: Sequence[int]) -> List[int]:
        """Moves host blocks into new device blocks (returned, in order) and frees the host blocks."""
        self._check_pending("host", host_blocks, "host_blocks", "moving")
        host_blocks = self._host.check_allocated(host_blocks, "host_blocks")
        blocks = self._device.allocate(len(host_blocks))
        self._move(self._swap_in, host_blocks, blocks, self._device, blocks)
        self._host.free(host_blocks, "host_blocks")
        return blocks

    def fork(self, blocks: Sequence[int]) -> List[int]:
        """Copies device blocks into new device blocks (returned, in order): a sequence's fork."""
        self._check_pending("device", blocks, "blocks", "reading")
        blocks = self._device.check_allocated(blocks, "blocks")
        new_blocks = self._device.allocate(len(blocks))
        self._move(self._copy, blocks, new_blocks, self._device, new_blocks)
        return new_blocks

    def _move(self, op, sources, destinations, side, allocated):
        if not sources:
            return
        mapping = np.array([sources, destinations], np.int64).T
        try:
            op(*self.caches, mapping)
        except Exception:
            side.free(allocated)  # nothing moved: the new blocks go back
            raise

    def close(self) -> None:
        """Waits for the jobs of its TransferQueues still in flight, then releases the host pool (the
        chunks it allocated; HostBuffers given as ``host_buffers`` stay open; the device caches go with
        the Cell)."""
        queues, self._queues = self._queues, []
        try:
            for queue in queues:
                queue.close()
        finally:
            self._host_side.close()
