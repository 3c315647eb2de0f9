"""Cells built on the primitives, for the common case of fixed-size blocks kept in host memory
(KV-cache offload, activation offload): blocks go to numbered slots of a HostBuffer instead of
byte offsets.

    store = BlockSlots(buf, block_shape=(16, 128), dtype=ms.float16)     # slots of one block each
    swap_out = SwapOutBlocks(store, num_blocks=4)
    swap_in = SwapInBlocks(store, num_blocks=4)
    swap_out(b0, b1, b2, b3, slots)      # slots: int64 tensor of 4 slot numbers
    b0, b1, b2, b3 = swap_in(slots)

A slot outside the buffer, or the same slot twice in one swap-out, is MemcpyBatch's bad-offset error
(the byte offset is slot * block bytes).
"""
import mindspore as ms
from mindspore import nn, ops

from .ops import MemcpyBatch
from .ops._base import check_host_buffer, check_int, itemsize, ms_dtype, num_elements


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
