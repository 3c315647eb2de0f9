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
import numpy as np
import pytest

import mindspore as ms
from mindspore import Parameter, nn

from ms_memcopy import HostBuffer, runtime
from ms_memcopy._framework import sync_launches
from ms_memcopy.ops import (CopyBlocks, Memcpy2D, MemcpyBatch, MemcpyWithCondition, MemcpyWithDesc,
                            SwapBlocks)

CALLS = 3
RING = 8  # the largest ring of event-guarded slots in the kernels (ResultStaging::kSlots)


def i64(*values):
    return ms.Tensor(np.array(values, np.int64))


class Call(nn.Cell):
    """op(*consts, *args)."""

    def __init__(self, op, *consts):
        super().__init__()
        self.op = op
        self.consts = consts

    def construct(self, *args):
        return self.op(*self.consts, *args)


class CallOn1(nn.Cell):
    """op(param, *consts, *args): writes in place into a Parameter."""

    def __init__(self, op, param, *consts):
        super().__init__()
        self.op = op
        self.p0 = param
        self.consts = consts

    def construct(self, *args):
        return self.op(self.p0, *self.consts, *args)


class CallOn2(nn.Cell):
    """op(param0, param1, *args): block ops over two caches."""

    def __init__(self, op, param0, param1):
        super().__init__()
        self.op = op
        self.p0 = param0
        self.p1 = param1

    def construct(self, *args):
        return self.op(self.p0, self.p1, *args)


def x_tensor():
    return ms.Tensor(np.arange(30, dtype=np.float32).reshape(5, 6))


def cases(buf):
    """name -> (cell, inputs) for every primitive form."""
    x = x_tensor()
    cache = lambda: Parameter(ms.Tensor(np.arange(4 * 8, dtype=np.float32).reshape(4, 8)))
    d2h_batch = MemcpyBatch("d2h", buf, num_tensors=2)
    h2d_batch = MemcpyBatch("h2d", buf, shapes=[(6,), (2, 3)], dtypes=[ms.float32, ms.int16])
    extract = Memcpy2D("extract", height=2, width=3)
    insert = Memcpy2D("insert")
    write = Memcpy2D("write")
    d2h_2d = Memcpy2D("d2h", host_buffer=buf, pitch=32)
    h2d_2d = Memcpy2D("h2d", host_buffer=buf, pitch=32, shape=(5, 6), dtype=ms.float32)
    desc = MemcpyWithDesc()
    window = MemcpyWithDesc(count=4)
    cond_d2d = MemcpyWithCondition("d2d")
    cond_d2h = MemcpyWithCondition("d2h", host_buffer=buf)
    cond_h2d = MemcpyWithCondition("h2d", host_buffer=buf, shape=(5, 6), dtype=ms.float32)
    swap_out = SwapBlocks("d2h", buf, num_caches=2)
    swap_in = SwapBlocks("h2d", buf, num_caches=2)
    fork = CopyBlocks(num_caches=2)
    b = ms.Tensor(np.ones((2, 3), np.int16))
    mapping = ms.Tensor(np.array([[0, 1], [2, 3]], np.int64))
    return {
        "MemcpyBatch(d2h)": (Call(d2h_batch, x, b), (i64(0, 256),)),
        "MemcpyBatch(h2d)": (Call(h2d_batch), (i64(0, 256),)),
        "Memcpy2D(extract)": (Call(extract, x), (i64(1), i64(2))),
        "Memcpy2D(insert)": (Call(insert, x, b.astype(ms.float32)), (i64(3), i64(0))),
        "Memcpy2D(write)": (CallOn1(write, Parameter(x_tensor()), x[:1]), (i64(2), i64(0))),
        "Memcpy2D(d2h)": (Call(d2h_2d, x), (i64(128),)),
        "Memcpy2D(h2d)": (Call(h2d_2d), (i64(128),)),
        "MemcpyWithDesc": (Call(desc, x), ()),
        "MemcpyWithDesc(window)": (Call(window, x), (i64(7),)),
        "MemcpyWithCondition(d2d)": (Call(cond_d2d, x), ()),
        "MemcpyWithCondition(d2h)": (Call(cond_d2h, x), (i64(1024),)),
        "MemcpyWithCondition(h2d)": (Call(cond_h2d), (i64(1024),)),
        "SwapBlocks(d2h)": (CallOn2(swap_out, cache(), cache()), (mapping,)),
        "SwapBlocks(h2d)": (CallOn2(swap_in, cache(), cache()), (mapping,)),
        "CopyBlocks": (CallOn2(fork, cache(), cache()), (mapping,)),
    }


def per_call(cell, inputs):
    """(host waits per call, growth of the live resource counts) over CALLS calls, after a ring of calls
    that compiles and warms the kernel (each slot of a ring gets its event when it is first used)."""
    for _ in range(RING):
        cell(*inputs)
    sync_launches()
    waits, live = runtime.host_wait_count(), runtime.live_resource_counts()
    for _ in range(CALLS):
        cell(*inputs)
    sync_launches()
    growth = tuple(after - before for before, after in zip(live, runtime.live_resource_counts()))
    return (runtime.host_wait_count() - waits) / CALLS, growth


def form_names():
    with HostBuffer(4096, pinned=True) as buf:
        return list(cases(buf))


@pytest.mark.parametrize("form", form_names())
def test_no_wait_and_nothing_left_per_call_with_a_pinned_buffer(ms_mode, form):
    with HostBuffer(8192, pinned=True) as buf:
        cell, inputs = cases(buf)[form]
        assert per_call(cell, inputs) == (0, (0, 0))


@pytest.mark.parametrize("form", ["MemcpyBatch(d2h)", "Memcpy2D(h2d)", "MemcpyWithCondition(d2h)", "SwapBlocks(d2h)"])
def test_a_pageable_buffer_stalls_and_is_counted(ms_mode, form):
    with HostBuffer(8192, pinned=False) as buf:
        cell, inputs = cases(buf)[form]
        assert per_call(cell, inputs)[0] >= 1


def test_reading_a_buffer_after_its_launches_waits_for_nothing(ms_mode):
    # The buffer's copies are fenced by events: once they have run, reading waits for no stream.
    with HostBuffer(8192, pinned=True) as buf:
        cell, inputs = cases(buf)["MemcpyBatch(d2h)"]
        cell(*inputs)
        sync_launches()
        before = runtime.host_wait_count()
        head = buf.numpy(np.float32, (30,))
        assert runtime.host_wait_count() == before
        np.testing.assert_array_equal(head, np.arange(30, dtype=np.float32))
