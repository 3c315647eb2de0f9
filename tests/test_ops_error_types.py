"""Error types and texts that do not depend on the route or the mode.

- A wrong dtype or type is a TypeError for every primitive form, in both modes (found before any
  launch: by Python for an eager call, by the op's infer function when a graph compiles), with one text.
- Every error starts with "ms_memcopy <primitive>(<mode>): ", the prefix the kernels give their own
  errors, names the argument, and is matched whole here.
"""

import numpy as np
import pytest

import mindspore as ms

from ms_memcopy import HostBuffer
from ms_memcopy.op_defs import supported_dtypes
from ms_memcopy.ops import CopyBlocks, Memcpy2D, MemcpyBatch, MemcpyWithCondition, MemcpyWithDesc, SwapBlocks

from _ops_support import FnCell, int64, raises_exactly

FILL = 0x5A


@pytest.fixture
def buf():
    with HostBuffer(256) as b:
        b.numpy()[:] = FILL
        yield b


def f32(*shape):
    return ms.Tensor(np.ones(shape, np.float32))


def tensor(dtype, *shape):
    return ms.Tensor(np.ones(shape, dtype))


def param(dtype, *shape):
    return ms.Parameter(ms.Tensor(np.zeros(shape, dtype)))


I32 = ms.Tensor(np.zeros(1, np.int32))
UNSUPPORTED = f"dtype uint16 is not supported; use one of {list(supported_dtypes())}"

# (id, label, build(buf) -> (primitive, args), the argument's error text)
WRONG_TYPES = [
    ("batch-d2h-tensor", "MemcpyBatch(d2h)",
     lambda b: (MemcpyBatch("d2h", b, num_tensors=2), (f32(4), tensor(np.uint16, 4), int64(0, 16))),
     "tensors[1]: " + UNSUPPORTED),
    ("batch-d2h-offsets", "MemcpyBatch(d2h)",
     lambda b: (MemcpyBatch("d2h", b, num_tensors=1), (f32(4), I32)), "offsets must be an int64 tensor, got int32"),
    ("batch-h2d-offsets", "MemcpyBatch(h2d)",
     lambda b: (MemcpyBatch("h2d", b, shapes=[(4,)], dtypes=[ms.float32]), (I32,)),
     "offsets must be an int64 tensor, got int32"),
    ("2d-extract-x", "Memcpy2D(extract)",
     lambda b: (Memcpy2D("extract", height=1, width=1), (tensor(np.uint16, 2, 2), int64(0), int64(0))),
     "x: " + UNSUPPORTED),
    ("2d-extract-row", "Memcpy2D(extract)",
     lambda b: (Memcpy2D("extract", height=1, width=1), (f32(2, 2), I32, int64(0))),
     "row must be an int64 tensor, got int32"),
    ("2d-insert-src", "Memcpy2D(insert)",
     lambda b: (Memcpy2D("insert"), (f32(3, 3), tensor(np.float16, 1, 1), int64(0), int64(0))),
     "src has dtype float16 but dst has float32"),
    ("2d-insert-col", "Memcpy2D(insert)",
     lambda b: (Memcpy2D("insert"), (f32(3, 3), f32(1, 1), int64(0), I32)), "col must be an int64 tensor, got int32"),
    ("2d-write-src", "Memcpy2D(write)",
     lambda b: (Memcpy2D("write"), (param(np.float32, 3, 3), tensor(np.int32, 1, 1), int64(0), int64(0))),
     "src has dtype int32 but dst has float32"),
    ("2d-d2h-x", "Memcpy2D(d2h)",
     lambda b: (Memcpy2D("d2h", host_buffer=b, pitch=16), (tensor(np.uint16, 2, 2), int64(0))), "x: " + UNSUPPORTED),
    ("2d-h2d-offset", "Memcpy2D(h2d)",
     lambda b: (Memcpy2D("h2d", host_buffer=b, pitch=16, shape=(2, 2), dtype=ms.float32), (I32,)),
     "offset must be an int64 tensor, got int32"),
    ("desc-copy-x", "MemcpyWithDesc", lambda b: (MemcpyWithDesc(), (tensor(np.uint16, 4),)), "x: " + UNSUPPORTED),
    ("desc-window-start", "MemcpyWithDesc(window)",
     lambda b: (MemcpyWithDesc(count=2), (f32(4), ms.Tensor(np.zeros(1, np.float32)))),
     "start must be an int64 tensor, got float32"),
    ("cond-d2d-x", "MemcpyWithCondition(d2d)",
     lambda b: (MemcpyWithCondition("d2d"), (tensor(np.uint16, 4),)), "x: " + UNSUPPORTED),
    ("cond-d2h-offset", "MemcpyWithCondition(d2h)",
     lambda b: (MemcpyWithCondition("d2h", host_buffer=b), (f32(4), I32)), "offset must be an int64 tensor, got int32"),
    ("cond-h2d-offset", "MemcpyWithCondition(h2d)",
     lambda b: (MemcpyWithCondition("h2d", host_buffer=b, shape=(4,), dtype=ms.float32), (I32,)),
     "offset must be an int64 tensor, got int32"),
    ("swap-d2h-caches", "SwapBlocks(d2h)",
     lambda b: (SwapBlocks("d2h", b, num_caches=2),
                (param(np.float32, 4, 2), param(np.float16, 4, 2), int64(0, 0).reshape(1, 2))),
     "caches[1] has dtype float16 but caches[0] has float32"),
    ("swap-h2d-mapping", "SwapBlocks(h2d)",
     lambda b: (SwapBlocks("h2d", b, num_caches=1), (param(np.float32, 4, 2), ms.Tensor(np.zeros((1, 2), np.int32)))),
     "block_mapping must be an int64 tensor, got int32"),
    ("copy-caches", "CopyBlocks",
     lambda b: (CopyBlocks(num_caches=2), (param(np.float32, 4, 2), param(np.int8, 4, 2), int64(0, 1).reshape(1, 2))),
     "caches[1] has dtype int8 but caches[0] has float32"),
]


