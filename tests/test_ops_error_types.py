"""Error types and texts that do not depend on the route or the mode.

- A wrong dtype or type is a TypeError for every op, in both modes (found before any launch: by the
  Python checks, or by the op_def route's infer function when a graph compiles); the cases are made
  from the sample call of every op (ms_memcopy/samples.py) and its definition in configs/ops.
- Every error of the Python checks starts with "ms_memcopy <primitive>(<mode>): ", the prefix the
  kernels give their own errors, and still names the argument.
"""
import re

import numpy as np
import pytest

import mindspore as ms

from ms_memcopy import HostBuffer, op_defs, samples
from ms_memcopy.ops import CopyBlocks, Memcpy2D, MemcpyBatch, MemcpyWithCondition, MemcpyWithDesc, SwapBlocks
from ms_memcopy.ops._args import flat_input_names

from _ops_support import FnCell, int64

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
UNSUPPORTED = "dtype uint16 is not supported"
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
    with pytest.raises(TypeError) as info:
        FnCell(sample.op)(*args)  # compiled in GRAPH_MODE, run eagerly in PYNATIVE_MODE
    message = str(info.value)
    assert message.startswith(f"ms_memcopy {sample.label}: {text}"), message
    np.testing.assert_array_equal(buf.numpy(), before)


def test_a_wrong_dtype_is_a_type_error_called_directly(ms_mode, buf):
    """The eager call of the primitive itself (not inside a Cell) checks before launching too."""
    with pytest.raises(TypeError, match=r"^ms_memcopy Memcpy2D\(insert\): src has dtype float16 but dst has float32"):
        Memcpy2D("insert")(f32(3, 3), tensor(np.float16, 1, 1), int64(0), int64(0))
    with pytest.raises(TypeError, match=r"^ms_memcopy MemcpyBatch\(d2h\): offsets must be an int64 tensor"):
        MemcpyBatch("d2h", buf, num_tensors=1)(f32(4), I32)


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
    with pytest.raises(TypeError) as info:
        sample.op(sample.inputs[0].asnumpy(), *sample.inputs[1:])
    message = str(info.value)
    assert message.startswith(f"ms_memcopy {sample.label}: {argument} must be a Tensor{kind}, not ndarray"), message
    np.testing.assert_array_equal(buf.numpy(), before)


# (id, label, build(buf) -> (primitive, args with one that is not a Tensor), the argument's error text)
NOT_TENSORS = [
    ("batch-d2h-list", "MemcpyBatch(d2h)",
     lambda b: (MemcpyBatch("d2h", b, num_tensors=2), (f32(2), [1.0, 2.0], int64(0, 8))),
     r"tensors\[1\] must be a Tensor, not list"),
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
    ("copy-list", "CopyBlocks", lambda b: (CopyBlocks(num_caches=1), ([[1.0, 2.0]], [[0, 1]])),
     r"caches\[0\] must be a Tensor or Parameter \(written in place\), not list"),
]


@pytest.mark.parametrize("label,build,text", [c[1:] for c in NOT_TENSORS], ids=[c[0] for c in NOT_TENSORS])
def test_an_eager_argument_that_is_not_a_tensor_is_a_type_error(route, buf, label, build, text):
    """Lists, ints and inputs after the first (the first of every op: above)."""
    ms.set_context(mode=ms.PYNATIVE_MODE)
    op, args = build(buf)
    with pytest.raises(TypeError) as info:
        op(*args)
    message = str(info.value)
    assert re.match(re.escape(f"ms_memcopy {label}: ") + text, message), message
    assert (buf.numpy() == FILL).all()


# (id, label, call(buf) raising, the error type, the argument's error text)
PREFIXED = [
    ("batch-offset-past-end", "MemcpyBatch(d2h)",
     lambda b: MemcpyBatch("d2h", b, num_tensors=1)(f32(4), int64(250)), ValueError, r"offsets\[0\] = 250: tensor 0"),
    ("batch-count", "MemcpyBatch(h2d)",
     lambda b: MemcpyBatch("h2d", b, shapes=[(4,)], dtypes=[ms.float32])(int64(0), int64(0)), ValueError,
     "takes one input"),
    ("2d-region", "Memcpy2D(extract)",
     lambda b: Memcpy2D("extract", height=1, width=3)(f32(2, 5), int64(0), int64(3)), ValueError,
     "col = 3: the region"),
    ("2d-slice-target", "Memcpy2D(write)",
     lambda b: Memcpy2D("write")(f32(4, 4)[1:], f32(1, 1), int64(0), int64(0)), TypeError, "dst is a slice"),
    ("desc-window", "MemcpyWithDesc(window)",
     lambda b: MemcpyWithDesc(count=3)(f32(10), int64(8)), ValueError, r"start = 8: the region"),
    ("cond-closed", "MemcpyWithCondition(h2d)", lambda b: _closed_read(), ValueError,
     "host_buffer: the HostBuffer is closed"),
    ("swap-mapping", "SwapBlocks(d2h)",
     lambda b: SwapBlocks("d2h", b, num_caches=1)(f32(4, 2), [[4, 0]]), ValueError,
     r"block_mapping\[0\]\[0\] = 4: device block out of range"),
    ("copy-mapping-type", "CopyBlocks",
     lambda b: CopyBlocks(num_caches=1)(f32(4, 2), "0,1"), TypeError, "block_mapping must be an int64 Tensor"),
    ("construct-mode", "Memcpy2D", lambda b: Memcpy2D("sideways"), ValueError, "mode must be one of"),
    ("construct-keywords", "Memcpy2D(extract)", lambda b: Memcpy2D("extract", height=1), ValueError,
     r"takes \['height', 'width'\]; missing \['width'\]"),
    ("construct-host-buffer", "MemcpyBatch(d2h)", lambda b: MemcpyBatch("d2h", None, num_tensors=1), TypeError,
     "host_buffer must be an ms_memcopy.HostBuffer"),
    ("construct-count", "MemcpyWithDesc", lambda b: MemcpyWithDesc(count=-1), ValueError, "count must be >= 0"),
    ("construct-num-tensors", "MemcpyBatch(d2h)", lambda b: MemcpyBatch("d2h", b, num_tensors="2"), TypeError,
     "num_tensors must be an int, not str"),
    ("construct-caches", "CopyBlocks", lambda b: CopyBlocks(num_caches=0), ValueError, "num_caches must be >= 1"),
    ("construct-split-read", "MemcpyBatch(h2d)",
     lambda b: MemcpyBatch("h2d", b, shapes=[(1,)] * 200, dtypes=[ms.complex64] * 200), TypeError,
     r"dtypes\[0\]: dtype complex64 is not supported"),
]


def _closed_read():
    other = HostBuffer(16)
    op = MemcpyWithCondition("h2d", host_buffer=other, shape=(2,), dtype=ms.float32)
    other.close()
    return op(int64(0))


@pytest.mark.parametrize("label,call,error,text", [c[1:] for c in PREFIXED], ids=[c[0] for c in PREFIXED])
def test_python_check_errors_name_the_primitive_and_mode(route, buf, label, call, error, text):
    with pytest.raises(error) as info:
        call(buf)
    assert type(info.value) is error
    message = str(info.value)
    assert re.match(re.escape(f"ms_memcopy {label}: ") + text, message), message
    assert (buf.numpy() == FILL).all()
