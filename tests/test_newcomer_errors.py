"""Mistakes a newcomer made, each answered with an error that names the argument and the fix."""
import numpy as np
import pytest

import mindspore as ms
from mindspore import ops

from ms_memcopy import HostBuffer
from ms_memcopy.nn import BlockPool
from ms_memcopy.ops import MemcpyBatch, MemcpyWithDesc, SwapBlocks

from _ops_support import FnCell, raises_exactly


def test_a_missing_input_names_it_and_the_call_form():
    x = ms.Tensor(np.arange(10, dtype=np.float32))
    with raises_exactly(TypeError, "ms_memcopy MemcpyWithDesc(window): missing input start: call it as op(x, start), "
                                   "got 1 input(s)"):
        MemcpyWithDesc(count=4)(x)


def test_a_block_shape_that_is_not_a_tuple():
    with pytest.raises(TypeError, match=r"^block_shape must be a tuple of ints, not int$"):
        BlockPool(num_caches=2, num_blocks=4, num_host_blocks=4, block_shape=4, dtype=ms.float32)


@pytest.mark.parametrize("mode", ["graph", "pynative"])
def test_a_host_buffer_without_room_for_one_block_per_cache_says_how_big_it_must_be(mode):
    """The kernel's check: eagerly, and while a graph compiles (it needs no mapping value)."""
    caches = [ms.Parameter(ms.Tensor(np.zeros((4, 16), np.float32)), name=f"c{i}") for i in range(2)]
    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    try:
        with HostBuffer(64) as buf:
            buf.numpy()[:] = 7
            with raises_exactly(ValueError, "ms_memcopy SwapBlocks(d2h): host_buffer: its 64 bytes hold no host block: "
                                            "each of the 2 host caches needs at least one block of 64 bytes; give a "
                                            "HostBuffer of at least 128 bytes (num_caches x host blocks x block "
                                            "bytes)"):
                op = SwapBlocks("d2h", buf, num_caches=2)
                if mode == "graph":
                    FnCell(op)(*caches, ms.Tensor(np.array([[0, 0]], np.int64)))
                else:
                    op(*caches, np.array([[0, 0]]))
            assert (buf.numpy() == 7).all()
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


@pytest.mark.parametrize("mode", [ms.GRAPH_MODE, ms.PYNATIVE_MODE])
def test_a_gradient_through_a_host_copy_names_the_primitive_and_stop_gradient_is_the_fix(mode):
    ms.set_context(mode=mode)
    try:
        with HostBuffer(64) as buf:
            op = MemcpyBatch("d2h", buf, num_tensors=1)
            offsets = ms.Tensor(np.array([0], np.int64))

            def through(x):
                return (x * op(x * 2, offsets).astype(ms.float32)).sum()

            def stopped(x):
                return (x * op(ops.stop_gradient(x * 2), offsets).astype(ms.float32)).sum()

            x = ms.Tensor(np.ones(4, np.float32))
            with pytest.raises(RuntimeError, match="Custom_ms_memcopy_memcpy_batch_d2h's bprop not defined"):
                ms.grad(through)(x)
            np.testing.assert_array_equal(ms.grad(stopped)(x).asnumpy(), np.full(4, 16, np.float32))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def test_block_pool_hands_out_host_blocks_for_swaps_made_in_a_graph():
    pool = BlockPool(num_caches=1, num_blocks=4, num_host_blocks=2, block_shape=(2,), dtype=ms.float32)
    try:
        host_blocks = pool.allocate_host(2)
        assert sorted(host_blocks) == [0, 1] and pool.num_free_host_blocks == 0
        with pytest.raises(Exception, match="host"):
            pool.allocate_host(1)
        pool.free_host(host_blocks)
        assert pool.num_free_host_blocks == 2
    finally:
        pool.close()
