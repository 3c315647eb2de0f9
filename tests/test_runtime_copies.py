"""Data movement of every copy call against numpy references: round trips, 2D gaps, batches with several
attribute groups, descriptor copies, partial batch effects, stream order, threads, pageable completion."""
import ctypes
import os
import threading

import numpy as np
import pytest

import ms_memcopy.acl as acl
from ms_memcopy import AclError, _runtime_env
from ms_memcopy import runtime as rt

from _acl_support import (ATTR_D2H, ATTR_H2D, D2D, D2H, DEFAULT, H2BUF2D, H2D, H2H, INNER_D2D, code, on_a_new_thread,
                          rand_bytes)

FILL = 0xEE  # what destinations hold before a copy; bytes a copy must not touch keep it


def hold(stream):
    """Holds the stream with a host function until the returned gate is set (set it in a finally)."""
    gate = threading.Event()
    rt.launch_host_func(stream, lambda: gate.wait(30))
    return gate


class HostBuf:
    """Host memory of one kind with a uint8 numpy view: pinned (aclrtMallocHost) or pageable (numpy)."""

    def __init__(self, acl_res, kind, nbytes, fill=None):
        if kind == "pinned":
            self.ptr = acl_res.pinned(nbytes)
            self.view = acl_res.view(self.ptr, nbytes)
        else:
            self.view = np.empty(nbytes, np.uint8)
            self.ptr = self.view.ctypes.data
        if fill is not None:
            self.view[:] = fill


COPY_APIS = ["memcpy", "memcpy_async", "memcpy_async_with_condition"]


@pytest.fixture(params=COPY_APIS)
def copy_fn(request, acl_res):
    stream = acl_res.stream()
    fn = getattr(rt, request.param)
    if request.param == "memcpy":
        return fn, lambda: None
    return (lambda *a: fn(*a, stream=stream)), (lambda: rt.synchronize_stream(stream))


# --- 1D copies ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("host", ["pinned", "pageable"])
def test_copy_round_trip_h2d_d2d_d2h(acl_res, copy_fn, host):
    run, sync = copy_fn
    data = np.random.default_rng(1).standard_normal(1031).astype(np.float32)
    n = data.nbytes
    src = HostBuf(acl_res, host, n)
    src.view[:] = data.view(np.uint8)
    out = HostBuf(acl_res, host, n, fill=0)
    a, b = acl_res.device(n), acl_res.device(n)
    run(a, n, src.ptr, n, H2D)
    run(b, n, a, n, D2D)
    run(out.ptr, n, b, n, D2H)
    sync()
    np.testing.assert_array_equal(out.view.view(np.float32), data)


@pytest.mark.parametrize("src_kind,dst_kind", [("pinned", "pinned"), ("pinned", "pageable"),
                                               ("pageable", "pinned"), ("pageable", "pageable")])
def test_memcpy_host_to_host(acl_res, src_kind, dst_kind):
    data = rand_bytes(777, 2)
    src = HostBuf(acl_res, src_kind, 777)
    src.view[:] = data
    dst = HostBuf(acl_res, dst_kind, 800, fill=FILL)
    rt.memcpy(dst.ptr, 800, src.ptr, 777, H2H)
    np.testing.assert_array_equal(dst.view[:777], data)
    assert (dst.view[777:] == FILL).all()


@pytest.mark.parametrize("host", ["pinned", "pageable"])
def test_default_kind_infers_each_direction(acl_res, copy_fn, host):
    run, sync = copy_fn
    data = rand_bytes(300, 3)
    src = HostBuf(acl_res, host, 300)
    src.view[:] = data
    out = HostBuf(acl_res, host, 300, fill=0)
    a, b = acl_res.device(300), acl_res.device(300)
    for dst, s in ((a, src.ptr), (b, a), (out.ptr, b)):
        run(dst, 300, s, 300, DEFAULT)
    sync()
    np.testing.assert_array_equal(out.view, data)


def test_copy_into_the_middle_leaves_the_rest(acl_res, copy_fn):
    run, sync = copy_fn
    dev = acl_res.upload(np.full(1024, FILL, np.uint8))
    data = rand_bytes(100, 4)
    run(dev + 300, 100, data, 100, H2D)
    sync()
    ref = np.full(1024, FILL, np.uint8)
    ref[300:400] = data
    np.testing.assert_array_equal(acl_res.download(dev, 1024), ref)


