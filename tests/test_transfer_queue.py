"""ms_memcopy.nn.TransferQueue: block moves on the transfer streams, and the pool's ordering rules.

A job is held in flight deterministically by a host function that blocks the transfer streams (CPU
target: the host ACL runtime runs a stream's tasks in order on its own thread) until the test lets it
go; the expected bytes come from numpy copies of what was written. The queue's submits and polls call
none of MindSpore's synchronizing entry points, and a compiled step reading swapped-in blocks before
they arrive is reported by the host runtime's strict ordering mode."""
import contextlib
import gc
import threading
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import mindspore as ms

from ms_memcopy import runtime
from ms_memcopy._framework import sync_launches
from ms_memcopy._sync_counter import SyncCounter
from ms_memcopy.nn import BlockPool, OutOfBlocks, TransferPending, TransferQueue
from ms_memcopy.ops import Memcpy2D, transfer

from _ops_support import int64

BLOCK = (2, 4)  # tokens x width of one block


def make_pool(num_blocks=4, num_host_blocks=4, num_caches=2):
    pool = BlockPool(num_caches=num_caches, num_blocks=num_blocks, num_host_blocks=num_host_blocks,
                     block_shape=BLOCK, dtype=ms.float32)
    rng = np.random.default_rng(3)
    values = [rng.standard_normal((num_blocks, *BLOCK)).astype(np.float32) for _ in range(num_caches)]
    for cache, v in zip(pool.caches, values):
        cache.set_data(ms.Tensor(v))
    return pool, values


@contextlib.contextmanager
def filled_pool(**sizes):
    """make_pool(**sizes) for a with block: (pool, values), the pool closed when the block ends."""
    pool, values = make_pool(**sizes)
    try:
        yield pool, values
    finally:
        pool.close()


def transfer_streams():
    """The transfer streams of device 0 (swap-out, swap-in, copies within the device): the queue's."""
    runtime.set_device(0)
    return [transfer._library().msmc_transfer_lane_stream(0, lane) for lane in range(3)]


class Hold:
    """Blocks the transfer streams (a host function on each waits) until released; everything queued
    after waits too.

    The host function is Python, so it needs the GIL to return: a primitive dropped meanwhile (whose
    kernel state waits for its transfers and drains every stream) waits with the GIL released
    (test_dropping_a_primitive_does_not_wait_for_python_host_functions_with_the_gil)."""

    def __init__(self):
        self.gate = threading.Event()
        self.ran = threading.Event()
        for stream in transfer_streams():
            runtime.launch_host_func(stream, self._run)

    def _run(self):
        self.gate.wait(30)
        self.ran.set()

    def release(self, after=0.0):
        if after:
            threading.Timer(after, self.gate.set).start()
        else:
            self.gate.set()


def host_blocks(pool, blocks):
    """[cache, block] values of host blocks (numpy view of the pool's HostBuffer: waits for its copies)."""
    view = pool.host_buffer.numpy(np.float32).reshape(pool.num_caches, pool.num_host_blocks, *BLOCK)
    return view[:, blocks].copy()


def test_a_swap_in_is_not_readable_before_it_finished(ms_mode):
    with filled_pool() as (pool, values):
        queue = TransferQueue(pool)
        table = pool.allocate(2)
        host = pool.swap_out(table)                       # synchronous: the host blocks hold values[:, 0:2]
        hold = Hold()
        job = queue.submit("swap_in", host[::-1])
        blocks = queue.destination(job)
        assert queue.finished() == []                     # the transfer streams are held: not done
        for check in (pool.check_readable, pool.check_writable, pool.fork, pool.swap_out, pool.free):
            with pytest.raises(TransferPending, match=rf"device block\(s\) \[{blocks[0]}, {blocks[1]}\] are "
                                                      rf"written by swap_in job {job}.*wait\({job}\)"):
                check(blocks)
        with pytest.raises(TransferPending, match=rf"being moved out by swap_in job {job}"):
            pool.free_host(host)
        # the model goes on meanwhile: a write on another block is not held up by the transfer stream
        other = pool.allocate(1)[0]
        row = np.full((1, BLOCK[1]), 5.0, np.float32)
        write = Memcpy2D("write")
        write(pool.caches[0], ms.Tensor(row), int64(other * BLOCK[0]), int64(0))
        np.testing.assert_array_equal(pool.caches[0].asnumpy()[other, 0], row[0])
        assert queue.finished() == [] and not hold.ran.is_set()
        hold.release()
        assert queue.wait(job) == blocks
        assert pool.check_readable(blocks) == blocks
        for l, cache in enumerate(pool.caches):
            np.testing.assert_array_equal(cache.asnumpy()[blocks], values[l][table[::-1]])
        assert pool.num_free_host_blocks == pool.num_host_blocks  # the swap-in gave its host blocks back
        with pytest.raises(ValueError, match=f"job {job} is not in flight: it was already reported"):
            queue.wait(job)