@pytest.mark.parametrize("label,build,text", [c[1:] for c in WRONG_TYPES], ids=[c[0] for c in WRONG_TYPES])
def test_a_wrong_dtype_is_a_type_error(ms_mode, buf, label, build, text):
    op, args = build(buf)
    with raises_exactly(TypeError, f"ms_memcopy {label}: {text}"):
        FnCell(op)(*args)  # compiled in GRAPH_MODE, run eagerly in PYNATIVE_MODE
    assert (buf.numpy() == FILL).all()


def test_a_wrong_dtype_is_a_type_error_called_directly(ms_mode, buf):
    """The eager call of the primitive itself (not inside a Cell) checks before launching too."""
    with raises_exactly(TypeError, "ms_memcopy Memcpy2D(insert): src has dtype float16 but dst has float32"):
        Memcpy2D("insert")(f32(3, 3), tensor(np.float16, 1, 1), int64(0), int64(0))
    with raises_exactly(TypeError, "ms_memcopy MemcpyBatch(d2h): offsets must be an int64 tensor, got int32"):
        MemcpyBatch("d2h", buf, num_tensors=1)(f32(4), I32)


# (id, label, build(buf) -> (primitive, args with one that is not a Tensor), the argument's error text)
NOT_TENSORS = [
    ("batch-d2h-list", "MemcpyBatch(d2h)",
     lambda b: (MemcpyBatch("d2h", b, num_tensors=2), (f32(2), [1.0, 2.0], int64(0, 8))),
     "tensors[1] must be a Tensor, not list"),
    ("batch-h2d-int", "MemcpyBatch(h2d)",
     lambda b: (MemcpyBatch("h2d", b, shapes=[(2,)], dtypes=[ms.float32]), (0,)), "offsets must be a Tensor, not int"),
    ("2d-extract-numpy", "Memcpy2D(extract)",
     lambda b: (Memcpy2D("extract", height=1, width=1), (np.ones((2, 2), np.float32), int64(0), int64(0))),
     "x must be a Tensor, not ndarray"),
    ("2d-insert-numpy", "Memcpy2D(insert)",
     lambda b: (Memcpy2D("insert"), (f32(2, 2), np.ones((1, 1), np.float32), int64(0), int64(0))),
     "src must be a Tensor, not ndarray"),
    ("2d-write-numpy", "Memcpy2D(write)",
     lambda b: (Memcpy2D("write"), (np.ones((2, 2), np.float32), f32(1, 1), int64(0), int64(0))),
     "dst must be a Tensor or Parameter (written in place), not ndarray"),
    ("2d-d2h-int", "Memcpy2D(d2h)",
     lambda b: (Memcpy2D("d2h", host_buffer=b, pitch=16), (f32(2, 2), 0)), "offset must be a Tensor, not int"),
    ("2d-h2d-numpy", "Memcpy2D(h2d)",
     lambda b: (Memcpy2D("h2d", host_buffer=b, pitch=16, shape=(2, 2), dtype=ms.float32), (np.array([0]),)),
     "offset must be a Tensor, not ndarray"),
    ("desc-copy-list", "MemcpyWithDesc", lambda b: (MemcpyWithDesc(), ([1, 2],)), "x must be a Tensor, not list"),
    ("desc-window-int", "MemcpyWithDesc(window)", lambda b: (MemcpyWithDesc(count=1), (f32(3), 0)),
     "start must be a Tensor, not int"),
    ("cond-d2d-numpy", "MemcpyWithCondition(d2d)",
     lambda b: (MemcpyWithCondition("d2d"), (np.ones(3, np.float32),)), "x must be a Tensor, not ndarray"),
    ("cond-d2h-numpy", "MemcpyWithCondition(d2h)",
     lambda b: (MemcpyWithCondition("d2h", host_buffer=b), (np.ones(3, np.float32), int64(0))),
     "x must be a Tensor, not ndarray"),
    ("cond-h2d-int", "MemcpyWithCondition(h2d)",
     lambda b: (MemcpyWithCondition("h2d", host_buffer=b, shape=(2,), dtype=ms.float32), (0,)),
     "offset must be a Tensor, not int"),
    ("swap-d2h-numpy", "SwapBlocks(d2h)",
     lambda b: (SwapBlocks("d2h", b, num_caches=1), (np.ones((4, 2), np.float32), [[0, 0]])),
     "caches[0] must be a Tensor, not ndarray"),
    ("copy-list", "CopyBlocks", lambda b: (CopyBlocks(num_caches=1), ([[1.0, 2.0]], [[0, 1]])),
     "caches[0] must be a Tensor or Parameter (written in place), not list"),
]


