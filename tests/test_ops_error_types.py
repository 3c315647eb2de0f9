"""Error types and texts that do not depend on the route or the mode.

- A wrong dtype or type is a TypeError for every op, in both modes (found before any launch: by
  Python for an eager call, by the op's infer function when a graph compiles), with one text; the
  cases are made from the sample call of every op (ms_memcopy/samples.py) and its definition in
  configs/ops.
- Every error starts with "ms_memcopy <primitive>(<mode>): ", the prefix the kernels give their own
  errors, names the argument, and is matched whole here.
"""

import numpy as np
import pytest

import mindspore as ms

from ms_memcopy import HostBuffer, op_defs, samples
from ms_memcopy.ops import (CopyBlocks, Memcpy2D, MemcpyBatch, MemcpyBatchAsync, MemcpyWithCondition, MemcpyWithDesc,
                            SwapBlocks, WaitTransfer)
from ms_memcopy.ops._args import flat_input_names

from _ops_support import FnCell, int64, raises_exactly

FILL = 0x5A


@pytest.fixture
def buf():
    with HostBuffer(256) as b:
        b.numpy()[:] = FILL
        yield b


@pytest.fixture
def sample_buf():
    with HostBuffer(samples.HOST_BUFFER_BYTES) as b:
        b.numpy()[:] = FILL
        yield b


def f32(*shape):
    return ms.Tensor(np.ones(shape, np.float32))


def tensor(dtype, *shape):
    return ms.Tensor(np.ones(shape, dtype))


I32 = ms.Tensor(np.zeros(1, np.int32))
UNSUPPORTED = f"dtype uint16 is not supported; use one of {list(op_defs.supported_dtypes())}"
OPS = op_defs.all_op_defs()


# ---- cases made from the sample call of every op (ms_memcopy/samples.py) and its definition --------------

def positions(definition, count):
    """(input definition, argument name) of each of count inputs of a call: a variadic input's tensors
    are name[i]."""
    by_name = {t.name: t for t in definition.inputs}
    return [(by_name[name.split("[")[0]], name) for name in flat_input_names(definition, count)]


def as_dtype(x, np_dtype):
    """x's values in np_dtype, a Parameter again if x is one (an in-place target in graphs)."""
    converted = ms.Tensor(x.asnumpy().astype(np_dtype))
    return ms.Parameter(converted, name=f"{x.name}_{np.dtype(np_dtype).name}") if isinstance(x, ms.Parameter) \
        else converted


def dtype_name(tensor):
    return str(tensor.dtype).lower()


def wrong_dtype(name, kind, buf):
    """(sample, its inputs with one mistake, the argument's error text) for kind:
    - int32: the first int64 (host values) input as int32;
    - uint16: every input of dtype any as uint16 (a dtype no kernel supports): the first is named;
    - mixed: the second tensor of the op's dtype_group as float16: named with the first's dtype."""
    sample = samples.sample(name, buf)
    args = list(sample.inputs)
    where = positions(OPS[name], len(args))
    if kind == "int32":
        i = next(i for i, (t, _) in enumerate(where) if t.host_values)
        args[i] = as_dtype(args[i], np.int32)
        return sample, args, f"{where[i][1]} must be an int64 tensor, got int32"
    if kind == "uint16":
        anys = [i for i, (t, _) in enumerate(where) if t.dtype == "any"]
        for i in anys:
            args[i] = as_dtype(args[i], np.uint16)
        return sample, args, f"{where[anys[0]][1]}: {UNSUPPORTED}"
    first, second = [i for i, (t, _) in enumerate(where) if t.name in OPS[name].dtype_group][:2]
    args[second] = as_dtype(args[second], np.float16)
    return sample, args, f"{where[second][1]} has dtype float16 but {where[first][1]} has {dtype_name(args[first])}"


WRONG_DTYPES = ([(name, "int32") for name, d in OPS.items() if any(t.host_values for t in d.inputs)] +
                [(name, "uint16") for name, d in OPS.items() if any(t.dtype == "any" for t in d.inputs)] +
                [(name, "mixed") for name, d in OPS.items() if d.dtype_group])


def test_every_op_has_wrong_dtype_cases():
    assert len(WRONG_DTYPES) >= 2 * len(OPS) - 3  # the h2d reads have no input of dtype any
    assert {name for name, _ in WRONG_DTYPES} == set(OPS)


