"""Eager calls that never wait for MindSpore's queues, deferred value errors, and graph launches'
synchronizations per launch (issue 25).

An int64 input given as a Tensor (offsets, rows, block mappings) is read where the launch runs, in
MindSpore's launch order: no eager call reads it back with asnumpy() or any other synchronizing
entry point of MindSpore. A bad value then fails its launch with the same exception type and text as
the same value given on the host, raised at the next synchronization point (here
``_pynative_executor.sync()``; ``asnumpy()`` of any tensor is one too), and nothing is copied.
"""
import os

import numpy as np
import pytest

import mindspore as ms
from mindspore import Parameter, nn, ops

from ms_memcopy import HostBuffer, runtime
from ms_memcopy._extension import op_def_route
from ms_memcopy._framework import sync_launches
from ms_memcopy._sync_counter import SyncCounter
from ms_memcopy.ops import CopyBlocks, Memcpy2D, MemcpyWithCondition

from _ops_support import raises_exactly


@pytest.fixture
def pynative():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    yield
    sync_launches()


def test_eager_calls_with_tensor_values_never_synchronize(pynative):
    """1,000 eager calls with int64 Tensor offsets, rows and block mappings: no call into MindSpore's
    synchronizing entry points; every result against numpy afterwards."""
    calls = 1000
    rows = 8
    x = np.arange(rows * 16, dtype=np.float32).reshape(rows, 16)
    caches = [Parameter(ms.Tensor(np.arange(64 * 8, dtype=np.float32).reshape(64, 8) + 1000 * l),
                        name=f"no_wait_cache{l}") for l in range(2)]
    origin = [c.asnumpy().copy() for c in caches]
    with HostBuffer(calls * 64, pinned=True) as buf:
        d2h = MemcpyWithCondition("d2h", host_buffer=buf)
        extract = Memcpy2D("extract", height=1, width=16)
        copy_blocks = CopyBlocks(num_caches=2)
        xt, row0 = ms.Tensor(x), ms.Tensor(x[0])
        offsets = [ms.Tensor(np.array([i * 64], np.int64)) for i in range(calls)]
        row_values = [ms.Tensor(np.array([i % rows], np.int64)) for i in range(calls)]
        col = ms.Tensor(np.array([0], np.int64))
        mappings = [ms.Tensor(np.array([[i % 32, 32 + i % 32]], np.int64)) for i in range(calls)]
        for i in range(3):  # warm up (first calls build the kernel instances)
            d2h(row0, offsets[i])
        sync_launches()
        extracted = []
        with SyncCounter() as counter:
            for i in range(calls):
                d2h(row0, offsets[i])
                extracted.append(extract(xt, row_values[i], col))
                copy_blocks(*caches, mappings[i])
        assert counter.total() == 0, counter.calls
        sync_launches()
        np.testing.assert_array_equal(buf.numpy(np.float32).reshape(calls, 16), np.broadcast_to(x[0], (calls, 16)))
        for i in (0, 1, calls - 1):
            np.testing.assert_array_equal(extracted[i].asnumpy(), x[i % rows:i % rows + 1])
        for l in range(2):
            expected = origin[l].copy()
            expected[32:64] = origin[l][0:32]
            np.testing.assert_array_equal(caches[l].asnumpy(), expected)


def _host_error(call):
    with pytest.raises(Exception) as info:
        call()
    return type(info.value), str(info.value)


def _call_then_sync(call):
    """The call and the next sync. The error is the launch's: it raises at the sync, or at the call when
    MindSpore ran the launch inline in the dispatch (seen on CPU in a process that ran many graphs
    before); no call ever reads the values itself (test above)."""
    call()
    sync_launches()