def test_a_swap_outs_blocks_are_not_reused_early(ms_mode):
    with filled_pool() as (pool, values):
        queue = TransferQueue(pool)
        table = pool.allocate(4)
        hold = Hold()
        job = queue.submit("swap_out", table[1:3])
        assert pool.num_free_blocks == 0                  # blocks 1 and 2 are free only once it finished
        with pytest.raises(OutOfBlocks):
            pool.allocate(1)
        with pytest.raises(TransferPending, match=rf"being moved out by swap_out job {job}"):
            pool.free(table[1:2])
        with pytest.raises(TransferPending, match=rf"host block\(s\) \[0, 1\] are written by swap_out job {job}"):
            queue.submit("swap_in", queue.destination(job))
        assert queue.finished() == []
        hold.release()
        deadline = time.monotonic() + 30
        while job not in queue.finished():                # polling, never waiting
            assert time.monotonic() < deadline
        assert pool.num_free_blocks == 2 and sorted(pool.allocate(2)) == [1, 2]
        np.testing.assert_array_equal(host_blocks(pool, [0, 1]), np.stack([v[1:3] for v in values]))


def test_a_fork_keeps_its_source_blocks_from_being_written():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    with filled_pool() as (pool, values):
        queue = TransferQueue(pool)
        table = pool.allocate(2)
        hold = Hold()
        job = queue.submit("fork", table)
        assert pool.check_readable(table) == table        # a fork's sources stay readable
        with pytest.raises(TransferPending, match=rf"read by fork job {job}"):
            pool.check_writable(table)
        hold.release()
        child = queue.wait(job)
        assert child == [2, 3]
        for l, cache in enumerate(pool.caches):
            np.testing.assert_array_equal(cache.asnumpy()[child], values[l][table])


@pytest.mark.parametrize("paced", [False, True], ids=["whole", "paced"])
@pytest.mark.parametrize("close", ["pool", "queue", "host_buffer"])
def test_closing_with_jobs_in_flight_waits_for_them(close, paced):
    """Paced (one block per part): the second block of the swap-out and the fork are held back when the
    close begins; the close launches them, and nothing is lost either way."""
    ms.set_context(mode=ms.PYNATIVE_MODE)
    pool, values = make_pool()
    queue = TransferQueue(pool, part_bytes=1 if paced else None)
    table = pool.allocate(3)
    hold = Hold()
    jobs = [queue.submit("swap_out", table[:2]), queue.submit("fork", table[2:])]
    released = time.monotonic()
    hold.release(after=0.3)
    if close == "queue":
        queue.close()
        assert time.monotonic() - released >= 0.25 and hold.ran.is_set()
        assert pool.num_free_blocks == 2 and queue.closed     # the books were updated: nothing is lost
        np.testing.assert_array_equal(host_blocks(pool, [0, 1]), np.stack([v[:2] for v in values]))
        np.testing.assert_array_equal(pool.caches[1].asnumpy()[3], values[1][2])  # the fork's new block 3
        with pytest.raises(ValueError, match="TransferQueue is closed"):
            queue.submit("fork", [0])
        pool.close()
    elif close == "host_buffer":
        pool.host_buffer.close()                          # waits for the copies into and out of it
        assert time.monotonic() - released >= 0.25 and hold.ran.is_set()
        pool.close()                                      # then the queue's books
        assert queue.closed and queue.pending == []
        np.testing.assert_array_equal(pool.caches[1].asnumpy()[3], values[1][2])  # the fork's new block 3
    else:
        pool.close()
        assert time.monotonic() - released >= 0.25 and hold.ran.is_set()
        assert queue.closed and pool.num_free_blocks == 2 and pool.num_free_host_blocks == 2
    assert jobs == [0, 1]