@pytest.mark.parametrize("name,kind", WRONG_DTYPES, ids=[f"{n}-{k}" for n, k in WRONG_DTYPES])
def test_a_wrong_dtype_is_a_type_error(ms_mode, sample_buf, name, kind):
    if ms_mode == "pynative" and name in samples.GRADIENT_ONLY:
        pytest.skip("a gradient's op: its eager calls take the checked inputs of the bprop")
    buf = sample_buf
    sample, args, text = wrong_dtype(name, kind, buf)
    before = buf.numpy().copy()
    with raises_exactly(TypeError, f"ms_memcopy {sample.label}: {text}"):
        FnCell(sample.op)(*args)  # compiled in GRAPH_MODE, run eagerly in PYNATIVE_MODE
    np.testing.assert_array_equal(buf.numpy(), before)


def test_a_wrong_dtype_is_a_type_error_called_directly(ms_mode, buf):
    """The eager call of the primitive itself (not inside a Cell) checks before launching too."""
    with raises_exactly(TypeError, "ms_memcopy Memcpy2D(insert): src has dtype float16 but dst has float32"):
        Memcpy2D("insert")(f32(3, 3), tensor(np.float16, 1, 1), int64(0), int64(0))
    with raises_exactly(TypeError, "ms_memcopy MemcpyBatch(d2h): offsets must be an int64 tensor, got int32"):
        MemcpyBatch("d2h", buf, num_tensors=1)(f32(4), I32)


def test_a_wrong_dtype_after_good_calls_is_a_type_error(ms_mode, buf):
    """An eager primitive remembers the dtype combinations it has checked: a call with other dtypes
    after good ones is checked again, with the same error, and a good call after it still runs."""
    insert = Memcpy2D("insert")
    for _ in range(2):
        insert(f32(3, 3), f32(1, 1), int64(0), int64(0))
    with raises_exactly(TypeError, "ms_memcopy Memcpy2D(insert): src has dtype float16 but dst has float32"):
        insert(f32(3, 3), tensor(np.float16, 1, 1), int64(0), int64(0))
    with raises_exactly(TypeError, "ms_memcopy Memcpy2D(insert): src must be a Tensor, not ndarray"):
        insert(f32(3, 3), np.ones((1, 1), np.float32), int64(0), int64(0))
    d2h = MemcpyBatch("d2h", buf, num_tensors=1)
    np.testing.assert_array_equal(d2h(f32(4), int64(0)).asnumpy(), [16])
    with raises_exactly(TypeError, "ms_memcopy MemcpyBatch(d2h): offsets must be an int64 tensor, got int32"):
        d2h(f32(4), I32)
    np.testing.assert_array_equal(insert(f32(3, 3), f32(1, 1) * 0, int64(1), int64(1)).asnumpy()[1, 1], 0)


EAGER_OPS = [name for name in OPS if name not in samples.GRADIENT_ONLY]


@pytest.mark.parametrize("name", EAGER_OPS)
def test_an_eager_first_input_that_is_not_a_tensor_is_a_type_error(route, sample_buf, name):
    """The sample call with its first input as a numpy array. (A list given to the aot route's kernel
    used to crash the process.)"""
    ms.set_context(mode=ms.PYNATIVE_MODE)
    buf = sample_buf
    sample = samples.sample(name, buf)
    definition = OPS[name]
    (t, argument), *_ = positions(definition, len(sample.inputs))
    kind = " or Parameter (written in place)" if definition.rw_write == t.name else ""
    before = buf.numpy().copy()
    with raises_exactly(TypeError, f"ms_memcopy {sample.label}: {argument} must be a Tensor{kind}, not ndarray"):
        sample.op(sample.inputs[0].asnumpy(), *sample.inputs[1:])
    np.testing.assert_array_equal(buf.numpy(), before)


