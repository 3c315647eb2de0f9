"""The README's scale-out command: the paged-KV main job on 2 msrun ranks (CPU), and a failing rank.

Each test runs msrun from the interpreter's own environment (the workers take `python` from PATH), on a
free port and a log directory of its own.
"""
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

pytestmark = pytest.mark.slow


def readme_scale_command():
    text = (ROOT / "README.md").read_text()
    match = re.search(r"<!-- setup:scale -->\n```bash\n(.*?)\n```", text, re.S)
    assert match, "README has no setup:scale command"
    return match.group(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_scale(tmp_path, extra=(), timeout=420):
    command = readme_scale_command()
    assert "--worker_num=2" in command and "examples/paged_kv_cache.py" in command
    command = command.replace('PATH="$PWD/.venv/bin:$PATH" .venv/bin/msrun', f'PATH="{BIN}:$PATH" {BIN}/msrun')
    command = re.sub(r"--master_port=\d+", f"--master_port={free_port()}", command)
    command = command.replace("--log_dir=msrun_log", f"--log_dir={tmp_path / 'log'}")
    command += "".join(f" {a}" for a in extra)
    env = {k: v for k, v in os.environ.items() if k not in ("MS_MEMCOPY_SOC", "MS_MEMCOPY_DEVICE_COUNT")}
    return subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_readme_scale_out_command_passes(tmp_path):
    result = run_scale(tmp_path)
    out = result.stdout
    assert result.returncode == 0, out[-4000:] + result.stderr[-3000:]
    assert "tensor parallel: 2 ranks, 8 heads and 64 KiB blocks each" in out, out[-4000:]
    assert "rank 0: DEVICE_ID 0, ACL device 0, rank 1: DEVICE_ID 1, ACL device 1" in out
    assert re.search(r"per rank, SwapBlocks replayed: rank 0 [\d.]+ GB/s, rank 1 [\d.]+ GB/s; all ranks together", out)
    assert "max |diff| = 0 over" in out and "every rank's outputs identical: True" in out
    assert "result: PASS" in out


def test_a_failing_rank_fails_the_run_with_its_rank(tmp_path):
    """Rank 1's first swap-out names a block past the pool: it reports the error with its rank and exits
    non-zero, and msrun fails instead of leaving rank 0 waiting in a collective."""
    result = run_scale(tmp_path, ["--fail-on-rank", "1"], timeout=300)
    assert result.returncode != 0
    log = (tmp_path / "log" / "worker_1.log").read_text(errors="replace")
    assert "rank 1: ValueError: blocks: device block(s) [64] are not allocated" in log, log[-3000:]
    assert "result: PASS" not in result.stdout