@pytest.mark.parametrize("label,build,text", [c[1:] for c in NOT_TENSORS], ids=[c[0] for c in NOT_TENSORS])
def test_an_eager_argument_that_is_not_a_tensor_is_a_type_error(route, buf, label, build, text):
    """(A list given to the aot route's kernel used to crash the process.)"""
    ms.set_context(mode=ms.PYNATIVE_MODE)
    op, args = build(buf)
    with raises_exactly(TypeError, f"ms_memcopy {label}: {text}"):
        op(*args)
    assert (buf.numpy() == FILL).all()


# (id, label, call(buf) raising, the error type, the argument's error text)
PREFIXED = [
    ("batch-offset-past-end", "MemcpyBatch(d2h)",
     lambda b: MemcpyBatch("d2h", b, num_tensors=1)(f32(4), int64(250)), ValueError,
     "offsets[0] = 250: tensor 0 (16 bytes) would end at byte 266, past the end of the HostBuffer (256 bytes); "
     "nothing was copied"),
    ("batch-count", "MemcpyBatch(h2d)",
     lambda b: MemcpyBatch("h2d", b, shapes=[(4,)], dtypes=[ms.float32])(int64(0), int64(0)), ValueError,
     "takes one input (offsets), got 2"),
    ("2d-region", "Memcpy2D(extract)",
     lambda b: Memcpy2D("extract", height=1, width=3)(f32(2, 5), int64(0), int64(3)), ValueError,
     "col = 3: the region [3, 3 + 3) leaves the 5 columns of the tensor; nothing was copied"),
    ("2d-slice-target", "Memcpy2D(write)",
     lambda b: Memcpy2D("write")(f32(4, 4)[1:], f32(1, 1), int64(0), int64(0)), TypeError,
     "dst is a slice or view of a larger tensor: an in-place write would land in a temporary copy of it and be "
     "lost; pass the whole tensor and select the region with the op's own arguments"),
    ("desc-window", "MemcpyWithDesc(window)",
     lambda b: MemcpyWithDesc(count=3)(f32(10), int64(8)), ValueError,
     "start = 8: the region [8, 8 + 3) leaves the 10 elements of the tensor; nothing was copied"),
    ("cond-closed", "MemcpyWithCondition(h2d)", lambda b: _closed_read(), ValueError,
     "host_buffer: the HostBuffer is closed"),
    ("swap-mapping", "SwapBlocks(d2h)",
     lambda b: SwapBlocks("d2h", b, num_caches=1)(f32(4, 2), [[4, 0]]), ValueError,
     "block_mapping[0][0] = 4: device block out of range [0, 4); nothing was copied"),
    ("copy-mapping-type", "CopyBlocks",
     lambda b: CopyBlocks(num_caches=1)(f32(4, 2), "0,1"), TypeError,
     "block_mapping must be an int64 Tensor, a numpy array or a list of pairs, not str"),
    ("construct-mode", "Memcpy2D", lambda b: Memcpy2D("sideways"), ValueError,
     "mode must be one of ('extract', 'insert', 'write', 'd2h', 'h2d'), got 'sideways'"),
    ("construct-keywords", "Memcpy2D(extract)", lambda b: Memcpy2D("extract", height=1), ValueError,
     "takes ['height', 'width']; missing ['width'], unexpected []"),
    ("construct-host-buffer", "MemcpyBatch(d2h)", lambda b: MemcpyBatch("d2h", None, num_tensors=1), TypeError,
     "host_buffer must be an ms_memcopy.HostBuffer, not NoneType"),
    ("construct-count", "MemcpyWithDesc", lambda b: MemcpyWithDesc(count=-1), ValueError, "count must be >= 0, got -1"),
    ("construct-num-tensors", "MemcpyBatch(d2h)", lambda b: MemcpyBatch("d2h", b, num_tensors="2"), TypeError,
     "num_tensors must be an int, not str"),
    ("construct-caches", "CopyBlocks", lambda b: CopyBlocks(num_caches=0), ValueError,
     "num_caches must be >= 1, got 0"),
    ("construct-split-read", "MemcpyBatch(h2d)",
     lambda b: MemcpyBatch("h2d", b, shapes=[(1,)] * 200, dtypes=[ms.complex64] * 200), TypeError,
     "dtypes[0]: dtype complex64 is not supported; use one of " + str(list(supported_dtypes()))),
]


def _closed_read():
    other = HostBuffer(16)
    op = MemcpyWithCondition("h2d", host_buffer=other, shape=(2,), dtype=ms.float32)
    other.close()
    return op(int64(0))


@pytest.mark.parametrize("label,call,error,text", [c[1:] for c in PREFIXED], ids=[c[0] for c in PREFIXED])
def test_python_check_errors_name_the_primitive_and_mode(route, buf, label, call, error, text):
    with raises_exactly(error, f"ms_memcopy {label}: {text}"):
        call(buf)
    assert (buf.numpy() == FILL).all()
