"""The checks of the primitives: kernel selection, the sample calls, in-place writes and ordering, chains
with built-in ops, eager calls with distinct values."""
from typing import Any
import threading
import time
from collections import namedtuple

import numpy as np

from ... import op_defs
from ._common import (
    _as_numpy, CONTEXT_ERRORS, DISTINCT_CALLS, _int64, _mindspore_device, _Runner, _set_mode, _wait_for_device,
    WARMUP_CALLS)


def check_main_thread_context() -> str:
    """Which ACL device is current on the main thread (a pinned HostBuffer is allocated here)."""
    from ..._acl import runtime
    from ...errors import AclError

    try:
        current = f"current ACL device {runtime.get_device()}"
    except AclError as error:
        if error.code not in CONTEXT_ERRORS:
            raise
        current = f"no current ACL context ({error.name})"
    return f"{threading.current_thread().name}: {current}; MindSpore uses {_mindspore_device()}"


# ---- kernel selection ---------------------------------------------------------------------------------

def _launches_of(run):
    """run(), then the kernels' launch counter growth (graph, eager) once every launch has run."""
    from ..._extension import _kernels_lib

    _wait_for_device()
    before = _kernels_lib.launch_counts()
    run()
    _wait_for_device()
    after = _kernels_lib.launch_counts()
    return after.graph - before.graph, after.eager - before.eager


def _require_entry(mode, graph, eager):
    """AssertionError unless the launches went through the entry mode selects."""
    counts = f"graph launches +{graph}, eager launches +{eager}"
    if mode == "pynative" and (eager == 0 or graph != 0):
        raise AssertionError(f"an eager call did not run the module's eager kernel entry: {counts}")
    if mode != "pynative" and (graph == 0 or eager != 0):
        raise AssertionError(f"the graph did not run the project's Custom_<op> kernel "
                             f"({'it ran eagerly' if eager else 'no launch counted'}): {counts}")
    return counts


def check_selection(mode: str, op_name: str) -> str:
    """The sample call of op_name (ms_memcopy/samples.py) in mode: it must launch through that mode's kernel
    entry and give the sample's numpy results."""
    from ... import HostBuffer, samples

    _set_mode(mode)
    with HostBuffer(samples.HOST_BUFFER_BYTES) as buf:
        sample = samples.sample(op_name, buf)
        outputs = []
        graph, eager = _launches_of(lambda: outputs.append(_Runner(mode)(sample.op, *sample.inputs)))
        sample.check(outputs[0])
    return _require_entry(mode, graph, eager)


def _with_launch_counts(mode, check):
    """check, which must also launch through mode's kernel entry only."""
    def counted(run, pinned):
        graph, eager = _launches_of(lambda: check(run, pinned))
        _require_entry(mode, graph, eager)
    return counted


# ---- the checks: each raises AssertionError (or any error) on failure ---------------------------------

def check_family(family: str) -> Any:
    """check(run, pinned): the sample call of every op of configs/ops/<family>.yaml against numpy."""
    def check(run, pinned):
        from ... import HostBuffer, samples

        for op_name in op_defs.families()[family]:
            with HostBuffer(samples.HOST_BUFFER_BYTES, pinned=pinned) as buf:
                sample = samples.sample(op_name, buf)
                sample.check(run(sample.op, *sample.inputs))
    return check


def _family_checks():
    """(row name, check) per family of configs/ops: "samples of batch.yaml (2 ops)"."""
    return [(f"samples of {family}.yaml ({len(ops)} ops)", check_family(family))
            for family, ops in op_defs.families().items()]


def check_write(run: Any, pinned: bool) -> None:
    import mindspore as ms
    from mindspore import ops
    from ...ops import Memcpy2D

    cache = ms.Parameter(ms.Tensor(np.zeros((64, 16), np.float32)), name="npu_check_cache")
    row = np.arange(16, dtype=np.float32)[None]
    n = run(Memcpy2D("write"), cache, ms.Tensor(row), _int64(5), _int64(0))
    np.testing.assert_array_equal(_as_numpy(n), [64])
    chained = ops.mul(cache, 2)  # a built-in op after the in-place write must see it
    expected = np.zeros((64, 16), np.float32)
    expected[5] = row[0]
    np.testing.assert_array_equal(_as_numpy(chained), expected * 2)