def pinned_in_out(acl_res, n, seed):
    """n random bytes, a pinned buffer holding them and a zeroed pinned buffer of n bytes: (data, in, out)."""
    data = rand_bytes(n, seed)
    src, out = HostBuf(acl_res, "pinned", n), HostBuf(acl_res, "pinned", n, fill=0)
    src.view[:] = data
    return data, src, out


def held_copy_ends(acl_res, seed):
    """A stream held by hold() (set the gate), 4096 random bytes in pinned memory and a zeroed device buffer:
    (stream, gate, data, src, dev)."""
    stream = acl_res.stream()
    data = rand_bytes(4096, seed)
    src = HostBuf(acl_res, "pinned", 4096)
    src.view[:] = data
    dev = acl_res.upload(np.zeros(4096, np.uint8))
    return stream, hold(stream), data, src, dev


def test_host_to_buf_to_device_stages_the_host_data(acl_res):
    """Kind 5: the host data is staged when the call returns, so the host buffer may change (or be
    freed) before the copy runs. The stream is held so that the copy runs after the change."""
    stream, gate, data, src, dev = held_copy_ends(acl_res, 5)
    try:
        rt.memcpy_async(dev, 4096, src.ptr, 4096, H2BUF2D, stream)
        src.view[:] = 0
    finally:
        gate.set()
    rt.synchronize_stream(stream)
    np.testing.assert_array_equal(acl_res.download(dev, 4096), data)


def test_pinned_copy_is_enqueued_not_run(acl_res):
    """A pinned H2D on a held stream has not run when the call returns; it runs once the stream goes on."""
    stream, gate, data, src, dev = held_copy_ends(acl_res, 6)
    try:
        rt.memcpy_async(dev, 4096, src.ptr, 4096, H2D, stream)
        if os.environ.get(_runtime_env.STRICT_ORDER) == "1":  # reading under the queued copy is that race
            assert code(acl_res.download, dev, 4096) == 107000
        else:
            assert (acl_res.download(dev, 4096) == 0).all()
    finally:
        gate.set()
    rt.synchronize_stream(stream)
    np.testing.assert_array_equal(acl_res.download(dev, 4096), data)


# --- 2D copies -----------------------------------------------------------------------------------------

def ref_2d(dst_before, src, dpitch, spitch, width, height):
    out = dst_before.copy()
    for r in range(height):
        out[r * dpitch:r * dpitch + width] = src[r * spitch:r * spitch + width]
    return out


CASES_2D = [  # (dpitch, spitch, width, height)
    (32, 40, 24, 7),
    (24, 24, 24, 5),  # no gaps
    (100, 17, 17, 3),
    (16, 64, 1, 9),
]


def _cases_2d():
    """aclrtMemcpy2d (sync) has no D2D (207000: test_runtime_conformance); D2D involves no host memory."""
    for api in ("memcpy2d", "memcpy2d_async"):
        for direction in ("h2d", "d2h", "d2d", "default_h2d", "default_d2h"):
            if api == "memcpy2d" and direction == "d2d":
                continue
            for host in (("pinned",) if direction == "d2d" else ("pinned", "pageable")):
                for shape in CASES_2D:
                    yield (api, direction, host, *shape)


@pytest.mark.parametrize("api,direction,host,dpitch,spitch,width,height", list(_cases_2d()))
def test_2d_round_trip_leaves_gaps(acl_res, api, direction, host, dpitch, spitch, width, height):
    stream = acl_res.stream()
    src_bytes, dst_bytes = spitch * height + 5, dpitch * height + 11  # tails past the last row
    data = rand_bytes(src_bytes, dpitch * 1000 + spitch)
    dst_before = np.full(dst_bytes, FILL, np.uint8)
    dst_before[::7] = 0x11
    kind = {"h2d": H2D, "d2h": D2H, "d2d": D2D, "default_h2d": DEFAULT, "default_d2h": DEFAULT}[direction]
    if direction in ("h2d", "default_h2d"):
        src_buf = HostBuf(acl_res, host, src_bytes)
        src_buf.view[:] = data
        src, dst = src_buf.ptr, acl_res.upload(dst_before)
        read = lambda: acl_res.download(dst, dst_bytes)
    elif direction in ("d2h", "default_d2h"):
        dst_buf = HostBuf(acl_res, host, dst_bytes)
        dst_buf.view[:] = dst_before
        src, dst = acl_res.upload(data), dst_buf.ptr
        read = lambda: dst_buf.view.copy()
    else:
        src, dst = acl_res.upload(data), acl_res.upload(dst_before)
        read = lambda: acl_res.download(dst, dst_bytes)
    if api == "memcpy2d":
        rt.memcpy2d(dst, dpitch, src, spitch, width, height, kind)
    else:
        rt.memcpy2d_async(dst, dpitch, src, spitch, width, height, kind, stream)
        rt.synchronize_stream(stream)
    np.testing.assert_array_equal(read(), ref_2d(dst_before, data, dpitch, spitch, width, height))


