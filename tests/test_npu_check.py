"""`python -m ms_memcopy npu-check`: it cannot run here (no NPU, no CANN); its CPU dry run runs every
check through the op_def route and reports a table with every row passing."""
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow


def run(*args, timeout=900):
    env = {k: v for k, v in os.environ.items() if k not in ("MS_MEMCOPY_SOC", "MS_MEMCOPY_DEVICE_COUNT",
                                                         "ASCEND_HOME_PATH", "ASCEND_OPP_PATH")}
    return subprocess.run([sys.executable, "-m", "ms_memcopy", "npu-check", *args], capture_output=True, text=True,
                          env=env, timeout=timeout)


def test_without_an_npu_it_says_so_and_points_at_the_dry_run():
    result = run()
    assert result.returncode == 2
    assert "no CANN installation" in result.stderr and "--dry-run" in result.stderr


def test_cpu_dry_run_passes_every_check():
    result = run("--dry-run")
    out = result.stdout
    assert result.returncode == 0, out[-4000:] + result.stderr[-3000:]
    assert "target CPU (dry run" in out and "op_def route built for CPU" in out
    for check in ("MemcpyBatch d2h/h2d", "Memcpy2D write + built-in after it", "SwapBlocks d2h/h2d, CopyBlocks",
                  "h2d -> d2h -> h2d ordering"):
        for mode in ("pynative", "graph O0"):
            for buf in ("pinned", "pageable"):
                assert any(line.startswith(check) and mode in line and buf in line and line.endswith("ok")
                           for line in out.splitlines()), (check, mode, buf, out[-3000:])
    assert "swap 1024 x 64 KiB x 2 caches" in out and "FAIL" not in out
    assert "0 failed" in out
