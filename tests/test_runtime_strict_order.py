"""Strict ordering checks (MS_MEMCOPY_STRICT_ORDER=1): a call that touches bytes a queued, unfinished copy
of another stream writes, or writes bytes it reads, with no event (or synchronize) between them, fails with
107000 and a message naming both calls, their streams and byte ranges; nothing moves. Same-stream accesses
and reads against reads never race. A stream held by a host function keeps its copies queued, so each case
is deterministic. The switch is read once per process: the cases run in one child interpreter each way."""
import json
import os
import re
import subprocess
import sys
import threading

import numpy as np
import pytest
from _acl_support import code

from ms_memcopy import _acl_lib, _runtime_env
from ms_memcopy import runtime as rt
from ms_memcopy.acl_constants import (ACL_EVENT_RECORDED_STATUS_NOT_READY, ACL_MEMCPY_DEVICE_TO_HOST,
                                      ACL_MEMCPY_HOST_TO_DEVICE)

SCENARIOS = r'''
import ctypes, json, threading
from ms_memcopy import AclError, runtime as rt

H2D, D2H, D2D = 1, 2, 3
N = 4096
rt.set_device(0)
s1, s2 = rt.create_stream(), rt.create_stream()
a, b = rt.malloc(N), rt.malloc(N)
host = [rt.malloc_host(N) for _ in range(3)]
for i, h in enumerate(host):
    ctypes.memset(h, 0x10 * (i + 1), N)
out = {"streams": [s1, s2], "a": a, "b": b}


class Hold:
    """Keeps a stream's later tasks queued until the with-block ends."""

    def __init__(self, stream):
        self.gate = threading.Event()
        rt.launch_host_func(stream, lambda: self.gate.wait(10))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.gate.set()
        rt.synchronize_stream(s1)
        rt.synchronize_stream(s2)


def outcome(call, *args):
    try:
        call(*args)
    except AclError as e:
        return {"code": e.code, "message": e.message, "fail_index": e.fail_index}
    return {"code": 0}


def download(src, count):
    buf = ctypes.create_string_buffer(count)
    rt.memcpy(ctypes.addressof(buf), count, src, count, D2H)
    return buf.raw


with Hold(s1):  # two streams write the same bytes
    rt.memcpy_async(a, N, host[0], N, H2D, s1)
    out["write_write"] = outcome(rt.memcpy_async, a + 100, 50, host[1], 50, H2D, s2)
out["write_write_bytes"] = download(a, N) == bytes([0x10]) * N  # the refused copy moved nothing

event = rt.create_event()
with Hold(s1):  # an event recorded after the first copy and waited on by the second stream orders them
    rt.memcpy_async(a, N, host[0], N, H2D, s1)
    rt.record_event(event, s1)
    rt.stream_wait_event(s2, event)
    out["ordered_by_event"] = outcome(rt.memcpy_async, a, N, host[1], N, H2D, s2)
out["ordered_bytes"] = download(a, N) == bytes([0x20]) * N  # s2's copy ran after s1's

with Hold(s1):  # record after the copy, but the second stream never waits for it
    rt.memcpy_async(a, N, host[0], N, H2D, s1)
    rt.record_event(event, s1)
    out["recorded_not_waited"] = outcome(rt.memcpy_async, a, N, host[1], N, H2D, s2)

with Hold(s1):  # a wait on an event recorded BEFORE the copy does not order the copy
    rt.record_event(event, s1)
    rt.memcpy_async(a, N, host[0], N, H2D, s1)
    rt.stream_wait_event(s2, event)
    out["event_before_copy"] = outcome(rt.memcpy_async, a, N, host[1], N, H2D, s2)

with Hold(s1):  # reads against reads
    rt.memcpy_async(host[0], N, a, N, D2H, s1)
    out["read_read"] = outcome(rt.memcpy_async, host[1], N, a, N, D2H, s2)

with Hold(s1):  # the second stream writes what the queued copy reads
    rt.memcpy_async(host[0], N, a, N, D2H, s1)
    out["write_after_read"] = outcome(rt.memcpy_async, a, N, host[2], N, H2D, s2)

with Hold(s1):  # the second stream reads what the queued copy writes
    rt.memcpy_async(a, N, host[0], N, H2D, s1)
    out["read_after_write"] = outcome(rt.memcpy_async, b, N, a, N, D2D, s2)

with Hold(s1):  # one stream orders its own copies
    rt.memcpy_async(a, N, host[0], N, H2D, s1)
    out["same_stream"] = outcome(rt.memcpy_async, a, N, host[1], N, H2D, s1)

with Hold(s1):  # disjoint halves; pitched copies into interleaved columns
    rt.memcpy_async(a, N // 2, host[0], N // 2, H2D, s1)
    out["disjoint"] = outcome(rt.memcpy_async, a + N // 2, N // 2, host[1], N // 2, H2D, s2)
    rt.memcpy2d_async(b, 64, host[0], 64, 16, 32, H2D, s1)  # columns 0..15 of 32 rows of 64 bytes
    out["columns_apart"] = outcome(rt.memcpy2d_async, b + 32, 64, host[1], 64, 16, 32, H2D, s2)
    out["columns_meet"] = outcome(rt.memcpy2d_async, b + 8, 64, host[1], 64, 16, 32, H2D, s2)

with Hold(s1):  # after the first stream is synchronized
    rt.memcpy_async(a, N, host[0], N, H2D, s1)
rt.synchronize_stream(s1)
out["after_synchronize"] = outcome(rt.memcpy_async, a, N, host[1], N, H2D, s2)
rt.synchronize_stream(s2)

with Hold(s1):  # a synchronous host call, then the same after the event's synchronize
    rt.memcpy_async(a, N, host[0], N, H2D, s1)
    rt.record_event(event, s1)
    out["host_sync_copy"] = outcome(rt.memcpy, host[2], N, a, N, D2H)
    out["declared_read"] = outcome(rt.check_host_access, a + N - 1, 1)  # numpy or a kernel about to read
    out["declared_elsewhere"] = outcome(rt.check_host_access, b, N, True)
    out["host_memset"] = outcome(rt.memset, a + 8, 8, 0, 8)
rt.synchronize_event(event)
out["host_after_event"] = outcome(rt.memcpy, host[2], N, a, N, D2H)

with Hold(s1):  # a memset on another stream; a batch whose item 2 meets the queued copy
    rt.memcpy_async(a, 256, host[0], 256, H2D, s1)
    out["memset_async"] = outcome(rt.memset_async, a + 255, 1, 0, 1, s2)
    attr = {"dst_loc": {"id": 0, "type": 1}, "src_loc": {"id": 0, "type": 0}}
    out["batch"] = outcome(rt.memcpy_batch_async, [b, b + 64, a + 128, b + 128], [64] * 4,
                           [host[1], host[1], host[1], host[1]], [64] * 4, [attr], [0], s2)

with Hold(s1):  # the tracker counts what is queued
    for i in range(100):
        rt.memcpy_async(a + 8 * i, 8, host[0], 8, H2D, s1)
    out["queued_while_held"] = rt.order_check_counts().queued_accesses

# 10^4 launches ping-ponging between the streams through two events: no race, and nothing stays tracked.
e1, e2 = rt.create_event(), rt.create_event()
races_before = rt.order_check_counts().races
for _ in range(2500):
    rt.memcpy_async(a, 64, host[0], 64, H2D, s1)
    rt.memcpy_async(b, 64, a, 64, D2D, s1)
    rt.record_event(e1, s1)
    rt.stream_wait_event(s2, e1)
    rt.memcpy_async(a, 64, b, 64, D2D, s2)
    rt.memcpy_async(host[1], 64, a, 64, D2H, s2)
    rt.record_event(e2, s2)
    rt.stream_wait_event(s1, e2)
rt.synchronize_stream(s1)
rt.synchronize_stream(s2)
counts = rt.order_check_counts()
out["flat"] = {"after": counts.queued_accesses, "new_races": counts.races - races_before}
out["races"] = races_before
for e in (event, e1, e2):
    rt.destroy_event(e)
print(json.dumps(out))
'''

