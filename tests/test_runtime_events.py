"""Events of the host runtime (aclrtCreateEvent ... aclrtSynchronizeEvent) and its count of host waits.

Codes: NULL arguments 100000 (CANN's ACL_REQUIRES_NOT_NULL), an invalid flag 107000 (checked before the
context, ApiErrorDecorator::EventCreate), no current context 107002, an unknown or destroyed handle
107017 (as for streams), a stream of another context 107003; an ACL_EVENT_EXTERNAL event cannot be
queried or synchronized (207000), an ACL_EVENT_DEVICE_USE_ONLY event cannot be recorded (107000).
Status: only a reached record is COMPLETE (CANN reports RT_EVENT_RECORDED only).
"""
import threading

import numpy as np
import pytest

from ms_memcopy import AclError, _runtime_env, runtime as rt
from ms_memcopy.acl_constants import (ACL_EVENT_CAPTURE_STREAM_PROGRESS, ACL_EVENT_DEVICE_USE_ONLY, ACL_EVENT_EXTERNAL,
                                      ACL_EVENT_IPC, ACL_EVENT_RECORDED_STATUS_COMPLETE,
                                      ACL_EVENT_RECORDED_STATUS_NOT_READY, ACL_EVENT_SYNC, ACL_EVENT_TIME_LINE,
                                      ACL_MEMCPY_HOST_TO_DEVICE)
from _acl_support import CHILD_PRELUDE


def code_of(call, *args):
    with pytest.raises(AclError) as info:
        call(*args)
    return info.value.code


class HeldStream:
    """A stream kept busy by a host function until release()."""

    def __init__(self, stream):
        self.stream = stream
        self.gate = threading.Event()
        rt.launch_host_func(stream, lambda: self.gate.wait(10))

    def release(self):
        self.gate.set()


@pytest.fixture
def event(acl_device):
    e = rt.create_event()
    yield e
    rt.destroy_event(e)


def test_record_query_synchronize(acl_res, event):
    stream = acl_res.stream()
    assert rt.query_event_status(event) == ACL_EVENT_RECORDED_STATUS_NOT_READY  # never recorded
    rt.synchronize_event(event)  # never recorded: returns at once
    held = HeldStream(stream)
    src = np.arange(4096, dtype=np.uint8)
    host = acl_res.pinned(src.nbytes)
    acl_res.view(host, src.nbytes)[:] = src
    dev = acl_res.device(src.nbytes)
    rt.memcpy_async(dev, src.nbytes, host, src.nbytes, ACL_MEMCPY_HOST_TO_DEVICE, stream)
    rt.record_event(event, stream)
    assert rt.query_event_status(event) == ACL_EVENT_RECORDED_STATUS_NOT_READY
    held.release()
    rt.synchronize_event(event)
    assert rt.query_event_status(event) == ACL_EVENT_RECORDED_STATUS_COMPLETE
    np.testing.assert_array_equal(acl_res.download(dev, src.nbytes), src)  # the copy before the record ran


def test_a_new_record_replaces_the_old_one(acl_res, event):
    stream = acl_res.stream()
    rt.record_event(event, stream)
    rt.synchronize_event(event)
    assert rt.query_event_status(event) == ACL_EVENT_RECORDED_STATUS_COMPLETE
    held = HeldStream(stream)
    rt.record_event(event, stream)
    assert rt.query_event_status(event) == ACL_EVENT_RECORDED_STATUS_NOT_READY
    held.release()
    rt.synchronize_event(event)
    assert rt.query_event_status(event) == ACL_EVENT_RECORDED_STATUS_COMPLETE


def test_default_stream_record(acl_device, event):
    rt.record_event(event, None)
    rt.synchronize_event(event)
    assert rt.query_event_status(event) == ACL_EVENT_RECORDED_STATUS_COMPLETE


def test_destroy_with_a_record_still_queued(acl_res):
    stream = acl_res.stream()
    held = HeldStream(stream)
    e = rt.create_event()
    rt.record_event(e, stream)
    rt.destroy_event(e)
    held.release()
    rt.synchronize_stream(stream)
    assert code_of(rt.query_event_status, e) == 107017


def test_codes(acl_res):
    assert code_of(rt.destroy_event, 0) == 100000
    assert code_of(rt.record_event, 0, None) == 100000
    assert code_of(rt.query_event_status, 0) == 100000
    assert code_of(rt.synchronize_event, 0) == 100000
    assert code_of(rt.create_event_with_flag, 0) == 107000
    e = rt.create_event_with_flag(ACL_EVENT_SYNC | ACL_EVENT_TIME_LINE)
    assert code_of(rt.record_event, e, 0x7fff0000) == 107017  # not a stream handle
    rt.destroy_event(e)
    for call, args in ((rt.destroy_event, ()), (rt.record_event, (None,)), (rt.query_event_status, ()),
                       (rt.synchronize_event, ())):
        assert code_of(call, e, *args) == 107017, call.__name__
    assert code_of(rt.destroy_event, 0x1000 + 16 * 5) == 107017  # a stream-shaped handle is no event


