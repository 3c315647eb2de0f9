"""--overlap graph of examples/paged_kv_cache.py: the swaps issued inside the compiled decode step.

TransferStep is the decode step with the swaps in the same graph: it waits on the swap-out and swap-in
lanes for the parts the step before issued (WaitTransfer, taking that step's tokens), then queues this
step's parts on the transfer streams (SwapBlocksAsync d2h and h2d) and returns their tokens. The layers
read the caches after the waits (their block table depends on the waits' outputs), so the waits are
the last thing before layer 0, the first layer that reads a block.

GraphTransfers has the TransferQueue methods the overlapped scheduler uses (submit, destination,
finished, wait, wait_all, close), over the same BlockPool. A swap moves only inside the steps, one part
per lane and step (pacing, as the queue's parts), so a part overlaps the step that issued it and the
host's work up to the next step. Whether a part is done follows from the step count alone (the step
after it waited for it), never from timing: every rank of a tensor-parallel run makes the same moves.
wait(job) outside a step issues what is left of its lane's jobs at once (eagerly, the same asynchronous
ops) and waits for it. A fork is one CopyBlocksAsync queued at submit and waited for by wait(job).
"""
from collections import deque
from dataclasses import dataclass
from typing import List

import numpy as np

import mindspore as ms
from mindspore import nn, ops

from ms_memcopy.ops import CopyBlocksAsync, SwapBlocksAsync, WaitTransfer, wait_transfers
from .model import int64
from .scheduler import Engine, OverlapEngine

#: job kind -> transfer lane (WaitTransfer's name for it); the steps carry the swaps, forks are eager
LANES = {"swap_out": "d2h", "swap_in": "h2d", "fork": "copy"}
STEP_LANES = ("swap_out", "swap_in")
NO_PART = np.zeros((0, 2), np.int64)


class TransferStep(nn.Cell):
    """step (a DecodeStep over pool.caches) with this step's swap parts queued in the same graph:
    (x, pos, row, table, swap-out part, swap-in part, the previous step's two tokens) -> (x, two tokens).
    A part is a block mapping of 0 or part_blocks pairs: MindSpore compiles one graph per combination
    (4), the warm-up all of them (a dynamic first dimension is refused by the variadic caches input)."""

    def __init__(self, step, pool):
        super().__init__()
        self.step = step
        n = pool.num_caches
        self.swap_out = SwapBlocksAsync("d2h", pool.host_buffer, num_caches=n, host_layout=pool.host_layout)
        self.swap_in = SwapBlocksAsync("h2d", pool.host_buffer, num_caches=n, host_layout=pool.host_layout)
        self.out_done = WaitTransfer(num_tensors=n, lane="d2h")
        self.in_done = WaitTransfer(num_tensors=n, lane="h2d")

    def construct(self, x, pos, row, table, out_part, in_part, out_token, in_token):
        caches = self.step.caches
        # The previous step's parts: a swap-out's sources may be given back and a swap-in's destinations
        # read once the step after them has waited for them.
        out_done = self.out_done(*caches, out_token)
        in_done = self.in_done(*caches, in_token)
        out_token = self.swap_out(*caches, out_part)
        in_token = self.swap_in(*caches, in_part)
        # the layers gather the caches through the table: after the waits
        table = ops.depend(table, out_done + in_done)
        return self.step(x, pos, row, table), out_token, in_token


@dataclass
class _Job:
    job_id: int
    kind: str
    sources: List[int]
    destinations: List[int]
    parts: deque                     # mappings not yet issued
    unconfirmed: int = 0             # parts issued that no later wait has covered yet
    done: bool = False
    held: tuple = ()                 # an eager fork's mapping and token, alive until its wait

    @property
    def device_blocks(self):
        """The device blocks it reads or writes until it is done."""
        return (self.sources if self.kind != "swap_in" else []) + (self.destinations if self.kind != "swap_out"
                                                                     else [])


