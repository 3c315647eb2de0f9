"""Cells built on the primitives.

BlockPool: a paged cache (vLLM's block manager): L device caches held as Parameters, a host pool in a
HostBuffer, block numbers handed out and taken back, and swap-out / swap-in / fork built on
SwapBlocks and CopyBlocks (in place, one batch call per 4096 block copies).

    pool = BlockPool(num_caches=2, num_blocks=64, num_host_blocks=128, block_shape=(16, 128), dtype=ms.float16)
    k_cache, v_cache = pool.caches          # Parameters [64, 16, 128]: give them to the model
    table = pool.allocate(4)                # device block numbers of a sequence
    host_table = pool.swap_out(table)       # preempt: blocks to the host pool, device blocks freed
    table = pool.swap_in(host_table)        # resume: new device blocks, host blocks freed
    child = pool.fork(table)                # copies of the blocks in new device blocks

TransferQueue: the same moves without waiting for them, on a stream of their own (not the model's);
the pool keeps the blocks of a job in flight from being read or reused until it has finished.

    queue = TransferQueue(pool)
    job = queue.submit("swap_out", table)   # returns at once; the device blocks are free once it finishes
    host_table = queue.destination(job)     # the new block numbers, known at once
    ...                                     # the model decodes meanwhile
    done = queue.finished()                 # the jobs completed since the last call, without waiting
    queue.wait(job)                         # or block until one has finished

BlockSlots / SwapOutBlocks / SwapInBlocks: fixed-size blocks as separate tensors (KV-cache offload,
activation offload) kept in numbered slots of a HostBuffer instead of byte offsets.

    store = BlockSlots(buf, block_shape=(16, 128), dtype=ms.float16)     # slots of one block each
    swap_out = SwapOutBlocks(store, num_blocks=4)
    swap_in = SwapInBlocks(store, num_blocks=4)
    swap_out(b0, b1, b2, b3, slots)      # slots: int64 tensor of 4 slot numbers
    b0, b1, b2, b3 = swap_in(slots)

A slot outside the buffer, or the same slot twice in one swap-out, is MemcpyBatch's bad-offset error
(the byte offset is slot * block bytes).
"""
import threading
import weakref
from typing import List, Optional, Sequence

import numpy as np
import mindspore as ms
from mindspore import nn, ops

from .. import runtime
from ..host_buffer import HostBuffer, _ensure_current_context
from ..ops import CopyBlocks, MemcpyBatch, SwapBlocks
from ..ops._args import check_host_buffer, check_int, check_shape, num_elements
from ..ops._dtypes import DtypeLike, itemsize, ms_dtype


__all__ = ["BlockPool", "OutOfBlocks", "TransferQueue", "TransferPending", "BlockSlots", "SwapOutBlocks",
           "SwapInBlocks"]


class OutOfBlocks(RuntimeError):
    """A BlockPool has fewer free blocks than asked for (nothing was allocated).

    Args:
        message (str): what was asked for and what is free.

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import mindspore as ms
        >>> from ms_memcopy.nn import BlockPool, OutOfBlocks
        >>> pool = BlockPool(num_caches=1, num_blocks=2, num_host_blocks=0, block_shape=(4,), dtype=ms.int8)
        >>> try:
        ...     pool.allocate(3)
        ... except OutOfBlocks as error:
        ...     print(error)
        3 device block(s) asked for, 2 of 2 free
        >>> pool.close()
    """


class TransferPending(RuntimeError):
    """Blocks of a TransferQueue job still in flight were to be read, written, moved or freed (nothing was done).

    The blocks a swap-in or fork writes cannot be read, and the blocks a swap-out or swap-in gives up
    cannot be handed out again, until the job has finished: ``wait(job)`` on the queue, or poll
    ``finished()`` until it lists the job.

    Args:
        message (str): the blocks, the job and what to do.

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import mindspore as ms
        >>> from ms_memcopy.nn import BlockPool, TransferPending, TransferQueue
        >>> pool = BlockPool(num_caches=1, num_blocks=2, num_host_blocks=2, block_shape=(4,), dtype=ms.int8)
        >>> queue = TransferQueue(pool)
        >>> job = queue.submit("swap_in", pool.swap_out(pool.allocate(1)))
        >>> try:
        ...     pool.check_readable(queue.destination(job))
        ... except TransferPending as error:
        ...     print(str(error).split(":")[0], "->", "wait(0)" in str(error))
        blocks -> True
        >>> print(queue.wait(job))
        [0]
        >>> pool.close()
    """