ALL_COMBINABLE = ACL_EVENT_SYNC | ACL_EVENT_CAPTURE_STREAM_PROGRESS | 0x4 | ACL_EVENT_TIME_LINE


@pytest.mark.parametrize("flag,expected", [
    (0, 107000),  # no flag of RT_EVENT_FLAG_MAX (0x3F)
    (ACL_EVENT_SYNC, 0), (ACL_EVENT_CAPTURE_STREAM_PROGRESS, 0), (0x4, 0), (ACL_EVENT_TIME_LINE, 0),
    (ALL_COMBINABLE, 0),
    (ACL_EVENT_DEVICE_USE_ONLY, 0), (ACL_EVENT_EXTERNAL, 0),  # alone
    (ACL_EVENT_DEVICE_USE_ONLY | ACL_EVENT_SYNC, 107000), (ACL_EVENT_EXTERNAL | ACL_EVENT_TIME_LINE, 107000),
    (ACL_EVENT_DEVICE_USE_ONLY | ACL_EVENT_EXTERNAL, 107000),
    (ACL_EVENT_IPC, 107000), (0x40 | ACL_EVENT_SYNC, 107000), (0x80, 107000), (2**32 - 1, 107000),  # above 0x3F
])
def test_create_event_with_flag(acl_device, flag, expected):
    """ApiErrorDecorator::EventCreate: (flag & 0x3F) == 0 or flag > 0x3F is 107000; RT_EVENT_MC2
    (ACL_EVENT_DEVICE_USE_ONLY) and RT_EVENT_EXTERNAL only alone."""
    if expected:
        assert code_of(rt.create_event_with_flag, flag) == expected
    else:
        rt.destroy_event(rt.create_event_with_flag(flag))


def test_external_events_are_neither_queried_nor_synchronized(acl_res):
    """ApiErrorDecorator::EventQueryStatus / EventSynchronize: 207000 for RT_EVENT_EXTERNAL; recording it
    is allowed."""
    e = rt.create_event_with_flag(ACL_EVENT_EXTERNAL)
    try:
        rt.record_event(e, acl_res.stream())
        assert code_of(rt.query_event_status, e) == 207000
        assert code_of(rt.synchronize_event, e) == 207000
    finally:
        rt.destroy_event(e)


def test_device_use_only_events_are_not_recorded_by_the_host(acl_res):
    """ApiErrorDecorator::EventRecord: an RT_EVENT_MC2 event is 107000 ("only on the device"), after the
    event and stream handles (107017)."""
    e = rt.create_event_with_flag(ACL_EVENT_DEVICE_USE_ONLY)
    try:
        assert code_of(rt.record_event, e, acl_res.stream()) == 107000
        assert code_of(rt.record_event, e, None) == 107000
        assert code_of(rt.record_event, e, 0x7fff0000) == 107017
        assert rt.query_event_status(e) == ACL_EVENT_RECORDED_STATUS_NOT_READY
        rt.synchronize_event(e)  # never recorded: returns at once
    finally:
        rt.destroy_event(e)


EVENT_FLAGS_BEFORE_ANY_DEVICE = CHILD_PRELUDE + r"""
print(code(rt.create_event_with_flag, 0), code(rt.create_event_with_flag, 0x40),
      code(rt.create_event_with_flag, 0x21), code(rt.create_event_with_flag, 0x1), code(rt.create_event))
rt.set_device(0)
print(code(rt.create_event_with_flag, 0x10))
"""


@pytest.mark.parametrize("soc,device_use_only", [("Ascend910B", 0), ("Ascend950", 0), ("Ascend310P", 0),
                                                  ("Ascend310B", 207000), ("Ascend910", 207000)])
def test_the_flag_is_checked_before_the_context(run_python, soc, device_use_only):
    """A fresh process has no device: a bad flag is still 107000 (not 107002). ACL_EVENT_DEVICE_USE_ONLY
    needs the chip's MC2 feature (mc2FeatureFlag 0 in CANN's as31xm1 (310B) and cloud (910) configs)."""
    result = run_python(EVENT_FLAGS_BEFORE_ANY_DEVICE, env={_runtime_env.SOC: soc})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["107000", "107000", "107000", "107002", "107002", str(device_use_only)]


def test_record_on_a_stream_of_another_device_is_107003(acl_res, event):
    rt.set_device(1)
    try:
        other = rt.create_stream()
    finally:
        rt.set_device(0)
    try:
        assert code_of(rt.record_event, event, other) == 107003
    finally:
        rt.set_device(1)
        rt.destroy_stream(other)
        rt.set_device(0)


