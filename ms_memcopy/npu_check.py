"""`python -m ms_memcopy npu-check`: the check to run once on a machine with CANN and an Ascend 910B/910C.

It builds the op_def route for the device target and prints one table row per check (ok, FAIL or
skipped), exiting non-zero if any check fails:
- the main thread's ACL context and the device MindSpore uses;
- kernel selection: the sample call of each op of configs/ops (:mod:`ms_memcopy.samples`) in a GRAPH_MODE
  (jit_level O0) graph must launch the project's ``Custom_<op>`` kernel (the kernels library's graph
  launch counter grows, the eager one does not), and an eager call must launch through the module's
  eager entry (the other way round);
- the sample call of every op, family by family, in PYNATIVE_MODE and GRAPH_MODE O0 against numpy
  (pinned and pageable HostBuffers), an h2d -> d2h -> h2d ordering graph, a built-in op after an
  in-place write;
- a built-in op chained after a custom op, ``mul(op(add(x, i)), 2)`` 200 times, counting wrong results
  (launches from different queue threads must reach the stream in program order);
- 200 eager calls with distinct offsets or block mappings against 200 with a repeated value: the
  per-call times, and no growth of the events, pinned bytes and descriptor bytes the kernels own;
- offsets produced on the device (``ops.add``) against host-created ones: the same bytes copied, the
  per-call time of each and, on the host runtime, the host waits per call;
- the time of a swap of 1024 blocks of 64 KiB over 2 caches against one built-in copy per block;
- ms_memcopy.nn.TransferQueue (on Ascend a ``mindspore.runtime.Stream`` ordered by events both ways): a
  swap-out and a fork polled until reported, then a swap-in, each job whole and then paced one block per
  part, against numpy through a built-in op on the model's stream;
- a MemcpyWithDesc copy of 4 GiB + 64 bytes (a descriptor's count has 32 bits: the kernels copy in
  chunks of 2 GiB) checked on sampled regions across each chunk boundary, when the device has the
  memory for it (``--big`` in a dry run).
An ACL failure for want of a current context (ACL_ERROR_RT_CONTEXT_NULL) is reported as such, with the
device MindSpore uses.

Without an NPU, ``--dry-run`` runs the same checks on the CPU target through the op_def route (the
code path an NPU takes, with the host ACL runtime under it); the timings then say nothing about an NPU.
"""
import argparse
import os
import re
import sys
import threading
import time
import zlib
from collections import namedtuple

import numpy as np

from . import op_defs
from . import acl_limits

CHECK_MODES = ("pynative", "graph O0")
BLOCKS, BLOCK_BYTES = 1024, 64 << 10
DISTINCT_CALLS = 200
# Calls before the resource counts are taken: every slot of the kernels' result ring (8) and
# descriptor ring (4) gets its event and pinned memory on first use.
WARMUP_CALLS = 16
GiB = 1 << 30
# Beyond a descriptor's 32-bit count (4 GiB); the kernels' 2 GiB chunks (DESC_CHUNK_BYTES) make it three.
BIG_COPY_BYTES = acl_limits.DESC_COUNT_WRAP + 64
# Source, copy, and a temporary of the source's size (MindSpore's CPU arange held one: 13 GB peak RSS),
# plus 1 GiB.
BIG_COPY_NEEDS = 3 * BIG_COPY_BYTES + GiB
ACL_HBM_MEM = 1  # aclrtMemAttr (acl/acl_rt.h): the device's own memory

# ACL codes that mean the calling thread's context is missing or is not the one the call needs.
CONTEXT_ERRORS = {
    107002: ("ACL_ERROR_RT_CONTEXT_NULL", "had no current ACL context (no device set on it)"),
    107003: ("ACL_ERROR_RT_STREAM_CONTEXT", "had a current ACL context other than the stream's"),
}
# How the kernels and the Python layer word a failed ACL call: "<api> failed: <name> (<code>)".
ACL_FAILURE = re.compile(r"(\w+) failed: (ACL_ERROR_\w+) \((\d+)\)")

Row = namedtuple("Row", ["check", "mode", "buffer", "result", "seconds"])