class _BlockNumbers:
    """The free and allocated block numbers of one side of a pool; lowest numbers are handed out first."""

    def __init__(self, count, side):
        self.count = count
        self.side = side
        self._free = list(range(count - 1, -1, -1))
        self._allocated = set()

    @property
    def num_free(self):
        return len(self._free)

    def allocate(self, n):
        n = check_int(n, "n")
        if n > len(self._free):
            raise OutOfBlocks(f"{n} {self.side} block(s) asked for, {len(self._free)} of {self.count} free")
        blocks = [self._free.pop() for _ in range(n)]
        self._allocated.update(blocks)
        return blocks

    def check_allocated(self, blocks, argument):
        blocks = [check_int(b, argument) for b in blocks]
        if len(set(blocks)) != len(blocks):
            raise ValueError(f"{argument}: a {self.side} block appears twice in {blocks}")
        stray = [b for b in blocks if b not in self._allocated]
        if stray:
            raise ValueError(f"{argument}: {self.side} block(s) {stray} are not allocated")
        return blocks

    def free(self, blocks, argument="blocks"):
        blocks = self.check_allocated(blocks, argument)
        self._allocated.difference_update(blocks)
        self._free_now(blocks)

    def _free_now(self, blocks):
        self._free.extend(blocks)
        self._free.sort(reverse=True)

    # A job in flight gives blocks up: they leave the allocated set at once, and join the free list when
    # the job has finished (or go back to the allocated set when it failed).
    def give_up(self, blocks):
        self._allocated.difference_update(blocks)

    def given_up(self, blocks, moved):
        if moved:
            self._free_now(blocks)
        else:
            self._allocated.update(blocks)


