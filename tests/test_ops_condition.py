"""MemcpyWithCondition against numpy (configs/ops/condition.yaml, ops_impl/kernels/bodies/condition.cpp,
ms_memcopy/ops/condition.py)."""
import numpy as np
import pytest

import mindspore as ms

from ms_memcopy import HostBuffer
from ms_memcopy.ops import MemcpyWithCondition

from _ops_support import (DTYPES, as_numpy, assert_copies_every_rank, call, dtype_of, int64, make, raw_bytes,
                          refused_while_compiling, widen)


@pytest.mark.parametrize("dtype", DTYPES)
def test_copy_every_dtype_and_rank(ms_mode, dtype):
    assert_copies_every_rank(MemcpyWithCondition("d2d"), dtype)


def test_copy_call_styles(ms_mode, style):
    t, v = make("float64", (3, 7), seed=9)
    np.testing.assert_array_equal(call(style, MemcpyWithCondition("d2d"), t).asnumpy(), v)


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


FILL = 0x5A


@pytest.mark.parametrize("direction", ["d2h", "h2d"])
def test_constant_offset_outside_refused_while_compiling(ms_mode, direction):
    """A bad constant offset fails the graph's compilation with the kernel's check; nothing launches and
    no byte of the HostBuffer changes."""
    with HostBuffer(64) as buf:
        buf.numpy()[:] = FILL
        if direction == "d2h":
            op, inputs = MemcpyWithCondition("d2h", host_buffer=buf), (ms.Tensor(np.ones(10, np.float32)),)
            message = ("ms_memcopy MemcpyWithCondition(d2h): offset = 30: x (40 bytes) would end at byte 70, past "
                       "the end of the HostBuffer (64 bytes); nothing was copied")
        else:
            op, inputs = MemcpyWithCondition("h2d", host_buffer=buf, shape=(10,), dtype=ms.float32), ()
            message = ("ms_memcopy MemcpyWithCondition(h2d): offset = 30: the output (40 bytes) would end at byte "
                       "70, past the end of the HostBuffer (64 bytes); nothing was copied")
        refused_while_compiling(ms_mode, op, inputs, (int64(30),), ValueError, message)
        np.testing.assert_array_equal(buf.numpy(), np.full(64, FILL, np.uint8))