def _int64(*values):
    import mindspore as ms

    return ms.Tensor(np.array(values, np.int64))


def _as_numpy(tensor):
    return tensor.asnumpy()


def _wait_for_device():
    """Waits for every queued MindSpore launch and for the device (a CPU kernel has finished its
    work when its launch returns, and ms.runtime.synchronize refuses the CPU target)."""
    import mindspore as ms
    from ._framework import sync_launches

    sync_launches()
    if ms.get_context("device_target") != "CPU":
        ms.runtime.synchronize()


def _mindspore_device():
    import mindspore as ms

    return f"{ms.get_context('device_target')} device {ms.get_context('device_id')}"


class _Runner:
    """Calls an op eagerly (PYNATIVE) or inside a jit_level O0 Cell (GRAPH_MODE)."""

    def __init__(self, mode):
        self.mode = mode

    def __call__(self, op, *args):
        import mindspore as ms
        from mindspore import nn

        if self.mode == "pynative":
            return op(*args)

        class Net(nn.Cell):
            def __init__(self):
                super().__init__()
                self.op = op

            def construct(self, *inputs):
                return self.op(*inputs)

        net = Net()
        net.set_jit_config(ms.JitConfig(jit_level="O0"))
        return net(*args)


def _set_mode(mode):
    import mindspore as ms

    ms.set_context(mode=ms.PYNATIVE_MODE if mode == "pynative" else ms.GRAPH_MODE)


# ---- failures as rows ---------------------------------------------------------------------------------

def context_failure(error):
    """The explanation of an ACL failure for want of a current context, or None for another error.

    The error is an AclError of the Python layer (raised on this thread) or a kernel's error, whose
    text names the failed call ("aclrtMallocHost failed: ACL_ERROR_RT_CONTEXT_NULL (107002)")."""
    from .errors import AclError

    if isinstance(error, AclError):
        code, api = error.code, error.api
        thread = f"this thread ({threading.current_thread().name})"
    else:
        match = ACL_FAILURE.search(str(error))
        if match is None:
            return None
        code, api = int(match.group(3)), match.group(1)
        thread = "the thread that launched the kernel"
    if code not in CONTEXT_ERRORS:
        return None
    name, what = CONTEXT_ERRORS[code]
    try:
        device = _mindspore_device()
    except Exception as lookup_error:  # noqa: BLE001 (the explanation must not fail)
        device = f"unknown ({type(lookup_error).__name__})"
    return (f"{api} failed with {name} ({code}): {thread} {what}; MindSpore uses {device} "
            f"(ms.get_context('device_id'))")


def failure_text(error):
    """A failed check's result: "FAIL: " and what went wrong, a context failure in words."""
    lines = str(error).splitlines()
    first_line = lines[0][:160] if lines else ""
    explained = context_failure(error)
    if explained is not None:
        return f"FAIL: {explained} [{type(error).__name__}: {first_line}]"
    return f"FAIL: {type(error).__name__}: {first_line}"


def _row(check, mode, buffer, run, *args):
    """Runs run(*args) as one row: its text (None for plain "ok"; "skipped: ..." kept) or its failure."""
    start = time.perf_counter()
    try:
        detail = run(*args)
        if detail is None:
            result = "ok"
        elif detail.startswith("skipped"):
            result = detail
        else:
            result = f"ok: {detail}"
    except Exception as error:  # noqa: BLE001 (every failure is a row of the report)
        result = failure_text(error)
    return Row(check, mode, buffer, result, time.perf_counter() - start)


# ---- the main thread's context ------------------------------------------------------------------------

def check_main_thread_context():
    """Which ACL device is current on the main thread (a pinned HostBuffer is allocated here)."""
    from . import runtime
    from .errors import AclError

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
    from ._extension import _kernels_lib

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


def check_selection(mode, op_name):
    """The sample call of op_name (ms_memcopy/samples.py) in mode: it must launch through that mode's kernel
    entry and give the sample's numpy results."""
    from . import HostBuffer, samples

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

