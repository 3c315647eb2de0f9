"""The main job's --overlap graph parts (examples/paged_kv/graph_overlap.py) on a tiny model: a swap-in
part issued by a compiled step runs on the swap-in stream (held here, the step returns and the cache is
not yet written), and the next step's WaitTransfer holds that step until the copy has run, after which
the blocks hold the host data (numpy) and the job is reported finished."""
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import mindspore as ms

from ms_memcopy import runtime as rt
from ms_memcopy.nn import BlockPool
from ms_memcopy.ops import transfer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from paged_kv.graph_overlap import GraphOverlapEngine  # noqa: E402
from paged_kv.model import Attention, DecodeStep, Prefill, int64  # noqa: E402

BLOCK_SIZE, WIDTH, MAX_BLOCKS = 4, 8, 2


@pytest.fixture
def graph_mode():
    previous = ms.get_context("mode")
    ms.set_context(mode=ms.GRAPH_MODE)
    yield
    ms.set_context(mode=previous)


def hold_lane(lane):
    """Holds a transfer lane's stream with a host function until the returned event is set."""
    rt.set_device(0)
    stream = transfer._library().msmc_transfer_lane_stream(0, lane)
    assert stream
    release = threading.Event()
    rt.launch_host_func(stream, lambda: release.wait(30))
    return release


def test_a_swap_in_part_is_waited_for_by_the_next_step(graph_mode):
    pool = BlockPool(2, 8, 4, (BLOCK_SIZE, WIDTH), ms.float32, name="graph_overlap")
    try:
        layers = [Attention(0, 4, 2, 4, 1)]
        step = DecodeStep(layers, pool.caches, BLOCK_SIZE, MAX_BLOCKS)
        engine = GraphOverlapEngine(Prefill(layers), step, pool, BLOCK_SIZE, MAX_BLOCKS, part_bytes=1)
        host = pool.host_buffer.numpy(np.float32, (2, 4, BLOCK_SIZE, WIDTH))
        host[:, 2] = np.arange(2 * BLOCK_SIZE * WIDTH, dtype=np.float32).reshape(2, BLOCK_SIZE, WIDTH) + 1
        pool.allocate_host(4)  # the scheduler's host blocks: 2 is the one swapped in
        own = pool.allocate(1)[0]  # the block of the sequence the steps decode
        table = np.zeros(MAX_BLOCKS, np.int64)
        table[0] = own
        inputs = (ms.Tensor(np.ones((1, 4), np.float32)), int64(0), int64(own * BLOCK_SIZE), ms.Tensor(table))
        warm = engine.queue.submit("swap_in", [3])  # compiles the two step graphs used below, lane free
        engine.step_cell(*inputs).asnumpy()
        engine.step_cell(*inputs).asnumpy()
        assert engine.queue.finished() == [warm]
        pool.free(engine.queue.destination(warm))
        release = hold_lane(1)  # the swap-in lane
        try:
            job = engine.queue.submit("swap_in", [2])
            (block,) = engine.queue.destination(job)
            engine.step_cell(*inputs).asnumpy()  # issues the part: queued behind the held lane
            assert not engine.queue.finished()
            for cache in pool.caches:
                np.testing.assert_array_equal(cache.asnumpy()[block], 0)
            threading.Timer(1.0, release.set).start()
            engine.step_cell(*inputs).asnumpy()  # its WaitTransfer holds it until the copy has run
            for cache, values in zip(pool.caches, host[:, 2].copy()):
                np.testing.assert_array_equal(cache.asnumpy()[block], values)
            assert engine.queue.finished() == [job]
        finally:
            release.set()
    finally:
        pool.close()
