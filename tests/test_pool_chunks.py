"""BlockPool over caches of several block shapes and dtypes, with a host side of several chunks
(allocated, or the caller's registered HostBuffers), and SwapBlocks over a HostChunks: against numpy."""
import mmap

import numpy as np
import pytest

import mindspore as ms

from ms_memcopy import HostBuffer, HostChunks
from ms_memcopy.nn import BlockPool, TransferQueue
from ms_memcopy.ops import SwapBlocks

from _ops_support import as_numpy, make, raises_exactly, raw_bytes

# (dtype, block shape) of each cache
MLA = [("bfloat16", (2, 512)), ("bfloat16", (2, 64))]          # latent + rope of one layer
INT8_K_BF16_V = [("int8", (2, 1, 512)), ("bfloat16", (2, 1, 64))]


def fill(pool, specs, seed=40):
    """Writes random values into the pool's caches; returns each cache's bytes, numpy [num_blocks, b_l]."""
    refs = []
    for l, ((dtype, shape), cache) in enumerate(zip(specs, pool.caches)):
        tensor, values = make(dtype, (pool.num_blocks, *shape), seed=seed + l)
        cache.set_data(tensor)
        refs.append(np.frombuffer(raw_bytes(dtype, values), np.uint8).reshape(pool.num_blocks, -1))
    return refs


def cache_bytes(cache):
    """A cache's bytes as MindSpore stores them, numpy [num_blocks, b_l]."""
    dtype = "bfloat16" if cache.dtype == ms.bfloat16 else None
    values = as_numpy(cache)
    return np.frombuffer(raw_bytes(dtype, values), np.uint8).reshape(cache.shape[0], -1)


def host_slots(chunks, block_bytes, layout):
    """Per cache, numpy [host blocks, b_l] over all chunks (each chunk laid out alone, docs/primitives.md)."""
    total, edges = sum(block_bytes), np.cumsum([0, *block_bytes])
    per_cache = [[] for _ in block_bytes]
    for chunk in chunks:
        h = chunk.nbytes // total
        used = chunk.numpy(np.uint8)[:h * total]
        for l, (a, b) in enumerate(zip(edges, edges[1:])):
            if layout == "cache_major":
                per_cache[l].append(used[h * a:h * b].reshape(h, b - a))
            else:
                per_cache[l].append(used.reshape(h, total)[:, a:b])
    return [np.concatenate(views) for views in per_cache]


def round_trip(pool, specs, layout):
    """swap_out of every block across the chunks, then swap_in in another order: numpy checks."""
    refs = fill(pool, specs)
    bb = [r.shape[1] for r in refs]
    table = pool.allocate(pool.num_host_blocks)
    host_table = pool.swap_out(table[::-1])
    assert host_table == list(range(pool.num_host_blocks))
    slots = host_slots(pool.host_chunks, bb, layout)
    for l in range(len(specs)):
        np.testing.assert_array_equal(slots[l][:pool.num_host_blocks], refs[l][table[::-1]])
    back = pool.swap_in(host_table[::-1])              # host block h -> device block back[i]
    for l, cache in enumerate(pool.caches):
        got = cache_bytes(cache)
        for i, b in enumerate(back):
            np.testing.assert_array_equal(got[b], refs[l][table[i]])
    pool.free(back)


def test_mla_pool_over_allocated_chunks_is_exact(ms_mode):
    pool = BlockPool(num_caches=2, num_blocks=6, num_host_blocks=5, block_shape=[s for _, s in MLA],
                     dtype=ms.bfloat16, host_chunk_bytes=2 * 2304 + 100)
    try:
        assert pool.cache_block_bytes == (2048, 256) and pool.bytes_per_block == 2304
        assert pool.block_shape is None and pool.block_bytes is None and pool.dtypes == (ms.bfloat16,) * 2
        assert [c.nbytes for c in pool.host_chunks] == [4608, 4608, 2304]  # whole host blocks, no rounding
        assert pool.host_nbytes == 5 * 2304 and isinstance(pool.host_buffer, HostChunks)
        round_trip(pool, MLA, "cache_major")
    finally:
        pool.close()
    assert all(c.closed for c in pool.host_chunks)