def check_family(family):
    """check(run, pinned): the sample call of every op of configs/ops/<family>.yaml against numpy."""
    def check(run, pinned):
        from . import HostBuffer, samples

        for op_name in op_defs.families()[family]:
            with HostBuffer(samples.HOST_BUFFER_BYTES, pinned=pinned) as buf:
                sample = samples.sample(op_name, buf)
                sample.check(run(sample.op, *sample.inputs))
    return check


def _family_checks():
    """(row name, check) per family of configs/ops: "samples of batch.yaml (2 ops)"."""
    return [(f"samples of {family}.yaml ({len(ops)} ops)", check_family(family))
            for family, ops in op_defs.families().items()]


def check_write(run, pinned):
    import mindspore as ms
    from mindspore import ops
    from .ops import Memcpy2D

    cache = ms.Parameter(ms.Tensor(np.zeros((64, 16), np.float32)), name="npu_check_cache")
    row = np.arange(16, dtype=np.float32)[None]
    n = run(Memcpy2D("write"), cache, ms.Tensor(row), _int64(5), _int64(0))
    np.testing.assert_array_equal(_as_numpy(n), [64])
    chained = ops.mul(cache, 2)  # a built-in op after the in-place write must see it
    expected = np.zeros((64, 16), np.float32)
    expected[5] = row[0]
    np.testing.assert_array_equal(_as_numpy(chained), expected * 2)


def check_ordering(run, pinned):
    """h2d -> d2h -> h2d on one HostBuffer inside one graph (or in program order eagerly)."""
    import mindspore as ms
    from mindspore import nn, ops
    from . import HostBuffer
    from .ops import MemcpyBatch

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
    from .ops import Memcpy2D, MemcpyWithCondition, MemcpyWithDesc

    extract = Memcpy2D("extract", height=128, width=96)
    row, col = _int64(64), _int64(32)
    return {
        "MemcpyWithDesc": (MemcpyWithDesc(), lambda a: a),
        "MemcpyWithCondition d2d": (MemcpyWithCondition("d2d"), lambda a: a),
        "Memcpy2D extract": (lambda t: extract(t, row, col), lambda a: a[64:192, 32:128]),
    }


def check_chained_builtin(name):
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
    from .ops import MemcpyWithCondition

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
    from .ops import Memcpy2D

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
    from .ops import SwapBlocks

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


def check_eager_distinct_values(name):
    """DISTINCT_CALLS eager calls with distinct values against as many with a repeated value (after
    a warm-up): the per-call times, and the kernel-owned resources must not grow."""
    from . import HostBuffer
    from ._extension import _kernels_lib

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

def _host_wait_count():
    """The host runtime's count of host waits for the device, or None on CANN (which has none)."""
    from . import runtime
    from ._extension import _paths

    return runtime.host_wait_count() if _paths.uses_host_runtime() else None


def _op_cell(op):
    """A Cell calling op with its inputs (offsets given to the graph)."""
    from mindspore import nn

    class HostOffsets(nn.Cell):
        def __init__(self):
            super().__init__()
            self.op = op

        def construct(self, *inputs):
            return self.op(*inputs)

    return HostOffsets()


def _device_offset_cell(op):
    """A Cell calling op(x, *offsets) with each of its offsets (one or two) computed in the graph by a
    built-in op (``ops.add(0, value)``): the kernel's value-dependent inputs come from the device."""
    import mindspore as ms
    from mindspore import nn, ops

    class DeviceOffsets(nn.Cell):
        def __init__(self):
            super().__init__()
            self.op = op
            self.base = ms.Tensor(np.zeros(1, np.int64))

        def construct(self, x, first, second=None):
            if second is None:
                return self.op(x, ops.add(self.base, first))
            return self.op(x, ops.add(self.base, first), ops.add(self.base, second))

    return DeviceOffsets()