# (id, label, build(buf) -> (primitive, args with one that is not a Tensor), the argument's error text)
NOT_TENSORS = [
    ("batch-d2h-list", "MemcpyBatch(d2h)",
     lambda b: (MemcpyBatch("d2h", b, num_tensors=2), (f32(2), [1.0, 2.0], int64(0, 8))),
     "tensors[1] must be a Tensor, not list"),
    ("batch-h2d-int", "MemcpyBatch(h2d)",
     lambda b: (MemcpyBatch("h2d", b, shapes=[(2,)], dtypes=[ms.float32]), (0,)), "offsets must be a Tensor, not int"),
    ("2d-insert-numpy", "Memcpy2D(insert)",
     lambda b: (Memcpy2D("insert"), (f32(2, 2), np.ones((1, 1), np.float32), int64(0), int64(0))),
     "src must be a Tensor, not ndarray"),
    ("2d-d2h-int", "Memcpy2D(d2h)",
     lambda b: (Memcpy2D("d2h", host_buffer=b, pitch=16), (f32(2, 2), 0)), "offset must be a Tensor, not int"),
    ("desc-copy-list", "MemcpyWithDesc", lambda b: (MemcpyWithDesc(), ([1, 2],)), "x must be a Tensor, not list"),
    ("desc-window-int", "MemcpyWithDesc(window)", lambda b: (MemcpyWithDesc(count=1), (f32(3), 0)),
     "start must be a Tensor, not int"),
    ("cond-h2d-int", "MemcpyWithCondition(h2d)",
     lambda b: (MemcpyWithCondition("h2d", host_buffer=b, shape=(2,), dtype=ms.float32), (0,)),
     "offset must be a Tensor, not int"),
    ("cond-d2h-tuple", "MemcpyWithCondition(d2h)",
     lambda b: (MemcpyWithCondition("d2h", host_buffer=b), ((f32(2),), int64(0))), "x must be a Tensor, not tuple"),
    ("copy-list", "CopyBlocks", lambda b: (CopyBlocks(num_caches=1), ([[1.0, 2.0]], [[0, 1]])),
     "caches[0] must be a Tensor or Parameter (written in place), not list"),
]


@pytest.mark.parametrize("label,build,text", [c[1:] for c in NOT_TENSORS], ids=[c[0] for c in NOT_TENSORS])
def test_an_eager_argument_that_is_not_a_tensor_is_a_type_error(route, buf, label, build, text):
    """Lists, ints and inputs after the first (the first of every op: above)."""
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
    ("swap-view-cache", "SwapBlocks(h2d)",
     lambda b: SwapBlocks("h2d", b, num_caches=2)(f32(4, 2), f32(8, 2)[4:], [[0, 0]]), TypeError,
     "caches[1] is a slice or view of a larger tensor: an in-place write would land in a temporary copy of it "
     "and be lost; pass the whole tensor and select the region with the op's own arguments"),
    ("copy-view-cache", "CopyBlocks",
     lambda b: CopyBlocks(num_caches=2)(f32(4, 2)[:, :1], f32(4, 2), [[0, 1]]), TypeError,
     "caches[0] is a slice or view of a larger tensor: an in-place write would land in a temporary copy of it "
     "and be lost; pass the whole tensor and select the region with the op's own arguments"),
    ("batch-async-view-tensor", "MemcpyBatchAsync(h2d)",
     lambda b: MemcpyBatchAsync("h2d", b, num_tensors=2)(f32(4), f32(8)[4:], int64(0, 16)), TypeError,
     "tensors[1] is a slice or view of a larger tensor: an in-place write would land in a temporary copy of it "
     "and be lost; pass the whole tensor and select the region with the op's own arguments"),
    ("wait-view-tensor", "WaitTransfer",
     lambda b: WaitTransfer(num_tensors=2)(f32(4, 2)[:, :1], f32(4), int64(16)), TypeError,
     "tensors[0] is a slice or view of a larger tensor: an in-place write would land in a temporary copy of it "
     "and be lost; pass the whole tensor and select the region with the op's own arguments"),
    ("wait-list-token", "WaitTransfer",
     lambda b: WaitTransfer(num_tensors=1)(f32(4), [16]), TypeError, "token must be a Tensor, not list"),
    ("swap-numpy-cache", "SwapBlocks(d2h)",
     lambda b: SwapBlocks("d2h", b, num_caches=2)(f32(4, 2), np.zeros((4, 2), np.float32), [[0, 0]]), TypeError,
     "caches[1] must be a Tensor, not ndarray"),
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
     "dtypes[0]: dtype complex64 is not supported; use one of " + str(list(op_defs.supported_dtypes()))),
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
