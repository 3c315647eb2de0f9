"""Memcpy2D: extract, insert, d2h and h2d pitched copies against numpy slicing."""
import numpy as np
import pytest

import mindspore as ms

from ms_memcopy import HostBuffer
from ms_memcopy.ops import Memcpy2D

from _ops_support import DTYPES, as_numpy, call, dtype_of, int64, make, raw_bytes, refused_while_compiling, widen


def matrix(values):
    """The 2-D view the primitives use: leading dimensions are rows, the last one columns."""
    if not values.ndim:
        return values.reshape(1, 1)
    return values.reshape(int(np.prod(values.shape[:-1])), values.shape[-1])


@pytest.mark.parametrize("dtype", DTYPES)
def test_extract_every_dtype(ms_mode, dtype):
    t, v = make(dtype, (2, 3, 7), seed=3)  # a 6 x 7 matrix
    op = Memcpy2D("extract", height=4, width=5)
    y = call("cell", op, t, int64(1), int64(2))
    assert y.dtype == dtype_of(dtype) and tuple(y.shape) == (4, 5)
    np.testing.assert_array_equal(as_numpy(y), widen(dtype, matrix(v)[1:5, 2:7]))


@pytest.mark.parametrize("shape,h,w,r,c", [((9,), 1, 4, 0, 5), ((5, 6), 5, 6, 0, 0), ((2, 2, 3, 5), 3, 2, 9, 3),
                                           ((4, 0), 2, 0, 1, 0), ((3, 4), 0, 2, 3, 1)])
def test_extract_ranks_and_edges(ms_mode, style, shape, h, w, r, c):
    t, v = make("float32", shape, seed=1)
    y = call(style, Memcpy2D("extract", height=h, width=w), t, int64(r), int64(c))
    np.testing.assert_array_equal(y.asnumpy(), matrix(v)[r:r + h, c:c + w])


@pytest.mark.parametrize("dtype", DTYPES)
def test_insert_every_dtype(ms_mode, dtype):
    dst, dv = make(dtype, (5, 9), seed=4)
    src, sv = make(dtype, (2, 3), seed=5)
    y = call("cell", Memcpy2D("insert"), dst, src, int64(3), int64(6))
    expected = dv.copy()
    expected[3:5, 6:9] = sv
    np.testing.assert_array_equal(as_numpy(y), widen(dtype, expected))
    np.testing.assert_array_equal(as_numpy(dst), widen(dtype, dv))  # the input is not modified


def test_insert_styles_and_ranks(ms_mode, style):
    dst, dv = make("int32", (2, 3, 8), seed=6)  # 6 x 8
    src, sv = make("int32", (1, 2, 5), seed=7)  # 2 x 5
    y = call(style, Memcpy2D("insert"), dst, src, int64(4), int64(1))
    expected = matrix(dv).copy()
    expected[4:6, 1:6] = matrix(sv)
    assert tuple(y.shape) == (2, 3, 8)
    np.testing.assert_array_equal(y.asnumpy().reshape(6, 8), expected)