def _offset_calls(name, mode, buf, origin):
    """(call, per-call inputs) of DISTINCT_CALLS calls of op `name` whose offsets are produced on the
    device by a built-in op (origin "device") or created on the host (origin "host"). Call i copies the
    same bytes either way."""
    import mindspore as ms
    from mindspore import ops
    from .ops import Memcpy2D, MemcpyWithCondition

    n = DISTINCT_CALLS
    if name == "MemcpyWithCondition d2h":
        op = MemcpyWithCondition("d2h", host_buffer=buf)
        inputs = [(ms.Tensor(np.full(16, i, np.float32)), _int64(64 * i)) for i in range(n)]
    else:
        op = Memcpy2D("extract", height=2, width=3)
        x = ms.Tensor(np.arange(256 * 64, dtype=np.float32).reshape(256, 64))
        inputs = [(x, _int64(i % 254), _int64(i % 61)) for i in range(n)]
    if origin == "host":
        if mode == "pynative":
            return op, inputs
        cell = _op_cell(op)
    elif mode == "pynative":
        # Offsets computed on the device before the timed calls: what is timed is their use.
        base = _int64(0)
        inputs = [(tensor, *[ops.add(base, v) for v in values]) for tensor, *values in inputs]
        _wait_for_device()
        return op, inputs
    else:
        cell = _device_offset_cell(op)
    cell.set_jit_config(ms.JitConfig(jit_level="O0"))
    return cell, inputs


def check_device_offsets(name, mode):
    """DISTINCT_CALLS calls with offsets produced on the device against as many with host-created
    ones: the same bytes copied; the per-call time of each and the host runtime's host waits."""
    from . import HostBuffer
    from ._framework import sync_launches

    _set_mode(mode)
    nbytes = 64 * DISTINCT_CALLS
    with HostBuffer(nbytes) as device_buf, HostBuffer(nbytes) as host_buf:
        results, per_call, waits = {}, {}, {}
        for origin, buf in (("device", device_buf), ("host", host_buf)):
            buf.numpy(np.uint8)[:] = 0
            call, inputs = _offset_calls(name, mode, buf, origin)
            _as_numpy(call(*inputs[0]))  # compiles a graph
            _wait_for_device()
            waits_before = _host_wait_count()
            start = time.perf_counter()
            outputs = [call(*args) for args in inputs]
            sync_launches()
            waits_after = _host_wait_count()
            buf.wait()
            _as_numpy(outputs[-1])
            per_call[origin] = (time.perf_counter() - start) / len(inputs)
            waits[origin] = None if waits_before is None else (waits_after - waits_before) / len(inputs)
            results[origin] = (buf.numpy(np.uint8).copy(), [_as_numpy(y) for y in outputs])
        device_bytes, device_outputs = results["device"]
        host_bytes, host_outputs = results["host"]
    np.testing.assert_array_equal(device_bytes, host_bytes, err_msg="HostBuffer bytes differ")
    for device_out, host_out in zip(device_outputs, host_outputs):
        np.testing.assert_array_equal(device_out, host_out, err_msg="outputs differ")
    if name == "MemcpyWithCondition d2h":
        expected = np.repeat(np.arange(DISTINCT_CALLS, dtype=np.float32), 16)
        np.testing.assert_array_equal(host_bytes.view(np.float32), expected)
    text = (f"same bytes; device-produced {per_call['device'] * 1e6:.0f} us/call, host-created "
            f"{per_call['host'] * 1e6:.0f} us/call")
    if waits["device"] is None:
        return text + "; host waits not countable on CANN"
    text += f"; host waits per call: device-produced {waits['device']:.2f}, host-created {waits['host']:.2f}"
    if waits["device"] or waits["host"]:
        raise AssertionError(f"calls with a pinned HostBuffer waited for the device: {text}")
    return text




# ---- a MemcpyWithDesc copy beyond a descriptor's 32-bit count ------------------------------------------

