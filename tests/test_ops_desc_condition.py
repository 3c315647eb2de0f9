"""MemcpyWithDesc and MemcpyWithCondition against numpy."""
import numpy as np
import pytest

import mindspore as ms

from ms_memcopy import HostBuffer
from ms_memcopy.ops import MemcpyWithCondition, MemcpyWithDesc

from _ops_support import DTYPES, SHAPES, as_numpy, call, dtype_of, int64, make, raw_bytes


def widen(dtype, values):
    return values.astype(np.float32) if dtype == "bfloat16" else values


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op_factory", [MemcpyWithDesc, lambda: MemcpyWithCondition("d2d")], ids=["desc", "cond"])
def test_copy_every_dtype_and_rank(ms_mode, op_factory, dtype):
    op = op_factory()
    for i, shape in enumerate(SHAPES):
        t, v = make(dtype, shape, seed=i)
        y = call("cell" if i % 2 else "jit", op, t)
        assert y.dtype == dtype_of(dtype) and tuple(y.shape) == shape
        np.testing.assert_array_equal(as_numpy(y), widen(dtype, v))


@pytest.mark.parametrize("op_factory", [MemcpyWithDesc, lambda: MemcpyWithCondition("d2d")], ids=["desc", "cond"])
def test_copy_call_styles(ms_mode, style, op_factory):
    t, v = make("float64", (3, 7), seed=9)
    np.testing.assert_array_equal(call(style, op_factory(), t).asnumpy(), v)


@pytest.mark.parametrize("count,start", [(5, 0), (5, 100), (105, 0), (0, 17), (1, 104)])
def test_desc_window(ms_mode, style, count, start):
    t, v = make("int16", (3, 5, 7), seed=2)
    y = call(style, MemcpyWithDesc(count=count), t, int64(start))
    assert tuple(y.shape) == (count,)
    np.testing.assert_array_equal(y.asnumpy(), v.reshape(-1)[start:start + count])


def test_desc_window_bfloat16(ms_mode):
    t, v = make("bfloat16", (4, 9), seed=5)
    y = MemcpyWithDesc(count=11)(t, int64(13))
    np.testing.assert_array_equal(as_numpy(y), v.reshape(-1)[13:24])


@pytest.mark.parametrize("pinned", [True, False], ids=["pinned", "pageable"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "uint8", "bool", "int64"])
def test_condition_d2h_then_h2d(ms_mode, style, pinned, dtype):
    t, v = make(dtype, (2, 3, 5), seed=4)
    expected = np.frombuffer(raw_bytes(dtype, v), np.uint8)
    offset = 9
    with HostBuffer(offset + expected.size + 7, pinned=pinned) as buf:
        buf.numpy()[:] = 0xEE
        n = call(style, MemcpyWithCondition("d2h", host_buffer=buf), t, int64(offset))
        assert n.asnumpy().tolist() == [expected.size]
        reference = np.full(buf.nbytes, 0xEE, np.uint8)
        reference[offset:offset + expected.size] = expected
        np.testing.assert_array_equal(buf.numpy(), reference)
        y = call(style, MemcpyWithCondition("h2d", host_buffer=buf, shape=(2, 3, 5), dtype=dtype_of(dtype)),
                 int64(offset))
        np.testing.assert_array_equal(as_numpy(y), widen(dtype, v))


def test_condition_empty_tensor(ms_mode):
    with HostBuffer(8) as buf:
        buf.numpy()[:] = 1
        n = MemcpyWithCondition("d2h", host_buffer=buf)(ms.Tensor(np.zeros((0, 3), np.float32)), int64(8))
        assert n.asnumpy().tolist() == [0]
        np.testing.assert_array_equal(buf.numpy(), np.ones(8, np.uint8))
        y = MemcpyWithCondition("h2d", host_buffer=buf, shape=(2, 0), dtype=ms.int32)(int64(8))
        assert tuple(y.shape) == (2, 0)
