"""MemsetAsync against numpy (configs/ops/memset.yaml, ops_impl/kernels/bodies/memset.cpp,
ms_memcopy/ops/memset.py): bytes of a tensor set in place, in GRAPH_MODE (Cells holding Parameters,
ms.jit) and PYNATIVE_MODE; bad input raises before any byte is written."""
import numpy as np
import pytest

import mindspore as ms
from mindspore import nn, ops

from ms_memcopy.ops import MemsetAsync

from _ops_support import DTYPES, as_numpy, int64, make, raw_bytes, raises_exactly, refused_while_compiling
from test_ops_blocks import parameters, run

PREFIX = "ms_memcopy MemsetAsync: "


def expected_after(dtype, values, offset, count, value):
    """The bytes MindSpore stores for values, with [offset, offset + count) set to value."""
    data = np.frombuffer(raw_bytes(dtype, values), np.uint8).copy()
    data[offset:offset + count] = value
    return data


def stored_bytes(dtype, tensor):
    return np.frombuffer(raw_bytes(dtype, as_numpy(tensor)), np.uint8)


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_in_place(ms_mode, dtype):
    dst, values = make(dtype, (3, 7), seed=3)
    (param,) = parameters(dst)
    address = param.data_ptr()
    nbytes = len(raw_bytes(dtype, values))
    offset, count = 1, nbytes - 3
    n = run("cell", MemsetAsync(0), [param], int64(offset), int64(count))
    assert n.dtype == ms.int64 and n.asnumpy().tolist() == [count]
    np.testing.assert_array_equal(stored_bytes(dtype, param), expected_after(dtype, values, offset, count, 0))
    assert param.data_ptr() == address


@pytest.mark.parametrize("offset,count,value", [(0, 48, 255), (5, 14, 0xAB), (47, 1, 1), (48, 0, 9), (0, 0, 0)])
def test_styles_and_ranges(ms_mode, style, offset, count, value):
    dst, values = make("int32", (3, 4), seed=8)
    (param,) = parameters(dst)
    n = run(style, MemsetAsync(value), [param], int64(offset), int64(count))
    assert n.asnumpy().tolist() == [count]
    np.testing.assert_array_equal(stored_bytes("int32", param), expected_after("int32", values, offset, count, value))


def test_pynative_tensor_in_place(route):
    ms.set_context(mode=ms.PYNATIVE_MODE)
    t = ms.Tensor(np.zeros((4, 6), np.float32))
    MemsetAsync(0x3F)(t, int64(8), int64(8))
    expected = np.zeros(96, np.uint8)
    expected[8:16] = 0x3F
    np.testing.assert_array_equal(t.asnumpy().view(np.uint8).reshape(-1), expected)


def test_builtin_after_it_in_graph_reads_the_new_values(ms_mode):
    class Step(nn.Cell):
        def __init__(self):
            super().__init__()
            self.cache = ms.Parameter(ms.Tensor(np.zeros((8, 4), np.uint8)), name="cache")
            self.fill = MemsetAsync(1)

        def construct(self, offset):
            n = self.fill(self.cache, offset, int64(4))
            return n, ops.reduce_sum(self.cache.astype(ms.int32), 1)

    step = Step()
    for i in range(8):
        _, sums = step(int64(4 * i))
        np.testing.assert_array_equal(sums.asnumpy(), [4 if k <= i else 0 for k in range(8)])


def test_bad_input_writes_nothing(ms_mode):
    (param,) = parameters(ms.Tensor(np.arange(12, dtype=np.int32).reshape(3, 4)))
    before = param.asnumpy().copy()
    fill = MemsetAsync(7)
    # Values: while the graph compiles when they are constants, else by the kernel before it writes.
    with raises_exactly(ValueError, PREFIX + "offset = 40: the bytes [40, 40 + 9) leave the 48 bytes of dst; "
                                             "nothing was written"):
        run("cell", fill, [param], int64(40), int64(9))
    with raises_exactly(ValueError, PREFIX + "offset = -1: the bytes [-1, -1 + 2) leave the 48 bytes of dst; "
                                             "nothing was written"):
        run("eager", fill, [param], int64(-1), int64(2))
    with raises_exactly(ValueError, PREFIX + "count is negative (-3); nothing was written"):
        run("jit", fill, [param], int64(0), int64(-3))
    with raises_exactly(ValueError, PREFIX + "value must be a byte in [0, 255], got 256"):
        run("cell", MemsetAsync(256), [param], int64(0), int64(4))
    refused_while_compiling(ms_mode, MemsetAsync(1), (param,), (int64(44), int64(8)), ValueError,
                            PREFIX + "offset = 44: the bytes [44, 44 + 8) leave the 48 bytes of dst; "
                                     "nothing was written")
    # Types: before anything runs.
    with pytest.raises(TypeError, match="offset"):
        run("cell", fill, [param], ms.Tensor(np.array([0], np.int32)), int64(4))
    with pytest.raises(TypeError, match="value must be an int"):
        MemsetAsync(1.5)
    with pytest.raises(ValueError, match="value must be >= 0"):
        MemsetAsync(-1)
    np.testing.assert_array_equal(param.asnumpy(), before)


def test_refuses_slices_in_pynative(route):
    ms.set_context(mode=ms.PYNATIVE_MODE)
    t = ms.Tensor(np.zeros((4, 6), np.float32))
    for view in (t[1:3], t[:, 2:5]):
        with pytest.raises(TypeError, match="dst is a slice or view of a larger tensor"):
            MemsetAsync(1)(view, int64(0), int64(4))
    assert not t.asnumpy().any()
