"""Cells built on the primitives.

BlockPool: a paged cache (vLLM's block manager): L device caches held as Parameters, a host pool in a
HostBuffer, block numbers handed out and taken back, and swap-out / swap-in / fork built on
SwapBlocks and CopyBlocks (in place, one batch call per 4096 block copies).

    pool = BlockPool(num_caches=2, num_blocks=64, num_host_blocks=128, block_shape=(16, 128), dtype=ms.float16)
    k_cache, v_cache = pool.caches          # Parameters [64, 16, 128]: give them to the model
    table = pool.allocate(4)                # device block numbers of a sequence
    host_table = pool.swap_out(table)       # preempt: blocks to the host pool, device blocks freed
    table = pool.swap_in(host_table)        # resume: new device blocks, host blocks freed
    child = pool.fork(table)                # copies of the blocks in new device blocks

BlockSlots / SwapOutBlocks / SwapInBlocks: fixed-size blocks as separate tensors (KV-cache offload,
activation offload) kept in numbered slots of a HostBuffer instead of byte offsets.

    store = BlockSlots(buf, block_shape=(16, 128), dtype=ms.float16)     # slots of one block each
    swap_out = SwapOutBlocks(store, num_blocks=4)
    swap_in = SwapInBlocks(store, num_blocks=4)
    swap_out(b0, b1, b2, b3, slots)      # slots: int64 tensor of 4 slot numbers
    b0, b1, b2, b3 = swap_in(slots)

A slot outside the buffer, or the same slot twice in one swap-out, is MemcpyBatch's bad-offset error
(the byte offset is slot * block bytes).
"""
from typing import Sequence

import numpy as np
import mindspore as ms
from mindspore import nn, ops

from .host_buffer import HostBuffer
from .ops import CopyBlocks, MemcpyBatch, SwapBlocks
from .ops._args import check_host_buffer, check_int, check_shape, num_elements
from .ops._dtypes import DtypeLike, itemsize, ms_dtype


__all__ = ["BlockPool", "OutOfBlocks", "BlockSlots", "SwapOutBlocks", "SwapInBlocks"]


class OutOfBlocks(RuntimeError):
    """A BlockPool has fewer free blocks than asked for (nothing was allocated).

    Args:
        message (str): what was asked for and what is free.

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import mindspore as ms
        >>> from ms_memcopy.nn import BlockPool, OutOfBlocks
        >>> pool = BlockPool(num_caches=1, num_blocks=2, num_host_blocks=0, block_shape=(4,), dtype=ms.int8)
        >>> try:
        ...     pool.allocate(3)
        ... except OutOfBlocks as error:
        ...     print(error)
        3 device block(s) asked for, 2 of 2 free
        >>> pool.close()
    """


class _BlockNumbers:
    """The free and allocated block numbers of one side of a pool; lowest numbers are handed out first."""

    def __init__(self, count, side):
        self.count = count
        self.side = side
        self._free = list(range(count - 1, -1, -1))
        self._allocated = set()

    @property
    def num_free(self):
        return len(self._free)

    def allocate(self, n):
        n = check_int(n, "n")
        if n > len(self._free):
            raise OutOfBlocks(f"{n} {self.side} block(s) asked for, {len(self._free)} of {self.count} free")
        blocks = [self._free.pop() for _ in range(n)]
        self._allocated.update(blocks)
        return blocks

    def check_allocated(self, blocks, argument):
        blocks = [check_int(b, argument) for b in blocks]
        if len(set(blocks)) != len(blocks):
            raise ValueError(f"{argument}: a {self.side} block appears twice in {blocks}")
        stray = [b for b in blocks if b not in self._allocated]
        if stray:
            raise ValueError(f"{argument}: {self.side} block(s) {stray} are not allocated")
        return blocks

    def free(self, blocks, argument="blocks"):
        blocks = self.check_allocated(blocks, argument)
        self._allocated.difference_update(blocks)
        self._free.extend(sorted(blocks, reverse=True))
        self._free.sort(reverse=True)