def test_int8_k_bf16_v_pool_over_registered_chunks(ms_mode):
    bb = 1024 + 256  # int8 (2, 1, 512) + bf16 (2, 1, 64)
    # the caller's memory: mappings of their own (on the CPU target a numpy array may share a page with
    # the caches, which the runtime then refuses to see as device memory)
    maps = [mmap.mmap(-1, 3 * bb + 100), mmap.mmap(-1, 2 * bb)]  # 3 host blocks, then 2
    pages = [np.frombuffer(m, np.uint8) for m in maps]
    chunks = [HostBuffer.wrap(m) for m in maps]
    pool = BlockPool(num_caches=2, num_blocks=6, num_host_blocks=5, block_shape=[s for _, s in INT8_K_BF16_V],
                     dtype=[ms.int8, ms.bfloat16], host_layout="block_major", host_buffers=chunks)
    try:
        assert pool.host_chunks == tuple(chunks) and all(c.registered for c in pool.host_chunks)
        assert pool.host_nbytes == 5 * bb + 100
        round_trip(pool, INT8_K_BF16_V, "block_major")
        # a TransferQueue over the pool moves blocks of both chunks in one job
        refs = [cache_bytes(c) for c in pool.caches]
        queue = TransferQueue(pool)
        table = pool.allocate(4)
        job = queue.submit("swap_out", table)
        assert queue.wait(job) == [0, 1, 2, 3]
        assert not pages[0][3 * bb:].any()                                            # not a host block
        np.testing.assert_array_equal(pages[1][:1024], refs[0][table[3]])              # host block 3, K
        np.testing.assert_array_equal(pages[1][1024:bb], refs[1][table[3]])             # and V
    finally:
        pool.close()
    assert not any(c.closed for c in chunks)  # the caller's: still open
    for c in chunks:
        c.close()
    del pages


def test_swap_blocks_over_host_chunks_refuses_with_nothing_written(ms_mode):
    """A host block past the last chunk: the kernel's text, in both modes; no chunk written."""
    from test_ops_blocks import InPlace  # the Cell that holds caches as Parameters

    cache = ms.Parameter(ms.Tensor(np.arange(8, dtype=np.float32).reshape(4, 2)), name="cache")
    with HostBuffer(16) as first, HostBuffer(8 + 3) as second:
        first.numpy(np.uint8)[:] = 7
        second.numpy(np.uint8)[:] = 7
        chunks = HostChunks([first, second])
        op = SwapBlocks("d2h", chunks, num_caches=1)
        assert op.host_blocks(8) == 3
        mapping = ms.Tensor(np.array([[0, 0], [1, 3]], np.int64))
        with raises_exactly(ValueError, "ms_memcopy SwapBlocks(d2h): block_mapping[1][1] = 3: host block out of "
                                        "range [0, 3); nothing was copied"):
            (InPlace(op, [cache]) if ms_mode == "graph" else lambda m: op(cache, m))(mapping)
        assert (first.numpy(np.uint8) == 7).all() and (second.numpy(np.uint8) == 7).all()
        chunks.close()


def test_a_closed_chunk_closes_the_group_for_eager_calls(route):
    """Closing one chunk ends the group: closed reads True, and an eager SwapBlocks call refuses it with
    the group named, before anything is copied; the other chunk is untouched and stays open."""
    ms.set_context(mode=ms.PYNATIVE_MODE)
    cache = ms.Parameter(ms.Tensor(np.arange(8, dtype=np.float32).reshape(4, 2)), name="cache")
    first, second = HostBuffer(16), HostBuffer(16)
    second.numpy(np.uint8)[:] = 7
    chunks = HostChunks([first, second])
    op = SwapBlocks("d2h", chunks, num_caches=1)
    np.testing.assert_array_equal(op(cache, [[0, 0]]).asnumpy(), [8])
    assert not chunks.closed
    first.close()
    assert chunks.closed and not second.closed
    with raises_exactly(ValueError, "ms_memcopy SwapBlocks(d2h): host_buffer: the HostChunks is closed"):
        op(cache, [[1, 2]])
    assert (second.numpy(np.uint8) == 7).all()
    chunks.close()
    second.close()