def _meminfo_available():
    """MemAvailable of /proc/meminfo in bytes, or None."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def free_device_memory():
    """(free bytes of the device MindSpore uses, a note on how they were read).

    aclrtGetMemInfo reports the calling thread's current device: a main thread without a current
    context gets MindSpore's device set first (aclrtSetDevice). What MindSpore's memory pool holds
    unused counts as free too. On the host runtime the device memory is host memory, so MemAvailable
    bounds it."""
    import mindspore as ms
    from . import runtime
    from ._extension import _paths
    from .errors import AclError

    note = ""
    try:
        free, _ = runtime.get_mem_info(ACL_HBM_MEM)
    except AclError as error:
        if error.code not in CONTEXT_ERRORS:
            raise
        device_id = ms.get_context("device_id")
        runtime.set_device(device_id)
        note = f" (device {device_id} set on {threading.current_thread().name}: it had {error.name})"
        free, _ = runtime.get_mem_info(ACL_HBM_MEM)
    pool_unused = ms.runtime.memory_reserved() - ms.runtime.memory_allocated()
    if pool_unused > 0:
        free += pool_unused
        note += f" (incl. {pool_unused / GiB:.1f} GiB unused in MindSpore's pool)"
    if _paths.uses_host_runtime():
        available = _meminfo_available()
        if available is not None and available < free:
            free, note = available, note + " (host memory available)"
    return free, note


def _checksum(tensor, start, stop):
    values = _as_numpy(tensor[start:stop])
    return zlib.crc32(values.tobytes()), values


def check_big_desc_copy(big_wanted):
    """MemcpyWithDesc of 4 GiB + 64 bytes (descriptors of 2 GiB, 2 GiB and 64 bytes), compared with
    the source on sampled regions: the start, 1 MiB across 2 GiB, the last MiB before 4 GiB through
    the end."""
    import mindspore as ms
    from mindspore import ops
    from .ops import MemcpyWithDesc

    if not big_wanted:
        return "skipped: a dry run copies 4 GiB only with --big"
    _set_mode("pynative")
    free, note = free_device_memory()
    if free < BIG_COPY_NEEDS:
        return f"skipped: needs {BIG_COPY_NEEDS / GiB:.1f} GiB, {free / GiB:.1f} GiB free{note}"
    elements = BIG_COPY_BYTES // 4
    source = ops.arange(0, elements, dtype=ms.int32)
    _wait_for_device()
    start = time.perf_counter()
    copy = MemcpyWithDesc()(source)
    _wait_for_device()
    seconds = time.perf_counter() - start
    four_gib = acl_limits.DESC_COUNT_WRAP // 4
    regions = [(0, 1 << 18), (elements // 2 - (1 << 17), elements // 2 + (1 << 17)),
               (four_gib - (1 << 18), elements)]
    for begin, end in regions:
        copied_crc, copied = _checksum(copy, begin, end)
        source_crc, _ = _checksum(source, begin, end)
        if copied_crc != source_crc or not np.array_equal(copied, np.arange(begin, end, dtype=np.int32)):
            wrong = np.flatnonzero(copied != np.arange(begin, end, dtype=np.int32))
            first = begin + int(wrong[0]) if wrong.size else begin
            raise AssertionError(f"elements [{begin}, {end}) differ from the source (crc32 {copied_crc:#x} "
                                 f"against {source_crc:#x}; first wrong byte offset {4 * first})")
    del source, copy
    return (f"{len(regions)} sampled regions equal (crc32): the start, across 2 GiB, 4 GiB - 1 MiB .. 4 GiB + 64; "
            f"{BIG_COPY_BYTES / seconds / 1e9:.1f} GB/s; {free / GiB:.1f} GiB were free{note}")


TRANSFER_BLOCKS, TRANSFER_BLOCK = 8, (16, 64)  # 4 KiB float32 blocks


def check_transfer_queue():
    """TransferQueue jobs whole and paced (see the module docstring)."""
    import mindspore as ms
    from mindspore import ops
    from .nn import BlockPool, TransferQueue

    _set_mode("pynative")
    rng = np.random.default_rng(5)
    values = [rng.standard_normal((TRANSFER_BLOCKS, *TRANSFER_BLOCK)).astype(np.float32) for _ in range(2)]
    for part_bytes in (None, 1):
        pool = BlockPool(num_caches=2, num_blocks=TRANSFER_BLOCKS, num_host_blocks=TRANSFER_BLOCKS,
                         block_shape=TRANSFER_BLOCK, dtype=ms.float32)
        try:
            for cache, v in zip(pool.caches, values):
                cache.set_data(ms.Tensor(v))
            queue = TransferQueue(pool, part_bytes=part_bytes)
            table = pool.allocate(4)
            out, fork = queue.submit("swap_out", table[:3]), queue.submit("fork", table[3:])
            host, child = queue.destination(out), queue.destination(fork)
            pending, deadline = {out, fork}, time.monotonic() + 60
            while pending:
                if time.monotonic() > deadline:
                    raise AssertionError(f"jobs {sorted(pending)} not reported by finished() within 60 s")
                pending -= set(queue.finished())
            back = queue.wait(queue.submit("swap_in", host))
            for l, cache in enumerate(pool.caches):
                got = _as_numpy(ops.mul(cache, 1))  # a built-in op on the model's stream after the reports
                np.testing.assert_array_equal(got[back], values[l][table[:3]], err_msg=f"swapped back, cache {l}")
                np.testing.assert_array_equal(got[child], values[l][table[3:]], err_msg=f"forked, cache {l}")
            queue.close()
        finally:
            pool.close()
    return "same bytes, jobs whole and paced (one block per part)"


def time_swap(pinned):
    """A swap-out of 1024 blocks of 64 KiB over 2 caches: SwapBlocks against one copy per block."""
    import mindspore as ms
    from . import HostBuffer
    from .ops import SwapBlocks

    shape = (BLOCKS, BLOCK_BYTES // 4)
    caches = [ms.Parameter(ms.Tensor(np.ones(shape, np.float32)), name=f"npu_check_swap{i}") for i in range(2)]
    mapping = np.stack([np.random.default_rng(1).permutation(BLOCKS), np.arange(BLOCKS)], 1).astype(np.int64)
    with HostBuffer(2 * BLOCKS * BLOCK_BYTES, pinned=pinned) as buf:
        op = SwapBlocks("d2h", buf, num_caches=2)
        op(*caches, mapping)
        buf.wait()
        start = time.perf_counter()
        op(*caches, mapping)
        buf.wait()
        ours = time.perf_counter() - start
        hosts = [ms.Tensor(np.zeros(shape, np.float32)) for _ in range(2)]
        start = time.perf_counter()
        for cache, host in zip(caches, hosts):
            for src, dst in mapping[:256].tolist():
                host[dst] = cache[src]
        hosts[-1].asnumpy()
        per_block = (time.perf_counter() - start) * BLOCKS / 256
    nbytes = 2 * BLOCKS * BLOCK_BYTES
    return (f"SwapBlocks {nbytes / ours / 1e9:.2f} GB/s, one copy per block {nbytes / per_block / 1e9:.2f} GB/s "
            f"(measured on 256 blocks), {per_block / ours:.0f}x")


CHECKS = (("Memcpy2D write + built-in after it", check_write), ("h2d -> d2h -> h2d ordering", check_ordering))


CHAIN_OPS = ("MemcpyWithDesc", "MemcpyWithCondition d2d", "Memcpy2D extract")
EAGER_VALUE_CASES = (("MemcpyWithCondition d2h", "offsets", "pinned"), ("Memcpy2D extract", "offsets", "-"),
                     ("SwapBlocks d2h", "mappings", "pinned"))
DEVICE_OFFSET_OPS = ("MemcpyWithCondition d2h", "Memcpy2D extract")


def run_checks(big=True):
    """Rows for every check, in the order of the module's docstring, on the device MindSpore is set to.
    big: attempt the 4 GiB copy."""
    rows = [_row("ACL context of the main thread", "-", "-", check_main_thread_context)]
    from ._extension import _kernels_lib

    for mode in CHECK_MODES:
        for op_name in op_defs.all_op_defs():
            rows.append(_row(f"kernel selection: {_kernels_lib.op_label(op_name)}", mode, "pinned",
                             check_selection, mode, op_name))
    for mode in CHECK_MODES:
        _set_mode(mode)
        runner = _Runner(mode)
        for pinned in (True, False):
            for name, check in (*_family_checks(), *CHECKS):
                rows.append(_row(name, mode, "pinned" if pinned else "pageable", _with_launch_counts(mode, check),
                                 runner, pinned))
    for name in CHAIN_OPS:
        rows.append(_row(f"chain mul(op(add(x, i)), 2) x{DISTINCT_CALLS}: {name}", "pynative", "-",
                         check_chained_builtin, name))
    for name, what, buffer in EAGER_VALUE_CASES:
        rows.append(_row(f"eager {DISTINCT_CALLS} distinct {what}: {name}", "pynative", buffer,
                         check_eager_distinct_values, name))
    for mode in CHECK_MODES:
        for name in DEVICE_OFFSET_OPS:
            rows.append(_row(f"offsets from the device vs host: {name}", mode, "pinned", check_device_offsets,
                             name, mode))
    _set_mode("pynative")
    rows.append(_row(f"swap {BLOCKS} x {BLOCK_BYTES >> 10} KiB x 2 caches", "pynative", "pinned", time_swap, True))
    rows.append(_row("TransferQueue: swap-out, fork, swap-in", "pynative", "pinned", check_transfer_queue))
    rows.append(_row("MemcpyWithDesc 4 GiB + 64 B", "pynative", "-", check_big_desc_copy, big))
    return rows


def table(rows):
    widths = [max(len(str(r[i])) for r in rows) for i in range(3)]
    lines = []
    for name, mode, buf, result, seconds in rows:
        lines.append(f"{name:<{widths[0]}}  {mode:<{widths[1]}}  {buf:<{widths[2]}}  {seconds:6.2f} s  {result}")
    return "\n".join(lines)


def environment_problem():
    """Why this environment cannot run the check on an NPU, or None."""
    from ._extension import _paths

    home, opp = os.environ.get("ASCEND_HOME_PATH"), os.environ.get("ASCEND_OPP_PATH")
    if not home and not opp:
        return ("no CANN installation is set up (ASCEND_HOME_PATH and ASCEND_OPP_PATH are unset: source CANN's "
                "set_env.sh); on a machine without an NPU run `python -m ms_memcopy npu-check --dry-run`")
    if not opp:
        return ("ASCEND_OPP_PATH is not set: MindSpore's CustomOpBuilder refuses backend Ascend without it "
                "(source CANN's set_env.sh, which sets it)")
    if _paths.cann_home() is None:
        return ("no CANN headers and libraries found: ASCEND_HOME_PATH (or ASCEND_TOOLKIT_HOME) must name a CANN "
                "toolkit with include/acl/acl.h (source CANN's set_env.sh)")
    if _paths.uses_host_runtime():
        return (f"this ms_memcopy was built without CANN: it ships the host ACL runtime "
                f"({_paths.HOST_ACL_LIBRARY}) and its kernels and runtime module call that, not CANN; delete "
                f"that file and reinstall with CANN's set_env.sh sourced (the build then links CANN's libascendcl)")
    return None


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m ms_memcopy npu-check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true",
                        help="no NPU: run the same checks on the CPU target through the op_def route")
    parser.add_argument("--big", action="store_true",
                        help="in a dry run, also copy 4 GiB + 64 bytes with MemcpyWithDesc (an NPU run always "
                             "does when the device has the memory)")
    args = parser.parse_args(argv)
    if not args.dry_run:
        problem = environment_problem()
        if problem is not None:
            print(f"npu-check: {problem}", file=sys.stderr)
            return 2
    import mindspore as ms

    from ._extension import op_def_route

    target = "CPU" if args.dry_run else "Ascend"
    ms.set_device(target)
    dry_run_note = " (dry run: timings say nothing about an NPU)" if args.dry_run else ""
    print(f"ms_memcopy npu-check: target {target}{dry_run_note}")
    start = time.perf_counter()
    op_def_route.build(target)
    print(f"op_def route built for {target} in {time.perf_counter() - start:.1f} s")
    rows = run_checks(big=args.big or not args.dry_run)
    print(table(rows))
    failed = [r for r in rows if r.result.startswith("FAIL")]
    skipped = [r for r in rows if r.result.startswith("skipped")]
    print(f"{len(rows) - len(failed) - len(skipped)} passed, {len(failed)} failed, {len(skipped)} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
