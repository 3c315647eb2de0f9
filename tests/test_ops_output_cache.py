"""Primitives built for different outputs on one HostBuffer never share an inferred output.

PYNATIVE_MODE caches an op's inferred output shape and dtype under its attributes and inputs. Two h2d
primitives reading the same HostBuffer with the same offsets differ only in the outputs they were built
for; without the output signature attribute the second one returned the first one's shape and dtype
with the wrong bytes. Each case builds two primitives, calls them alternately, and compares both
results with numpy views of the buffer's bytes.
"""
import numpy as np
import pytest

import mindspore as ms

from ms_memcopy import HostBuffer
from ms_memcopy.nn import BlockSlots, SwapInBlocks
from ms_memcopy.ops import Memcpy2D, MemcpyBatch, MemcpyWithCondition

from _ops_support import as_numpy, call, int64

PITCH = 32
CASES = [((4,), ms.float32, np.float32), ((2, 3), ms.int16, np.int16), ((3, 2), ms.int8, np.int8),
         ((2, 2), ms.float64, np.float64)]


@pytest.fixture
def buf():
    with HostBuffer(4096, pinned=True) as b:
        b.numpy(np.uint8, (4096,))[:] = np.arange(4096) % 251
        yield b


def expected_dense(buf, shape, np_dtype):
    n = int(np.prod(shape)) * np.dtype(np_dtype).itemsize
    return buf.numpy(np.uint8, (4096,))[:n].copy().view(np_dtype).reshape(shape)


def expected_pitched(buf, shape, np_dtype):
    rows = int(np.prod(shape[:-1]))
    row_bytes = shape[-1] * np.dtype(np_dtype).itemsize
    raw = buf.numpy(np.uint8, (4096,))
    data = np.stack([raw[r * PITCH:r * PITCH + row_bytes] for r in range(rows)])
    return data.copy().view(np_dtype).reshape(shape)


def builders(form, buf):
    if form == "batch":
        return (lambda s, d: MemcpyBatch("h2d", buf, shapes=[s], dtypes=[d]), expected_dense)
    if form == "2d":
        return (lambda s, d: Memcpy2D("h2d", host_buffer=buf, pitch=PITCH, shape=s, dtype=d), expected_pitched)
    return (lambda s, d: MemcpyWithCondition("h2d", host_buffer=buf, shape=s, dtype=d), expected_dense)


@pytest.mark.parametrize("form", ["batch", "2d", "condition"])
def test_same_buffer_different_outputs(ms_mode, style, buf, form):
    build, expected = builders(form, buf)
    ops = [(build(shape, ms_t), shape, np_t, ms_t) for shape, ms_t, np_t in CASES]
    for _ in range(2):
        for op, shape, np_t, ms_t in ops:
            out = call(style, op, int64(0))
            if form == "batch":
                out = out[0]
            assert out.shape == shape and out.dtype == ms_t
            np.testing.assert_array_equal(as_numpy(out), expected(buf, shape, np_t))


def test_swap_in_blocks_of_different_shapes(ms_mode, buf):
    small = BlockSlots(buf, block_shape=(4,), dtype=ms.float32)
    large = BlockSlots(buf, block_shape=(2, 3), dtype=ms.int16)
    for slots, shape, np_t, ms_t in ((small, (4,), np.float32, ms.float32), (large, (2, 3), np.int16, ms.int16),
                                     (small, (4,), np.float32, ms.float32)):
        (out,) = SwapInBlocks(slots, num_blocks=1)(int64(0))
        assert out.shape == shape and out.dtype == ms_t
        np.testing.assert_array_equal(out.asnumpy(), expected_dense(buf, shape, np_t))
