"""The copy strategy (copy_strategy.h): how the host runtime moves large copies on this machine, chosen
by a calibration at the first large copy or fixed by MS_MEMCOPY_STREAMING_STORES / MS_MEMCOPY_COPY_THREADS.
Each case runs in a child process (the strategy is fixed once per process): the description it reports
follows the documented rule, and large copies of every kind give numpy's bytes whichever way was chosen."""
import os
import re
import subprocess
import sys

import pytest

from ms_memcopy import _paths, _runtime_env

pytestmark = pytest.mark.skipif(not _paths.uses_host_runtime(), reason="the copy strategy is the host runtime's")

# Large copies of each kind the engine has: one unaligned 1D copy past the last-level cache, a batch of
# odd-sized 64 KiB items written to scattered places, the same items queued on a deferred stream (run
# together by the synchronizing thread), a pitched 2D copy; every byte checked against numpy.
CHILD = r"""
import numpy as np
from ms_memcopy import runtime as rt
from ms_memcopy.acl_constants import ACL_MEMCPY_HOST_TO_DEVICE as H2D, ACL_MEMCPY_DEVICE_TO_HOST as D2H
from ms_memcopy.acl_constants import ACL_MEM_LOCATION_TYPE_DEVICE as DEVICE, ACL_MEM_LOCATION_TYPE_HOST as HOST
import ctypes

rt.set_device(0)
n = (40 << 20) + 77
host = rt.malloc_host(n + 64)
dev = rt.malloc(n + 64)
view = lambda p, k: np.frombuffer((ctypes.c_uint8 * k).from_address(p), np.uint8)
src = np.random.default_rng(1).integers(0, 256, n + 64, dtype=np.uint8)
view(host, n + 64)[:] = src
rt.memcpy(dev + 5, n, host + 3, n, H2D)
back = np.zeros(n + 64, np.uint8)
rt.memcpy(back.ctypes.data, n, dev + 5, n, D2H)
assert np.array_equal(back[:n], src[3:3 + n]), "1D copy"

item, count = (64 << 10) + 13, 600
order = np.random.default_rng(2).permutation(count)
stride = item + 51
dsts = [dev + int(order[i]) * stride + 1 for i in range(count)]
srcs = [host + i * stride + 2 for i in range(count)]
attr = {"dst_loc": {"id": 0, "type": DEVICE}, "src_loc": {"id": 0, "type": HOST}}
rt.memcpy_batch(dsts, [item] * count, srcs, [item] * count, [attr], [0])
dev_bytes = np.zeros(n + 64, np.uint8)
rt.memcpy(dev_bytes.ctypes.data, n + 64, dev, n + 64, D2H)
for i in range(count):
    at = int(order[i]) * stride + 1
    assert np.array_equal(dev_bytes[at:at + item], src[i * stride + 2:i * stride + 2 + item]), f"batch item {i}"

stream = rt.create_stream()  # queued copies that a synchronizing thread runs as one whole
rt.set_stream_deferred(stream, True)
rt.memset(dev, n + 64, 0, n + 64)
for i in range(count):
    rt.memcpy_async(dsts[i], item, srcs[i], item, H2D, stream=stream)
rt.synchronize_stream(stream)
rt.memcpy(dev_bytes.ctypes.data, n + 64, dev, n + 64, D2H)
for i in range(count):
    at = int(order[i]) * stride + 1
    assert np.array_equal(dev_bytes[at:at + item], src[i * stride + 2:i * stride + 2 + item]), f"queued copy {i}"

width, height, pitch = 3000, 12000, 3072
rt.memcpy2d(dev, pitch, host, pitch + 8, width, height, H2D)
rt.memcpy(dev_bytes.ctypes.data, n + 64, dev, n + 64, D2H)
rows = dev_bytes[:pitch * height].reshape(height, pitch)[:, :width]
expect = src[:(pitch + 8) * height].reshape(height, pitch + 8)[:, :width]
assert np.array_equal(rows, expect), "2D copy"
print(rt.copy_strategy())
"""