class BlockPool(nn.Cell):
    """A paged cache with swap-out, swap-in and fork, handing out block numbers as vLLM's block manager does.

    L device caches of num_blocks blocks each, and a host pool of num_host_blocks blocks per cache.

    ``caches`` are Parameters of shape ``[num_blocks, *block_shape]`` (one per cache, e.g. key and
    value of every layer): give them to the model, which writes them in place (for example with
    ``Memcpy2D("write")``). The host pool is a HostBuffer in SwapBlocks' layout (host cache l after
    host cache l - 1). A block number refers to the same block of every cache.

    ``allocate``/``free`` manage device block numbers; ``swap_out(blocks)`` moves blocks to newly
    allocated host blocks and frees them on the device, ``swap_in(host_blocks)`` the reverse,
    ``fork(blocks)`` copies blocks into newly allocated device blocks. Each returns the new block
    numbers in the order of its argument. The copies run eagerly, in one SwapBlocks or CopyBlocks
    call, in place; bad block numbers raise ValueError before any copy, and a pool without enough
    free blocks raises OutOfBlocks with nothing allocated or moved. A :class:`TransferQueue` over the
    pool makes the same moves without waiting for them; meanwhile the pool refuses (TransferPending)
    to read, move, free or hand out the blocks of its jobs in flight (``check_readable`` and
    ``check_writable`` check a block table before a model step).

    Args:
        num_caches (int): L, the device caches (>= 1).
        num_blocks (int): the blocks of each device cache (>= 1).
        num_host_blocks (int): the blocks of each host cache (>= 0).
        block_shape (tuple[int]): the shape of one block.
        dtype (mindspore.dtype): the caches' dtype.
        pinned (bool): page-locked host pool (default) or pageable memory.
        name (str): the prefix of the caches' Parameter names.

    Inputs:
        None: a BlockPool is not called; its methods move blocks eagerly.

    Outputs:
        None.

    Raises:
        TypeError: an argument of the wrong type, an unsupported dtype.
        ValueError: a count out of range, an empty block, a block number that is not allocated or
            appears twice in one call.
        OutOfBlocks: fewer free blocks than asked for.

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import numpy as np
        >>> import mindspore as ms
        >>> from ms_memcopy.nn import BlockPool
        >>> pool = BlockPool(num_caches=2, num_blocks=4, num_host_blocks=4, block_shape=(2,), dtype=ms.float32)
        >>> k_cache, v_cache = pool.caches
        >>> _ = k_cache.set_data(ms.Tensor(np.arange(8, dtype=np.float32).reshape(4, 2)))
        >>> table = pool.allocate(2)
        >>> host_table = pool.swap_out(table)
        >>> print(table, host_table, pool.num_free_blocks)
        [0, 1] [0, 1] 4
        >>> table = pool.swap_in(host_table)
        >>> print(table, k_cache.asnumpy()[table].tolist())
        [0, 1] [[0.0, 1.0], [2.0, 3.0]]
        >>> print(pool.fork(table), pool.num_free_blocks)
        [2, 3] 0
        >>> pool.close()
    """

    def __init__(self, num_caches: int, num_blocks: int, num_host_blocks: int, block_shape: Sequence[int],
                 dtype: DtypeLike, *, pinned: bool = True, name: str = "block_pool"):
        super().__init__()
        self.num_caches = check_int(num_caches, "num_caches", 1)
        self.block_shape = check_shape(block_shape, "block_shape")
        self.dtype = ms_dtype(dtype, "dtype")
        self.block_bytes = num_elements(self.block_shape) * itemsize(self.dtype)
        if self.block_bytes == 0:
            raise ValueError("block_shape must hold at least one element")
        self._device = _BlockNumbers(check_int(num_blocks, "num_blocks", 1), "device")
        self._host = _BlockNumbers(check_int(num_host_blocks, "num_host_blocks"), "host")
        self.caches = ms.ParameterTuple(
            ms.Parameter(ops.zeros((num_blocks, *self.block_shape), self.dtype), name=f"{name}.cache{l}")
            for l in range(self.num_caches))
        self.host_buffer = HostBuffer(max(1, self.num_caches * num_host_blocks * self.block_bytes), pinned=pinned)
        self._swap_out = SwapBlocks("d2h", self.host_buffer, num_caches=self.num_caches)
        self._swap_in = SwapBlocks("h2d", self.host_buffer, num_caches=self.num_caches)
        self._copy = CopyBlocks(num_caches=self.num_caches)
        # The blocks of TransferQueue jobs in flight, per side: block -> (job, kind, role), role
        # "source" or "destination"; and the queues to close with the pool.
        self._pending = {"device": {}, "host": {}}
        self._queues = []

    @property
    def num_blocks(self):
        return self._device.count

    @property
    def num_host_blocks(self):
        return self._host.count

    @property
    def num_free_blocks(self):
        return self._device.num_free

    @property
    def num_free_host_blocks(self):
        return self._host.num_free

    def allocate(self, n):
        """n free device block numbers (OutOfBlocks when fewer are free)."""
        return self._device.allocate(n)

    def free(self, blocks):
        """Gives device blocks back (ValueError for a block that is not allocated, TransferPending for one
        a TransferQueue job in flight reads or writes)."""
        self._check_pending("device", blocks, "blocks", "freeing")
        self._device.free(blocks)

    def free_host(self, host_blocks):
        """Gives host blocks back, e.g. of a swapped-out sequence that was dropped."""
        self._check_pending("host", host_blocks, "host_blocks", "freeing")
        self._host.free(host_blocks, "host_blocks")

    def check_readable(self, blocks):
        """Checks that the model may read these device blocks now: allocated (ValueError) and not written
        by a TransferQueue job in flight (TransferPending naming the job: ``wait(job)`` first). Returns the
        block numbers as a list of ints. A scheduler calls it on a sequence's block table before a step.

        Examples:
            >>> import mindspore as ms
            >>> from ms_memcopy.nn import BlockPool
            >>> pool = BlockPool(num_caches=1, num_blocks=4, num_host_blocks=0, block_shape=(2,), dtype=ms.int8)
            >>> print(pool.check_readable(pool.allocate(2)))
            [0, 1]
            >>> pool.close()
        """
        self._check_pending("device", blocks, "blocks", "reading")
        return self._device.check_allocated(_as_list(blocks, "blocks"), "blocks")

    def check_writable(self, blocks):
        """As :meth:`check_readable`, for blocks the model writes: not read or written by a job in flight
        (a fork's source blocks are read until the fork has finished)."""
        self._check_pending("device", blocks, "blocks", "writing")
        return self._device.check_allocated(_as_list(blocks, "blocks"), "blocks")

    def _check_pending(self, side, blocks, argument, action):
        """TransferPending when a job in flight holds one of blocks: for "reading", a block it writes;
        for any other action, a block it reads or writes."""
        pending = self._pending[side]
        if not pending:
            return
        held = {}
        for b in _as_list(blocks, argument):
            entry = pending.get(b) if isinstance(b, int) else None
            if entry is not None and (action != "reading" or entry[2] == "destination"):
                held.setdefault(entry, []).append(b)
        if not held:
            return
        (job, kind, role), numbers = next(iter(held.items()))
        if role == "destination":
            what = f"written by {kind} job {job}"
        elif kind == "fork":
            what = f"read by fork job {job}"
        else:
            what = f"being moved out by {kind} job {job} (free again once it finishes)"
        raise TransferPending(f"{argument}: {side} block(s) {numbers} are {what}, still in flight: call "
                              f"wait({job}) on the TransferQueue (or poll finished() until it lists job {job}) "
                              f"before {action} them")

    def allocate_host(self, n):
        """n free host block numbers (OutOfBlocks when fewer are free), for swaps a graph makes itself
        with SwapBlocks on ``pool.host_buffer`` (``swap_out``/``swap_in`` allocate their own).

        Examples:
            >>> import numpy as np
            >>> import mindspore as ms
            >>> from mindspore import nn
            >>> from ms_memcopy.nn import BlockPool
            >>> from ms_memcopy.ops import SwapBlocks
            >>> pool = BlockPool(num_caches=1, num_blocks=4, num_host_blocks=2, block_shape=(2,), dtype=ms.float32)
            >>> (cache,) = pool.caches
            >>> _ = cache.set_data(ms.Tensor(np.arange(8, dtype=np.float32).reshape(4, 2)))
            >>> class SwapOutStep(nn.Cell):  # a graph step that swaps blocks out itself
            ...     def __init__(self, pool):
            ...         super().__init__()
            ...         self.cache = pool.caches[0]
            ...         self.swap_out = SwapBlocks("d2h", pool.host_buffer, num_caches=1)
            ...     def construct(self, mapping):
            ...         return self.swap_out(self.cache, mapping)
            >>> blocks, host_blocks = pool.allocate(2), pool.allocate_host(2)
            >>> mapping = ms.Tensor(np.array(list(zip(blocks, host_blocks)), np.int64))
            >>> print(SwapOutStep(pool)(mapping))
            [16]
            >>> print(pool.host_buffer.numpy(np.float32)[:4])
            [0. 1. 2. 3.]
            >>> pool.free(blocks)
            >>> pool.free_host(host_blocks)
            >>> pool.close()
        """
        return self._host.allocate(n)

    def swap_out(self, blocks):
        """Moves device blocks to new host blocks (returned, in order) and frees the device blocks."""
        self._check_pending("device", blocks, "blocks", "moving")
        blocks = self._device.check_allocated(blocks, "blocks")
        host_blocks = self._host.allocate(len(blocks))
        self._move(self._swap_out, blocks, host_blocks, self._host, host_blocks)
        self._device.free(blocks)
        return host_blocks

    def swap_in(self, host_blocks):
        """Moves host blocks into new device blocks (returned, in order) and frees the host blocks."""
        self._check_pending("host", host_blocks, "host_blocks", "moving")
        host_blocks = self._host.check_allocated(host_blocks, "host_blocks")
        blocks = self._device.allocate(len(host_blocks))
        self._move(self._swap_in, host_blocks, blocks, self._device, blocks)
        self._host.free(host_blocks, "host_blocks")
        return blocks

    def fork(self, blocks):
        """Copies device blocks into new device blocks (returned, in order): a sequence's fork."""
        self._check_pending("device", blocks, "blocks", "reading")
        blocks = self._device.check_allocated(blocks, "blocks")
        new_blocks = self._device.allocate(len(blocks))
        self._move(self._copy, blocks, new_blocks, self._device, new_blocks)
        return new_blocks

    def _move(self, op, sources, destinations, side, allocated):
        if not sources:
            return
        mapping = np.array([sources, destinations], np.int64).T
        try:
            op(*self.caches, mapping)
        except Exception:
            side.free(allocated)  # nothing moved: the new blocks go back
            raise

    def close(self):
        """Waits for the jobs of its TransferQueues still in flight, then releases the host pool (the
        device caches go with the Cell)."""
        queues, self._queues = self._queues, []
        try:
            for queue in queues:
                queue.close()
        finally:
            self.host_buffer.close()


