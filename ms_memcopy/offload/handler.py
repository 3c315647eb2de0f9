"""OffloadingHandler: vLLM v1's CPU-GPU handler interface over a BlockPool and its TransferQueue."""
import logging
import time
from typing import Any, Dict, Iterable, List, Optional, Tuple

import numpy as np

from .._closing import ClosesOnExit
from ..nn import BlockPool, TransferQueue
from ..ops._args import check_int
from .specs import DEVICE, HOST, TransferResult, checked_block_ids, checked_counts, spec_medium

__all__ = ["OffloadingHandler"]

_log = logging.getLogger("ms_memcopy.offload")


class _Flight:
    __slots__ = ("queue_job", "device", "host", "nbytes", "start", "transfer_type", "order")

    def __init__(self, queue_job, device, host, nbytes, transfer_type, order):
        self.queue_job, self.device, self.host, self.nbytes = queue_job, device, host, nbytes
        self.transfer_type, self.order = transfer_type, order
        self.start = time.perf_counter()

    def result(self, job_id, success):
        """(submission number, TransferResult): results sort in submission order."""
        seconds = time.perf_counter() - self.start
        return self.order, TransferResult(job_id, success, self.nbytes, seconds, self.transfer_type)


class OffloadingHandler(ClosesOnExit):
    """Stores and loads of a BlockPool's blocks at block numbers the caller chooses (vLLM v1's handler shape).

    The interface is that of vLLM v1's CPU-GPU offloading handler; the module docstring has the specs
    and the host block layout.

    ``transfer_async(job_id, (src_spec, dst_spec))`` starts a store (device spec, host spec) or a load
    (host spec, device spec) on the handler's TransferQueue and returns True; ``get_finished()`` returns
    a TransferResult for each job finished since its last call (submission order, each job once);
    ``wait(job_ids)`` blocks until those of job_ids still in flight have finished (ids it does not know
    are ignored, as vLLM's worker passes every id to every handler); their results come with the next
    ``get_finished()``.

    The handler keeps the pool's books: it takes every block of the pool at construction (the pool must
    have none allocated) and vLLM's managers decide which blocks hold what; ``close()`` gives them back.
    Each job is one swap of the TransferQueue (SwapBlocks over every cache), so the pool's ordering rules
    hold: a transfer that touches a block of an earlier transfer still in flight (reads what it writes,
    writes what it reads or writes, or reads the same blocks) waits for it first, so transfers over the
    same blocks run in submission order as vLLM's do. A copy that fails is reported with
    ``success=False`` (its error logged); a failure the queue reports marks every job it retired in the
    same poll failed, which only makes the connector recompute more.

    Args:
        pool (BlockPool): the caches and the host pool; ``pool.num_host_blocks`` must be a multiple of
            block_size_factor.
        block_size_factor (int): device blocks per host block (vLLM's block_size_factor, >= 1).
        part_bytes (int, optional): the TransferQueue's pacing (see TransferQueue).

    Raises:
        TypeError: pool not a BlockPool; (transfer_async) a spec that is not a block spec, block numbers
            that are not ints, a job id that is not an int; (wait) job_ids not iterable.
        ValueError: block_size_factor that does not divide the pool's host blocks, a pool with blocks
            allocated or closed; (transfer_async) a spec pair that is not device/host, block numbers out of
            range or twice as destinations or sources, group_sizes that do not add up to the device
            blocks, block_indices of another length, host blocks too few or too many for the device
            blocks, a job id already in flight or unreported. Nothing is written on an error.

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import mindspore as ms
        >>> from ms_memcopy.nn import BlockPool
        >>> from ms_memcopy.offload import DeviceBlocksSpec, HostBlocksSpec, OffloadingHandler
        >>> pool = BlockPool(num_caches=1, num_blocks=4, num_host_blocks=4, block_shape=(2,), dtype=ms.float32)
        >>> (cache,) = pool.caches
        >>> _ = cache.set_data(ms.Tensor([[0, 1], [2, 3], [4, 5], [6, 7]], ms.float32))
        >>> handler = OffloadingHandler(pool, block_size_factor=2)
        >>> handler.transfer_async(7, (DeviceBlocksSpec([3, 0]), HostBlocksSpec([1])))
        True
        >>> handler.transfer_async(8, (HostBlocksSpec([1]), DeviceBlocksSpec([1, 2])))  # waits for job 7
        True
        >>> handler.wait({8})
        >>> print([(r.job_id, r.success, r.transfer_size) for r in handler.get_finished()])
        [(7, True, 16), (8, True, 16)]
        >>> print(cache.asnumpy().tolist())
        [[0.0, 1.0], [6.0, 7.0], [0.0, 1.0], [6.0, 7.0]]
        >>> handler.close()
        >>> pool.close()
    """

    def __init__(self, pool: BlockPool, block_size_factor: int = 1, *, part_bytes: Optional[int] = None):
        if not isinstance(pool, BlockPool):
            raise TypeError(f"pool must be a BlockPool, not {type(pool).__name__}")
        factor = check_int(block_size_factor, "block_size_factor", 1)
        if pool.num_host_blocks % factor:
            raise ValueError(f"block_size_factor = {factor} must divide the pool's {pool.num_host_blocks} host "
                             f"blocks (a host block holds {factor} of them)")
        if pool.num_free_blocks != pool.num_blocks or pool.num_free_host_blocks != pool.num_host_blocks:
            raise ValueError("pool: the handler keeps the pool's books, so every block of it must be free "
                             f"({pool.num_free_blocks} of {pool.num_blocks} device and "
                             f"{pool.num_free_host_blocks} of {pool.num_host_blocks} host blocks are)")
        self.queue = TransferQueue(pool, part_bytes)  # refuses a closed pool
        self.pool = pool
        self.block_size_factor = factor
        self.num_device_blocks = pool.num_blocks
        self.num_host_blocks = pool.num_host_blocks // factor
        # bytes of one device block over every cache, from the caches themselves
        self.device_block_bytes = sum(int(cache.nbytes) // int(cache.shape[0]) for cache in pool.caches)
        self._flights: Dict[int, Any] = {}  # job id -> _Flight, in submission order
        self._done: List[Any] = []  # (submission number, result) of jobs seen finished, not reported yet
        self._submitted = 0
        self._closed = False
        pool.allocate(pool.num_blocks)
        pool.allocate_host(pool.num_host_blocks)

    @property
    def closed(self) -> bool:
        return self._closed

    def transfer_async(self, job_id: int, spec: Tuple[object, object]) -> bool:
        """Starts a store (device spec, host spec) or a load (host spec, device spec); returns True."""
        self._check_open()
        if isinstance(job_id, bool) or not isinstance(job_id, (int, np.integer)):
            raise TypeError(f"job_id must be an int, not {type(job_id).__name__}")
        job_id = int(job_id)
        if job_id in self._flights or any(r.job_id == job_id for _, r in self._done):
            raise ValueError(f"job_id {job_id} is still in flight or unreported: job ids must be unique")
        if not isinstance(spec, (tuple, list)) or len(spec) != 2:
            raise TypeError(f"spec must be a pair (src_spec, dst_spec), not {type(spec).__name__}")
        media = tuple(spec_medium(s, f"spec[{i}]") for i, s in enumerate(spec))
        if set(media) != {DEVICE, HOST}:
            raise ValueError(f"spec: a transfer goes {DEVICE} -> {HOST} (store) or {HOST} -> {DEVICE} (load), "
                             f"got {media[0]} -> {media[1]}")
        store = media[0] == DEVICE
        d, h = (0, 1) if store else (1, 0)
        device, host = self._pairs(spec[d], spec[h], f"spec[{d}]", f"spec[{h}]")
        sources, destinations = (device, host) if store else (host, device)
        for name, blocks, index in (("sources", sources, 0), ("destinations", destinations, 1)):
            if len(set(blocks)) != len(blocks):
                twice = sorted({b for b in blocks if blocks.count(b) > 1})
                raise ValueError(f"spec[{index}]: {name} given twice (in the pool's device blocks or host "
                                 f"blocks of {self.block_size_factor} per host block): {twice}")
        self._reclaim()
        device_set, host_set = set(device), set(host)
        for other in [j for j, f in self._flights.items() if device_set & f.device or host_set & f.host]:
            self._wait_one(other)
        return self._submit(job_id, store, sources, destinations, device_set, host_set)

    def get_finished(self) -> List[TransferResult]:
        """The jobs finished since the last call (and those wait() saw finish), in submission order."""
        self._check_open()
        failed = False
        try:
            self.queue.finished()
        except Exception:  # noqa: BLE001  (the failed job is reported with success=False)
            _log.exception("ms_memcopy OffloadingHandler: a transfer failed")
            failed = True
        pending = set(self.queue.pending)
        for job_id in [j for j, f in self._flights.items() if f.queue_job not in pending]:
            self._done.append(self._flights.pop(job_id).result(job_id, not failed))
        self._reclaim()
        done, self._done = sorted(self._done), []
        return [result for _, result in done]

    def wait(self, job_ids: Iterable[int]) -> None:
        """Blocks until the jobs of job_ids still in flight have finished (unknown ids are ignored)."""
        self._check_open()
        if isinstance(job_ids, (str, bytes)) or not hasattr(job_ids, "__iter__"):
            raise TypeError(f"job_ids must be a set of job ids, not {type(job_ids).__name__}")
        wanted = {int(j) for j in job_ids if isinstance(j, (int, np.integer)) and not isinstance(j, bool)}
        for job_id in [j for j in self._flights if j in wanted]:
            self._wait_one(job_id)

    def close(self) -> None:
        """Waits for the transfers in flight (their results are dropped), closes the queue and gives the
        pool's blocks back. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            self.queue.close()
        finally:
            self._flights.clear()
            self._done.clear()
            self._reclaim()
            self.pool.free(list(range(self.pool.num_blocks)))
            self.pool.free_host(list(range(self.pool.num_host_blocks)))

    shutdown = close  # vLLM's name

    # -- internals -------------------------------------------------------------------------------
    def _check_open(self):
        if self._closed:
            raise ValueError("OffloadingHandler is closed")

    def _pairs(self, device_spec, host_spec, device_arg, host_arg):
        """The pool's device blocks and host blocks of a transfer, pair by pair, in the device spec's order."""
        device = checked_block_ids(device_spec, device_arg, self.num_device_blocks, "device")
        host = checked_block_ids(host_spec, host_arg, self.num_host_blocks, "host")
        sizes = checked_counts(getattr(device_spec, "group_sizes", None), f"{device_arg}.group_sizes")
        if sizes is None:
            sizes = [len(device)]
        elif sum(sizes) != len(device):
            raise ValueError(f"{device_arg}.group_sizes = {sizes} add up to {sum(sizes)}, not to the "
                             f"{len(device)} block_ids")
        starts = checked_counts(getattr(device_spec, "block_indices", None), f"{device_arg}.block_indices")
        if starts is None:
            starts = [0] * len(sizes)
        elif len(starts) != len(sizes):
            raise ValueError(f"{device_arg}.block_indices has {len(starts)} values for {len(sizes)} groups")
        factor, slots, used = self.block_size_factor, [], 0
        for size, start in zip(sizes, starts):
            if size == 0:
                continue
            logical = start % factor + np.arange(size)
            count = int(logical[-1]) // factor + 1
            group_hosts = host[used:used + count]
            if len(group_hosts) == count:
                slots.extend((group_hosts[logical // factor] * factor + logical % factor).tolist())
            used += count
        if used != len(host):
            raise ValueError(f"{host_arg}.block_ids: the {len(device)} device blocks need {used} host blocks of "
                             f"{factor} device blocks each (group_sizes {sizes}, block_indices {starts}), "
                             f"got {len(host)}")
        return device.tolist(), slots

    def _submit(self, job_id, store, sources, destinations, device_set, host_set):
        """One swap of the queue writing exactly destinations: the pool hands out its lowest free blocks
        first, so with only these free (the handler holds all others) the swap's new blocks are these,
        sorted; the sources go in the same order."""
        order = sorted(range(len(sources)), key=destinations.__getitem__)
        sources = [sources[i] for i in order]
        destinations = [destinations[i] for i in order]
        (self.pool.free_host if store else self.pool.free)(destinations)
        try:
            queue_job = self.queue.submit("swap_out" if store else "swap_in", sources)
        except Exception:
            self._reclaim()  # nothing moved: the freed destinations are the handler's again
            raise
        given = self.queue.destination(queue_job)
        if given != destinations:  # a pool that hands out blocks in another order: a bug, not an input mistake
            self.queue.wait(queue_job)
            self._reclaim()
            raise RuntimeError(f"OffloadingHandler: the pool gave job {job_id} blocks {given} instead of "
                               f"{destinations} (they were written)")
        self._flights[job_id] = _Flight(queue_job, device_set, host_set, len(sources) * self.device_block_bytes,
                                        (DEVICE, HOST) if store else (HOST, DEVICE), self._submitted)
        self._submitted += 1
        return True

    def _wait_one(self, job_id):
        flight = self._flights.pop(job_id)
        try:
            self.queue.wait(flight.queue_job)
            success = True
        except Exception:  # noqa: BLE001  (reported with success=False)
            _log.exception("ms_memcopy OffloadingHandler: transfer %d failed", job_id)
            success = False
        self._done.append(flight.result(job_id, success))
        self._reclaim()

    def _reclaim(self):
        """Takes back the blocks the queue freed (a store's device blocks, a load's host blocks, a failed
        job's new blocks): the handler holds every block of the pool between its calls."""
        if self.pool.num_free_blocks:
            self.pool.allocate(self.pool.num_free_blocks)
        if self.pool.num_free_host_blocks:
            self.pool.allocate_host(self.pool.num_free_host_blocks)
