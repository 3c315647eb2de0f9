"""The README's scale-out commands: the paged-KV main job on 2 msrun ranks (CPU), on one node and on two
nodes simulated on this machine (two msrun, --node_rank 0 and 1, --master_addr 127.0.0.1), and a failing
rank in each form.

Each test runs msrun from the interpreter's own environment (the workers take `python` from PATH), on a
free port and a log directory of its own, with the job made small (SMALL_JOB); .ci/run runs the README's
command as written (setup:scale).
"""
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from ms_memcopy import _runtime_env

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

pytestmark = pytest.mark.slow

# The runs that repeat what .ci/run's setup:scale step shows (the README's command, made small here) or
# take a minute each stay out of the default suite (its 10-minute budget); .ci/run runs them all with
# MS_MEMCOPY_LONG_TESTS=1.
long_test = pytest.mark.skipif(os.environ.get("MS_MEMCOPY_LONG_TESTS") != "1",
                               reason="a long msrun run; MS_MEMCOPY_LONG_TESTS=1 runs it (.ci/run does)")

# Appended to the README's commands (the last value of an option counts): 3 sequences of 8 decoded tokens
# and one replay of each swap. Every rank still prefills, decodes, is preempted (swaps out and in), forks
# a sequence and gathers every rank's results, and rank 0 still checks them against the reference.
SMALL_JOB = ("--sequences", "3", "--decode", "8", "--fork-decode", "4", "--repeats", "1", "--per-block-swaps", "1")