def test_create_without_a_device_is_107002(run_python):
    # In a fresh process: the first device set becomes the process default for every thread.
    result = run_python(
        "from ms_memcopy import runtime as rt, AclError\n"
        "try:\n"
        "    rt.create_event()\n"
        "except AclError as e:\n"
        "    print(e.code, e.api)\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["107002", "aclrtCreateEvent"]


def test_host_wait_count(acl_res, event):
    stream = acl_res.stream()
    before = rt.host_wait_count()
    rt.synchronize_event(event)  # never recorded: returns at once, no wait
    assert rt.host_wait_count() == before
    rt.synchronize_stream(stream)
    assert rt.host_wait_count() == before + 1
    rt.record_event(event, stream)
    rt.synchronize_stream(stream)
    before = rt.host_wait_count()
    rt.synchronize_event(event)  # already complete: no wait
    assert rt.query_event_status(event) == ACL_EVENT_RECORDED_STATUS_COMPLETE
    assert rt.host_wait_count() == before
    held = HeldStream(stream)
    rt.record_event(event, stream)
    threading.Timer(0.05, held.release).start()
    rt.synchronize_event(event)
    assert rt.host_wait_count() == before + 1


def test_pageable_async_copy_counts_a_wait_and_pinned_does_not(acl_res):
    stream = acl_res.stream()
    dev = acl_res.device(256)
    pinned = acl_res.pinned(256)
    pageable = np.ones(256, np.uint8)
    rt.synchronize_stream(stream)
    before = rt.host_wait_count()
    rt.memcpy_async(dev, 256, pinned, 256, ACL_MEMCPY_HOST_TO_DEVICE, stream)
    assert rt.host_wait_count() == before
    rt.memcpy_async(dev, 256, pageable, 256, ACL_MEMCPY_HOST_TO_DEVICE, stream)  # CANN drains the stream
    assert rt.host_wait_count() == before + 1


def test_complete_stream_runs_the_queued_copies_without_counting(acl_res):
    stream = acl_res.stream()
    rt.set_stream_deferred(stream, True)
    src = np.arange(512, dtype=np.uint8)
    host = acl_res.pinned(512)
    acl_res.view(host, 512)[:] = src
    dev = acl_res.device(512)
    rt.memcpy_async(dev, 512, host, 512, ACL_MEMCPY_HOST_TO_DEVICE, stream)
    before = rt.host_wait_count()
    rt.complete_stream(stream)
    assert rt.host_wait_count() == before
    np.testing.assert_array_equal(acl_res.download(dev, 512), src)
    assert code_of(rt.complete_stream, None) == 100000
    assert code_of(rt.complete_stream, 0x7fff0000) == 107017


@pytest.mark.parametrize("wake", ["undeferred", "timed wait"])
def test_a_deferred_streams_tasks_wait_for_a_waiter(acl_res, wake):
    """aclhostSetStreamDeferred: the tasks queued run only when a thread waits for the stream (here a timed
    synchronize, which hands them to its worker) or the stream is made background again, also when the
    first of them starts the stream's worker. The host function after a copy tells when the worker ran."""
    stream = acl_res.stream()  # new: its worker starts at the first task queued
    rt.set_stream_deferred(stream, True)
    src = np.arange(256, dtype=np.uint8)
    host = acl_res.pinned(256)
    acl_res.view(host, 256)[:] = src
    dev = acl_res.device(256)
    ran = threading.Event()
    rt.memcpy_async(dev, 256, host, 256, ACL_MEMCPY_HOST_TO_DEVICE, stream)
    rt.launch_host_func(stream, ran.set)
    assert not ran.wait(0.2), "a deferred stream ran its tasks with nobody waiting"
    if wake == "undeferred":
        rt.set_stream_deferred(stream, False)
    else:
        rt.synchronize_stream_with_timeout(stream, 5000)
    assert ran.wait(10)
    rt.synchronize_stream(stream)
    np.testing.assert_array_equal(acl_res.download(dev, 256), src)


def test_live_resource_counts(acl_res):
    """aclhostGetLiveResourceCounts: the events created and not destroyed, the pinned allocations not freed."""
    import ctypes

    from ms_memcopy import _acl_lib

    before = rt.live_resource_counts()
    assert before == (before.events, before.pinned_allocations)
    events = [rt.create_event() for _ in range(3)] + [rt.create_event_with_flag(ACL_EVENT_SYNC)]
    pinned = [rt.malloc_host(64), rt.malloc_host(1 << 20)]
    dev = acl_res.device(64)  # device memory is not counted
    assert rt.live_resource_counts() == (before.events + 4, before.pinned_allocations + 2)
    rt.record_event(events[0], None)
    rt.destroy_event(events[0])  # destroyed with its record queued: no longer live
    assert rt.live_resource_counts().events == before.events + 3
    for e in events[1:]:
        rt.destroy_event(e)
    for p in pinned:
        rt.free_host(p)
    assert code_of(rt.free_host, pinned[0]) == 107000  # a failed free changes nothing
    assert rt.live_resource_counts() == before
    assert dev
    count = ctypes.c_uint64()
    call = _acl_lib.func("aclhostGetLiveResourceCounts")
    assert call(None, ctypes.byref(count)) == 100000
    assert call(ctypes.byref(count), None) == 100000
