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
import numpy as np
import mindspore as ms
from mindspore import nn, ops

from .host_buffer import HostBuffer
from .ops import CopyBlocks, MemcpyBatch, SwapBlocks
from .ops._base import check_host_buffer, check_int, itemsize, ms_dtype, num_elements


__all__ = ["BlockPool", "OutOfBlocks", "BlockSlots", "SwapOutBlocks", "SwapInBlocks"]


class OutOfBlocks(RuntimeError):
    """A BlockPool has fewer free blocks than asked for (nothing was allocated)."""


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
    """A paged cache: L device caches of num_blocks blocks each, and a host pool of num_host_blocks
    blocks per cache, with block numbers handed out and taken back as vLLM's block manager does.

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
    """

    def __init__(self, num_caches, num_blocks, num_host_blocks, block_shape, dtype, *, pinned=True,
                 name="block_pool"):
        super().__init__()
        self.num_caches = check_int(num_caches, "num_caches", 1)
        self.block_shape = tuple(check_int(d, "block_shape") for d in block_shape)
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
    """A HostBuffer divided into slots holding one block (block_shape, dtype) each."""

    def __init__(self, host_buffer, block_shape, dtype):
        self.host_buffer = check_host_buffer(host_buffer)
        self.block_shape = tuple(check_int(d, "block_shape") for d in block_shape)
        self.dtype = ms_dtype(dtype, "dtype")
        self.block_bytes = num_elements(self.block_shape) * itemsize(self.dtype)
        if self.block_bytes == 0:
            raise ValueError("block_shape must hold at least one element")
        self.num_slots = host_buffer.nbytes // self.block_bytes


class SwapOutBlocks(nn.Cell):
    """``nbytes = op(block_0, ..., block_{n-1}, slots)``: writes block i into slot ``slots[i]`` with one
    MemcpyBatch d2h; returns the bytes written per block."""

    def __init__(self, slots, num_blocks):
        super().__init__()
        self.slots = slots
        self.write = MemcpyBatch("d2h", slots.host_buffer, num_tensors=check_int(num_blocks, "num_blocks", 1))
        self.block_bytes = ms.Tensor(slots.block_bytes, ms.int64)

    def construct(self, *args):
        return self.write(*args[:-1], ops.mul(args[-1], self.block_bytes))


class SwapInBlocks(nn.Cell):
    """``(block_0, ..., block_{n-1}) = op(slots)``: reads slot ``slots[i]`` into new block i with one
    MemcpyBatch h2d."""

    def __init__(self, slots, num_blocks):
        super().__init__()
        num_blocks = check_int(num_blocks, "num_blocks", 1)
        self.read = MemcpyBatch("h2d", slots.host_buffer, shapes=[slots.block_shape] * num_blocks,
                                dtypes=[slots.dtype] * num_blocks)
        self.block_bytes = ms.Tensor(slots.block_bytes, ms.int64)

    def construct(self, slots):
        return self.read(ops.mul(slots, self.block_bytes))