def run_child(streaming=None, threads=None):
    env = dict(os.environ)
    for name, value in ((_runtime_env.STREAMING_STORES, streaming), (_runtime_env.COPY_THREADS, threads)):
        env.pop(name, None)
        if value is not None:
            env[name] = value
    result = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.strip().splitlines()[-1]


KINDS = r"(memcpy|streaming|interleaved)"


def parse_choice(text):
    match = re.match(KINDS + r" stores, (\d+) threads?", text)
    assert match, text
    return match.group(1), int(match.group(2))


def acceptable_choices(measured, cores, slack=0.03):
    """The (kind, threads) the documented rule picks from the printed speeds: per store kind a split only
    when 5% faster, of the two streaming kinds the faster, streaming only when 10% faster than memcpy.
    The speeds are printed to 0.01 GB/s, so near a margin (within `slack`) either side is accepted; each
    comparison is made between the ways the earlier step may have picked, as the runtime makes it."""
    def near(a, b):
        return abs(a - b) <= slack * max(a, b)

    def best(kind):
        one, split = measured.get((kind, 1)), measured.get((kind, cores))
        if one is None:
            return [(split, kind, cores)] if split is not None else []
        if split is None:
            return [(one, kind, 1)]
        if near(split, one * 1.05):
            return [(one, kind, 1), (split, kind, cores)]
        return [(split, kind, cores)] if split > one * 1.05 else [(one, kind, 1)]

    def faster_streaming(a, b):
        if a is None or b is None:
            return [a if b is None else b]
        if near(a[0], b[0]):
            return [a, b]
        return [a if a[0] >= b[0] else b]

    choices = set()
    for memcpy in best("memcpy") or [None]:
        for plain in best("streaming") or [None]:
            for interleaved in best("interleaved") or [None]:
                for streaming in faster_streaming(plain, interleaved):
                    if streaming is None:
                        choices.add(memcpy[1:])
                        continue
                    if memcpy is None:
                        choices.add(streaming[1:])
                        continue
                    margin = memcpy[0] * 1.10
                    if streaming[0] < margin or near(streaming[0], margin):
                        choices.add(memcpy[1:])
                    if streaming[0] > margin or near(streaming[0], margin):
                        choices.add(streaming[1:])
    return choices


def test_calibrated_choice_follows_the_documented_rule():
    text = run_child()
    kind, threads = parse_choice(text)
    cores = min(len(os.sched_getaffinity(0)), 8)
    measured = {(k, int(t)): float(g) for k, t, g in re.findall(KINDS + r" x(\d+) ([\d.]+) GB/s", text)}
    if cores == 1:
        assert threads == 1
    else:
        assert "calibrated over" in text, text
        assert {("memcpy", 1), ("memcpy", cores)} <= set(measured), text
        assert (kind, threads) in acceptable_choices(measured, cores), text
        # over buffers of twice the last-level cache each, 8 to 128 MiB (a whole of 64 KiB pieces)
        cache_mib = int(re.search(r"large wholes from (\d+) MiB", text).group(1))
        assert int(re.search(r"calibrated over (\d+) MiB", text).group(1)) == min(max(2 * cache_mib, 8), 128), text
    assert "last-level cache" in text


@pytest.mark.parametrize("streaming,expected", [("0", "memcpy"), ("1", "streaming"), ("interleaved", "interleaved")])
def test_environment_fixes_the_choice_and_the_bytes_match(streaming, expected):
    text = run_child(streaming=streaming, threads="2")
    kind, threads = parse_choice(text)
    assert kind == expected, text
    assert threads == min(2, len(os.sched_getaffinity(0))), text
    assert "calibrated" not in text, text  # both choices fixed: nothing measured
    assert f"{_runtime_env.STREAMING_STORES}={streaming}" in text and _runtime_env.COPY_THREADS in text, text


def test_one_thread_fixed_calibrates_only_the_stores():
    text = run_child(threads="1")
    kind, threads = parse_choice(text)
    assert threads == 1, text
    ways = set(re.findall(KINDS + r" x(\d+)", text))
    assert ways == {("memcpy", "1"), ("streaming", "1"), ("interleaved", "1")}, text
