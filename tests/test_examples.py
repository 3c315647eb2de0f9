"""The README's Python example and the main jobs (examples/paged_kv_cache.py, kv_cache_offload.py)
run and pass."""
import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest


ROOT = Path(__file__).resolve().parents[1]


def _main_job(*args: str, **env: str) -> str:
    """The main job's stdout with these arguments (and environment additions), after it exited 0."""
    cmd = [sys.executable, str(ROOT / "examples" / "paged_kv_cache.py"), *args]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env={**os.environ, **env})
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    return result.stdout


def test_kv_cache_offload_example_passes():
    cmd = [sys.executable, str(ROOT / "examples" / "kv_cache_offload.py"), "--layers", "2", "--steps", "20",
           "--swap-at", "9", "--repeats", "1"]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert "max |diff| = 0 over 20 tokens" in result.stdout
    assert "blocks per swap: 4 (2 layers x K,V x 1 blocks of 16 rows), bytes per swap: 16384" in result.stdout
    assert result.stdout.rstrip().endswith("result: PASS")


def test_readme_python_example_runs(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert blocks, "README has no Python example"
    script = tmp_path / "readme_example.py"
    script.write_text(blocks[0] + "\nprint('nbytes', nbytes.asnumpy().tolist())\n"
                                  "print('window', w.asnumpy().tolist())\n")
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                            cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert "nbytes [24, 12]" in result.stdout
    assert "window [7.0, 8.0, 9.0, 10.0]" in result.stdout


@pytest.mark.skipif(os.environ.get("MS_MEMCOPY_LONG_TESTS") != "1",
                    reason="the main job with 2 layers; the overlapped run below makes its checks on 1 layer "
                           "(MS_MEMCOPY_LONG_TESTS=1 runs it, .ci/run does)")
def test_paged_kv_cache_example_passes():
    """The README's main job at a small size: preemption by swap, a fork, and outputs identical to each
    sequence decoded alone."""
    out = _main_job("--cache-mib", "16", "--layers", "2", "--decode", "20", "--fork-decode", "8", "--repeats", "1",
                    "--per-block-swaps", "1")
    assert "K/V caches: 4 Parameters x 32 blocks of 16 tokens (128 KiB) = 16 MiB" in out
    assert "demand 42 blocks for a pool of 32" in out
    assert re.search(r"preemptions: [1-9]\d*; swaps: [1-9]", out), out
    assert re.search(r"swap out: \d+ blocks x 4 caches", out) and re.search(r"swap in : \d+ blocks x 4 caches", out)
    assert "fork: CopyBlocks of 6 blocks x 4 caches = 3 MiB" in out
    assert "max |diff| = 0 over 145 tokens of 7 sequences" in out
    assert out.rstrip().endswith("result: PASS")


def test_paged_kv_cache_example_with_mla_caches_on_a_registered_pool_passes():
    """--model mla: a latent (float16) and a rope (float32) cache per layer in one pool, swapped with one
    SwapBlocks call each way over a host pool of two registered chunks; outputs as each sequence alone."""
    out = _main_job("--model", "mla", "--cache-mib", "1", "--layers", "1", "--heads", "4", "--sequences", "4",
                    "--decode", "12", "--fork-decode", "4", "--repeats", "1", "--per-block-swaps", "1")
    assert ("MLA-like latent (float16 x 512) + rope (float32 x 64) caches: 2 Parameters x 51 blocks of 16 tokens "
            "= 1 MiB; host pool: 2 chunks of registered memory (HostBuffer.wrap)") in out
    assert re.search(r"preemptions: [1-9]\d*; swaps: [1-9]\d*, each one SwapBlocks call over all 2 caches", out), out
    assert re.search(r"swap in : \d+ blocks x 2 caches", out), out
    assert "max |diff| = 0 over 63 tokens of 5 sequences" in out
    assert out.rstrip().endswith("result: PASS")


def test_paged_kv_cache_example_overlapped_schedulers_pass():
    """--overlap graph: the same sequences decoded again by the scheduler that overlaps swaps with
    decoding through TransferQueue (--overlap), and by the one whose swaps are issued inside the compiled
    decode step (SwapBlocksAsync, WaitTransfer) in parts of 1 MiB; both outputs equal the synchronous
    runs' and each sequence decoded alone, under the host runtime's strict ordering checks (a copy
    racing with an unfinished one of another stream fails). One run for both, to keep the suite short:
    --overlap alone differs in its last line only (test_overlap_report_lines)."""
    out = _main_job("--cache-mib", "8", "--layers", "1", "--decode", "16", "--fork-decode", "4", "--repeats", "1",
                    "--per-block-swaps", "1", "--overlap", "graph", "--step-rounds", "2", "--graph-part-mib", "1",
                    MS_MEMCOPY_STRICT_ORDER="1")
    # the synchronous run, as the main job makes it (test_paged_kv_cache_example_passes, a long test)
    assert "K/V caches: 2 Parameters x 32 blocks of 16 tokens (128 KiB) = 8 MiB" in out
    assert "demand 42 blocks for a pool of 32" in out
    assert re.search(r"preemptions: [1-9]\d*; swaps: [1-9]", out), out
    assert re.search(r"swap out: \d+ blocks x 2 caches", out) and re.search(r"swap in : \d+ blocks x 2 caches", out)
    assert "fork: CopyBlocks of 6 blocks x 2 caches = 2 MiB" in out
    assert re.search(r"overlapped scheduler \(TransferQueue, copies on their own stream\): [1-9]\d* preemptions, "
                     r"[1-9]\d* swap-outs and [1-9]\d* swap-ins submitted while the others decode; outputs vs\. "
                     r"the synchronous runs: max \|diff\| = 0\n", out), out
    assert re.search(r"  decode step(: too few steps| with a transfer in flight \(swap-outs of \d+ MiB launched "
                     r"(whole|in parts of 32 MiB, one per step): [\d.]+ steps each\))", out), out
    assert re.search(r"overlapped scheduler in the compiled step \(SwapBlocksAsync, CopyBlocksAsync and "
                     r"WaitTransfer inside the decode graph, transfers in parts of 1 MiB, one per lane and step\): "
                     r"[1-9]\d* preemptions, [1-9]\d* swap-outs and [1-9]\d* swap-ins submitted while the others "
                     r"decode; outputs vs\. the synchronous runs: max \|diff\| = 0\n", out), out
    assert re.search(r"decode step with a transfer in flight \(swap-outs of \d+ MiB in parts of 1 MiB, one per "
                     r"lane and step: [\d.]+ steps each\)", out), out
    assert re.search(r"total time of the decoding, two runs each \(synchronous, eager, graph, graph, eager, "
                     r"synchronous\): graph-overlapped scheduler [\d.]+ s", out), out
    assert re.search(r"max \|diff\| = 0 over \d+ tokens of [78] sequences", out), out
    assert out.rstrip().endswith("result: PASS")


def test_overlap_report_lines(capsys):
    """The report's --overlap lines from a table of figures (no run): --overlap alone ends with the
    total time of the eager and the synchronous schedulers."""
    sys.path.insert(0, str(ROOT / "examples"))
    from paged_kv.report import OVERLAP_COLUMNS, print_overlap

    table = np.full((1, 60), np.nan)
    eager = OVERLAP_COLUMNS["eager"]
    table[0, 26] = 20.0
    table[0, eager:eager + 15] = [1, 0, 19.0, 0.11, 30, 0.1, 30, 1.1, 1.0, 1.2, 6.5, 205 * 2**20, 2, 2, 2]
    args = argparse.Namespace(overlap="eager", transfer_part_mib=32)
    print_overlap(table, args, ((1.0, 1.0, 1.0), (2.0, 2.0, 2.0)))
    out = capsys.readouterr().out
    assert ("  decode step with a transfer in flight (swap-outs of 205 MiB launched in parts of 32 MiB, one per step: "
            "6.5 steps each): median 110.0 ms over 30 steps; without: 100.0 ms over 30 steps; ratio 1.10x (90% "
            "bootstrap interval 1.00x-1.20x); goal <= 1.15x: unsure\n") in out
    assert ("  total time of the decoding, two runs each (synchronous, overlapped, overlapped, synchronous): "
            "overlapped scheduler 19.0 s, synchronous scheduler 20.0 s (0.95x)\n") in out
    assert "graph" not in out