class BlockPool(nn.Cell):
    """A paged cache with swap-out, swap-in and fork, handing out block numbers as vLLM's block manager does.

    L device caches of num_blocks blocks each, and a host pool of num_host_blocks blocks per cache.

    ``caches`` are Parameters of shape ``[num_blocks, *block_shape]`` (one per cache, e.g. key and
    value of every layer): give them to the model, which writes them in place (for example with
    ``Memcpy2D("write")``). The host pool is a HostBuffer in SwapBlocks' layout (host cache l after
    host cache l - 1). A block number refers to the same block of every cache.

    ``allocate``/``free`` manage device block numbers; ``swap_out(blocks)`` moves blocks to newly
    allocated host blocks and frees them on the device, ``swap_in(host_blocks)`` the reverse,
    ``fork(blocks)`` copies blocks into newly allocated device blocks. Each returns the new block
    numbers in the order of its argument. The copies run eagerly, in one SwapBlocks or CopyBlocks
    call, in place; bad block numbers raise ValueError before any copy, and a pool without enough
    free blocks raises OutOfBlocks with nothing allocated or moved.

    Args:
        num_caches (int): L, the device caches (>= 1).
        num_blocks (int): the blocks of each device cache (>= 1).
        num_host_blocks (int): the blocks of each host cache (>= 0).
        block_shape (tuple[int]): the shape of one block.
        dtype (mindspore.dtype): the caches' dtype.
        pinned (bool): page-locked host pool (default) or pageable memory.
        name (str): the prefix of the caches' Parameter names.

    Inputs:
        None: a BlockPool is not called; its methods move blocks eagerly.

    Outputs:
        None.

    Raises:
        TypeError: an argument of the wrong type, an unsupported dtype.
        ValueError: a count out of range, an empty block, a block number that is not allocated or
            appears twice in one call.
        OutOfBlocks: fewer free blocks than asked for.

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import numpy as np
        >>> import mindspore as ms
        >>> from ms_memcopy.nn import BlockPool
        >>> pool = BlockPool(num_caches=2, num_blocks=4, num_host_blocks=4, block_shape=(2,), dtype=ms.float32)
        >>> k_cache, v_cache = pool.caches
        >>> _ = k_cache.set_data(ms.Tensor(np.arange(8, dtype=np.float32).reshape(4, 2)))
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
    """

    def __init__(self, num_caches: int, num_blocks: int, num_host_blocks: int, block_shape: Sequence[int],
                 dtype: DtypeLike, *, pinned: bool = True, name: str = "block_pool"):
        super().__init__()
        self.num_caches = check_int(num_caches, "num_caches", 1)
        self.block_shape = check_shape(block_shape, "block_shape")
        self.dtype = ms_dtype(dtype, "dtype")
        self.block_bytes = num_elements(self.block_shape) * itemsize(self.dtype)
        if self.block_bytes == 0:
            raise ValueError("block_shape must hold at least one element")
        self._device = _BlockNumbers(check_int(num_blocks, "num_blocks", 1), "device")
        self._host = _BlockNumbers(check_int(num_host_blocks, "num_host_blocks"), "host")
        self.caches = ms.ParameterTuple(
            ms.Parameter(ops.zeros((num_blocks, *self.block_shape), self.dtype), name=f"{name}.cache{l}")
            for l in range(self.num_caches))
        self.host_buffer = HostBuffer(max(1, self.num_caches * num_host_blocks * self.block_bytes), pinned=pinned)
        self._swap_out = SwapBlocks("d2h", self.host_buffer, num_caches=self.num_caches)
        self._swap_in = SwapBlocks("h2d", self.host_buffer, num_caches=self.num_caches)
        self._copy = CopyBlocks(num_caches=self.num_caches)

    @property
    def num_blocks(self):
        return self._device.count

    @property
    def num_host_blocks(self):
        return self._host.count

    @property
    def num_free_blocks(self):
        return self._device.num_free

    @property
    def num_free_host_blocks(self):
        return self._host.num_free

    def allocate(self, n):
        """n free device block numbers (OutOfBlocks when fewer are free)."""
        return self._device.allocate(n)

    def free(self, blocks):
        """Gives device blocks back (ValueError for a block that is not allocated)."""
        self._device.free(blocks)

    def free_host(self, host_blocks):
        """Gives host blocks back, e.g. of a swapped-out sequence that was dropped."""
        self._host.free(host_blocks, "host_blocks")

    def allocate_host(self, n):
        """n free host block numbers (OutOfBlocks when fewer are free), for swaps a graph makes itself
        with SwapBlocks on ``pool.host_buffer`` (``swap_out``/``swap_in`` allocate their own).

        Examples:
            >>> import numpy as np
            >>> import mindspore as ms
            >>> from mindspore import nn
            >>> from ms_memcopy.nn import BlockPool
            >>> from ms_memcopy.ops import SwapBlocks
            >>> pool = BlockPool(num_caches=1, num_blocks=4, num_host_blocks=2, block_shape=(2,), dtype=ms.float32)
            >>> (cache,) = pool.caches
            >>> _ = cache.set_data(ms.Tensor(np.arange(8, dtype=np.float32).reshape(4, 2)))
            >>> class SwapOutStep(nn.Cell):  # a graph step that swaps blocks out itself
            ...     def __init__(self, pool):
            ...         super().__init__()
            ...         self.cache = pool.caches[0]
            ...         self.swap_out = SwapBlocks("d2h", pool.host_buffer, num_caches=1)
            ...     def construct(self, mapping):
            ...         return self.swap_out(self.cache, mapping)
            >>> blocks, host_blocks = pool.allocate(2), pool.allocate_host(2)
            >>> mapping = ms.Tensor(np.array(list(zip(blocks, host_blocks)), np.int64))
            >>> print(SwapOutStep(pool)(mapping))
            [16]
            >>> print(pool.host_buffer.numpy(np.float32)[:4])
            [0. 1. 2. 3.]
            >>> pool.free(blocks)
            >>> pool.free_host(host_blocks)
            >>> pool.close()
        """
        return self._host.allocate(n)

    def swap_out(self, blocks):
        """Moves device blocks to new host blocks (returned, in order) and frees the device blocks."""
        blocks = self._device.check_allocated(blocks, "blocks")
        host_blocks = self._host.allocate(len(blocks))
        self._move(self._swap_out, blocks, host_blocks, self._host, host_blocks)
        self._device.free(blocks)
        return host_blocks

    def swap_in(self, host_blocks):
        """Moves host blocks into new device blocks (returned, in order) and frees the host blocks."""
        host_blocks = self._host.check_allocated(host_blocks, "host_blocks")
        blocks = self._device.allocate(len(host_blocks))
        self._move(self._swap_in, host_blocks, blocks, self._device, blocks)
        self._host.free(host_blocks, "host_blocks")
        return blocks

    def fork(self, blocks):
        """Copies device blocks into new device blocks (returned, in order): a sequence's fork."""
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

    def close(self):
        """Releases the host pool (the device caches go with the Cell)."""
        self.host_buffer.close()


