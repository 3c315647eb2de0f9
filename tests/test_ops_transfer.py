"""The asynchronous forms (SwapBlocksAsync, CopyBlocksAsync) and WaitTransfer against numpy, in
GRAPH_MODE (a Cell holding Parameters, jit_level O0) and PYNATIVE_MODE: the copies run on a transfer
stream of their lane (a lane held busy by a host function keeps them queued while the launch returns,
and the other lane still runs), a destination read after WaitTransfer sees the new data, a mistake
raises the synchronous op's error text with nothing written, and the events and streams stay flat
over many graph steps."""
import gc
import re
import threading
import time

import numpy as np
import pytest

import mindspore as ms
from mindspore import nn, ops

from ms_memcopy import HostBuffer
from ms_memcopy import _kernels_lib
from ms_memcopy import _paths
from ms_memcopy import runtime as rt
from ms_memcopy.acl_constants import ACL_MEM_LOCATION_TYPE_DEVICE, ACL_MEM_LOCATION_TYPE_UNREGISTERED
from ms_memcopy._framework import sync_launches
from ms_memcopy.ops import (CopyBlocks, CopyBlocksAsync, Memcpy2D, Memcpy2DAsync, MemcpyBatch, MemcpyBatchAsync,
                            SwapBlocks, SwapBlocksAsync, WaitTransfer, transfer)
from ms_memcopy.ops import transfer_stream_count, wait_transfers

from _ops_support import InPlace, int64


def rss_bytes():
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * 4096


MODES = {"graph": ms.GRAPH_MODE, "pynative": ms.PYNATIVE_MODE}
BLOCK = (2, 4)  # float32: 32 bytes a block
BLOCK_BYTES = 32


def caches(offset=0):
    return [np.arange(4 * 8, dtype=np.float32).reshape(4, *BLOCK) + 100 * l + offset for l in range(2)]


def parameters(values, prefix):
    return [ms.Parameter(ms.Tensor(v), name=f"{prefix}{l}") for l, v in enumerate(values)]


class SwapOutIn(nn.Cell):
    """A step: swap blocks of (k, v) out, wait, swap host blocks into (k2, v2), wait, read k2 and v2."""

    def __init__(self, buf, src, dst):
        super().__init__()
        self.src, self.dst = ms.ParameterTuple(src), ms.ParameterTuple(dst)
        self.swap_out = SwapBlocksAsync("d2h", buf, num_caches=2)
        self.swap_in = SwapBlocksAsync("h2d", buf, num_caches=2)
        self.wait_out = WaitTransfer(num_tensors=2, lane="d2h")
        self.wait_in = WaitTransfer(num_tensors=2)

    def construct(self, out_mapping, in_mapping):
        token = self.swap_out(self.src[0], self.src[1], out_mapping)
        moved_out = self.wait_out(self.src[0], self.src[1], token)
        token = self.swap_in(self.dst[0], self.dst[1], in_mapping)
        moved_in = self.wait_in(self.dst[0], self.dst[1], token)
        # the reads take the wait's output (ops.depend), which orders them after it
        return moved_out, moved_in, ops.depend(self.dst[0], moved_in) + 0, ops.depend(self.dst[1], moved_in) + 0


def run_step(mode, step, out_mapping, in_mapping):
    if mode == "graph":
        return step(ms.Tensor(out_mapping), ms.Tensor(in_mapping))
    return step.construct(ms.Tensor(out_mapping), ms.Tensor(in_mapping))


@pytest.fixture(params=sorted(MODES))
def mode(request):
    previous = ms.get_context("mode")
    ms.set_context(mode=MODES[request.param], jit_config={"jit_level": "O0"})
    yield request.param
    ms.set_context(mode=previous)


def test_swap_out_then_in_against_numpy(mode):
    src, dst = caches(), caches(1000)
    buf = HostBuffer(2 * 4 * BLOCK_BYTES)  # 2 caches of 4 host blocks
    step = SwapOutIn(buf, parameters(src, f"src_{mode}"), parameters(dst, f"dst_{mode}"))
    out_mapping = np.array([[1, 0], [3, 2]], np.int64)  # device block -> host block
    in_mapping = np.array([[2, 0], [0, 3]], np.int64)  # host block -> device block
    moved_out, moved_in, k2, v2 = run_step(mode, step, out_mapping, in_mapping)
    expected = [d.copy() for d in dst]
    for l in range(2):
        expected[l][0], expected[l][3] = src[l][3], src[l][1]
    np.testing.assert_array_equal(k2.asnumpy(), expected[0])
    np.testing.assert_array_equal(v2.asnumpy(), expected[1])
    assert moved_out.asnumpy().tolist() == moved_in.asnumpy().tolist() == [2 * 2 * BLOCK_BYTES]
    host = buf.numpy(np.float32, (2, 4, *BLOCK))
    for l in range(2):
        np.testing.assert_array_equal(host[l, [0, 2]], src[l][[1, 3]])
    buf.close()


