"""ms_memcopy.nn: blocks swapped to numbered HostBuffer slots and back."""
import numpy as np
import pytest

import mindspore as ms

from ms_memcopy import HostBuffer
from ms_memcopy.nn import BlockSlots, SwapInBlocks, SwapOutBlocks

from _ops_support import int64


def test_swap_blocks_to_slots_and_back(ms_mode):
    rng = np.random.default_rng(0)
    blocks = [rng.standard_normal((4, 6)).astype(np.float16) for _ in range(3)]
    with HostBuffer(5 * 4 * 6 * 2 + 7) as buf:  # 5 whole slots and a remainder
        buf.numpy()[:] = 0
        store = BlockSlots(buf, block_shape=(4, 6), dtype=ms.float16)
        assert store.num_slots == 5 and store.block_bytes == 48
        written = SwapOutBlocks(store, 3)(*(ms.Tensor(b) for b in blocks), int64(4, 0, 2))
        np.testing.assert_array_equal(written.asnumpy(), [48, 48, 48])
        slots = buf.numpy(np.float16, (5, 4, 6))
        for slot, block in zip((4, 0, 2), blocks):
            np.testing.assert_array_equal(slots[slot], block)
        assert not slots[[1, 3]].any()
        back = SwapInBlocks(store, 3)(int64(2, 4, 0))
        for got, expected in zip(back, (blocks[2], blocks[0], blocks[1])):
            np.testing.assert_array_equal(got.asnumpy(), expected)


def test_slot_outside_the_buffer_or_twice(ms_mode, route):
    with HostBuffer(96) as buf:
        store = BlockSlots(buf, block_shape=(12,), dtype=ms.int32)
        x = ms.Tensor(np.ones(12, np.int32))
        # slot 2 is byte offset 96, computed inside the graph: the kernel reports it
        error = ValueError if ms_mode == "pynative" or route == "op_def" else RuntimeError
        with pytest.raises(error, match=r"offsets\[0\] = 96: tensor 0 \(48 bytes\)"):
            SwapInBlocks(store, 1)(int64(2))
        if ms_mode == "pynative":
            with pytest.raises(ValueError, match="items 0 and 1 write overlapping bytes"):
                SwapOutBlocks(store, 2)(x, x, int64(1, 1))


def test_bad_block_description():
    with HostBuffer(16) as buf:
        with pytest.raises(ValueError, match="at least one element"):
            BlockSlots(buf, block_shape=(0, 3), dtype=ms.float32)
        with pytest.raises(TypeError, match="dtype complex64 is not supported"):
            BlockSlots(buf, block_shape=(2,), dtype=ms.complex64)
