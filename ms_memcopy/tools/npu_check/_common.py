"""What the checks of npu-check share: constants, the table row, running a check in a mode."""
import re
import threading
from typing import Optional
import time
from collections import namedtuple

import numpy as np

from ..._acl import limits as acl_limits

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
    from ..._framework import sync_launches

    sync_launches()
    if ms.get_context("device_target") != "CPU":
        ms.runtime.synchronize()


def _mindspore_device():
    import mindspore as ms

    return f"{ms.get_context('device_target')} device {ms.get_context('device_id')}"


def _op_cell(op):
    """A Cell calling op with its inputs (offsets, where op takes any, given to the graph)."""
    from mindspore import nn

    class OpCall(nn.Cell):
        def __init__(self):
            super().__init__()
            self.op = op

        def construct(self, *inputs):
            return self.op(*inputs)

    return OpCall()


class _Runner:
    """Calls an op eagerly (PYNATIVE) or inside a jit_level O0 Cell (GRAPH_MODE)."""

    def __init__(self, mode):
        self.mode = mode

    def __call__(self, op, *args):
        import mindspore as ms

        if self.mode == "pynative":
            return op(*args)
        net = _op_cell(op)
        net.set_jit_config(ms.JitConfig(jit_level="O0"))
        return net(*args)


def _set_mode(mode):
    import mindspore as ms

    ms.set_context(mode=ms.PYNATIVE_MODE if mode == "pynative" else ms.GRAPH_MODE)


# ---- failures as rows ---------------------------------------------------------------------------------

def context_failure(error: BaseException) -> Optional[str]:
    """The explanation of an ACL failure for want of a current context, or None for another error.

    The error is an AclError of the Python layer (raised on this thread) or a kernel's error, whose
    text names the failed call ("aclrtMallocHost failed: ACL_ERROR_RT_CONTEXT_NULL (107002)")."""
    from ...errors import AclError

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


def failure_text(error: BaseException) -> str:
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