STREAM = r"stream (0x[0-9a-f]+)"


@pytest.fixture(scope="module")
def strict(tmp_path_factory):
    return _run(tmp_path_factory, "1")


@pytest.fixture(scope="module")
def off(tmp_path_factory):
    return _run(tmp_path_factory, "0")


def _run(tmp_path_factory, value):
    script = tmp_path_factory.mktemp(f"strict_order_{value}") / "scenarios.py"
    script.write_text(SCENARIOS)
    env = _runtime_env.without_machine(os.environ)
    env[_runtime_env.STRICT_ORDER] = value
    result = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _streams(out):
    return [f"{s:#x}" for s in out["streams"]]


def test_two_streams_writing_the_same_bytes_is_a_race_naming_both_calls(strict):
    race = strict["write_write"]
    s1, s2 = _streams(strict)
    a = strict["a"]
    assert race["code"] == 107000
    message = race["message"]
    assert message.startswith("aclrtMemcpyAsync: ordering race: aclrtMemcpyAsync on stream"), message
    assert re.findall(STREAM, message)[:2] == [s2, s1], message  # the refused call's stream, then the queued one's
    assert f"writes bytes [{a + 100:#x}, {a + 150:#x})" in message  # the refused copy's bytes
    assert f"which aclrtMemcpyAsync on stream {s1} writes bytes [{a:#x}, {a + 4096:#x})" in message
    assert "aclrtStreamWaitEvent" in message
    assert strict["write_write_bytes"] is True  # nothing moved