def _as_list(blocks, argument):
    """blocks as a list (TypeError naming argument for something that is not a sequence of block numbers)."""
    if isinstance(blocks, (str, bytes)) or not hasattr(blocks, "__iter__"):
        raise TypeError(f"{argument} must be a sequence of block numbers, not {type(blocks).__name__}")
    return [int(b) if isinstance(b, np.integer) else b for b in blocks]


class _Target:
    """Where a TransferQueue's primitive launches (CPU target): the queue's stream and the job's event;
    the launch (an AsyncLaunch) is filled in by the call (None when the call ran synchronously)."""

    __slots__ = ("stream", "event", "launch")

    def __init__(self, stream, event):
        self.stream, self.event, self.launch = stream, event, None


class _Job:
    __slots__ = ("kind", "sources", "destinations", "parts", "launched")

    def __init__(self, kind, sources, destinations, part_blocks):
        self.kind, self.sources, self.destinations = kind, sources, destinations
        # (start, stop) ranges of sources not launched yet, in order
        self.parts = [(i, min(i + part_blocks, len(sources))) for i in range(0, len(sources), part_blocks)]
        # the launched parts, in order: a _Target each (CPU target) or the mindspore.runtime.Event
        # recorded after the part's copy (Ascend)
        self.launched = []


class TransferQueue:
    """Swap-outs, swap-ins and forks of a BlockPool that run on a stream of their own while the model computes.

    ``submit(kind, blocks)`` starts one move and returns its job id (an int) at once: ``"swap_out"``
    (device blocks to new host blocks), ``"swap_in"`` (host blocks to new device blocks) or ``"fork"``
    (device blocks copied into new device blocks), each one SwapBlocks or CopyBlocks call over every
    cache as BlockPool's methods of the same names make. The new block numbers are allocated at once:
    ``destination(job)``. ``finished()`` returns the jobs completed since its last call without waiting
    (submission order); ``wait(job)`` blocks until one has finished and returns its destination blocks.
    A job is reported once, by whichever of the two sees it finished first. ``pending`` lists the jobs
    not reported yet, ``wait_all()`` waits for them all.

    Ordering: the copies run on the queue's stream, never the model's: on the CPU target a stream of
    the host ACL runtime (its own thread), the launch queued in MindSpore's queue after the ops before
    it; on Ascend a ``mindspore.runtime.Stream`` that waits for an event recorded on the model's stream
    (so the copy reads what was written before the submit), whose own event the model's stream waits
    for when the job is reported. Until a job has finished, the pool refuses (TransferPending, naming
    the job) to read or move the blocks it writes (``check_readable``, ``swap_out``, ``fork``, a later
    submit), and to hand out again, free or move the blocks it gives up or reads: a swap-out's device
    blocks become free, and a swap-in's host blocks, only when it has finished.
    ``close()`` (and ``BlockPool.close()``, and a ``HostBuffer.close()`` of the pool's buffer) waits for
    the jobs in flight: nothing is lost. The queue is used from Python (PYNATIVE_MODE or GRAPH_MODE
    around compiled steps), not inside a graph.

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
        >>> import numpy as np
        >>> import mindspore as ms
        >>> from ms_memcopy.nn import BlockPool, TransferQueue
        >>> pool = BlockPool(num_caches=1, num_blocks=4, num_host_blocks=4, block_shape=(2,), dtype=ms.float32)
        >>> (cache,) = pool.caches
        >>> _ = cache.set_data(ms.Tensor(np.arange(8, dtype=np.float32).reshape(4, 2)))
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
        bytes_per_block = pool.num_caches * pool.block_bytes
        self._part_blocks = None if part_bytes is None else max(1, self.part_bytes // bytes_per_block)
        self._ascend = ms.get_context("device_target") == "Ascend"
        num_caches = pool.num_caches
        self._ops = {"swap_out": SwapBlocks("d2h", pool.host_buffer, num_caches=num_caches),
                     "swap_in": SwapBlocks("h2d", pool.host_buffer, num_caches=num_caches),
                     "fork": CopyBlocks(num_caches=num_caches)}
        if self._ascend:
            self._stream = ms.runtime.Stream()
        else:
            _ensure_current_context(runtime)
            self._stream = runtime.create_stream()
        self._jobs = {}  # job id -> _Job, in submission order, until reported
        self._next_job = 0
        self._last_part = None  # (job, launched part) of the part launched last
        self._lock = threading.Lock()
        pool._queues.append(self)
        self._close_hook = weakref.WeakMethod(self._launch_held_back)
        pool.host_buffer._before_close.append(self._close_hook)

    @property
    def closed(self):
        return self._stream is None

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
        releases the stream. Idempotent."""
        if self.closed:
            return
        with self._lock:
            try:
                self._wait_all()
            finally:
                stream, self._stream = self._stream, None
                if not self._ascend:
                    runtime.destroy_stream(stream)
                if self in self.pool._queues:
                    self.pool._queues.remove(self)
                if self._close_hook in self.pool.host_buffer._before_close:
                    self.pool.host_buffer._before_close.remove(self._close_hook)

    def __enter__(self):
        self._check_open()
        return self

    def __exit__(self, *exc):
        self.close()

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
        """Launches one part on the queue's stream; returns its handle (see _Job.launched)."""
        op = self._ops[kind]
        mapping = np.array([sources, destinations], np.int64).T
        if self._ascend:
            model = ms.runtime.current_stream()
            written = ms.runtime.Event()
            written.record(model)  # the copy reads what the model wrote before the launch
            self._stream.wait_event(written)
            with ms.runtime.StreamCtx(self._stream):
                op(*self.pool.caches, mapping)
                done = ms.runtime.Event()
                done.record(self._stream)
            return done
        _ensure_current_context(runtime)
        target = _Target(self._stream, runtime.create_event())
        primitive = op.primitive
        primitive._transfer_target = target
        try:
            op(*self.pool.caches, mapping)
        except Exception:
            runtime.destroy_event(target.event)
            raise
        finally:
            primitive._transfer_target = None
        return target

    def _part_done(self, part):
        if self._ascend:
            return part.query()
        return part.launch is None or part.launch.done()  # None: the call ran synchronously

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

    def _wait_part(self, part):
        if self._ascend:
            part.synchronize()
        elif part.launch is not None:
            part.launch.wait()

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
        for part in record.launched:
            if self._ascend:
                ms.runtime.current_stream().wait_event(part)  # the model's reads come after
            else:
                part.launch = None  # lets the launch's tensors go (done() or wait() already did)
                runtime.destroy_event(part.event)
        record.launched = []