class CopyThenRead(nn.Cell):
    def __init__(self, params):
        super().__init__()
        self.params = ms.ParameterTuple(params)
        self.copy = CopyBlocksAsync(num_caches=2)
        self.wait = WaitTransfer(num_tensors=2, lane="copy")

    def construct(self, mapping):
        token = self.copy(self.params[0], self.params[1], mapping)
        moved = self.wait(self.params[0], self.params[1], token)
        return moved, ops.depend(self.params[0], moved) * 1, ops.depend(self.params[1], moved) * 1


def test_copy_blocks_against_numpy(mode):
    values = caches()
    cell = CopyThenRead(parameters(values, f"copy_{mode}"))
    mapping = ms.Tensor(np.array([[0, 2], [1, 3]], np.int64))
    moved, k, v = cell(mapping) if mode == "graph" else cell.construct(mapping)
    for got, want in zip((k, v), values):
        want = want.copy()
        want[2], want[3] = want[0], want[1]
        np.testing.assert_array_equal(got.asnumpy(), want)
    assert moved.asnumpy().tolist() == [2 * 2 * BLOCK_BYTES]


class Gate:
    """Holds a transfer lane's stream with a host function until released."""

    def __init__(self, lane):
        rt.set_device(0)
        stream = transfer._library().msmc_transfer_lane_stream(0, lane)
        assert stream
        self.event = threading.Event()
        rt.launch_host_func(stream, lambda: self.event.wait(30))

    def release(self):
        self.event.set()


def test_the_copies_run_on_the_lane_and_the_wait_orders_the_read():
    """Eagerly: with the swap-in lane held, the launch returns and the cache is not yet written; the
    swap-out lane is another stream and completes meanwhile; after the release, WaitTransfer orders the
    read after the copies."""
    src, dst = caches(), caches(1000)
    buf = HostBuffer(2 * 4 * BLOCK_BYTES)
    host = buf.numpy(np.float32, (2, 4, *BLOCK))
    host[:] = -1
    k, v = parameters(dst, "held")
    # the ops live as long as their transfers (a dropped op's kernel waits for its transfers)
    swap_in, swap_out = SwapBlocksAsync("h2d", buf, num_caches=2), SwapBlocksAsync("d2h", buf, num_caches=2)
    gate = Gate(1)
    try:
        token = swap_in(k, v, [[0, 1]])
        np.testing.assert_array_equal(k.asnumpy(), dst[0])  # queued behind the held lane
        out = swap_out(*parameters(src, "out"), [[3, 2]])
        # the swap-out lane is not held; asnumpy: the eager wait has run before the host reads
        WaitTransfer(num_tensors=2, lane="d2h")(k, v, out).asnumpy()
        np.testing.assert_array_equal(host[0, 2], src[0][3])
        np.testing.assert_array_equal(k.asnumpy(), dst[0])
    finally:
        gate.release()
    assert WaitTransfer(num_tensors=2, lane="h2d")(k, v, token).asnumpy().tolist() == [2 * BLOCK_BYTES]
    np.testing.assert_array_equal(k.asnumpy()[1], -np.ones(BLOCK, np.float32))
    assert transfer_stream_count() >= 2
    wait_transfers()
    buf.close()


@pytest.mark.skipif(not _paths.uses_host_runtime(), reason="the host runtime's device-memory declarations")
def test_a_held_transfer_keeps_the_launch_declaration_of_its_tensors():
    """On the CPU target a launch declares its tensors as device memory while it runs. A synchronous op's
    declaration ends with its launch; an asynchronous form's ring slot takes it over, so the caches its
    held lane has yet to write stay declared after the launch has returned."""
    buf = HostBuffer(2 * 4 * BLOCK_BYTES)
    sync_k, sync_v = parameters(caches(), "declared_sync")
    SwapBlocks("h2d", buf, num_caches=2)(sync_k, sync_v, [[0, 1]])
    sync_launches()
    assert rt.get_mem_location(sync_k._data_ptr()).type == ACL_MEM_LOCATION_TYPE_UNREGISTERED
    k, v = parameters(caches(), "declared_async")
    swap_in = SwapBlocksAsync("h2d", buf, num_caches=2)
    gate = Gate(1)
    try:
        token = swap_in(k, v, [[0, 1]])
        sync_launches()
        for cache in (k, v):
            assert rt.get_mem_location(cache._data_ptr()).type == ACL_MEM_LOCATION_TYPE_DEVICE
    finally:
        gate.release()
    WaitTransfer(num_tensors=2, lane="h2d")(k, v, token).asnumpy()
    wait_transfers()
    buf.close()