# --- batch copies --------------------------------------------------------------------------------------

BATCH_APIS = ["memcpy_batch_async", "memcpy_batch", "memcpy_batch_async_v2", "memcpy_batch_v2"]


def _run_batch(api, stream, **kw):
    fn = getattr(rt, api)
    if "async" in api:
        fn(**kw, stream=stream)
        rt.synchronize_stream(stream)
    else:
        fn(**kw)


@pytest.mark.parametrize("api", BATCH_APIS)
def test_batch_several_attribute_groups_mixed_pinned_pageable(acl_res, api):
    """Six copies in four attribute groups: H2D pinned, H2D pageable, D2H pinned/pageable, H2D pageable."""
    stream = acl_res.stream()
    plan = [("h2d", "pinned", 100), ("h2d", "pinned", 257), ("h2d", "pageable", 64),
            ("d2h", "pinned", 333), ("d2h", "pageable", 1), ("h2d", "pageable", 4096)]
    dsts, srcs, sizes, dest_maxs, checks = [], [], [], [], []
    for i, (direction, host, n) in enumerate(plan):
        data = rand_bytes(n, 10 + i)
        if direction == "h2d":
            src = HostBuf(acl_res, host, n)
            src.view[:] = data
            dst = acl_res.upload(np.full(n + 16, FILL, np.uint8))
            checks.append((lambda d=dst, m=n: acl_res.download(d, m + 16), data, src))
            dsts.append(dst)
            srcs.append(src.ptr)
        else:
            dst = HostBuf(acl_res, host, n + 16, fill=FILL)
            checks.append((lambda b=dst: b.view.copy(), data, dst))
            dsts.append(dst.ptr)
            srcs.append(acl_res.upload(data))
        sizes.append(n)
        dest_maxs.append(n + 16)
    _run_batch(api, stream, dsts=dsts, dest_maxs=dest_maxs, srcs=srcs, sizes=sizes,
               attrs=[ATTR_H2D, ATTR_H2D, ATTR_D2H, ATTR_H2D], attrs_indexes=[0, 2, 3, 5])
    for read, data, _keepalive in checks:
        got = read()
        np.testing.assert_array_equal(got[:data.size], data)
        assert (got[data.size:] == FILL).all()


def test_batch_items_may_share_destination_regions_of_one_allocation(acl_res):
    """Many copies into disjoint slices of one device allocation (interior pointers)."""
    stream = acl_res.stream()
    data = rand_bytes(64 * 50, 20)
    dev = acl_res.upload(np.full(64 * 50, FILL, np.uint8))
    order = np.random.default_rng(21).permutation(50)
    rt.memcpy_batch_async([dev + 64 * int(i) for i in order], [64] * 50,
                          [data[64 * int(i):64 * int(i) + 64] for i in order], [64] * 50,
                          [ATTR_H2D], [0], stream=stream)
    rt.synchronize_stream(stream)
    np.testing.assert_array_equal(acl_res.download(dev, 64 * 50), data)


@pytest.mark.parametrize("api,copied_before", [("memcpy_batch_async", True), ("memcpy_batch", False)])
def test_batch_failure_partial_effect(acl_res, api, copied_before):
    """Item 3 fails (NULL source). The async batch has already run items 0-2 (pinned enqueued, pageable
    done) and runs none after 3; the sync batch validates every item first and copies nothing."""
    stream = acl_res.stream()
    hosts = ["pinned", "pageable", "pinned", "pinned", "pageable", "pinned"]
    datas = [rand_bytes(128, 30 + i) for i in range(6)]
    srcs, keep = [], []
    for host, data in zip(hosts, datas):
        buf = HostBuf(acl_res, host, 128)
        buf.view[:] = data
        srcs.append(buf.ptr)
        keep.append(buf)
    srcs[3] = 0
    dsts = [acl_res.upload(np.full(128, FILL, np.uint8)) for _ in range(6)]
    with pytest.raises(AclError) as info:
        _run_batch(api, stream, dsts=dsts, dest_maxs=[128] * 6, srcs=srcs, sizes=[128] * 6,
                   attrs=[ATTR_H2D], attrs_indexes=[0])
    assert (info.value.code, info.value.fail_index) == (107000, 3)
    rt.synchronize_stream(stream)
    for i, (dst, data) in enumerate(zip(dsts, datas)):
        got = acl_res.download(dst, 128)
        if i < 3 and copied_before:
            np.testing.assert_array_equal(got, data, err_msg=f"item {i} before the failing item")
        else:
            assert (got == FILL).all(), f"item {i} was written"


