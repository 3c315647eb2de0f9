"""ms_memcopy.nn: blocks swapped to numbered HostBuffer slots and back."""
import numpy as np
import pytest

import mindspore as ms

from ms_memcopy import HostBuffer
from ms_memcopy._framework import sync_launches
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
            sync_launches()  # an eager launch's error on a Tensor value is raised at the next sync
        if ms_mode == "pynative":
            with pytest.raises(ValueError, match="items 0 and 1 write overlapping bytes"):
                SwapOutBlocks(store, 2)(x, x, int64(1, 1))
                sync_launches()


def test_bad_block_description(route):
    with HostBuffer(16) as buf:
        with pytest.raises(ValueError, match="at least one element"):
            BlockSlots(buf, block_shape=(0, 3), dtype=ms.float32)
        with pytest.raises(TypeError, match="dtype complex64 is not supported"):
            BlockSlots(buf, block_shape=(2,), dtype=ms.complex64)


# ---- BlockPool ----------------------------------------------------------------------------------

from mindspore import nn  # noqa: E402

from ms_memcopy.nn import BlockPool, OutOfBlocks  # noqa: E402
from ms_memcopy.ops import Memcpy2D  # noqa: E402


class WriteToken(nn.Cell):
    """A decoder step's cache update: one token row written in place into every cache of a pool."""

    def __init__(self, pool):
        super().__init__()
        self.caches = pool.caches
        self.write = Memcpy2D("write")

    def construct(self, rows, row):
        n = self.write(self.caches[0], rows[0:1], row, int64(0))
        return n + self.write(self.caches[1], rows[1:2], row, int64(0))


def cache_values(pool):
    return [c.asnumpy() for c in pool.caches]


def test_block_pool_allocates_swaps_and_forks(ms_mode):
    pool = BlockPool(num_caches=2, num_blocks=6, num_host_blocks=4, block_shape=(4, 8), dtype=ms.float32)
    try:
        assert pool.num_free_blocks == 6 and pool.num_free_host_blocks == 4
        table = pool.allocate(3)
        assert table == [0, 1, 2] and pool.num_free_blocks == 3
        step = WriteToken(pool)
        rng = np.random.default_rng(1)
        written = {}
        for i, block in enumerate(table):       # one token row per block, written in place by a model step
            rows = rng.standard_normal((2, 8)).astype(np.float32)
            step(ms.Tensor(rows), int64(block * 4 + i))
            written[block] = (i, rows)
        before = cache_values(pool)
        for block, (i, rows) in written.items():
            np.testing.assert_array_equal(before[0][block, i], rows[0])
            np.testing.assert_array_equal(before[1][block, i], rows[1])

        host_table = pool.swap_out(table[1:])
        assert host_table == [0, 1] and pool.num_free_blocks == 5 and pool.num_free_host_blocks == 2
        host = pool.host_buffer.numpy(np.float32, (2, 4, 4, 8))
        for l in range(2):
            np.testing.assert_array_equal(host[l, 0], before[l][1])
            np.testing.assert_array_equal(host[l, 1], before[l][2])

        other = pool.allocate(5)                 # the freed device blocks are reused
        assert sorted(other) == [1, 2, 3, 4, 5]
        with pytest.raises(OutOfBlocks, match="2 device block"):
            pool.swap_in(host_table)
        assert pool.num_free_host_blocks == 2    # nothing moved, nothing freed
        pool.free(other)

        back = pool.swap_in(host_table)
        assert back == [1, 2] and pool.num_free_host_blocks == 4
        child = pool.fork([table[0], back[1]])
        assert child == [3, 4]
        after = cache_values(pool)
        for l in range(2):
            np.testing.assert_array_equal(after[l][[0, 1, 2]], before[l][[0, 1, 2]])
            np.testing.assert_array_equal(after[l][3], before[l][0])
            np.testing.assert_array_equal(after[l][4], before[l][2])
    finally:
        pool.close()


def test_block_pool_bad_block_numbers_move_nothing(route):
    ms.set_context(mode=ms.PYNATIVE_MODE)
    pool = BlockPool(num_caches=1, num_blocks=4, num_host_blocks=2, block_shape=(3,), dtype=ms.int32)
    try:
        pool.host_buffer.numpy()[:] = 7
        table = pool.allocate(2)
        with pytest.raises(ValueError, match=r"blocks: device block\(s\) \[3\] are not allocated"):
            pool.swap_out([table[0], 3])
        with pytest.raises(ValueError, match="a device block appears twice"):
            pool.fork([table[0], table[0]])
        with pytest.raises(ValueError, match=r"host_blocks: host block\(s\) \[0\] are not allocated"):
            pool.swap_in([0])
        with pytest.raises(ValueError, match="not allocated"):
            pool.free([2])
        with pytest.raises(OutOfBlocks, match="3 host block"):
            pool.swap_out(table + pool.allocate(1))
        assert pool.num_free_blocks == 1 and pool.num_free_host_blocks == 2
        assert (pool.host_buffer.numpy() == 7).all()
    finally:
        pool.close()
