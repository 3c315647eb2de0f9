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
- 200 eager calls each with Tensor offsets and Tensor block mappings: the calls into MindSpore's
  synchronizing entry points (``asnumpy``, ``_pynative_executor.sync``, ...), 0 expected;
- offsets produced on the device (``ops.add``) against host-created ones: the same bytes copied, the
  per-call time of each and, on the host runtime, the host waits per call;
- the time of a swap of 1024 blocks of 64 KiB over 2 caches against one built-in copy per block;
- ms_memcopy.nn.TransferQueue (on the transfer streams, its jobs followed by the kernels' events): a
  swap-out and a fork polled until reported, then a swap-in, each job whole and then paced one block per
  part, against numpy through a built-in op on the model's stream;
- 1,000 TransferQueue submits, each polled until reported: the calls into MindSpore's synchronizing
  entry points (0 expected: none drains MindSpore's pipeline), and the bytes;
- a GRAPH_MODE O0 step with an asynchronous swap-out after a write and a swap-in, each with its
  WaitTransfer: the bytes and the ordering (the swap-out sees the write, the reads see the swap-in);
- a MemcpyWithDesc copy of 4 GiB + 64 bytes (a descriptor's count has 32 bits: the kernels copy in
  chunks of 2 GiB) checked on sampled regions across each chunk boundary, when the device has the
  memory for it (``--big`` in a dry run).
An ACL failure for want of a current context (ACL_ERROR_RT_CONTEXT_NULL) is reported as such, with the
device MindSpore uses.

Without an NPU, ``--dry-run`` runs the same checks on the CPU target through the op_def route (the
code path an NPU takes, with the host ACL runtime under it); the timings then say nothing about an NPU.
"""
from typing import Any, List, Optional, Sequence
import argparse
import os
import sys
import time

from ... import op_defs
from ._common import BLOCK_BYTES, BLOCKS, CHECK_MODES, DISTINCT_CALLS, _row, _Runner, _set_mode
from .device_checks import check_big_desc_copy, check_device_offsets, check_transfer_queue, time_swap
from .op_checks import (
    check_chained_builtin, check_eager_distinct_values, check_main_thread_context, check_ordering, check_selection,
    check_write, _family_checks, _with_launch_counts)
from .sync_count import check_eager_sync_count
from .transfer_checks import QUEUE_SUBMITS, check_graph_transfer, check_queue_syncs


CHECKS = (("Memcpy2D write + built-in after it", check_write), ("h2d -> d2h -> h2d ordering", check_ordering))


CHAIN_OPS = ("MemcpyWithDesc", "MemcpyWithCondition d2d", "Memcpy2D extract")
EAGER_VALUE_CASES = (("MemcpyWithCondition d2h", "offsets", "pinned"), ("Memcpy2D extract", "offsets", "-"),
                     ("SwapBlocks d2h", "mappings", "pinned"))
DEVICE_OFFSET_OPS = ("MemcpyWithCondition d2h", "Memcpy2D extract")


def run_checks(big: bool = True) -> List[Any]:
    """Rows for every check, in the order of the module's docstring, on the device MindSpore is set to.
    big: attempt the 4 GiB copy."""
    rows = [_row("ACL context of the main thread", "-", "-", check_main_thread_context)]
    from ..._extension import _kernels_lib

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
    rows.append(_row(f"eager sync count: {2 * DISTINCT_CALLS} calls with Tensor values", "pynative", "pinned",
                     check_eager_sync_count))
    for mode in CHECK_MODES:
        for name in DEVICE_OFFSET_OPS:
            rows.append(_row(f"offsets from the device vs host: {name}", mode, "pinned", check_device_offsets,
                             name, mode))
    _set_mode("pynative")
    rows.append(_row(f"swap {BLOCKS} x {BLOCK_BYTES >> 10} KiB x 2 caches", "pynative", "pinned", time_swap, True))
    rows.append(_row("TransferQueue: swap-out, fork, swap-in", "pynative", "pinned", check_transfer_queue))
    rows.append(_row(f"TransferQueue: MindSpore syncs over {QUEUE_SUBMITS} submits", "pynative", "pinned",
                     check_queue_syncs))
    rows.append(_row("async swap-out + swap-in in a graph, waited", "graph O0", "pinned", check_graph_transfer))
    rows.append(_row("MemcpyWithDesc 4 GiB + 64 B", "pynative", "-", check_big_desc_copy, big))
    return rows


def table(rows: Sequence[Any]) -> str:
    widths = [max(len(str(r[i])) for r in rows) for i in range(3)]
    lines = []
    for name, mode, buf, result, seconds in rows:
        lines.append(f"{name:<{widths[0]}}  {mode:<{widths[1]}}  {buf:<{widths[2]}}  {seconds:6.2f} s  {result}")
    return "\n".join(lines)


def environment_problem() -> Optional[str]:
    """Why this environment cannot run the check on an NPU, or None."""
    from ..._extension import _paths

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


def main(argv: Optional[Sequence[str]] = None) -> int:
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

    from ..._extension import op_def_route

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