class SwapOut(nn.Cell):
    """A swap-out of (k, v) and nothing after it: no WaitTransfer, no read."""

    def __init__(self, buf, params):
        super().__init__()
        self.params = ms.ParameterTuple(params)
        self.swap_out = SwapBlocksAsync("d2h", buf, num_caches=2)

    def construct(self, mapping):
        return self.swap_out(self.params[0], self.params[1], mapping)


def test_a_transfer_runs_with_nobody_waiting(mode):
    """The launch holds the lane only while it runs: once the call has returned and MindSpore's queue has
    drained, the copy runs on the lane's own thread while this thread only reads the HostBuffer's memory
    (numpy, no ACL call, no MindSpore sync that would run or wake the lane)."""
    src = caches()
    buf = HostBuffer(2 * 4 * BLOCK_BYTES)
    host = buf.numpy(np.float32, (2, 4, *BLOCK))
    host[:] = -1
    op = SwapOut(buf, parameters(src, f"unwaited_{mode}_"))
    mapping = ms.Tensor([[3, 1], [0, 2]], ms.int64)
    token = op(mapping) if mode == "graph" else op.construct(mapping)
    sync_launches()
    deadline = time.monotonic() + 20
    while not (host[0, 1] == src[0][3]).all() or not (host[1, 2] == src[1][0]).all():
        assert time.monotonic() < deadline, "the transfer did not run without a wait"
        time.sleep(0.001)
    assert token.asnumpy().tolist() == [4 * BLOCK_BYTES]
    wait_transfers()
    np.testing.assert_array_equal(host[:, [1, 2]], np.stack([np.stack([c[3], c[0]]) for c in src]))
    buf.close()


BAD_MAPPINGS = [
    np.array([[0, 9]], np.int64),  # host block out of range
    np.array([[0, 1], [2, 1]], np.int64),  # destination twice
    np.array([[-1, 0]], np.int64),  # device block negative
]


@pytest.mark.parametrize("mapping", BAD_MAPPINGS, ids=["range", "twice", "negative"])
def test_errors_are_the_sync_ops_with_nothing_written(mode, mapping):
    if mode == "graph" and mapping is BAD_MAPPINGS[2]:
        pytest.skip("the range check's graph case covers a negative block's (two compiles saved)")
    buf = HostBuffer(2 * 2 * BLOCK_BYTES)
    host = buf.numpy(np.uint8)
    host[:] = 7
    values = caches()
    texts = []
    for op, label in ((SwapBlocks("d2h", buf, num_caches=2), "SwapBlocks(d2h)"),
                      (SwapBlocksAsync("d2h", buf, num_caches=2), "SwapBlocksAsync(d2h)")):
        params = parameters(values, f"err_{mode}_{label[:5]}")
        with pytest.raises(ValueError) as info:
            if mode == "graph":
                cell = InPlace(op, params)
                cell(ms.Tensor(mapping))
            else:  # a Tensor mapping is read by the launch: its error is raised at the next sync
                op(*params, ms.Tensor(mapping))
                sync_launches()
        message = str(info.value).split("\n\n", 1)[0]
        assert message.startswith(f"ms_memcopy {label}: ")
        texts.append(message[len(f"ms_memcopy {label}: "):])
        wait_transfers()
        assert (host == 7).all()
    assert texts[0] == texts[1]
    buf.close()


def test_copy_blocks_async_error_text_is_copy_blocks():
    values = caches()
    texts = []
    for op in (CopyBlocks(num_caches=2), CopyBlocksAsync(num_caches=2)):
        with pytest.raises(ValueError) as info:
            op(*parameters(values, "cb"), [[0, 1], [1, 2]])
        texts.append(str(info.value).split(": ", 1)[1])
    assert texts[0] == texts[1]


