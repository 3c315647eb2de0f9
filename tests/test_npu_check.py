"""`python -m ms_memcopy npu-check`: it cannot run here (no NPU, no CANN); its CPU dry run runs every
check through the op_def route and reports a table with every row passing (the 4 GiB copy skipped)."""
import os
import re
import subprocess
import sys
import textwrap

import pytest

from ms_memcopy import _runtime_env

pytestmark = pytest.mark.slow

CANN_ENV = (*_runtime_env.MACHINE, "ASCEND_HOME_PATH", "ASCEND_OPP_PATH", "ASCEND_TOOLKIT_HOME")


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in CANN_ENV}
    env.update(extra)
    return env


def run(*args, timeout=900, **env):
    return subprocess.run([sys.executable, "-m", "ms_memcopy", "npu-check", *args], capture_output=True, text=True,
                          env=clean_env(**env), timeout=timeout)


@pytest.fixture(scope="module")
def dry_run():
    result = run("--dry-run")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-3000:]
    return result.stdout


def row(out, check, mode):
    """The result column of the row of check (a prefix of the row) in mode."""
    for line in out.splitlines():
        if line.startswith(check) and re.search(rf"\s{re.escape(mode)}\s", line):
            return re.split(r"\d+\.\d\d s  ", line, maxsplit=1)[1]
    raise AssertionError(f"no row {check!r} in mode {mode!r}:\n{out[-3000:]}")


def test_without_an_npu_it_says_so_and_points_at_the_dry_run():
    result = run()
    assert result.returncode == 2
    assert "no CANN installation" in result.stderr and "--dry-run" in result.stderr


def test_without_ascend_opp_path_it_names_the_variable(tmp_path):
    result = run(ASCEND_HOME_PATH=str(tmp_path))
    assert result.returncode == 2
    assert "ASCEND_OPP_PATH is not set" in result.stderr and "CustomOpBuilder" in result.stderr


def test_a_build_without_cann_is_refused(tmp_path):
    from ms_memcopy import _paths

    if not _paths.uses_host_runtime():
        pytest.skip("this installation was built against CANN")
    (tmp_path / "include" / "acl").mkdir(parents=True)
    (tmp_path / "include" / "acl" / "acl.h").write_text("")
    result = run(ASCEND_HOME_PATH=str(tmp_path), ASCEND_OPP_PATH=str(tmp_path))
    assert result.returncode == 2
    assert "built without CANN" in result.stderr and "host ACL runtime" in result.stderr


def test_cpu_dry_run_passes_every_check(dry_run):
    out = dry_run
    assert "target CPU (dry run" in out and "op_def route built for CPU" in out
    from ms_memcopy import op_defs

    families = [f"samples of {family}.yaml ({len(ops)} ops)" for family, ops in op_defs.families().items()]
    assert "samples of batch.yaml (2 ops)" in families
    for check in (*families, "Memcpy2D write + built-in after it", "h2d -> d2h -> h2d ordering"):
        for mode in ("pynative", "graph O0"):
            for buf in ("pinned", "pageable"):
                assert any(line.startswith(check) and mode in line and buf in line and line.endswith("ok")
                           for line in out.splitlines()), (check, mode, buf, out[-3000:])
    assert "swap 1024 x 64 KiB x 2 caches" in out and "FAIL" not in out
    assert re.search(r"\d+ passed, 0 failed, 1 skipped", out), out[-500:]


def test_the_main_threads_context_and_the_mindspore_device_are_reported(dry_run):
    # The host runtime sets no device on the main thread: only a thread that calls aclrtSetDevice has one.
    assert row(dry_run, "ACL context of the main thread", "-") == (
        "ok: MainThread: no current ACL context (ACL_ERROR_RT_CONTEXT_NULL); MindSpore uses CPU device 0")


def test_graphs_run_the_projects_kernels_and_eager_calls_its_eager_entry(dry_run):
    """One row per op of configs/ops (its sample call), named by the op's label."""
    from ms_memcopy import _kernels_lib, op_defs

    labels = [_kernels_lib.op_label(op) for op in op_defs.all_op_defs()]
    assert "MemcpyBatch(d2h)" in labels and "CopyBlocks" in labels
    for primitive in labels:
        graph = re.fullmatch(r"ok: graph launches \+(\d+), eager launches \+(\d+)",
                             row(dry_run, f"kernel selection: {primitive}", "graph O0"))
        eager = re.fullmatch(r"ok: graph launches \+(\d+), eager launches \+(\d+)",
                             row(dry_run, f"kernel selection: {primitive}", "pynative"))
        assert graph and eager, (primitive, dry_run[-3000:])
        assert int(graph[1]) > 0 and int(graph[2]) == 0, (primitive, graph[0])
        assert int(eager[1]) == 0 and int(eager[2]) > 0, (primitive, eager[0])


def test_a_builtin_op_chained_after_each_custom_op_reads_its_output(dry_run):
    for name in ("MemcpyWithDesc", "MemcpyWithCondition d2d", "Memcpy2D extract"):
        assert row(dry_run, f"chain mul(op(add(x, i)), 2) x200: {name}", "pynative") == "ok: 0/200 wrong"


