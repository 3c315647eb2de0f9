"""BlockSlots, SwapOutBlocks, SwapInBlocks: fixed-size blocks kept in numbered slots of a HostBuffer."""
from typing import Sequence, Tuple

import mindspore as ms
from mindspore import nn, ops

from ..host_buffer import HostBuffer
from ..ops import MemcpyBatch
from ..ops._args import check_host_buffer, check_int, num_elements
from ..ops._dtypes import DtypeLike, itemsize, ms_dtype

__all__ = ["BlockSlots", "SwapOutBlocks", "SwapInBlocks"]


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
        >>> import mindspore as ms
        >>> from ms_memcopy import HostBuffer
        >>> from ms_memcopy.nn import BlockSlots, SwapOutBlocks
        >>> buf = HostBuffer(64)
        >>> swap_out = SwapOutBlocks(BlockSlots(buf, block_shape=(2,), dtype=ms.int32), num_blocks=2)
        >>> print(swap_out(ms.Tensor([1, 2], ms.int32), ms.Tensor([3, 4], ms.int32), ms.Tensor([5, 0], ms.int64)))
        [8 8]
        >>> print(buf.numpy("int32")[[0, 1, 10, 11]])
        [3 4 1 2]
        >>> buf.close()
    """

    def __init__(self, slots: BlockSlots, num_blocks: int):
        super().__init__()
        self.slots = slots
        self.write = MemcpyBatch("d2h", slots.host_buffer, num_tensors=check_int(num_blocks, "num_blocks", 1))
        self.block_bytes = ms.Tensor(slots.block_bytes, ms.int64)

    def construct(self, *args: ms.Tensor) -> ms.Tensor:
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
        >>> import mindspore as ms
        >>> from ms_memcopy import HostBuffer
        >>> from ms_memcopy.nn import BlockSlots, SwapInBlocks
        >>> buf = HostBuffer(32)
        >>> buf.numpy("int32")[:] = range(8)
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

    def construct(self, slots: ms.Tensor) -> Tuple[ms.Tensor, ...]:
        return self.read(ops.mul(slots, self.block_bytes))