def test_events_and_streams_stay_flat_over_graph_steps():
    """10^4 compiled steps of a swap-out, a swap-in and their waits (about 1 ms a step): the host
    runtime's live events and streams, the kernels' own ones and the process's resident memory stay
    where they were after the warm-up."""
    previous = ms.get_context("mode")
    ms.set_context(mode=ms.GRAPH_MODE, jit_config={"jit_level": "O0"})
    try:
        buf = HostBuffer(2 * 4 * BLOCK_BYTES)
        step = SwapOutIn(buf, parameters(caches(), "flat_src"), parameters(caches(1000), "flat_dst"))
        out_mapping, in_mapping = ms.Tensor([[1, 0]], ms.int64), ms.Tensor([[0, 3]], ms.int64)
        for _ in range(200):  # the rings fill, MindSpore's own per-graph caches settle
            step(out_mapping, in_mapping)
        wait_transfers()
        gc.collect()
        before = (rt.live_resource_counts(), _kernels_lib.owned_resources(), transfer_stream_count())
        rss = rss_bytes()
        for _ in range(10_000):
            step(out_mapping, in_mapping)
        wait_transfers()
        gc.collect()
        after = (rt.live_resource_counts(), _kernels_lib.owned_resources(), transfer_stream_count())
        assert after == before
        grown = rss_bytes() - rss
        assert grown < 8 << 20, f"10^4 graph steps grew RSS by {grown / (1 << 20):.1f} MiB"
        buf.close()
    finally:
        ms.set_context(mode=previous)


# ---- MemcpyBatchAsync and Memcpy2DAsync -----------------------------------------------------------------

class BatchAndWrite(nn.Cell):
    """A step: tensors a, b out to the HostBuffer, host bytes into c, d in place, a row written into
    c; each waited for before the reads (which take the waits' outputs)."""

    def __init__(self, buf, params):
        super().__init__()
        self.a, self.b, self.c, self.d, self.row = params
        self.save = MemcpyBatchAsync("d2h", buf, num_tensors=2)
        self.load = MemcpyBatchAsync("h2d", buf, num_tensors=2)
        self.write = Memcpy2DAsync("write")
        self.saved = WaitTransfer(num_tensors=2, lane="d2h")
        self.loaded = WaitTransfer(num_tensors=2, lane="h2d")
        self.written = WaitTransfer(num_tensors=2, lane="copy")

    def construct(self, out_offsets, in_offsets, at_row, at_col):
        saved = self.saved(self.a, self.b, self.save(self.a, self.b, out_offsets))
        loaded = self.loaded(self.c, self.d, self.load(self.c, self.d, in_offsets))
        written = self.written(self.c, self.row, self.write(self.c, self.row, at_row, at_col))
        return saved, loaded, written, ops.depend(self.c, written) * 1, ops.depend(self.d, loaded) * 1


def test_batch_and_2d_write_forms_against_numpy(mode):
    a, b = np.arange(6, dtype=np.float32), np.arange(8, dtype=np.int16).reshape(2, 4)
    c, d = np.zeros((3, 4), np.float32), np.zeros(5, np.int16)
    row = -np.ones((1, 2), np.float32)
    buf = HostBuffer(256)
    host = buf.numpy(np.uint8)
    host[:] = np.arange(256) % 251
    before = host.copy()
    params = parameters([a, b, c, d, row], f"batch_{mode}_")
    step = BatchAndWrite(buf, params)
    inputs = (ms.Tensor([128, 160], ms.int64), ms.Tensor([0, 64], ms.int64), ms.Tensor([2], ms.int64),
              ms.Tensor([1], ms.int64))
    saved, loaded, written, got_c, got_d = step(*inputs) if mode == "graph" else step.construct(*inputs)
    expected_c = before[0:48].view(np.float32).reshape(3, 4).copy()
    expected_c[2, 1:3] = row
    np.testing.assert_array_equal(got_c.asnumpy(), expected_c)
    np.testing.assert_array_equal(got_d.asnumpy(), before[64:74].view(np.int16))
    assert [saved.asnumpy().tolist(), loaded.asnumpy().tolist(), written.asnumpy().tolist()] == \
        [[a.nbytes + b.nbytes], [c.nbytes + d.nbytes], [row.nbytes]]
    np.testing.assert_array_equal(host[128:152].view(np.float32), a)
    np.testing.assert_array_equal(host[160:176].view(np.int16).reshape(2, 4), b)
    buf.close()