# --- descriptor copies -----------------------------------------------------------------------------------

def test_descriptor_copy_round_trip_and_reuse(acl_res):
    stream = acl_res.stream()
    desc = acl_res.device(rt.get_memcpy_desc_size(INNER_D2D))
    data = rand_bytes(1000, 40)
    src = acl_res.upload(data)
    dst = acl_res.upload(np.full(1200, FILL, np.uint8))
    rt.set_memcpy_desc(desc, INNER_D2D, src + 100, dst + 50, 300)
    rt.memcpy_async_with_desc(desc, INNER_D2D, stream)
    rt.synchronize_stream(stream)
    ref = np.full(1200, FILL, np.uint8)
    ref[50:350] = data[100:400]
    np.testing.assert_array_equal(acl_res.download(dst, 1200), ref)
    # the same descriptor, set again for another window
    rt.set_memcpy_desc(desc, INNER_D2D, src, dst + 600, 600)
    rt.memcpy_async_with_desc(desc, INNER_D2D, stream)
    rt.synchronize_stream(stream)
    ref[600:1200] = data[:600]
    np.testing.assert_array_equal(acl_res.download(dst, 1200), ref)


def test_descriptor_copy_reads_source_in_stream_order(acl_res):
    """H2D into src, the descriptor copy src -> dst and D2H of dst, all queued before one sync."""
    stream = acl_res.stream()
    n = 1 << 20
    data, pinned_in, pinned_out = pinned_in_out(acl_res, n, 41)
    src, dst = acl_res.device(n), acl_res.device(n)
    desc = acl_res.device(rt.get_memcpy_desc_size(INNER_D2D))
    rt.set_memcpy_desc(desc, INNER_D2D, src, dst, n)
    rt.memcpy_async(src, n, pinned_in.ptr, n, H2D, stream)
    rt.memcpy_async_with_desc(desc, INNER_D2D, stream)
    rt.memcpy_async(pinned_out.ptr, n, dst, n, D2H, stream)
    rt.synchronize_stream(stream)
    np.testing.assert_array_equal(pinned_out.view, data)


# --- stream order, threads, pageable completion ------------------------------------------------------------

def test_dependent_copies_keep_stream_order(acl_res):
    """pinned -> A -> B -> C -> D -> pinned, all queued behind a held stream, one sync at the end."""
    stream = acl_res.stream()
    n = 8 << 20
    data, src, out = pinned_in_out(acl_res, n, 50)
    a, b, c, d = (acl_res.device(n) for _ in range(4))
    gate = hold(stream)
    try:
        rt.memcpy_async(a, n, src.ptr, n, H2D, stream)
        for dst, s in ((b, a), (c, b), (d, c)):
            rt.memcpy_async(dst, n, s, n, D2D, stream)
        rt.memcpy_async(out.ptr, n, d, n, D2H, stream)
    finally:
        gate.set()
    rt.synchronize_stream(stream)
    np.testing.assert_array_equal(out.view, data)


def test_dependent_copies_of_different_calls_keep_stream_order(acl_res):
    """A -> B by aclrtMemcpyAsync, B -> C by aclrtMemcpy2dAsync, C -> D by a descriptor copy,
    D -> pinned by aclrtMemcpyBatchAsync: one stream, one sync."""
    stream = acl_res.stream()
    width, height = 4096, 1024
    n = width * height
    data, src, out = pinned_in_out(acl_res, n, 51)
    a, b, c, d = (acl_res.device(n) for _ in range(4))
    desc = acl_res.device(rt.get_memcpy_desc_size(INNER_D2D))
    rt.set_memcpy_desc(desc, INNER_D2D, c, d, n)
    gate = hold(stream)
    try:
        rt.memcpy_async(a, n, src.ptr, n, H2D, stream)
        rt.memcpy_async(b, n, a, n, D2D, stream)
        rt.memcpy2d_async(c, width, b, width, width, height, D2D, stream)
        rt.memcpy_async_with_desc(desc, INNER_D2D, stream)
        rt.memcpy_batch_async([out.ptr], [n], [d], [n], [ATTR_D2H], [0], stream=stream)
    finally:
        gate.set()
    rt.synchronize_stream(stream)
    np.testing.assert_array_equal(out.view, data)