def test_a_bad_tensor_mapping_fails_its_launch_at_the_next_sync(pynative):
    """A Tensor block mapping out of range: its launch raises, at the next sync, the exception the
    same mapping given as numpy raises at the call (type and text), and no cache changed."""
    caches = [Parameter(ms.Tensor(np.arange(32, dtype=np.float32).reshape(4, 8) + 100 * l),
                        name=f"deferred_cache{l}") for l in range(2)]
    origin = [c.asnumpy().copy() for c in caches]
    op = CopyBlocks(num_caches=2)
    bad = np.array([[0, 1], [2, 9]], np.int64)
    error, text = _host_error(lambda: op(*caches, bad))
    assert error is ValueError and "9" in text and "nothing was copied" in text
    with raises_exactly(error, text):
        _call_then_sync(lambda: op(*caches, ms.Tensor(bad)))
    for c, o in zip(caches, origin):
        np.testing.assert_array_equal(c.asnumpy(), o)
    op(*caches, ms.Tensor(np.array([[0, 1]], np.int64)))  # the next launch runs
    expected = origin[0].copy()
    expected[1] = origin[0][0]
    np.testing.assert_array_equal(caches[0].asnumpy(), expected)


def test_a_bad_tensor_offset_fails_its_launch_at_the_next_sync(pynative):
    """An offset past the HostBuffer's end as a Tensor: the call's host-value check (the kernel's, on
    numpy values) and the deferred launch raise the same; nothing is written."""
    x = ms.Tensor(np.arange(16, dtype=np.float32))
    with HostBuffer(64, pinned=True) as buf:
        buf.numpy(np.float32)[:] = -1
        op = MemcpyWithCondition("d2h", host_buffer=buf)
        kernel = op_def_route.load().KernelInstance(op._op_def.name, *op._init_values)
        error, text = _host_error(lambda: kernel.check(x, np.array([8], np.int64)))
        assert error is ValueError and "nothing was copied" in text
        with raises_exactly(error, text):
            _call_then_sync(lambda: op(x, ms.Tensor(np.array([8], np.int64))))
        np.testing.assert_array_equal(buf.numpy(np.float32), -np.ones(16, np.float32))


#: Distinct values of the gradient test: 10^4 with MS_MEMCOPY_LONG_TESTS=1 (issue 25: RSS flat over
#: 10^4 calls, as tests/test_eager_growth.py checks for plain eager calls), 200 in the default run.
_LONG = os.environ.get("MS_MEMCOPY_LONG_TESTS") == "1"
_GRADIENT_CALLS = 10_000 if _LONG else 200