def test_an_event_recorded_after_the_copy_and_waited_on_orders_the_streams(strict):
    assert strict["ordered_by_event"] == {"code": 0}
    assert strict["ordered_bytes"] is True  # and the wait held the second copy back until the first ran


@pytest.mark.parametrize("case", ["recorded_not_waited", "event_before_copy"])
def test_an_event_that_does_not_order_the_copy_leaves_the_race(strict, case):
    assert strict[case]["code"] == 107000, strict[case]


def test_reads_never_race_with_reads_nor_a_stream_with_itself(strict):
    assert strict["read_read"] == {"code": 0}
    assert strict["same_stream"] == {"code": 0}


@pytest.mark.parametrize("case, verb, other_verb", [("write_after_read", "writes", "reads"),
                                                    ("read_after_write", "reads", "writes")])
def test_a_write_against_a_read_is_a_race(strict, case, verb, other_verb):
    race = strict[case]
    s1, s2 = _streams(strict)
    assert race["code"] == 107000
    assert f"on stream {s2} {verb} bytes" in race["message"]
    assert f"which aclrtMemcpyAsync on stream {s1} {other_verb} bytes [{strict['a']:#x}," in race["message"]


def test_disjoint_bytes_do_not_race_pitched_rows_compared_row_by_row(strict):
    assert strict["disjoint"] == {"code": 0}
    assert strict["columns_apart"] == {"code": 0}  # the extents overlap, the rows do not
    race = strict["columns_meet"]
    assert race["code"] == 107000
    assert "aclrtMemcpy2dAsync on stream" in race["message"] and "32 rows of 16 bytes, pitch 64" in race["message"]


def test_a_synchronize_of_the_stream_or_the_event_orders_what_follows(strict):
    assert strict["after_synchronize"] == {"code": 0}
    assert strict["host_after_event"] == {"code": 0}


def test_a_synchronous_host_call_races_with_a_queued_copy(strict):
    s1 = _streams(strict)[0]
    for case, api in [("host_sync_copy", "aclrtMemcpy"), ("host_memset", "aclrtMemset")]:
        race = strict[case]
        assert race["code"] == 107000, case
        assert race["message"].startswith(f"{api}: ordering race: {api} on the host"), race["message"]
        assert f"which aclrtMemcpyAsync on stream {s1} writes" in race["message"]


