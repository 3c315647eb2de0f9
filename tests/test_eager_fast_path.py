"""The eager calls' fast path (ms_memcopy/ops/_primitive.py, KernelInstance::TryCall in
route_pynative.cpp): Python makes only the checks the kernel cannot see, and the KernelInstance's
``try_call`` tests what the other Python checks would (PYNATIVE_MODE, supported dtypes, dtype groups,
dense reads) before it queues anything. Where it cannot vouch for a call it queues nothing and the
call makes every Python check in order, so each mistake raises the error it raised before, first
among several as before, with nothing written."""
import numpy as np
import pytest

import mindspore as ms

from ms_memcopy import HostBuffer, samples
from ms_memcopy._framework import sync_launches
from ms_memcopy.ops import Memcpy2D, MemcpyBatch, SwapBlocks, wait_transfers
from ms_memcopy.ops import _primitive

from _ops_support import int64, raises_exactly

FILL = 0x5A
EAGER_OPS = [name for name in samples.SAMPLES if name not in samples.GRADIENT_ONLY]


@pytest.fixture
def pynative():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    yield
    sync_launches()
    wait_transfers()


@pytest.fixture
def buf():
    with HostBuffer(samples.HOST_BUFFER_BYTES) as b:
        b.numpy()[:] = FILL
        yield b


@pytest.fixture
def python_checks(monkeypatch):
    """Counts the calls of the full Python checks of the primitives' eager calls."""
    calls = []
    real = _primitive.check_dtypes

    def counting(*args, **kwargs):
        calls.append(args[0].name)
        return real(*args, **kwargs)

    monkeypatch.setattr(_primitive, "check_dtypes", counting)
    return calls


@pytest.mark.parametrize("name", EAGER_OPS)
def test_a_clean_eager_call_takes_the_fast_path_and_copies(pynative, buf, python_checks, name):
    sample = samples.sample(name, buf)
    for _ in range(2):
        outputs = sample.op(*sample.inputs)
        sync_launches()
        wait_transfers()
        sample.check(outputs)
    assert python_checks == []


def test_a_strided_read_takes_the_python_checks_and_reads_its_values(pynative, python_checks):
    base = np.arange(48, dtype=np.float32).reshape(4, 12)
    view = ms.Tensor(base)[:, ::3]  # [4, 4], a column slice
    assert not view.is_contiguous()
    with HostBuffer(4 * 16) as host:
        op = SwapBlocks("d2h", host, num_caches=1)
        assert op.primitive._kernel_instance().try_call((view,), ms.Tensor(np.array([[0, 1]], np.int64))) is None
        sync_launches()
        assert np.all(host.numpy() == 0)  # try_call queued nothing
        np.testing.assert_array_equal(op(view, [[3, 0], [1, 2]]).asnumpy(), [32])
        sync_launches()
        got = host.numpy(np.float32).reshape(4, 4)
        np.testing.assert_array_equal(got[[0, 2]], base[:, ::3][[3, 1]])
    assert python_checks == ["swap_blocks_d2h"]


@pytest.mark.parametrize("case", ["unsupported dtype", "dtype group", "graph mode", "not converted"])
def test_try_call_queues_nothing_where_a_python_check_may_fail(pynative, buf, case):
    """None, with nothing queued: a wrong dtype, a dtype group of two dtypes, an eager call in
    GRAPH_MODE (the jit level's check) and an input that does not convert (its error dropped)."""
    dst = ms.Parameter(ms.Tensor(np.zeros((3, 3), np.float32)), name="fast_dst")
    src = ms.Tensor(np.ones((1, 1), np.float16 if case == "dtype group" else np.float32))
    if case == "unsupported dtype":
        dst = ms.Parameter(ms.Tensor(np.zeros((3, 3), np.uint16)), name="fast_dst16")
        src = ms.Tensor(np.ones((1, 1), np.uint16))
    row = "1" if case == "not converted" else int64(1)
    kernel = Memcpy2D("write")._kernel_instance()
    if case == "graph mode":
        ms.set_context(mode=ms.GRAPH_MODE)
    try:
        assert kernel.try_call(dst, src, row, int64(1)) is None
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    sync_launches()
    assert not dst.asnumpy().any()
    np.testing.assert_array_equal(kernel.try_call(ms.Parameter(ms.Tensor(np.zeros((3, 3), np.float32)), name="ok"),
                                                  ms.Tensor(np.ones((1, 1), np.float32)), int64(1), int64(1))
                                  [0].asnumpy(), [4])


def test_the_first_of_two_mistakes_raises_as_before(pynative):
    """A closed HostBuffer (checked by Python on the fast path) and a wrong dtype (the kernel's test)
    in one call: the dtype's TypeError, as the checks in order raise it, after good calls too."""
    host = HostBuffer(64)
    op = MemcpyBatch("d2h", host, num_tensors=1)
    good = ms.Tensor(np.arange(4, dtype=np.float32))
    np.testing.assert_array_equal(op(good, int64(0)).asnumpy(), [16])
    host.close()
    with raises_exactly(TypeError, "ms_memcopy MemcpyBatch(d2h): tensors[0]: dtype uint16 is not supported; use one "
                                   "of ['float16', 'bfloat16', 'float32', 'float64', 'int8', 'uint8', 'int16', "
                                   "'int32', 'int64', 'bool']"):
        op(ms.Tensor(np.arange(4, dtype=np.uint16)), int64(0))
    with raises_exactly(ValueError, "ms_memcopy MemcpyBatch(d2h): host_buffer: the HostBuffer is closed"):
        op(good, int64(0))