class BlockSlots:
    """A HostBuffer divided into slots holding one block (block_shape, dtype) each.

    Slot i starts at byte ``i * block_bytes``; ``num_slots`` is how many whole blocks fit.

    Args:
        host_buffer (HostBuffer): the host memory.
        block_shape (tuple[int]): the shape of one block.
        dtype (mindspore.dtype): the blocks' dtype.

    Raises:
        TypeError: host_buffer not a HostBuffer, an unsupported dtype, a block_shape not of ints.
        ValueError: an empty block, a closed HostBuffer.

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import mindspore as ms
        >>> from ms_memcopy import HostBuffer
        >>> from ms_memcopy.nn import BlockSlots
        >>> with HostBuffer(64) as buf:
        ...     slots = BlockSlots(buf, block_shape=(2, 2), dtype=ms.float32)
        ...     print(slots.num_slots, slots.block_bytes)
        4 16
    """

    def __init__(self, host_buffer: HostBuffer, block_shape: Sequence[int], dtype: DtypeLike):
        self.host_buffer = check_host_buffer(host_buffer)
        self.block_shape = tuple(check_int(d, "block_shape") for d in block_shape)
        self.dtype = ms_dtype(dtype, "dtype")
        self.block_bytes = num_elements(self.block_shape) * itemsize(self.dtype)
        if self.block_bytes == 0:
            raise ValueError("block_shape must hold at least one element")
        self.num_slots = host_buffer.nbytes // self.block_bytes