def split(mapping, part_blocks):
    """A job's mapping in parts of part_blocks pairs (one part when it has fewer). A last part that
    falls short is filled with pairs of the first part: they copy the same bytes again (nothing writes
    a job's sources while it is in flight), and every part has the same shape, so one of the compiled
    step graphs serves it."""
    parts = deque(mapping[i:i + part_blocks] for i in range(0, len(mapping), part_blocks))
    short = part_blocks - len(parts[-1]) if len(parts) > 1 else 0
    if short:
        parts[-1] = np.concatenate([parts[-1], parts[0][:short]])
    return parts


class GraphTransfers:
    """A pool's swaps, moved by the decode steps (TransferStep) one part per lane and step, and its
    forks (CopyBlocksAsync, queued at submit on the copy lane); the TransferQueue methods the
    schedulers call."""

    def __init__(self, pool, part_bytes=None):
        self.pool = pool
        self.part_blocks = (max(1, part_bytes // pool.bytes_per_block) if part_bytes
                            else pool.num_blocks)
        self.jobs = {}
        self.lanes = {kind: deque() for kind in STEP_LANES}  # jobs with parts not yet issued, oldest first
        self.issued = []      # jobs with parts issued by the last step (covered by the next step's waits)
        self.reported = []    # jobs finished since the last finished()
        self.tokens = [ms.Tensor(np.zeros(1, np.int64))] * len(STEP_LANES)
        caches = pool.num_caches
        layout = pool.host_layout
        self.eager = {"swap_out": SwapBlocksAsync("d2h", pool.host_buffer, num_caches=caches, host_layout=layout),
                      "swap_in": SwapBlocksAsync("h2d", pool.host_buffer, num_caches=caches, host_layout=layout),
                      "fork": CopyBlocksAsync(num_caches=caches)}
        self.eager_wait = {kind: WaitTransfer(num_tensors=caches, lane=lane) for kind, lane in LANES.items()}

    # -- the TransferQueue methods the schedulers call --
    def submit(self, kind: str, blocks) -> int:
        blocks = list(blocks)
        allocate = self.pool.allocate_host if kind == "swap_out" else self.pool.allocate
        destinations = allocate(len(blocks))
        mapping = np.array([blocks, destinations], np.int64).T.reshape(-1, 2)
        job = self.jobs[len(self.jobs)] = _Job(len(self.jobs), kind, blocks, destinations, deque())
        if not blocks:
            self._retire(job)
        elif kind == "fork":
            mapping = ms.Tensor(mapping)
            job.held = (mapping, self.eager[kind](*self.pool.caches, mapping))
        else:
            job.parts = split(mapping, self.part_blocks)
            self.lanes[kind].append(job)
        return job.job_id

    def destination(self, job: int) -> List[int]:
        return list(self.jobs[job].destinations)

    def finished(self) -> List[int]:
        done, self.reported = self.reported, []
        return done

    def wait(self, job: int) -> List[int]:
        entry = self.jobs[job]
        if entry.kind == "fork" and not entry.done:
            self.eager_wait["fork"](*self.pool.caches, entry.held[1]).asnumpy()
            self._retire(entry)
        elif not entry.done:
            self._drain(entry.kind)
        if job in self.reported:
            self.reported.remove(job)
        return self.destination(job)

    def wait_all(self) -> List[int]:
        for job in [j for j in self.jobs.values() if j.kind == "fork" and not j.done]:
            self.wait(job.job_id)
        for kind in STEP_LANES:
            self._drain(kind)
        done, self.reported = self.reported, []
        return done

    def close(self) -> None:
        self.wait_all()

    # -- the steps --
    @property
    def busy(self) -> bool:
        """Whether a step must carry transfers: parts to issue, or issued parts to wait for."""
        return bool(self.issued) or any(self.lanes.values())

    def check(self, blocks):
        """RuntimeError when a job in flight writes these blocks or reads them (a step writes and reads them)."""
        for job in self.jobs.values():
            held = set(blocks) & set(job.device_blocks) if not job.done else None
            if held:
                raise RuntimeError(f"blocks {sorted(held)} are moved by {job.kind} job {job.job_id}, in flight: "
                                   f"wait({job.job_id}) first")

    def parts(self):
        """The next part of each lane's oldest job (an empty mapping where none), as step inputs."""
        return [ms.Tensor(self.lanes[kind][0].parts[0] if self.lanes[kind] else NO_PART) for kind in STEP_LANES]

    def stepped(self, tokens):
        """After a TransferStep: the parts issued before it are done; the ones it issued are in flight."""
        self._confirm()
        for lane in self.lanes.values():
            if lane:
                job = lane[0]
                job.parts.popleft()
                job.unconfirmed += 1
                self.issued.append(job)
                if not job.parts:
                    lane.popleft()
        self.tokens = list(tokens)

    # -- internals --
    def _confirm(self):
        issued, self.issued = self.issued, []
        for job in issued:
            job.unconfirmed -= 1
            if not job.parts and not job.unconfirmed and not job.done:
                self._retire(job)

    def _drain(self, kind):
        """Issues every part left of the lane's jobs at once (eagerly) and waits for every transfer."""
        lane = self.lanes[kind]
        while lane:
            job = lane.popleft()
            left = np.unique(np.concatenate(list(job.parts)), axis=0)  # the filler pairs once
            token = self.eager[kind](*self.pool.caches, ms.Tensor(left))
            self.eager_wait[kind](*self.pool.caches, token).asnumpy()  # MindSpore has launched the transfer
            job.parts.clear()
            job.unconfirmed += 1
            self.issued.append(job)
        wait_transfers()  # and the parts the last step issued, on every lane
        while self.issued:
            self._confirm()

    def _retire(self, job):
        job.done, job.held = True, ()
        if job.kind == "swap_out":
            self.pool.free(job.sources)
        elif job.kind == "swap_in":
            self.pool.free_host(job.sources)
        self.reported.append(job.job_id)


class GraphOverlapEngine(OverlapEngine):
    """OverlapEngine's schedule with the transfers inside the compiled decode step (TransferStep)."""

    def __init__(self, prefill, step, pool, block_size, max_blocks, part_bytes=None, transfer_step=None):
        Engine.__init__(self, prefill, step, pool, block_size, max_blocks)  # not OverlapEngine's: no queue
        self.queue = GraphTransfers(pool, part_bytes)
        self.reported = set()
        self.submitted = {"swap_out": 0, "swap_in": 0, "fork": 0}
        self.plain_step = step
        self.transfer_step = transfer_step or TransferStep(step, pool)
        self.step_cell = self._step

    def _step(self, x, pos, row, table):
        """One compiled graph: the plain decode step when no transfer is pending, else TransferStep."""
        if not self.queue.busy:
            return self.plain_step(x, pos, row, table)
        x, *tokens = self.transfer_step(x, pos, row, table, *self.queue.parts(), *self.queue.tokens)
        self.queue.stepped(tokens)
        return x

    def warm_up(self):
        """OverlapEngine's warm-up (the eager path of wait) and TransferStep's four graphs compiled: a
        dummy token decoded while part-sized swaps move (out; out and in; in; none in flight: waits)."""
        super().warm_up()
        n = self.queue.part_blocks
        if self.pool.num_free_blocks < 3 * n + 1 or self.pool.num_free_host_blocks < 2 * n:
            return  # a pool too small for the parts: the graphs compile when first used
        row = self.pool.allocate(1)
        table = np.zeros(self.max_blocks, np.int64)
        table[0] = row[0]
        x = ms.Tensor(np.zeros((1, self.plain_step.layers[0].wq.shape[0]), np.float32))

        def steps(*jobs):
            while not all(self.queue.jobs[job].done for job in jobs):
                self._step(x, int64(0), int64(row[0] * self.block_size), ms.Tensor(table)).asnumpy()

        first = self.queue.submit("swap_out", self.pool.allocate(n))
        steps(first)
        second = self.queue.submit("swap_out", self.pool.allocate(n))
        back = self.queue.submit("swap_in", self.queue.destination(first))
        steps(second, back)
        last = self.queue.submit("swap_in", self.queue.destination(second))
        steps(last)
        self.queue.finished()
        self.pool.free(row + self.queue.destination(back) + self.queue.destination(last))

    def step(self, seq):
        self.queue.check(seq.blocks)
        self.reported.update(self.queue.finished())
        super(OverlapEngine, self).step(seq)