def test_four_threads_with_own_streams(acl_device):
    """Each thread (never calling set_device: device 0 is the process default) copies random data
    pinned -> device -> device -> pinned on its own stream, ten rounds, and checks it."""
    errors = []
    start = threading.Barrier(4)

    def worker(index):
        rng = np.random.default_rng(60 + index)
        stream = rt.create_stream()
        allocs = []
        try:
            start.wait()
            for round_ in range(10):
                n = int(rng.integers(1, 1 << 18))
                data = rng.integers(0, 256, n, dtype=np.uint8)
                p_in, p_out, a, b = rt.malloc_host(n), rt.malloc_host(n), rt.malloc(n), rt.malloc(n)
                allocs += [(rt.free_host, p_in), (rt.free_host, p_out), (rt.free, a), (rt.free, b)]
                ctypes.memmove(p_in, data.ctypes.data, n)
                rt.memcpy_async(a, n, p_in, n, H2D, stream)
                rt.memcpy_async(b, n, a, n, D2D, stream)
                rt.memcpy_async(p_out, n, b, n, D2H, stream)
                rt.synchronize_stream(stream)
                got = np.frombuffer(acl.util.ptr_to_bytes(p_out, n), np.uint8)
                if not (got == data).all():
                    errors.append(f"thread {index} round {round_}: data mismatch")
        except Exception as e:  # reported by the main thread
            errors.append(f"thread {index}: {e!r}")
        finally:
            for free, ptr in allocs:
                free(ptr)
            rt.destroy_stream(stream)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert errors == []


@pytest.mark.parametrize("api", ["memcpy_async", "memcpy_async_with_condition", "memcpy2d_async",
                                 "memcpy_batch_async"])
def test_pageable_copy_drains_the_stream_and_completes_before_return(acl_res, api):
    """The stream is held (gate opened by a timer 0.2 s later) with a pinned H2D into dev queued behind
    it. A D2H from dev into pageable memory returns only after the stream drained and the copy ran:
    the data is there with no sync. Then an H2D from pageable memory: changing the source right after
    the call returns does not change what was copied."""
    stream = acl_res.stream()
    n = 1 << 20
    data = rand_bytes(n, 70)
    pinned = HostBuf(acl_res, "pinned", n)
    pinned.view[:] = data
    dev = acl_res.upload(np.zeros(n, np.uint8))
    out = np.zeros(n, np.uint8)

    def copy(dst, src, kind, attr):
        if api == "memcpy2d_async":
            rt.memcpy2d_async(dst, 1024, src, 1024, 1024, n // 1024, kind, stream)
        elif api == "memcpy_batch_async":
            rt.memcpy_batch_async([dst], [n], [src], [n], [attr], [0], stream=stream)
        else:
            getattr(rt, api)(dst, n, src, n, kind, stream)

    gate = hold(stream)
    timer = threading.Timer(0.2, gate.set)
    try:
        rt.memcpy_async(dev, n, pinned.ptr, n, H2D, stream)
        timer.start()
        copy(out, dev, D2H, ATTR_D2H)
        assert gate.is_set(), "the pageable copy returned before the stream drained"
        np.testing.assert_array_equal(out, data)  # no synchronize_stream before this check
    finally:
        timer.cancel()
        gate.set()

    host = rand_bytes(n, 71)
    expected = host.copy()
    dev2 = acl_res.upload(np.zeros(n, np.uint8))
    copy(dev2, host, H2D, ATTR_H2D)
    host[:] = 0
    rt.synchronize_stream(stream)
    np.testing.assert_array_equal(acl_res.download(dev2, n), expected)


def test_recent_error_message_is_per_thread_and_kept(acl_device):
    assert acl.rt.free(0) == 100000  # pyACL layer: returns the code, leaves the message unread
    seen = {}

    def other():
        seen["other"] = acl.get_recent_err_msg()
        seen["other_fail"] = acl.rt.malloc(0, 0)[1]
        seen["other_msg"] = acl.get_recent_err_msg()

    on_a_new_thread(other)
    assert seen["other"] is None, "thread B saw thread A's error"
    assert seen["other_fail"] == 100000 and isinstance(seen["other_msg"], str) and seen["other_msg"]
    first = acl.get_recent_err_msg()
    assert isinstance(first, str) and first.startswith("aclrtFree"), "thread B's failure reached thread A's text"
    assert acl.get_recent_err_msg() == first, "reading the message does not clear it"
