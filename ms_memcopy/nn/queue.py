"""TransferQueue: the moves of a BlockPool on the transfer streams, while the model computes."""
import threading
import weakref
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .._closing import ClosesOnExit
from ..ops import CopyBlocksAsync, SwapBlocksAsync
from ..ops._args import check_int
from ._block_numbers import _as_list
from .pool import BlockPool

__all__ = ["TransferQueue"]


class _Job:
    __slots__ = ("kind", "sources", "destinations", "parts", "launched")

    def __init__(self, kind, sources, destinations, part_blocks):
        self.kind, self.sources, self.destinations = kind, sources, destinations
        # (start, stop) ranges of sources not launched yet, in order
        self.parts = [(i, min(i + part_blocks, len(sources))) for i in range(0, len(sources), part_blocks)]
        # the launched parts, in order: the TransferTicket of each part's launch (done() polls the
        # event recorded after its copies, wait() waits for that event alone)
        self.launched = []


class TransferQueue(ClosesOnExit):
    """Swap-outs, swap-ins and forks of a BlockPool that run on the transfer streams while the model computes.

    ``submit(kind, blocks)`` starts one move and returns its job id (an int) at once: ``"swap_out"``
    (device blocks to new host blocks), ``"swap_in"`` (host blocks to new device blocks) or ``"fork"``
    (device blocks copied into new device blocks), the copies of BlockPool's methods of the same names
    (SwapBlocks or CopyBlocks over every cache), made by their asynchronous forms. The new block numbers
    are allocated at once: ``destination(job)``. ``finished()`` returns the jobs completed since its last
    call without waiting (submission order); ``wait(job)`` blocks until one has finished and returns its
    destination blocks. A job is reported once, by whichever of the two sees it finished first.
    ``pending`` lists the jobs not reported yet, ``wait_all()`` waits for them all.

    Ordering: each part of a job is one eager call of SwapBlocksAsync or CopyBlocksAsync, queued in
    MindSpore's launch order like any eager op (so the copy reads what the ops before the submit wrote),
    whose copies run on the transfer stream of their direction (swap-out, swap-in, copies within the
    device: the streams of :mod:`ms_memcopy.ops.transfer`, never the model's). Each launch returns a
    ticket for its transfer: ``finished()`` queries the event recorded after the copies
    (aclrtQueryEventStatus, never a wait), ``wait(job)`` waits for that job's events alone. No call of
    the queue synchronizes MindSpore's queues or streams. A job is reported only once its copies have
    completed, so the model's reads after the report need no stream wait. Until a job has finished, the
    pool refuses (TransferPending, naming the job) to read or move the blocks it writes
    (``check_readable``, ``swap_out``, ``fork``, a later submit), and to hand out again, free or move the
    blocks it gives up or reads: a swap-out's device blocks become free, and a swap-in's host blocks,
    only when it has finished. ``close()`` (and ``BlockPool.close()``, and a ``HostBuffer.close()`` of
    the pool's buffer) waits for the jobs in flight: nothing is lost. The queue is used from Python
    (PYNATIVE_MODE or GRAPH_MODE around compiled steps), not inside a graph: a graph uses the
    asynchronous forms directly. A queue launches at most four transfers per kind before a launch waits
    (in MindSpore's launch thread) for the oldest of them: each kind's kernel keeps a ring of four.

    Pacing (``part_bytes``): a copy in flight takes memory bandwidth, and on the CPU target cores,
    from the model's step. With ``part_bytes`` set, a job is launched in parts of whole blocks, at most
    ``part_bytes`` over all caches (at least one block), and at most one part of the queue is in
    flight: a part launches at submit when none is, otherwise at the first ``finished()`` call after the
    part before it has completed (oldest job first). A scheduler that calls ``finished()`` once per
    model step thus moves at most ``part_bytes`` during each step. ``wait(job)``, ``wait_all()``,
    ``close()`` and a ``close()`` of the pool's HostBuffer launch what is left of the jobs they wait for
    at once. A job is reported when all its parts have completed; until then its blocks are held as
    above, so the parts cannot be seen apart.

    Args:
        pool (BlockPool): the pool whose blocks the queue moves.
        part_bytes (int, optional): the bytes of one part (see Pacing); None (the default) launches
            every job whole, at submit.

    Raises:
        TypeError: pool not a BlockPool; part_bytes not an int; (submit) blocks not a sequence of ints,
            a job not an int.
        ValueError: part_bytes < 1; (submit) kind not one of "swap_out", "swap_in", "fork"; a block
            not allocated or given twice (nothing moved); (wait, destination) a job that is not in
            flight or unreported; a closed queue.
        OutOfBlocks: (submit) fewer free blocks than the move needs (nothing allocated or moved).
        TransferPending: (submit) blocks a job in flight holds.

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import mindspore as ms
        >>> from ms_memcopy.nn import BlockPool, TransferQueue
        >>> pool = BlockPool(num_caches=1, num_blocks=4, num_host_blocks=4, block_shape=(2,), dtype=ms.float32)
        >>> (cache,) = pool.caches
        >>> _ = cache.set_data(ms.Tensor([[0, 1], [2, 3], [4, 5], [6, 7]], ms.float32))
        >>> queue = TransferQueue(pool)
        >>> table = pool.allocate(2)
        >>> job = queue.submit("swap_out", table)
        >>> print(job, queue.destination(job), pool.num_free_blocks)  # blocks 0, 1 are free once it finishes
        0 [0, 1] 2
        >>> print(queue.wait(job), pool.num_free_blocks)
        [0, 1] 4
        >>> job = queue.submit("swap_in", [1, 0])
        >>> while job not in queue.finished():
        ...     pass  # the model would decode here
        >>> print(cache.asnumpy()[:2].tolist())
        [[2.0, 3.0], [0.0, 1.0]]
        >>> queue.close()
        >>> pool.close()
    """

    KINDS = ("swap_out", "swap_in", "fork")

    def __init__(self, pool: BlockPool, part_bytes: Optional[int] = None):
        if not isinstance(pool, BlockPool):
            raise TypeError(f"pool must be a BlockPool, not {type(pool).__name__}")
        if pool.host_buffer.closed:
            raise ValueError("pool: the BlockPool is closed")
        self.pool = pool
        self.part_bytes = None if part_bytes is None else check_int(part_bytes, "part_bytes", 1)
        bytes_per_block = pool.bytes_per_block
        self._part_blocks = None if self.part_bytes is None else max(1, self.part_bytes // bytes_per_block)
        num_caches, layout = pool.num_caches, pool.host_layout
        # their kernel instances own the events (a ring each); the streams are the module's
        self._ops: Any = {
            "swap_out": SwapBlocksAsync("d2h", pool.host_buffer, num_caches=num_caches, host_layout=layout),
            "swap_in": SwapBlocksAsync("h2d", pool.host_buffer, num_caches=num_caches, host_layout=layout),
            "fork": CopyBlocksAsync(num_caches=num_caches)}
        self._jobs: Dict[int, Any] = {}  # job id -> _Job, in submission order, until reported
        self._next_job = 0
        self._last_part: Optional[Tuple[Any, Any]] = None  # (job, launched part) of the part launched last
        self._lock = threading.Lock()
        pool._queues.append(self)
        self._close_hook = weakref.WeakMethod(self._launch_held_back)
        pool.host_buffer._before_close.append(self._close_hook)

    @property
    def closed(self) -> bool:
        return self._ops is None

    @property
    def pending(self) -> List[int]:
        """The jobs submitted and not reported yet (finished or not), in submission order."""
        return list(self._jobs)

    def submit(self, kind: str, blocks: Sequence[int]) -> int:
        """Starts moving blocks and returns the job id at once (see the class); nothing moves on an error."""
        self._check_open()
        if kind not in self.KINDS:
            raise ValueError(f"kind must be one of {self.KINDS}, got {kind!r}")
        pool = self.pool
        with self._lock:
            job = self._next_job
            if kind == "swap_in":
                pool._check_pending("host", blocks, "blocks", "moving")
                sources = pool._host.check_allocated(_as_list(blocks, "blocks"), "blocks")
                destinations, new_side = pool._device.allocate(len(sources)), pool._device
            else:
                pool._check_pending("device", blocks, "blocks", "moving" if kind == "swap_out" else "reading")
                sources = pool._device.check_allocated(_as_list(blocks, "blocks"), "blocks")
                new_side = pool._host if kind == "swap_out" else pool._device
                destinations = new_side.allocate(len(sources))
            record = _Job(kind, sources, destinations, self._part_blocks or max(1, len(sources)))
            try:
                if record.parts and (self._part_blocks is None or not self._part_in_flight()):
                    self._launch_next_part(job, record)
            except Exception:
                new_side.free(destinations)  # nothing moved: the new blocks go back
                raise
            self._next_job += 1
            source_side, dest_side = ("host", "device") if kind == "swap_in" else \
                ("device", "host" if kind == "swap_out" else "device")
            for b in sources:
                pool._pending[source_side][b] = (job, kind, "source")
            for b in destinations:
                pool._pending[dest_side][b] = (job, kind, "destination")
            if kind != "fork":
                (pool._host if kind == "swap_in" else pool._device).give_up(sources)
            self._jobs[job] = record
            return job

    def destination(self, job: int) -> List[int]:
        """The new block numbers of a job not reported yet (host blocks for a swap-out, device blocks
        otherwise), in the order of its source blocks."""
        return list(self._record(job).destinations)

    def finished(self) -> List[int]:
        """The jobs that have completed since the last call (and were not waited for), without waiting.
        A job whose copy failed is reported by raising its error (its new blocks are freed, its source
        blocks stay as they were)."""
        self._check_open()
        done = []
        with self._lock:
            for job in list(self._jobs):
                if self._poll(job):
                    done.append(job)
            self._advance()
        return done

    def wait(self, job: int) -> List[int]:
        """Blocks until job has finished; returns its destination blocks (it is then reported)."""
        self._check_open()
        with self._lock:
            record = self._record(job)
            self._wait_record(record)
            self._retire(job, moved=True)
            return list(record.destinations)

    def wait_all(self) -> List[int]:
        """Waits for every job not reported yet; returns them in submission order."""
        self._check_open()
        with self._lock:
            return self._wait_all()

    def close(self) -> None:
        """Waits for the jobs in flight (their moves complete and the pool's books are updated), then
        releases its kernels and their events. Idempotent."""
        if self.closed:
            return
        with self._lock:
            try:
                self._wait_all()
            finally:
                ops, self._ops = self._ops, None
                for op in ops.values():
                    op.primitive._kernel = None  # its ring (the events) goes once no launch holds it
                if self in self.pool._queues:
                    self.pool._queues.remove(self)
                if self._close_hook in self.pool.host_buffer._before_close:
                    self.pool.host_buffer._before_close.remove(self._close_hook)

    # -- internals -------------------------------------------------------------------------------
    def _check_open(self):
        if self.closed:
            raise ValueError("TransferQueue is closed")

    def _record(self, job):
        if isinstance(job, bool) or not isinstance(job, (int, np.integer)):
            raise TypeError(f"job must be an int (a job id from submit), not {type(job).__name__}")
        record = self._jobs.get(int(job))
        if record is None:
            state = "was already reported" if 0 <= job < self._next_job else "was never submitted"
            raise ValueError(f"job {job} is not in flight: it {state}")
        return record

    def _part_in_flight(self):
        """Whether the part launched last (by submit or finished(): parts are paced one at a time) has
        not completed yet (a failed part counts as completed: its job reports the error)."""
        if self._last_part is None or self._last_part[0] not in self._jobs:
            return False
        try:
            return not self._part_done(self._last_part[1])
        except Exception:  # noqa: BLE001  (the part's job raises it when polled or waited for)
            return False

    def _launch_held_back(self):
        """Launches every part not launched yet (the HostBuffer is closing: it waits for them); a job whose
        part fails to launch fails (see _fail). Returns the first such error instead of raising it."""
        error = None
        with self._lock:
            for job, record in list(self._jobs.items()):
                try:
                    self._launch_rest(job, record)
                except Exception as e:  # noqa: BLE001  (every job is launched; the first error is returned)
                    self._fail(job)
                    error = error or e
        return error

    def _advance(self):
        """Launches the next part of the oldest job with parts left, unless a part is in flight."""
        if self._part_in_flight():
            return
        job = next((j for j, r in self._jobs.items() if r.parts), None)
        if job is None:
            return
        try:
            self._launch_next_part(job, self._jobs[job])
        except Exception:
            self._fail(job)
            raise

    def _launch_next_part(self, job, record):
        start, stop = record.parts.pop(0)
        try:
            part = self._launch(record.kind, record.sources[start:stop], record.destinations[start:stop])
        except Exception:
            record.parts.insert(0, (start, stop))
            raise
        record.launched.append(part)
        self._last_part = (job, part)

    def _launch_rest(self, job, record):
        while record.parts:
            self._launch_next_part(job, record)

    def _launch(self, kind, sources, destinations):
        """Launches one part on its transfer stream; returns its TransferTicket."""
        mapping = np.array([sources, destinations], np.int64).T
        _, ticket = self._ops[kind].primitive._submit_transfer(tuple(self.pool.caches), mapping)
        return ticket

    @staticmethod
    def _part_done(part):
        return part.done()

    def _poll(self, job):
        """Whether job has finished (then it is retired), without waiting."""
        record = self._jobs[job]
        try:
            done = not record.parts and all(self._part_done(part) for part in record.launched)
        except Exception:
            self._fail(job)
            raise
        if done:
            self._retire(job, moved=True)
        return done

    def _wait_record(self, record):
        """Launches the parts of the job not launched yet and waits for all of them."""
        job = next(j for j, r in self._jobs.items() if r is record)
        try:
            self._launch_rest(job, record)
            for part in record.launched:
                self._wait_part(part)
        except Exception:
            self._fail(job)
            raise

    @staticmethod
    def _wait_part(part):
        part.wait()

    def _fail(self, job):
        """Retires a failed job once none of its launched parts still writes its new blocks."""
        for part in self._jobs[job].launched:
            try:
                self._wait_part(part)
            except Exception:  # noqa: BLE001, S110  (the job's first error is the one raised)
                pass
        self._retire(job, moved=False)

    def _wait_all(self):
        jobs, error = list(self._jobs), None
        for job in jobs:
            try:
                self._wait_record(self._jobs[job])
                self._retire(job, moved=True)
            except Exception as e:  # noqa: BLE001  (every job is waited for; the first error is raised)
                error = error or e
        if error is not None:
            raise error
        return jobs

    def _retire(self, job, moved):
        """Updates the pool's books for a finished job (moved) or a failed one, and forgets it."""
        record = self._jobs.pop(job)
        pool = self.pool
        kind = record.kind
        source_side, dest_side = ("host", "device") if kind == "swap_in" else \
            ("device", "host" if kind == "swap_out" else "device")
        for b in record.sources:
            pool._pending[source_side].pop(b, None)
        for b in record.destinations:
            pool._pending[dest_side].pop(b, None)
        if kind != "fork":
            (pool._host if kind == "swap_in" else pool._device).given_up(record.sources, moved)
        if not moved:
            (pool._device if kind != "swap_out" else pool._host).free(record.destinations)
        record.launched = []  # (the copies have completed: the reads after the report need no wait)