def _error_cases(form, buf):
    """(sync op, its in-place or read tensors, async op, its tensors, the value inputs) of a call whose
    second item (MemcpyBatch: offset 60 of a 64-byte HostBuffer) or row (Memcpy2D: 9 of 1) is out of range."""
    def tensors(name):
        return parameters([np.full(4, 3, np.float32), np.full(2, 5, np.float32)], f"{name}_{form}_")
    offsets = (ms.Tensor([0, 60], ms.int64),)
    if form == "d2h":
        return (MemcpyBatch("d2h", buf, num_tensors=2), tensors("s"), MemcpyBatchAsync("d2h", buf, num_tensors=2),
                tensors("a"), offsets)
    if form == "h2d":
        return (MemcpyBatch("h2d", buf, shapes=[(4,), (2,)], dtypes=[ms.float32] * 2), [],
                MemcpyBatchAsync("h2d", buf, num_tensors=2), tensors("a"), offsets)
    return Memcpy2D("write"), tensors("s"), Memcpy2DAsync("write"), tensors("a"), (int64(9), int64(0))


@pytest.mark.parametrize("mode, form", [("pynative", "d2h"), ("pynative", "h2d"), ("pynative", "write"),
                                        ("graph", "h2d")], indirect=["mode"])
def test_batch_and_2d_write_errors_are_the_sync_ops_with_nothing_written(mode, form):
    """The asynchronous form raises the synchronous form's text, and nothing is written (the HostBuffer,
    the in-place tensors). (A graph compiles two graphs a case: one case in GRAPH_MODE.)"""
    buf = HostBuffer(64)
    host = buf.numpy(np.uint8)
    host[:] = 7
    sync_op, sync_params, async_op, async_params, values = _error_cases(form, buf)
    texts = []
    for op, params in ((sync_op, sync_params), (async_op, async_params)):
        with pytest.raises(ValueError) as info:
            if mode == "graph":
                InPlace(op, params)(*values)
            else:
                op(*params, *values)
                sync_launches()
        texts.append(str(info.value).split("\n\n", 1)[0].split(": ", 1)[1])
        wait_transfers()
        assert (host == 7).all()
        for param, want in zip(params, (3, 5)):
            assert (param.asnumpy() == want).all()
    assert texts[0] == texts[1], texts
    buf.close()


def test_a_submitted_launch_reports_through_its_ticket():
    """KernelInstance.submit_transfer (TransferQueue's entry): the ticket's wait() returns once the copy
    has run; a launch that fails (a Tensor mapping read at the launch) raises its error from done() and
    wait(), as the next sync does; a form that queues no transfer fails its ticket."""
    previous = ms.get_context("mode")
    ms.set_context(mode=ms.PYNATIVE_MODE)
    try:
        buf = HostBuffer(2 * 2 * BLOCK_BYTES)
        params = parameters(caches(), "ticket")
        op = SwapBlocksAsync("d2h", buf, num_caches=2)
        token, ticket = op.primitive._submit_transfer(tuple(params), np.array([[3, 1]], np.int64))
        ticket.wait()
        assert ticket.done()
        np.testing.assert_array_equal(buf.numpy(np.float32, (2, 2, *BLOCK))[:, 1], [c[3] for c in caches()])
        # A mapping an eager op produces is read by the launch. Where MindSpore runs that launch before the
        # call returns (seen after GRAPH_MODE steps in the same process), the error raises at the call.
        produced = ops.add(ms.Tensor(np.array([[0, 9]], np.int64)), 0)
        try:
            _, ticket = op.primitive._submit_transfer(tuple(params), produced)
        except ValueError as error:
            assert re.search(r"SwapBlocksAsync\(d2h\): block_mapping.*nothing was copied", str(error)), error
        else:
            with pytest.raises(RuntimeError, match=r"SwapBlocksAsync\(d2h\): block_mapping.*nothing was copied"):
                ticket.wait()
            with pytest.raises(RuntimeError, match="nothing was copied"):
                ticket.done()
            with pytest.raises(ValueError, match="nothing was copied"):
                sync_launches()
        np.testing.assert_array_equal(buf.numpy(np.float32, (2, 2, *BLOCK))[:, 1], [c[3] for c in caches()])
        sync = SwapBlocks("d2h", buf, num_caches=2)
        _, ticket = sync.primitive._submit_transfer(tuple(params), np.array([[0, 0]], np.int64))
        with pytest.raises(RuntimeError, match=r"SwapBlocks\(d2h\): queued no transfer"):
            ticket.wait()
        buf.close()
    finally:
        ms.set_context(mode=previous)
