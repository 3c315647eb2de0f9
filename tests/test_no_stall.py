"""No primitive launch waits for its stream.

The host runtime counts every time a host thread waits for queued device work
(ms_memcopy.runtime.host_wait_count: stream, device and event synchronizations, and the stream drain
CANN makes for an asynchronous copy with a pageable host endpoint). Every primitive form, on both
routes and in both modes, with a pinned HostBuffer, must add nothing to it per call: results are
staged from pinned slots guarded by events, descriptors sit in an event-guarded ring, and offsets
reach the kernel as values. The CPU target's own end of a launch (running the queued copies before a
CPU kernel returns, aclhostCompleteStream) is not a wait for a device and is not counted; on an NPU
that work runs after the launch returns.

A pageable HostBuffer makes CANN drain the stream on each copy: the same calls then count waits,
which shows the count sees a stall when there is one.

Nor does a call leave anything behind: the live events and pinned host allocations
(ms_memcopy.runtime.live_resource_counts) stay the same from call to call once a ring of calls has
given every event-guarded slot its event.
"""
import pytest

from ms_memcopy import HostBuffer, op_defs, runtime, samples
from ms_memcopy._framework import sync_launches
from ms_memcopy.ops import wait_transfers

from _ops_support import FnCell

CALLS = 3
RING = 8  # the largest ring of event-guarded slots in the kernels (ResultStaging::kSlots)


def cases(buf):
    """label -> (cell, inputs, sample): the sample call (ms_memcopy/samples.py) of every op of configs/ops."""
    found = {}
    for name in op_defs.all_op_defs():
        sample = samples.sample(name, buf)
        found[sample.label] = (FnCell(sample.op), sample.inputs, sample)
    return found


def per_call(cell, inputs):
    """(host waits per call, growth of the live resource counts) over CALLS calls, after a ring of calls
    that compiles and warms the kernel (each slot of a ring gets its event when it is first used)."""
    for _ in range(RING):
        cell(*inputs)
    sync_launches()
    # the asynchronous forms' copies run on transfer streams of their own: let the warm-up's finish, so
    # that the counted calls (fewer than a transfer ring's slots) find their slots free however slow
    # this machine is (a busy slot is a wait of the ring's, which the docs describe)
    wait_transfers()
    waits, live = runtime.host_wait_count(), runtime.live_resource_counts()
    for _ in range(CALLS):
        cell(*inputs)
    sync_launches()
    growth = tuple(after - before for before, after in zip(live, runtime.live_resource_counts()))
    return (runtime.host_wait_count() - waits) / CALLS, growth


def form_names():
    with HostBuffer(samples.HOST_BUFFER_BYTES, pinned=True) as buf:
        return list(cases(buf))


@pytest.mark.parametrize("form", form_names())
def test_no_wait_and_nothing_left_per_call_with_a_pinned_buffer(ms_mode, form):
    with HostBuffer(8192, pinned=True) as buf:
        cell, inputs, _ = cases(buf)[form]
        assert per_call(cell, inputs) == (0, (0, 0))


@pytest.mark.parametrize("form", ["MemcpyBatch(d2h)", "Memcpy2D(h2d)", "MemcpyWithCondition(d2h)", "SwapBlocks(d2h)"])
def test_a_pageable_buffer_stalls_and_is_counted(ms_mode, form):
    with HostBuffer(8192, pinned=False) as buf:
        cell, inputs, _ = cases(buf)[form]
        assert per_call(cell, inputs)[0] >= 1


def test_reading_a_buffer_after_its_launches_waits_for_nothing(ms_mode):
    # The buffer's copies are fenced by events: once they have run, reading waits for no stream.
    with HostBuffer(8192, pinned=True) as buf:
        cell, inputs, sample = cases(buf)["MemcpyBatch(d2h)"]
        outputs = cell(*inputs)
        sync_launches()
        before = runtime.host_wait_count()
        sample.check(outputs)  # reads the bytes written from the HostBuffer
        assert runtime.host_wait_count() == before