def test_a_declared_host_access_is_checked_as_a_synchronous_call(strict, off):
    s1 = _streams(strict)[0]
    race = strict["declared_read"]
    assert race["code"] == 107000
    assert race["message"].startswith("aclhostCheckHostAccess: ordering race: aclhostCheckHostAccess on the host "
                                      f"reads bytes [{strict['a'] + 4095:#x}, {strict['a'] + 4096:#x}), which "
                                      f"aclrtMemcpyAsync on stream {s1} writes"), race["message"]
    assert strict["declared_elsewhere"] == {"code": 0}
    assert off["declared_read"] == {"code": 0}


def test_memset_and_batch_items_are_checked_and_the_batch_names_its_item(strict):
    assert strict["memset_async"]["code"] == 107000
    assert "aclrtMemsetAsync on stream" in strict["memset_async"]["message"]
    batch = strict["batch"]
    assert batch["code"] == 107000 and batch["fail_index"] == 2
    assert "aclrtMemcpyBatchAsync (item 2) on stream" in batch["message"]


def test_the_tracker_stays_flat_over_ten_thousand_launches(strict):
    flat = strict["flat"]
    assert flat == {"after": 0, "new_races": 0}  # finished copies left the tracker
    assert strict["queued_while_held"] == 100  # while they are queued, they are tracked
    expected = ["write_write", "recorded_not_waited", "event_before_copy", "write_after_read", "read_after_write",
                "columns_meet", "host_sync_copy", "declared_read", "host_memset", "memset_async", "batch"]
    assert strict["races"] == len(expected)  # one report per refused call


def test_nothing_is_checked_with_the_switch_off(off):
    refused = [key for key, value in off.items() if isinstance(value, dict) and value.get("code", 0) != 0]
    assert refused == []
    assert off["flat"] == {"after": 0, "new_races": 0} and off["races"] == 0 and off["queued_while_held"] == 0


# --- aclrtStreamWaitEvent itself (any mode, in this process) -----------------------------------------

def test_stream_wait_event_holds_the_waiting_streams_later_copies_back(acl_res):
    """A download on a second stream that waits for an event recorded after an upload held on the first
    stream stays queued until the upload has run, and then reads the uploaded bytes."""
    first, second = acl_res.stream(), acl_res.stream()
    data = np.arange(4096, dtype=np.uint32).view(np.uint8)
    src, out = acl_res.pinned(data.nbytes), acl_res.pinned(data.nbytes)
    acl_res.view(src, data.nbytes)[:] = data
    acl_res.view(out, data.nbytes)[:] = 0
    dev = acl_res.device(data.nbytes)
    rt.memset(dev, data.nbytes, 0, data.nbytes)
    uploaded, downloaded = rt.create_event(), rt.create_event()
    gate = threading.Event()
    try:
        rt.launch_host_func(first, lambda: gate.wait(10))
        rt.memcpy_async(dev, data.nbytes, src, data.nbytes, ACL_MEMCPY_HOST_TO_DEVICE, first)
        rt.record_event(uploaded, first)
        rt.stream_wait_event(second, uploaded)
        rt.memcpy_async(out, data.nbytes, dev, data.nbytes, ACL_MEMCPY_DEVICE_TO_HOST, second)
        rt.record_event(downloaded, second)
        assert rt.query_event_status(downloaded) == ACL_EVENT_RECORDED_STATUS_NOT_READY  # held behind the gate
        assert (acl_res.view(out, data.nbytes) == 0).all()
    finally:
        gate.set()
        rt.synchronize_stream(second)
        rt.destroy_event(uploaded)
        rt.destroy_event(downloaded)
    assert (acl_res.view(out, data.nbytes) == data).all()


def test_stream_wait_event_codes(acl_res):
    stream = acl_res.stream()
    event = rt.create_event()
    try:
        rt.stream_wait_event(stream, event)  # never recorded: nothing to wait for
        rt.stream_wait_event(None, event)  # the default stream
        rt.synchronize_stream(stream)
        assert _acl_lib.func("aclrtStreamWaitEvent")(stream, None) == 100000
        assert code(rt.stream_wait_event, 0xDEAD, event) == 107017
        assert code(rt.stream_wait_event, stream, 0xDEAD) == 107017
    finally:
        rt.destroy_event(event)