class BlockSlots:
    """A HostBuffer divided into slots holding one block (block_shape, dtype) each.

    Slot i starts at byte ``i * block_bytes``; ``num_slots`` is how many whole blocks fit.

    Args:
        host_buffer (HostBuffer): the host memory.
        block_shape (tuple[int]): the shape of one block.
        dtype (mindspore.dtype): the blocks' dtype.

    Raises:
        TypeError: host_buffer not a HostBuffer, an unsupported dtype, a block_shape not of ints.
        ValueError: an empty block, a closed HostBuffer.

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import mindspore as ms
        >>> from ms_memcopy import HostBuffer
        >>> from ms_memcopy.nn import BlockSlots
        >>> with HostBuffer(64) as buf:
        ...     slots = BlockSlots(buf, block_shape=(2, 2), dtype=ms.float32)
        ...     print(slots.num_slots, slots.block_bytes)
        4 16
    """

    def __init__(self, host_buffer: HostBuffer, block_shape: Sequence[int], dtype: DtypeLike):
        self.host_buffer = check_host_buffer(host_buffer)
        self.block_shape = tuple(check_int(d, "block_shape") for d in block_shape)
        self.dtype = ms_dtype(dtype, "dtype")
        self.block_bytes = num_elements(self.block_shape) * itemsize(self.dtype)
        if self.block_bytes == 0:
            raise ValueError("block_shape must hold at least one element")
        self.num_slots = host_buffer.nbytes // self.block_bytes