def check_ordering(run: Any, pinned: bool) -> None:
    """h2d -> d2h -> h2d on one HostBuffer inside one graph (or in program order eagerly)."""
    import mindspore as ms
    from mindspore import nn, ops
    from ... import HostBuffer
    from ...ops import MemcpyBatch

    with HostBuffer(256, pinned=pinned) as buf:
        buf.numpy(np.float32)[:8] = np.arange(8)
        read = MemcpyBatch("h2d", buf, shapes=[(8,)], dtypes=[ms.float32])
        write = MemcpyBatch("d2h", buf, num_tensors=1)

        class Chain(nn.Cell):
            def __init__(self):
                super().__init__()
                self.read, self.write = read, write

            def construct(self, offsets):
                (first,) = self.read(offsets)
                n = self.write(first * 2, offsets)
                (second,) = self.read(ops.depend(offsets, n))
                return first, second

        first, second = run(Chain(), _int64(0))
        np.testing.assert_array_equal(_as_numpy(first), np.arange(8))
        np.testing.assert_array_equal(_as_numpy(second), np.arange(8) * 2)




# ---- a built-in op after a custom op, in PYNATIVE ---------------------------------------------------------

def _chain_cases():
    """name -> (op taking one tensor, expected output of op for numpy input)."""
    from ...ops import Memcpy2D, MemcpyWithCondition, MemcpyWithDesc

    extract = Memcpy2D("extract", height=128, width=96)
    row, col = _int64(64), _int64(32)
    return {
        "MemcpyWithDesc": (MemcpyWithDesc(), lambda a: a),
        "MemcpyWithCondition d2d": (MemcpyWithCondition("d2d"), lambda a: a),
        "Memcpy2D extract": (lambda t: extract(t, row, col), lambda a: a[64:192, 32:128]),
    }


def check_chained_builtin(name: str) -> str:
    """``mul(op(add(x, i)), 2)`` DISTINCT_CALLS times in PYNATIVE, read only at the end: a built-in
    op that reads the custom op's output before it is written gives a wrong result."""
    import mindspore as ms
    from mindspore import ops

    _set_mode("pynative")
    op, expected_of = _chain_cases()[name]
    x_np = np.arange(256 * 256, dtype=np.float32).reshape(256, 256)
    x = ms.Tensor(x_np)
    results = [ops.mul(op(ops.add(x, float(i))), 2) for i in range(DISTINCT_CALLS)]
    wrong = sum(not np.array_equal(_as_numpy(r), expected_of(x_np + i) * 2) for i, r in enumerate(results))
    text = f"{wrong}/{DISTINCT_CALLS} wrong"
    if wrong:
        raise AssertionError(f"{text}: a built-in op read the custom op's output before it was written")
    return text


# ---- eager calls with distinct values ----------------------------------------------------------------------

_EagerCase = namedtuple("_EagerCase", ["call", "distinct", "repeated", "finish", "verify"])
_EagerCase.__doc__ = """An eager primitive call and the arguments of its calls: distinct values (the warm-up's
first) and a repeated value; a wait for the calls queued; a check of what they copied."""


def _cond_d2h_case(buf):
    import mindspore as ms
    from ...ops import MemcpyWithCondition

    op = MemcpyWithCondition("d2h", host_buffer=buf)
    x_np = np.arange(16, dtype=np.float32)
    x = ms.Tensor(x_np)
    slots = WARMUP_CALLS + DISTINCT_CALLS
    buf.numpy(np.uint8)[:] = 0

    def verify():
        np.testing.assert_array_equal(buf.numpy(np.float32)[:slots * 16].reshape(slots, 16),
                                      np.broadcast_to(x_np, (slots, 16)))

    return _EagerCase(lambda offset: op(x, offset), [(_int64(64 * i),) for i in range(slots)],
                      [(_int64(0),) for _ in range(DISTINCT_CALLS)], buf.wait, verify)