def test_eager_calls_with_distinct_values_grow_no_kernel_resources(dry_run):
    for check in ("eager 200 distinct offsets: MemcpyWithCondition d2h", "eager 200 distinct offsets: Memcpy2D extract",
                  "eager 200 distinct mappings: SwapBlocks d2h"):
        result = row(dry_run, check, "pynative")
        assert re.fullmatch(r"ok: distinct \d+ us/call, repeated \d+ us/call \(\d+\.\d\dx\); kernel-owned growth "
                            r"over 400 calls: events \+0, pinned \+0 B, descriptors \+0 B", result), result


def test_eager_calls_with_tensor_values_call_no_synchronizing_entry_point(dry_run):
    assert row(dry_run, "eager sync count: 400 calls with Tensor values", "pynative") == (
        "ok: 0 calls into MindSpore's synchronizing entry points over 400 eager calls with Tensor offsets and "
        "mappings")


def test_the_sync_counter_counts_and_restores_the_entry_points():
    """The row's counter sees a sync (so its 0 can fail) and leaves MindSpore's entry points as it found them."""
    import mindspore as ms
    import numpy as np

    from ms_memcopy._sync_counter import SyncCounter

    asnumpy = ms.Tensor.asnumpy
    with SyncCounter() as counter:
        ms.Tensor(np.zeros(2, np.float32)).asnumpy()
    assert counter.total() == 1 and counter.calls["Tensor.asnumpy"] == 1
    assert ms.Tensor.asnumpy is asnumpy


def test_device_produced_offsets_copy_what_host_created_ones_do_without_host_waits(dry_run):
    for mode in ("pynative", "graph O0"):
        for name in ("MemcpyWithCondition d2h", "Memcpy2D extract"):
            result = row(dry_run, f"offsets from the device vs host: {name}", mode)
            # in graphs the row also says where the kernel got each value: on the CPU both are graph
            # inputs, read from tensor memory (docs/ascend_route.md, "Host values in graphs")
            # (one per int64 input of the op)
            reads = (r"graph value reads per call, held/memory: device-produced 0/([1-9]), host-created 0/\1; "
                     if mode.startswith("graph") else "")
            assert re.fullmatch(r"ok: same bytes; device-produced \d+ us/call, host-created \d+ us/call; "
                                + reads + r"host waits per call: device-produced 0\.00, "
                                r"host-created 0\.00", result), (mode, result)


def test_transfer_queue_jobs_whole_and_paced_keep_every_byte(dry_run):
    assert row(dry_run, "TransferQueue: swap-out, fork, swap-in", "pynative") == (
        "ok: same bytes, jobs whole and paced (one block per part)")


def test_the_transfer_queue_drains_nothing_and_a_graph_swap_keeps_its_order(dry_run):
    assert re.fullmatch(r"ok: 0 MindSpore syncs over 1000 submits and \d+ polls; same bytes",
                        row(dry_run, "TransferQueue: MindSpore syncs over 1000 submits", "pynative"))
    assert row(dry_run, "async swap-out + swap-in in a graph, waited", "graph O0") == (
        "ok: same bytes: the swap-out after the write, the reads after the swap-in's wait")


def test_the_4_gib_copy_is_skipped_in_a_default_dry_run(dry_run):
    assert row(dry_run, "MemcpyWithDesc 4 GiB + 64 B", "pynative") == (
        "skipped: a dry run copies 4 GiB only with --big")


def test_context_failures_and_missing_memory_are_reported_in_words(tmp_path):
    """A real ACL_ERROR_RT_CONTEXT_NULL (aclrtGetMemInfo on a thread without a device, host runtime) and a
    kernel's text of one become rows naming the thread and MindSpore's device; the 4 GiB copy without
    the memory for it is a skipped row saying what it needs."""
    script = tmp_path / "context_rows.py"
    script.write_text(textwrap.dedent("""
        import threading
        import mindspore as ms
        from ms_memcopy import runtime
        from ms_memcopy.tools.npu_check import _common, device_checks

        ms.set_device("CPU")
        rows = []

        def query():
            rows.append(_common._row("mem info", "-", "-", runtime.get_mem_info, _common.ACL_HBM_MEM))

        thread = threading.Thread(target=query, name="no-device-thread")
        thread.start()
        thread.join()
        print(rows[0].result)
        kernel_error = RuntimeError("ms_memcopy SwapBlocks(d2h): AclError: aclrtMallocHost failed: "
                                    "ACL_ERROR_RT_CONTEXT_NULL (107002): no context")
        print(_common.failure_text(kernel_error))
        print(_common.failure_text(ValueError("ms_memcopy Memcpy2D(extract): row = 9: out of range")))
        device_checks.free_device_memory = lambda: (3 * _common.GiB, "")
        print(device_checks.check_big_desc_copy(True))
    """))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=clean_env(),
                            timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    from_python, from_kernel, other, big = result.stdout.strip().splitlines()[-4:]
    assert from_python.startswith(
        "FAIL: aclrtGetMemInfo failed with ACL_ERROR_RT_CONTEXT_NULL (107002): this thread (no-device-thread) had no "
        "current ACL context (no device set on it); MindSpore uses CPU device 0 (ms.get_context('device_id')) "
        "[AclError: "), from_python
    assert from_kernel.startswith(
        "FAIL: aclrtMallocHost failed with ACL_ERROR_RT_CONTEXT_NULL (107002): the thread that launched the kernel had "
        "no current ACL context (no device set on it); MindSpore uses CPU device 0"), from_kernel
    assert other == "FAIL: ValueError: ms_memcopy Memcpy2D(extract): row = 9: out of range"
    assert big == "skipped: needs 13.0 GiB, 3.0 GiB free"