def test_parts_are_paced_one_per_finished_call(ms_mode):
    """part_bytes of one block over both caches: a 3-block swap-out is three parts, the first launched at
    submit, each next one by the first finished() after the one before has completed."""
    with filled_pool() as (pool, values):
        queue = TransferQueue(pool, part_bytes=pool.num_caches * pool.block_bytes)
        pool.host_buffer.numpy(np.float32)[:] = -1.0       # what the host blocks hold before any copy
        table = pool.allocate(3)
        hold = Hold()
        job = queue.submit("swap_out", table)
        new = queue.destination(job)
        expected = np.stack([v[table] for v in values])   # [cache, block, ...]
        untouched = np.full_like(expected[:, 0], -1.0)
        hold.release()
        for part in range(3):
            got = host_blocks(pool, new)                  # waits for the copies queued so far
            for b in range(3):
                np.testing.assert_array_equal(got[:, b], expected[:, b] if b <= part else untouched,
                                              err_msg=f"host block {new[b]} after part {part}")
            assert pool.num_free_blocks == 1              # the job holds its blocks until all parts are done
            assert queue.finished() == ([job] if part == 2 else [])
        assert queue.pending == [] and pool.num_free_blocks == 4


def test_without_part_bytes_every_job_launches_at_submit(ms_mode):
    with filled_pool() as (pool, values):
        queue = TransferQueue(pool)
        table = pool.allocate(2)
        hold = Hold()
        jobs = [queue.submit("swap_out", table[:1]), queue.submit("swap_out", table[1:])]  # the first is held
        hold.release()
        # no finished() or wait(): both copies were queued at submit (the view waits for them)
        np.testing.assert_array_equal(host_blocks(pool, [0, 1]), np.stack([v[table] for v in values]))
        assert queue.wait_all() == jobs


def test_paced_parts_go_oldest_job_first_and_wait_launches_the_rest(ms_mode):
    with filled_pool(num_blocks=6) as (pool, values):
        queue = TransferQueue(pool, part_bytes=1)         # less than a block: one block per part
        assert queue.part_bytes == 1
        table = pool.allocate(3)
        hold = Hold()
        first = queue.submit("fork", table[:2])           # its first part is in flight (held)
        second = queue.submit("swap_out", table[2:])      # waits: one part in flight at a time
        hold.release()
        assert queue.wait(second) == [0]                  # launched by the wait itself
        np.testing.assert_array_equal(host_blocks(pool, [0]), np.stack([v[table[2]] for v in values])[:, None])
        child = queue.destination(first)
        deadline = time.monotonic() + 30
        while first not in queue.finished():              # polling launches the fork's second part
            assert time.monotonic() < deadline
        for l, cache in enumerate(pool.caches):
            np.testing.assert_array_equal(cache.asnumpy()[child], values[l][table[:2]])
        back = queue.destination(queue.submit("swap_in", [0]))
        queue.close()                                     # launches and waits for what is left
        assert pool.num_free_host_blocks == 4 and pool.check_readable(back) == back
        for l, cache in enumerate(pool.caches):
            np.testing.assert_array_equal(cache.asnumpy()[back[0]], values[l][table[2]])


def test_part_bytes_must_be_a_positive_int():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    with filled_pool() as (pool, _):
        with pytest.raises(TypeError, match="part_bytes must be an int, not str"):
            TransferQueue(pool, part_bytes="64")
        with pytest.raises(ValueError, match="part_bytes must be >= 1, got 0"):
            TransferQueue(pool, part_bytes=0)
        assert TransferQueue(pool).part_bytes is None and pool._queues[-1].part_bytes is None


def test_bad_input_names_the_argument_and_moves_nothing():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    with filled_pool() as (pool, values):
        with pytest.raises(TypeError, match="pool must be a BlockPool"):
            TransferQueue(object())
        queue = TransferQueue(pool)
        table = pool.allocate(2)
        with pytest.raises(ValueError, match="kind must be one of"):
            queue.submit("swap", table)
        with pytest.raises(ValueError, match=r"blocks: device block\(s\) \[3\] are not allocated"):
            queue.submit("swap_out", [table[0], 3])
        with pytest.raises(ValueError, match="blocks: a device block appears twice"):
            queue.submit("fork", [table[0], table[0]])
        with pytest.raises(TypeError, match="blocks must be a sequence of block numbers"):
            queue.submit("fork", 1)
        pool.allocate(1)
        with pytest.raises(OutOfBlocks, match=r"2 device block\(s\) asked for, 1 of 4 free"):
            queue.submit("fork", table)
        with pytest.raises(TypeError, match="job must be an int"):
            queue.wait("0")
        with pytest.raises(ValueError, match="job 7 is not in flight: it was never submitted"):
            queue.wait(7)
        assert queue.pending == [] and pool.num_free_blocks == 1 and pool.num_free_host_blocks == 4
        for l, cache in enumerate(pool.caches):
            np.testing.assert_array_equal(cache.asnumpy(), values[l])
        assert queue.submit("swap_out", []) == 0 and queue.finished() == [0]  # an empty move is done at once