def test_gradients_of_eager_calls_compile_nothing_per_value(pynative):
    """ms.grad over eager calls with distinct start values: each call takes the kernel instance's
    eager launch (the eager launch counter), RSS does not grow per value (MindSpore's single-op path
    compiled a graph per value: +44 KiB a value, about 8.6 MiB for 200), and the gradients are numpy's.

    ms.grad itself keeps about 4 KiB per call in PYNATIVE whatever the op and its values (measured on
    CPU over 2,000 calls: a built-in ops.gather, one value in new Tensors and distinct values all grew
    RSS alike, one reused Tensor a little less), so the long run (10^4 values) compares the growth with
    that of as many calls with one value in as many Tensors; the default run (200 values, a gradient
    call costs tens of ms) checks the growth whole."""
    from ms_memcopy._extension import _kernels_lib
    from ms_memcopy.ops import MemcpyWithDesc

    calls = _GRADIENT_CALLS
    n = calls + 4
    op = MemcpyWithDesc(count=4)
    x = ms.Tensor(np.arange(n, dtype=np.float32))
    starts = [ms.Tensor(np.array([i], np.int64)) for i in range(calls)]
    weights = ms.Tensor(np.array([1, 2, 3, 4], np.float32))
    grad = ms.grad(lambda x, start: (op(x, start) * weights).sum(), grad_position=0)

    def expected(i):
        dx = np.zeros(n, np.float32)
        dx[i:i + 4] = [1, 2, 3, 4]
        return dx

    def growth(values):
        sync_launches()
        rss = _rss_bytes()
        for start in values:
            grad(x, start)
        sync_launches()
        return _rss_bytes() - rss

    for i in (0, 1):  # warm up
        np.testing.assert_array_equal(grad(x, starts[i]).asnumpy(), expected(i))
    # One value in as many new Tensors: ms.grad's own growth is per call and per input Tensor object.
    repeated = growth([ms.Tensor(np.array([1], np.int64)) for _ in range(calls - 2)]) if _LONG else 0
    eager = _kernels_lib.launch_counts().eager
    grown = growth(starts[2:])
    launches = _kernels_lib.launch_counts().eager - eager
    assert launches >= calls - 2, f"{launches} eager launches for {calls - 2} calls: the calls took another path"
    assert grown - repeated < 3 * (1 << 20), (f"{calls} gradients with distinct values grew RSS by "
                                              f"{grown / (1 << 20):.1f} MiB, one value in as many Tensors by "
                                              f"{repeated / (1 << 20):.1f} MiB")
    for i in (2, calls // 2, calls - 1):
        np.testing.assert_array_equal(grad(x, starts[i]).asnumpy(), expected(i))


def _rss_bytes():
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * 4096


class _OffsetsOf(nn.Cell):
    """A d2h with offsets from a graph input, a constant, or computed in the graph (ops.add)."""

    def __init__(self, op, source):
        super().__init__()
        self.op, self.source = op, source
        self.constant = ms.Tensor(np.array([64], np.int64))

    def construct(self, x, offsets):
        if self.source == "constant":
            return self.op(x, self.constant)
        if self.source == "computed":
            return self.op(x, ops.add(offsets, 0))
        return self.op(x, offsets)


#: What each launch's kernel saw for its one value-dependent input, per kind of offsets (held, memory):
#: a constant is a ValueNode whose KernelTensor holds its value on the host; a graph input fed from
#: Python and a value computed in the graph reach the kernel as tensor memory only, which
#: KernelTensor::GetValue copies to the host (on Ascend one device-to-host copy and one stream
#: synchronization, MindSpore's; docs/ascend_route.md, "Host values in graphs").
_VALUE_SOURCE_PER_LAUNCH = {"input": (0, 1), "constant": (1, 0), "computed": (0, 1)}


@pytest.mark.parametrize("source", ["input", "constant", "computed"])
def test_graph_launches_read_each_value_from_where_the_docs_say(source):
    """GRAPH_MODE launches of a d2h with offsets from a graph input fed from Python, a constant, or an
    op of the graph: per launch, the kernel's counters of value-dependent inputs say where its one
    value came from (a value MindSpore held on the host, or tensor memory: on Ascend MindSpore's one
    synchronization), and the host runtime counts no wait (ms_memcopy adds none of its own)."""
    from ms_memcopy._extension import _kernels_lib

    ms.set_context(mode=ms.GRAPH_MODE, jit_config={"jit_level": "O0"})
    try:
        x = ms.Tensor(np.arange(16, dtype=np.float32))
        offsets = ms.Tensor(np.array([64], np.int64))
        with HostBuffer(128, pinned=True) as buf:
            net = _OffsetsOf(MemcpyWithCondition("d2h", host_buffer=buf), source)
            net(x, offsets).asnumpy()  # compiles
            waits, graph = runtime.host_wait_count(), _kernels_lib.launch_counts().graph
            reads = _kernels_lib.value_reads()
            for _ in range(20):
                net(x, offsets)
            launches = _kernels_lib.launch_counts().graph - graph
            after = _kernels_lib.value_reads()
            per_launch = (runtime.host_wait_count() - waits) / launches
            np.testing.assert_array_equal(buf.numpy(np.float32)[16:], np.arange(16, dtype=np.float32))
        assert launches == 20
        assert ((after.held - reads.held) / launches, (after.memory - reads.memory) / launches) \
            == _VALUE_SOURCE_PER_LAUNCH[source]
        assert per_launch == 0
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