class SwapOutBlocks(nn.Cell):
    """Writes n blocks into slots of a BlockSlots with one MemcpyBatch("d2h").

    ``nbytes = op(block_0, ..., block_{n-1}, slots)`` writes block i into slot ``slots[i]``.

    Args:
        slots (BlockSlots): the slots written.
        num_blocks (int): n, the blocks of each call (>= 1).

    Inputs:
        - **block_0, ..., block_{n-1}** (Tensor) - blocks of the slots' shape and dtype.
        - **slots** (Tensor) - int64, n values: the slot of each block.

    Outputs:
        An int64 Tensor of shape (n,): the bytes written per block.

    Raises:
        TypeError: slots not int64, a block of an unsupported dtype.
        ValueError: a slot outside the HostBuffer, the same slot twice (MemcpyBatch's offset errors,
            the byte offset being ``slot * block_bytes``); nothing is copied.

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import numpy as np
        >>> import mindspore as ms
        >>> from ms_memcopy import HostBuffer
        >>> from ms_memcopy.nn import BlockSlots, SwapOutBlocks
        >>> buf = HostBuffer(64)
        >>> swap_out = SwapOutBlocks(BlockSlots(buf, block_shape=(2,), dtype=ms.int32), num_blocks=2)
        >>> print(swap_out(ms.Tensor([1, 2], ms.int32), ms.Tensor([3, 4], ms.int32), ms.Tensor([5, 0], ms.int64)))
        [8 8]
        >>> print(buf.numpy(np.int32)[[0, 1, 10, 11]])
        [3 4 1 2]
        >>> buf.close()
    """

    def __init__(self, slots: BlockSlots, num_blocks: int):
        super().__init__()
        self.slots = slots
        self.write = MemcpyBatch("d2h", slots.host_buffer, num_tensors=check_int(num_blocks, "num_blocks", 1))
        self.block_bytes = ms.Tensor(slots.block_bytes, ms.int64)

    def construct(self, *args):
        return self.write(*args[:-1], ops.mul(args[-1], self.block_bytes))


class SwapInBlocks(nn.Cell):
    """Reads n blocks from slots of a BlockSlots with one MemcpyBatch("h2d").

    ``(block_0, ..., block_{n-1}) = op(slots)`` reads slot ``slots[i]`` into new block i.

    Args:
        slots (BlockSlots): the slots read.
        num_blocks (int): n, the blocks of each call (>= 1).

    Inputs:
        - **slots** (Tensor) - int64, n values: the slot of each block.

    Outputs:
        A tuple of n new Tensors of the slots' block shape and dtype.

    Raises:
        TypeError: slots not int64.
        ValueError: a slot outside the HostBuffer (MemcpyBatch's offset error); nothing is copied.

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import numpy as np
        >>> import mindspore as ms
        >>> from ms_memcopy import HostBuffer
        >>> from ms_memcopy.nn import BlockSlots, SwapInBlocks
        >>> buf = HostBuffer(32)
        >>> buf.numpy(np.int32)[:] = np.arange(8)
        >>> swap_in = SwapInBlocks(BlockSlots(buf, block_shape=(2,), dtype=ms.int32), num_blocks=2)
        >>> a, b = swap_in(ms.Tensor([3, 1], ms.int64))
        >>> print(a, b)
        [6 7] [2 3]
        >>> buf.close()
    """

    def __init__(self, slots: BlockSlots, num_blocks: int):
        super().__init__()
        num_blocks = check_int(num_blocks, "num_blocks", 1)
        self.read = MemcpyBatch("h2d", slots.host_buffer, shapes=[slots.block_shape] * num_blocks,
                                dtypes=[slots.dtype] * num_blocks)
        self.block_bytes = ms.Tensor(slots.block_bytes, ms.int64)

    def construct(self, slots):
        return self.read(ops.mul(slots, self.block_bytes))
