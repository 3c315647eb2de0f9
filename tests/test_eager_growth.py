"""Eager calls cost the same for every value and keep nothing per value.

A serving process calls the primitives eagerly for hours with a new offset or block mapping each
time. Eager calls run through the module's KernelInstance with the int64 values as host values, so
no single-op graph is compiled per value (MindSpore's single-op compiler keys its never-evicted cache
on the values of value-dependent inputs) and the kernel state is reused across calls. Measured here:
the process's resident memory after many calls with distinct values, and the host runtime's live
events and pinned allocations (the kernel state's event-guarded rings and slots) before and after.
Every call's bytes are checked against numpy, so a call that did nothing cannot pass.
"""
import gc

import numpy as np
import pytest

import mindspore as ms
from mindspore import Parameter

from ms_memcopy import HostBuffer, runtime
from ms_memcopy._framework import sync_launches
from ms_memcopy.ops import MemcpyWithCondition, SwapBlocks

MIB = 1 << 20


def rss_bytes():
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * 4096


def live_runtime_objects():
    """(live events, live pinned allocations) of the host runtime."""
    return tuple(runtime.live_resource_counts())


@pytest.fixture
def pynative():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    yield
    sync_launches()


def settle():
    sync_launches()
    gc.collect()


def test_distinct_offsets_grow_nothing(pynative):
    calls, elements = 10_000, 16
    with HostBuffer(calls * elements * 4, pinned=True) as buf:
        op = MemcpyWithCondition("d2h", host_buffer=buf)
        x = ms.Tensor(np.arange(elements, dtype=np.float32))
        offsets = [ms.Tensor(np.array([i * elements * 4], np.int64)) for i in range(calls)]
        for i in range(200):  # warm up: the kernel state's rings, MindSpore's own caches
            op(x, offsets[i])
        settle()
        rss, objects = rss_bytes(), live_runtime_objects()
        for i in range(calls):
            op(x, offsets[i])
        settle()
        grown = rss_bytes() - rss
        assert live_runtime_objects() == objects
        assert grown < 5 * MIB, f"{calls} eager calls with distinct offsets grew RSS by {grown / MIB:.1f} MiB"
        written = buf.numpy(np.float32).reshape(calls, elements)
        np.testing.assert_array_equal(written, np.broadcast_to(np.arange(elements, dtype=np.float32),
                                                               (calls, elements)))


def test_distinct_block_mappings_grow_nothing(pynative):
    calls, num_blocks, block = 2_000, 64, (4, 8)
    rng = np.random.default_rng(7)
    values = [rng.standard_normal((num_blocks, *block)).astype(np.float32) for _ in range(2)]
    caches = [Parameter(ms.Tensor(v), name=f"growth_cache{i}") for i, v in enumerate(values)]
    block_bytes = int(np.prod(block)) * 4
    with HostBuffer(2 * num_blocks * block_bytes, pinned=True) as buf:
        swap_out = SwapBlocks("d2h", buf, num_caches=2)
        mappings = [np.array([[(i + j) % num_blocks, (3 * i + j) % num_blocks] for j in range(4)], np.int64)
                    for i in range(calls)]
        for i in range(100):
            swap_out(*caches, mappings[i])
        settle()
        rss, objects = rss_bytes(), live_runtime_objects()
        for i in range(calls):
            swap_out(*caches, mappings[i])
        settle()
        grown = rss_bytes() - rss
        assert live_runtime_objects() == objects
        assert grown < 5 * MIB, f"{calls} SwapBlocks calls with distinct mappings grew RSS by {grown / MIB:.1f} MiB"
        host = buf.numpy(np.float32).reshape(2, num_blocks, *block)
        expected = np.zeros_like(host)
        for mapping in mappings[:100] + mappings:  # the last write of each host block wins
            for src, dst in mapping:
                for l in range(2):
                    expected[l, dst] = values[l][src]
        np.testing.assert_array_equal(host, expected)


def test_a_primitive_releases_its_kernel_state(pynative):
    """The eager calls' kernel state lives with the primitive: building and dropping primitives does
    not accumulate events or pinned slots."""
    x = ms.Tensor(np.arange(16, dtype=np.float32))
    with HostBuffer(64, pinned=True) as buf:
        MemcpyWithCondition("d2h", host_buffer=buf)(x, ms.Tensor(np.array([0], np.int64)))
        settle()
        objects = live_runtime_objects()
        for _ in range(50):
            MemcpyWithCondition("d2h", host_buffer=buf)(x, ms.Tensor(np.array([0], np.int64)))
        settle()
        assert live_runtime_objects() == objects
        np.testing.assert_array_equal(buf.numpy(np.float32), np.arange(16, dtype=np.float32))


def test_transfer_queue_jobs_grow_nothing(pynative):
    """Swap-outs and swap-ins through a paced TransferQueue (two parts a job, each its own launch and
    event), polled like a scheduler: the events are released with their jobs and RSS stays flat; the
    blocks come back with their values."""
    from ms_memcopy.nn import BlockPool, TransferQueue

    jobs, block = 600, (4, 8)
    pool = BlockPool(num_caches=2, num_blocks=8, num_host_blocks=8, block_shape=block, dtype=ms.float32)
    rng = np.random.default_rng(11)
    values = [rng.standard_normal((8, *block)).astype(np.float32) for _ in range(2)]
    for cache, v in zip(pool.caches, values):
        cache.set_data(ms.Tensor(v))
    try:
        queue = TransferQueue(pool, part_bytes=pool.num_caches * pool.block_bytes)
        blocks = pool.allocate(2)
        origin = list(blocks)
        for i in range(jobs // 2 + 50):
            if i == 50:
                settle()
                rss, objects = rss_bytes(), live_runtime_objects()
            job = queue.submit("swap_out", blocks)
            host = queue.destination(job)
            while job not in queue.finished():
                pass
            job = queue.submit("swap_in", host)
            blocks = queue.destination(job)
            while job not in queue.finished():
                pass
        settle()
        grown = rss_bytes() - rss
        assert live_runtime_objects() == objects
        assert grown < 5 * MIB, f"{jobs} TransferQueue jobs grew RSS by {grown / MIB:.1f} MiB"
        for l, cache in enumerate(pool.caches):
            np.testing.assert_array_equal(cache.asnumpy()[blocks], values[l][origin])
        queue.close()
    finally:
        pool.close()