def _extract_case():
    import mindspore as ms
    from ...ops import Memcpy2D

    op = Memcpy2D("extract", height=2, width=3)
    x_np = np.arange(256 * 64, dtype=np.float32).reshape(256, 64)
    x = ms.Tensor(x_np)
    calls = []  # (row, col, output)

    def call(row, col):
        calls.append((row, col, op(x, row, col)))

    def verify():
        for row, col, y in calls:
            r, c = int(row.asnumpy()[0]), int(col.asnumpy()[0])
            np.testing.assert_array_equal(_as_numpy(y), x_np[r:r + 2, c:c + 3])

    distinct = [(_int64(i % 254), _int64((7 * i) % 61)) for i in range(WARMUP_CALLS + DISTINCT_CALLS)]
    return _EagerCase(call, distinct, [(_int64(3), _int64(5)) for _ in range(DISTINCT_CALLS)],
                      lambda: _as_numpy(calls[-1][2]), verify)


def _swap_d2h_case(buf):
    import mindspore as ms
    from ...ops import SwapBlocks

    num_blocks, block_floats, pairs = 256, 64, 4
    op = SwapBlocks("d2h", buf, num_caches=2)
    caches_np = [np.random.default_rng(i).standard_normal((num_blocks, block_floats)).astype(np.float32)
                 for i in range(2)]
    caches = [ms.Tensor(c) for c in caches_np]
    host = np.zeros((2, num_blocks, block_floats), np.float32)
    buf.numpy(np.uint8)[:] = 0

    def mapping(i):
        return np.array([[(i + 50 * j) % num_blocks, (3 * i + j) % num_blocks] for j in range(pairs)], np.int64)

    def call(block_mapping, pairs_np):
        for cache in range(2):  # what the swap writes, in call order
            for src, dst in pairs_np.tolist():
                host[cache, dst] = caches_np[cache][src]
        op(*caches, block_mapping)

    def verify():
        np.testing.assert_array_equal(buf.numpy(np.float32)[:host.size].reshape(host.shape), host)

    distinct = [mapping(i) for i in range(WARMUP_CALLS + DISTINCT_CALLS)]
    return _EagerCase(call, [(ms.Tensor(m), m) for m in distinct],
                      [(ms.Tensor(mapping(7)), mapping(7)) for _ in range(DISTINCT_CALLS)], buf.wait, verify)


def _timed(call, calls, finish):
    start = time.perf_counter()
    for args in calls:
        call(*args)
    finish()
    return (time.perf_counter() - start) / len(calls)


def check_eager_distinct_values(name: str) -> str:
    """DISTINCT_CALLS eager calls with distinct values against as many with a repeated value (after
    a warm-up): the per-call times, and the kernel-owned resources must not grow."""
    from ... import HostBuffer
    from ..._extension import _kernels_lib

    _set_mode("pynative")
    with HostBuffer(2 * 256 * 256, pinned=True) as buf:
        case = {"MemcpyWithCondition d2h": lambda: _cond_d2h_case(buf), "Memcpy2D extract": _extract_case,
                "SwapBlocks d2h": lambda: _swap_d2h_case(buf)}[name]()
        for args in case.distinct[:WARMUP_CALLS] + case.repeated[:WARMUP_CALLS]:
            case.call(*args)
        case.finish()
        _wait_for_device()
        before = _kernels_lib.owned_resources()
        repeated = _timed(case.call, case.repeated, case.finish)
        distinct = _timed(case.call, case.distinct[WARMUP_CALLS:], case.finish)
        _wait_for_device()
        after = _kernels_lib.owned_resources()
        case.verify()
    growth = [a - b for a, b in zip(after, before)]
    text = (f"distinct {distinct * 1e6:.0f} us/call, repeated {repeated * 1e6:.0f} us/call "
            f"({distinct / repeated:.2f}x); kernel-owned growth over {2 * DISTINCT_CALLS} calls: "
            f"events {growth[0]:+d}, pinned {growth[1]:+d} B, descriptors {growth[2]:+d} B")
    if any(growth):
        raise AssertionError(f"kernel-owned resources grew after the warm-up: {text}")
    return text


# ---- offsets produced on the device against host-created ones ---------------------------------------