# ---- random interleavings against numpy ----------------------------------------------------------

KINDS = ["write"] * 3 + ["swap_out"] * 2 + ["swap_in"] * 2 + ["fork", "finished", "finished", "wait", "free",
                                                              "allocate"]
ACTIONS = st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 1 << 30)), min_size=10, max_size=40)


@settings(max_examples=12, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(actions=ACTIONS, paced=st.booleans())
def test_random_interleavings_keep_every_byte(ms_mode, actions, paced):
    """Sequences own device or host blocks; the model writes rows of readable blocks (Memcpy2D, in
    MindSpore's queue) while jobs move blocks on the transfer streams, whole or paced in parts; every byte
    is checked against numpy copies made at submit time, the semantics the pool's rules guarantee."""
    pool = BlockPool(num_caches=2, num_blocks=6, num_host_blocks=6, block_shape=BLOCK, dtype=ms.float32)
    rng = np.random.default_rng(len(actions))
    device = [rng.standard_normal((6, *BLOCK)).astype(np.float32) for _ in range(2)]
    host = [np.zeros((6, *BLOCK), np.float32) for _ in range(2)]
    for cache, values in zip(pool.caches, device):
        cache.set_data(ms.Tensor(values))
    write = Memcpy2D("write")
    owned = {"device": pool.allocate(4), "host": []}   # blocks the test holds, usable now
    arriving = {}                        # job -> (side, blocks) it makes usable when it finishes
    try:
        queue = TransferQueue(pool, part_bytes=1 if paced else None)  # paced: one block per part

        def arrived(jobs):
            for job in jobs:
                side, blocks = arriving.pop(job)
                owned[side].extend(blocks)

        for action, pick in actions:
            if action == "allocate" and pool.num_free_blocks:
                owned["device"].extend(pool.allocate(1))
            elif action == "write":
                if not owned["device"]:
                    continue
                block = owned["device"][pick % len(owned["device"])]
                try:
                    pool.check_writable([block])
                except TransferPending:
                    continue  # a fork in flight reads it
                row, l = pick % BLOCK[0], pick % 2
                values = rng.standard_normal((1, BLOCK[1])).astype(np.float32)
                write(pool.caches[l], ms.Tensor(values), int64(block * BLOCK[0] + row), int64(0))
                device[l][block, row] = values[0]
            elif action in ("swap_out", "fork") and owned["device"]:
                blocks = owned["device"][:1 + pick % len(owned["device"])]
                free = pool.num_free_host_blocks if action == "swap_out" else pool.num_free_blocks
                if len(blocks) > free:
                    continue
                try:
                    job = queue.submit(action, blocks)
                except TransferPending:
                    continue  # a fork in flight reads one of them: it cannot be moved out yet
                new = queue.destination(job)
                target = host if action == "swap_out" else device
                for l in range(2):
                    target[l][new] = device[l][blocks]
                if action == "swap_out":
                    owned["device"] = owned["device"][len(blocks):]
                arriving[job] = ("host" if action == "swap_out" else "device", new)
            elif action == "swap_in" and owned["host"]:
                blocks = owned["host"][:1 + pick % len(owned["host"])]
                if len(blocks) > pool.num_free_blocks:
                    continue
                job = queue.submit("swap_in", blocks)
                new = queue.destination(job)
                for l in range(2):
                    device[l][new] = host[l][blocks]
                owned["host"] = owned["host"][len(blocks):]
                arriving[job] = ("device", new)
            elif action == "finished":
                arrived(queue.finished())
            elif action == "wait" and arriving:
                job = sorted(arriving)[pick % len(arriving)]
                assert queue.wait(job) == arriving[job][1]
                arrived([job])
            elif action == "free" and owned["device"]:
                block = owned["device"][pick % len(owned["device"])]
                try:
                    pool.free([block])
                except TransferPending:
                    continue
                owned["device"].remove(block)
        arrived(queue.wait_all())
        assert not arriving
        view = pool.host_buffer.numpy(np.float32).reshape(2, 6, *BLOCK)
        for l in range(2):
            got = pool.caches[l].asnumpy()
            for b in owned["device"]:
                np.testing.assert_array_equal(got[b], device[l][b], err_msg=f"device block {b} of cache {l}")
            for b in owned["host"]:
                np.testing.assert_array_equal(view[l, b], host[l][b], err_msg=f"host block {b} of cache {l}")
        del view
    finally:
        pool.close()




# ---- no drain of MindSpore's queues --------------------------------------------------------------------

def test_submits_and_polls_call_no_synchronizing_entry_point():
    """1,000 submits (fork, swap-out, swap-in, in turn), each polled with finished() until reported: no
    call into MindSpore's synchronizing entry points (reading a tensor, the executor's sync, the stream
    and event API of mindspore.runtime); the sequence's blocks keep their bytes through every move."""
    ms.set_context(mode=ms.PYNATIVE_MODE)
    with filled_pool(num_blocks=6, num_host_blocks=2) as (pool, values):
        queue = TransferQueue(pool)
        table = pool.allocate(2)
        expected = [v[table] for v in values]
        pool.free(queue.wait(queue.submit("fork", table)))  # warm up: the first launch builds the kernels
        with SyncCounter() as counter:
            for submit in range(1000):
                kind = ("fork", "swap_out", "swap_in")[submit % 3]
                job = queue.submit(kind, table)
                new = queue.destination(job)
                deadline = time.monotonic() + 30
                while job not in queue.finished():
                    assert time.monotonic() < deadline, f"{kind} job {job} not reported"
                if kind == "fork":
                    pool.free(table)  # the sequence goes on in its copy
                table = new
        assert counter.total() == 0, counter.calls
        for cache, want in zip(pool.caches, expected):
            np.testing.assert_array_equal(cache.asnumpy()[table], want)


def test_close_releases_the_kernels_events():
    """A queue's events are its kernels' rings and result slots (made at first use): after close() the
    kernels hold no more events than before the queue was built, but the HostBuffer's one per transfer
    stream its copies ran on (swap-out, swap-in), which go with the buffer."""
    from ms_memcopy import _kernels_lib

    ms.set_context(mode=ms.PYNATIVE_MODE)
    before = _kernels_lib.owned_resources().events
    with filled_pool() as (pool, _):
        queue = TransferQueue(pool)
        table = pool.allocate(1)
        for kind in ("fork", "swap_out", "swap_in"):
            table = queue.wait(queue.submit(kind, table))
        assert _kernels_lib.owned_resources().events >= before + 3 * 2  # a ring slot of each kind
        queue.close()
        sync_launches()  # MindSpore's finished launch tasks let go of the kernels' state
        gc.collect()
        assert _kernels_lib.owned_resources().events <= before + 2
    assert _kernels_lib.owned_resources().events == before


# Drops a transfer primitive while its last transfer waits behind a Python host function, then lets the
# host function go from another thread once the drop has begun. The drop waits for that transfer (its
# kernel state's ring and pinned slots); the host function needs the GIL to return, so a drop that
# waited with the GIL held would never end. The main thread keeps the GIL until it blocks (a switch
# interval longer than the run), so the drop begins before the releasing thread runs; a watchdog ends
# the process (exit 1, with the threads' tracebacks) should the drop not return.
_DROP_BEHIND_HOST_FUNCTION = """
import faulthandler, gc, sys, threading
import numpy as np
import mindspore as ms
from ms_memcopy import _kernels_lib, runtime
from ms_memcopy._framework import sync_launches
from ms_memcopy.ops import CopyBlocksAsync, transfer

ms.set_context(mode=ms.PYNATIVE_MODE)
cache = ms.Tensor(np.arange(8, dtype=np.float32).reshape(2, 4))
mapping = ms.Tensor(np.array([[0, 1]], np.int64))
before = _kernels_lib.owned_resources().events
copy = CopyBlocksAsync(num_caches=1)
copy(cache, mapping)
sync_launches()
runtime.set_device(0)
gate, dropping = threading.Event(), threading.Event()
runtime.launch_host_func(transfer._library().msmc_transfer_lane_stream(0, 2), gate.wait)
copy(cache, mapping)  # its copies wait behind the host function, on the lane of copies within the device
sync_launches()       # the launch was made: the kernel state's ring holds that transfer
held = _kernels_lib.owned_resources().events
threading.Thread(target=lambda: (dropping.wait(), gate.set()), daemon=True).start()
faulthandler.dump_traceback_later(120, exit=True)
sys.setswitchinterval(1e6)
dropping.set()
del copy
gc.collect()
faulthandler.cancel_dump_traceback_later()
print("events", before, held, _kernels_lib.owned_resources().events)
"""


def test_dropping_a_primitive_does_not_wait_for_python_host_functions_with_the_gil(run_python):
    result = run_python(_DROP_BEHIND_HOST_FUNCTION, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    before, held, after = (int(n) for n in result.stdout.split("events")[-1].split())
    assert held > before and after == before  # the drop released the kernel state, events and all