class SwapOutBlocks(nn.Cell):
    """Writes n blocks into slots of a BlockSlots with one MemcpyBatch("d2h").

    ``nbytes = op(block_0, ..., block_{n-1}, slots)`` writes block i into slot ``slots[i]``.

    Args:
        slots (BlockSlots): the slots written.
        num_blocks (int): n, the blocks of each call (>= 1).

    Inputs:
        - **block_0, ..., block_{n-1}** (Tensor) - blocks of the slots' shape and dtype.
        - **slots** (Tensor) - int64, n values: the slot of each block.

    Outputs:
        An int64 Tensor of shape (n,): the bytes written per block.

    Raises:
        TypeError: slots not int64, a block of an unsupported dtype.
        ValueError: a slot outside the HostBuffer, the same slot twice (MemcpyBatch's offset errors,
            the byte offset being ``slot * block_bytes``); nothing is copied.

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import numpy as np
        >>> import mindspore as ms
        >>> from ms_memcopy import HostBuffer
        >>> from ms_memcopy.nn import BlockSlots, SwapOutBlocks
        >>> buf = HostBuffer(64)
        >>> swap_out = SwapOutBlocks(BlockSlots(buf, block_shape=(2,), dtype=ms.int32), num_blocks=2)
        >>> print(swap_out(ms.Tensor([1, 2], ms.int32), ms.Tensor([3, 4], ms.int32), ms.Tensor([5, 0], ms.int64)))
        [8 8]
        >>> print(buf.numpy(np.int32)[[0, 1, 10, 11]])
        [3 4 1 2]
        >>> buf.close()
    """

    def __init__(self, slots: BlockSlots, num_blocks: int):
        super().__init__()
        self.slots = slots
        self.write = MemcpyBatch("d2h", slots.host_buffer, num_tensors=check_int(num_blocks, "num_blocks", 1))
        self.block_bytes = ms.Tensor(slots.block_bytes, ms.int64)

    def construct(self, *args):
        return self.write(*args[:-1], ops.mul(args[-1], self.block_bytes))


