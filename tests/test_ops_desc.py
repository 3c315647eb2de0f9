"""MemcpyWithDesc against numpy (configs/ops/desc.yaml, ops_impl/kernels/bodies/desc.cpp, ms_memcopy/ops/desc.py)."""
import numpy as np
import pytest

import mindspore as ms

from ms_memcopy.ops import MemcpyWithDesc

from _ops_support import DTYPES, as_numpy, assert_copies_every_rank, call, int64, make, refused_while_compiling


@pytest.mark.parametrize("dtype", DTYPES)
def test_copy_every_dtype_and_rank(ms_mode, dtype):
    assert_copies_every_rank(MemcpyWithDesc(), dtype)


def test_copy_call_styles(ms_mode, style):
    t, v = make("float64", (3, 7), seed=9)
    np.testing.assert_array_equal(call(style, MemcpyWithDesc(), t).asnumpy(), v)


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


def test_constant_start_outside_refused_while_compiling(ms_mode):
    """A constant start that puts the window outside x fails the graph's compilation with the kernel's
    check, before any kernel launches."""
    x = ms.Tensor(np.arange(10, dtype=np.int32))
    refused_while_compiling(ms_mode, MemcpyWithDesc(count=3), (x,), (int64(8),), ValueError,
                            "ms_memcopy MemcpyWithDesc(window): start = 8: the region [8, 8 + 3) leaves the 10 "
                            "elements of the tensor; nothing was copied")
    np.testing.assert_array_equal(x.asnumpy(), np.arange(10))