@pytest.mark.parametrize("pinned", [True, False], ids=["pinned", "pageable"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int64", "bool"])
def test_d2h_pitched_rows_leave_gaps_untouched(ms_mode, style, pinned, dtype):
    t, v = make(dtype, (3, 2, 5), seed=8)  # 6 rows of 5 elements
    row = len(raw_bytes(dtype, v[0, 0]))
    pitch, offset = row + 11, 7
    with HostBuffer(offset + 6 * pitch + 3, pinned=pinned) as buf:
        buf.numpy()[:] = 0xCD
        n = call(style, Memcpy2D("d2h", host_buffer=buf, pitch=pitch), t, int64(offset))
        assert n.asnumpy().tolist() == [6 * row]
        expected = np.full(buf.nbytes, 0xCD, np.uint8)
        for r, row_values in enumerate(matrix(v)):
            start = offset + r * pitch
            expected[start:start + row] = np.frombuffer(raw_bytes(dtype, row_values), np.uint8)
        np.testing.assert_array_equal(buf.numpy(), expected)


@pytest.mark.parametrize("pinned", [True, False], ids=["pinned", "pageable"])
def test_h2d_pitched_rows(ms_mode, style, pinned):
    pitch, offset = 40, 5
    with HostBuffer(offset + 4 * pitch, pinned=pinned) as buf:
        host = np.random.default_rng(2).integers(0, 255, buf.nbytes, dtype=np.uint8)
        buf.numpy()[:] = host
        y = call(style, Memcpy2D("h2d", host_buffer=buf, pitch=pitch, shape=(2, 2, 3), dtype=ms.int16), int64(offset))
        rows = [host[offset + r * pitch: offset + r * pitch + 6] for r in range(4)]
        expected = np.stack(rows).copy().view(np.int16).reshape(2, 2, 3)
        np.testing.assert_array_equal(y.asnumpy(), expected)


def test_height_above_one_call_is_split(ms_mode):
    """5,242,881 rows: more than aclrtMemcpy2dAsync takes in one call."""
    rows = 5242881
    x = np.random.default_rng(0).integers(0, 100, (rows, 3), dtype=np.int8)
    y = Memcpy2D("extract", height=rows, width=2)(ms.Tensor(x), int64(0), int64(1))
    np.testing.assert_array_equal(y.asnumpy(), x[:, 1:3])


def test_width_above_one_call_is_split(ms_mode):
    """Rows of 5,000,003 bytes: wider than aclrtMemcpy2dAsync takes in one call."""
    x = np.random.default_rng(1).integers(0, 100, (3, 5000010), dtype=np.int8)
    y = Memcpy2D("extract", height=2, width=5000003)(ms.Tensor(x), int64(1), int64(4))
    np.testing.assert_array_equal(y.asnumpy(), x[1:3, 4:5000007])


REGION_ROWS = "row = 3: the region [3, 3 + 2) leaves the 4 rows of the tensor; nothing was copied"


@pytest.mark.parametrize("mode", ["extract", "insert", "write", "d2h", "h2d"])
def test_constant_region_refused_while_compiling(ms_mode, mode):
    """A constant corner that puts the region outside the tensor, or a constant offset that puts the
    pitched rows outside the HostBuffer, fails the graph's compilation with the kernel's check: no
    kernel launches and no byte changes."""
    x = ms.Tensor(np.arange(20, dtype=np.float32).reshape(4, 5))
    dst = ms.Parameter(ms.Tensor(np.zeros((4, 5), np.float32)), name="dst")
    src = ms.Tensor(np.ones((2, 1), np.float32))
    with HostBuffer(128) as buf:
        buf.numpy()[:] = 0x5A
        if mode in ("d2h", "h2d"):
            span = "the pitched rows of x" if mode == "d2h" else "the pitched rows of the output"
            message = (f"ms_memcopy Memcpy2D({mode}): offset = 40: {span} (92 bytes) would end at byte 132, past the "
                       "end of the HostBuffer (128 bytes); nothing was copied")
            op = Memcpy2D("d2h", host_buffer=buf, pitch=24) if mode == "d2h" else \
                Memcpy2D("h2d", host_buffer=buf, pitch=24, shape=(4, 5), dtype=ms.float32)
            refused_while_compiling(ms_mode, op, (x,) if mode == "d2h" else (), (int64(40),), ValueError, message)
        else:
            op = Memcpy2D("extract", height=2, width=1) if mode == "extract" else Memcpy2D(mode)
            inputs = (x,) if mode == "extract" else (x if mode == "insert" else dst, src)
            refused_while_compiling(ms_mode, op, inputs, (int64(3), int64(0)), ValueError,
                                    f"ms_memcopy Memcpy2D({mode}): {REGION_ROWS}")
        np.testing.assert_array_equal(buf.numpy(), np.full(128, 0x5A, np.uint8))
    np.testing.assert_array_equal(dst.asnumpy(), np.zeros((4, 5), np.float32))
    np.testing.assert_array_equal(x.asnumpy(), np.arange(20, dtype=np.float32).reshape(4, 5))


def test_region_larger_than_the_tensor_refused_while_compiling_whatever_the_corner(ms_mode):
    """The shapes alone show the region cannot fit: the graph fails to compile though the corner is a
    graph input."""
    x = ms.Tensor(np.zeros((4, 5), np.float32))
    refused_while_compiling(ms_mode, Memcpy2D("extract", height=5, width=1), (x, int64(0), int64(0)), (), ValueError,
                            "ms_memcopy Memcpy2D(extract): height 5 exceeds the 4 rows of x")
    refused_while_compiling(ms_mode, Memcpy2D("insert"), (x, ms.Tensor(np.ones((1, 6), np.float32)), int64(0),
                                                          int64(0)), (),
                            ValueError, "ms_memcopy Memcpy2D(insert): src (1 x 6) does not fit in dst (4 x 5)")