class SwapInBlocks(nn.Cell):
    """Reads n blocks from slots of a BlockSlots with one MemcpyBatch("h2d").

    ``(block_0, ..., block_{n-1}) = op(slots)`` reads slot ``slots[i]`` into new block i.

    Args:
        slots (BlockSlots): the slots read.
        num_blocks (int): n, the blocks of each call (>= 1).

    Inputs:
        - **slots** (Tensor) - int64, n values: the slot of each block.

    Outputs:
        A tuple of n new Tensors of the slots' block shape and dtype.

    Raises:
        TypeError: slots not int64.
        ValueError: a slot outside the HostBuffer (MemcpyBatch's offset error); nothing is copied.

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import numpy as np
        >>> import mindspore as ms
        >>> from ms_memcopy import HostBuffer
        >>> from ms_memcopy.nn import BlockSlots, SwapInBlocks
        >>> buf = HostBuffer(32)
        >>> buf.numpy(np.int32)[:] = np.arange(8)
        >>> swap_in = SwapInBlocks(BlockSlots(buf, block_shape=(2,), dtype=ms.int32), num_blocks=2)
        >>> a, b = swap_in(ms.Tensor([3, 1], ms.int64))
        >>> print(a, b)
        [6 7] [2 3]
        >>> buf.close()
    """

    def __init__(self, slots: BlockSlots, num_blocks: int):
        super().__init__()
        num_blocks = check_int(num_blocks, "num_blocks", 1)
        self.read = MemcpyBatch("h2d", slots.host_buffer, shapes=[slots.block_shape] * num_blocks,
                                dtypes=[slots.dtype] * num_blocks)
        self.block_bytes = ms.Tensor(slots.block_bytes, ms.int64)

    def construct(self, slots):
        return self.read(ops.mul(slots, self.block_bytes))
