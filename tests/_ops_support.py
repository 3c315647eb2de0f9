"""Helpers for the primitive tests: call styles, tensors of every dtype with a numpy reference of
their bytes, exact error expectations. The ms_mode and style fixtures are in conftest.py."""
import contextlib

import numpy as np
import pytest
import yaml

import mindspore as ms
from mindspore import nn

from ms_memcopy import _kernels_lib, _paths, _runtime_env
from ms_memcopy._framework import sync_launches
from ms_memcopy.benchmarks.ms_graphs import OpCell as FnCell  # op(*inputs) as a graph
from ms_memcopy.op_defs import supported_dtypes

DTYPES = supported_dtypes()
with open(_paths.configs_dir() / "soc_profiles.yaml", encoding="utf-8") as _f:
    _SOC_TABLE = yaml.safe_load(_f)


def _other_features():
    """The profiles whose features (every field but the product's name) differ from the default profile's,
    which the primitive tests run in-process, and from each other's (the first of each)."""
    seen = [{k: v for k, v in _SOC_TABLE["profiles"][_SOC_TABLE["default"]].items() if k != "product"}]
    names = []
    for name, fields in _SOC_TABLE["profiles"].items():
        features = {k: v for k, v in fields.items() if k != "product"}
        if features not in seen:
            seen.append(features)
            names.append(name)
    return names


#: The profiles that a test of every profile runs in a child interpreter.
PROFILES_WITH_OTHER_FEATURES = _other_features()
# Shapes of rank 1 to 4 whose byte sizes are not multiples of 64, and an empty one.
SHAPES = [(7,), (3, 5), (2, 3, 5), (1, 2, 3, 7), (0, 4)]


class InPlace(nn.Cell):
    """Calls op(*params, *args) on Parameters it holds, the way a model holds its caches."""

    def __init__(self, op, params):
        super().__init__()
        self.op = op
        self.params = ms.ParameterTuple(params)

    def construct(self, *args):
        return self.op(*self.params, *args)


def call(style, op, *args):
    """op(*args) inside an nn.Cell's construct, inside an ms.jit function, or eagerly."""
    if style == "cell":
        return FnCell(op)(*args)
    if style == "jit":
        @ms.jit
        def run(*inputs):
            return op(*inputs)

        return run(*args)
    return op(*args)

def int64(*values):
    return ms.Tensor(np.array(values, dtype=np.int64))

def make(dtype, shape, seed=0):
    """(Tensor of dtype and shape, numpy array of its exact values as float64 or the dtype itself)."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape)) if shape else 1
    if dtype == "bool":
        values = rng.integers(0, 2, n).astype(np.bool_)
    elif dtype.startswith("float") or dtype == "bfloat16":
        values = rng.integers(-64, 64, n).astype(np.float32) / 4  # exact in every float format
    else:
        info = np.iinfo(dtype)
        values = rng.integers(max(info.min, -1000), min(info.max, 1000), n).astype(dtype)
    values = values.reshape(shape)
    if dtype == "bfloat16":
        return ms.Tensor(values).astype(ms.bfloat16), values
    if dtype in ("float16", "float64"):
        values = values.astype(dtype)
    return ms.Tensor(values), values

def raw_bytes(dtype, values):
    """The bytes MindSpore stores for `values` of dtype (bfloat16: the top half of each float32)."""
    if dtype == "bfloat16":
        return (np.ascontiguousarray(values, np.float32).view(np.uint32) >> 16).astype(np.uint16).tobytes()
    return np.ascontiguousarray(values).tobytes()

def as_numpy(tensor):
    """Tensor values as numpy (bfloat16 widened to float32, exactly)."""
    if tensor.dtype == ms.bfloat16:
        return tensor.astype(ms.float32).asnumpy()
    return tensor.asnumpy()

def widen(dtype, values):
    """numpy values as as_numpy returns a tensor made from them (bfloat16 widened to float32)."""
    return values.astype(np.float32) if dtype == "bfloat16" else values


def assert_copies_every_rank(op, dtype):
    """y = op(x) is a copy of x, of x's dtype and shape, for every shape of SHAPES (cell and jit calls in turn)."""
    for i, shape in enumerate(SHAPES):
        t, v = make(dtype, shape, seed=i)
        y = call("cell" if i % 2 else "jit", op, t)
        assert y.dtype == dtype_of(dtype) and tuple(y.shape) == shape
        np.testing.assert_array_equal(as_numpy(y), widen(dtype, v))


def dtype_of(name):
    return ms.bool_ if name == "bool" else getattr(ms, name)


def check_on_profile(run_python, script, profile, timeout=180):
    """Runs script (which prints OK at the end) in a fresh interpreter on the SoC profile and asserts
    it passed."""
    env = {_runtime_env.SOC: profile}
    result = run_python(script.replace("{profile}", profile), env=env, timeout=timeout)
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert result.stdout.strip().endswith("OK")


@contextlib.contextmanager
def raises_exactly(error, message):
    """The block raises `error` itself (not a subclass) reading exactly `message`. An error raised while a
    graph compiles or runs carries MindSpore's C++ call stack and the graph's traceback after a blank
    line: that part is not the message. An eager call whose Tensor value fails its launch's check raises at
    MindSpore's next synchronization: the block ends with one."""
    with pytest.raises(error) as info:
        yield info
        # an eager launch that reads a Tensor value fails at its launch, reported at the next sync
        sync_launches()
    assert type(info.value) is error, f"{type(info.value).__name__} instead of {error.__name__}: {info.value}"
    assert str(info.value).split("\n\n", 1)[0] == message


class WithConstants(nn.Cell):
    """op(*inputs, *constants): the last inputs of op (its int64 inputs) are constants of the graph."""

    def __init__(self, op, *constants):
        super().__init__()
        self.op = op
        self.constants = constants

    def construct(self, *inputs):
        return self.op(*inputs, *self.constants)


def refused_while_compiling(mode, op, inputs, constants, error, message):
    """op(*inputs, *constants) with the constants held by the graph is refused while the graph compiles,
    raising exactly error and message, before any kernel of this project launched: in GRAPH_MODE
    through an nn.Cell, in PYNATIVE_MODE through ms.jit."""
    net = WithConstants(op, *constants)
    before = _kernels_lib.launch_counts()
    with raises_exactly(error, message):
        if mode == "graph":
            net(*inputs)
        else:
            ms.jit(net.construct)(*inputs)
    assert _kernels_lib.launch_counts() == before