def readme_scale_command():
    text = (ROOT / "README.md").read_text()
    match = re.search(r"<!-- setup:scale -->\n```bash\n(.*?)\n```", text, re.S)
    assert match, "README has no setup:scale command"
    return match.group(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_scale(tmp_path, extra=(), timeout=420, node_timeout=None):
    command = readme_scale_command()
    assert "--worker_num=2" in command and "examples/paged_kv_cache.py" in command
    command = command.replace('PATH="$PWD/.venv/bin:$PATH" .venv/bin/msrun', f'PATH="{BIN}:$PATH" {BIN}/msrun')
    command = re.sub(r"--master_port=\d+", f"--master_port={free_port()}", command)
    command = command.replace("--log_dir=msrun_log", f"--log_dir={tmp_path / 'log'}")
    command += "".join(f" {a}" for a in (*SMALL_JOB, *extra))
    env = _runtime_env.without_machine(os.environ)
    if node_timeout is not None:
        env["MS_NODE_TIMEOUT"] = str(node_timeout)  # the scheduler's wait for a node that stopped beating
    return subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


@long_test
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
    result = run_scale(tmp_path, ["--fail-on-rank", "1"], timeout=300, node_timeout=10)
    assert result.returncode != 0
    log = (tmp_path / "log" / "worker_1.log").read_text(errors="replace")
    assert "rank 1: ValueError: blocks: device block(s) [64] are not allocated" in log, log[-3000:]
    assert "result: PASS" not in result.stdout


# ---- two nodes: two msrun on this machine ------------------------------------------------------------

def readme_two_node_commands():
    """The README's two-node pair: node 0's msrun line (run in the background there) and node 1's."""
    text = (ROOT / "README.md").read_text()
    match = re.search(r"<!-- scale:two-nodes -->\n```bash\n(.*?)\n```", text, re.S)
    assert match, "README has no scale:two-nodes commands"
    lines = [line for line in match.group(1).splitlines() if "msrun" in line]
    assert len(lines) == 2, lines
    commands = [re.sub(r"\s*(&&\s*wait \$!|&)\s*$", "", line) for line in lines]
    for node, command in enumerate(commands):
        for option in ("--worker_num=2", "--local_worker_num=1", f"--node_rank={node}", "--master_addr=127.0.0.1",
                       f"--log_dir=msrun_log/node{node}", "examples/paged_kv_cache.py"):
            assert option in command, (option, command)
    assert re.search(r"--master_port=(\d+)", commands[0]).group(1) == re.search(r"--master_port=(\d+)",
                                                                                 commands[1]).group(1)
    return commands


def end_tree(process):
    """SIGKILL a node's msrun and every process it started (workers run in sessions of their own), by pid."""
    try:
        tree = psutil.Process(process.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        tree = []
    for member in [process, *tree]:
        try:
            os.kill(member.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    process.wait()
    psutil.wait_procs(tree, timeout=30)


def run_two_nodes(tmp_path, extra=(), timeout=420):
    """Starts both nodes' msrun at once (node 0 first), waits for both within `timeout` seconds, and always
    ends whatever is left. Returns ([exit codes], [console outputs], seconds until both had exited)."""
    port = free_port()
    env = _runtime_env.without_machine(os.environ)
    processes, outputs = [], []
    began = time.monotonic()
    try:
        for node, command in enumerate(readme_two_node_commands()):
            command = command.replace('PATH="$PWD/.venv/bin:$PATH" .venv/bin/msrun',
                                      f'PATH="{BIN}:$PATH" exec {BIN}/msrun')
            command = re.sub(r"--master_port=\d+", f"--master_port={port}", command)
            command = command.replace(f"--log_dir=msrun_log/node{node}", f"--log_dir={tmp_path / f'node{node}'}")
            command += "".join(f" {a}" for a in (*SMALL_JOB, *extra))
            outputs.append(tmp_path / f"node{node}.out")
            with open(outputs[-1], "w") as out:
                processes.append(subprocess.Popen(["bash", "-c", command], cwd=ROOT, env=env, stdout=out,
                                                  stderr=subprocess.STDOUT))
        for process in processes:
            process.wait(timeout=max(1.0, began + timeout - time.monotonic()))
        elapsed = time.monotonic() - began
    finally:
        for process in processes:
            end_tree(process)
    return [p.returncode for p in processes], [o.read_text(errors="replace") for o in outputs], elapsed


@long_test
def test_readme_two_node_commands_pass(tmp_path):
    """Two msrun on this machine, one worker each: the same outputs and report as on one node, printed by
    node 0 (rank 0's msrun); each node logs its own rank, and one of the two schedulers serves the cluster."""
    codes, (out0, out1), _ = run_two_nodes(tmp_path)
    assert codes == [0, 0], (codes, out0[-4000:], out1[-3000:])
    assert "tensor parallel: 2 ranks, 8 heads and 64 KiB blocks each" in out0, out0[-4000:]
    # msrun exports DEVICE_ID 0 on each node (one worker there); MindSpore's init() numbers local ranks by
    # host name, and both simulated nodes are this host, so rank 1 is local rank 1 and uses ACL device 1
    assert "rank 0: DEVICE_ID 0, ACL device 0, rank 1: DEVICE_ID 0, ACL device 1" in out0
    assert re.search(r"per rank, SwapBlocks replayed: rank 0 [\d.]+ GB/s, rank 1 [\d.]+ GB/s; all ranks together",
                     out0)
    assert "max |diff| = 0 over" in out0 and "every rank's outputs identical: True" in out0
    assert "result: PASS" in out0 and "result: PASS" not in out1
    assert (tmp_path / "node0" / "worker_0.log").exists() and (tmp_path / "node1" / "worker_1.log").exists()
    stood_down = ["stands down" in (tmp_path / f"node{n}" / "scheduler.log").read_text(errors="replace")
                  for n in (0, 1)]
    assert sorted(stood_down) == [False, True], stood_down


@pytest.mark.skipif(os.environ.get("MS_MEMCOPY_LONG_TESTS") != "1",
                    reason="about 75 s (the scheduler's node timeout); MS_MEMCOPY_LONG_TESTS=1 runs it")
def test_a_failing_rank_ends_both_nodes(tmp_path):
    """Rank 1 (node 1) fails its first swap-out: it reports the error with its rank, node 1's msrun fails at
    once, and node 0's rank, left waiting in a collective, is ended by the cluster's timeout of the lost node,
    so both msrun exit non-zero in bounded time."""
    codes, (out0, out1), elapsed = run_two_nodes(tmp_path, ["--fail-on-rank", "1"], timeout=300)
    assert codes[0] != 0 and codes[1] != 0, (codes, out0[-3000:], out1[-3000:])
    log = (tmp_path / "node1" / "worker_1.log").read_text(errors="replace")
    assert "rank 1: ValueError: blocks: device block(s) [64] are not allocated" in log, log[-3000:]
    assert "result: PASS" not in out0
    assert elapsed < 300