def test_pool_arguments_refused(route):
    ms.set_context(mode=ms.PYNATIVE_MODE)
    shapes = [s for _, s in MLA]
    with pytest.raises(ValueError, match=r"block_shape: 2 block shapes for num_caches=3"):
        BlockPool(num_caches=3, num_blocks=2, num_host_blocks=1, block_shape=shapes, dtype=ms.bfloat16)
    with pytest.raises(ValueError, match=r"dtype: 1 dtypes for num_caches=2"):
        BlockPool(num_caches=2, num_blocks=2, num_host_blocks=1, block_shape=shapes, dtype=[ms.bfloat16])
    with pytest.raises(ValueError, match=r"host_chunk_bytes = 2303 holds no host block of 2304 bytes"):
        BlockPool(num_caches=2, num_blocks=2, num_host_blocks=1, block_shape=shapes, dtype=ms.bfloat16,
                  host_chunk_bytes=2303)
    with HostBuffer(2 * 2304 - 1) as small:
        with pytest.raises(ValueError, match=r"host_buffers: their 4607 bytes hold 1 host block\(s\) of 2304 bytes "
                                             r"\(one block of each cache\), fewer than num_host_blocks = 2"):
            BlockPool(num_caches=2, num_blocks=2, num_host_blocks=2, block_shape=shapes, dtype=ms.bfloat16,
                      host_buffers=[small])
    with pytest.raises(TypeError, match=r"chunks\[1\] must be an ms_memcopy.HostBuffer"):
        HostChunks([HostBuffer(8), b"x"])


def test_offloading_handler_over_a_mixed_pool_of_chunks(ms_mode):
    """vLLM's store and load through the handler, over MLA-like caches whose host pool spans two chunks."""
    from ms_memcopy.offload import DeviceBlocksSpec, HostBlocksSpec, OffloadingHandler

    pool = BlockPool(num_caches=2, num_blocks=6, num_host_blocks=4, block_shape=[s for _, s in MLA],
                     dtype=ms.bfloat16, host_chunk_bytes=3 * 2304)  # host blocks 0-2, then 3
    refs = fill(pool, MLA)
    handler = OffloadingHandler(pool, block_size_factor=2)  # handler host block 1 = pool host blocks 2, 3
    try:
        assert handler.transfer_async(1, (DeviceBlocksSpec([4, 1]), HostBlocksSpec([1])))
        handler.wait({1})
        first, second = pool.host_chunks
        np.testing.assert_array_equal(host_slots([first], [2048, 256], "cache_major")[0][2], refs[0][4])
        np.testing.assert_array_equal(host_slots([second], [2048, 256], "cache_major")[1][0], refs[1][1])
        assert handler.transfer_async(2, (HostBlocksSpec([1]), DeviceBlocksSpec([0, 5])))
        handler.wait({2})
        results = {r.job_id: r for r in handler.get_finished()}
        assert results[1].success and results[2].success and results[2].transfer_size == 2 * 2304
        for l, cache in enumerate(pool.caches):
            got = cache_bytes(cache)
            np.testing.assert_array_equal(got[[0, 5]], refs[l][[4, 1]])
    finally:
        handler.close()
        pool.close()


def test_swap_blocks_async_over_host_chunks(route):
    """The asynchronous form runs SwapBlocks' body: blocks to both chunks in one launch."""
    from ms_memcopy.ops import SwapBlocksAsync, wait_transfers

    ms.set_context(mode=ms.PYNATIVE_MODE)
    cache = ms.Parameter(ms.Tensor(np.arange(8, dtype=np.float32).reshape(4, 2)), name="cache")
    with HostBuffer(8) as first, HostBuffer(16) as second:
        with HostChunks([first, second]) as chunks:
            token = SwapBlocksAsync("d2h", chunks, num_caches=1)(cache, [[2, 0], [0, 2]])
            wait_transfers()
            assert token.asnumpy().tolist() == [16]
            np.testing.assert_array_equal(first.numpy(np.float32), [4, 5])
            np.testing.assert_array_equal(second.numpy(np.float32)[2:], [0, 1])
