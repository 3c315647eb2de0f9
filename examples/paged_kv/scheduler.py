"""The schedulers of examples/paged_kv_cache.py: sequences preempted by swap, resumed and forked
(Engine), and the same with the swaps overlapped with decoding (OverlapEngine)."""
import time
from dataclasses import dataclass, field
from typing import List

import numpy as np

import mindspore as ms

from ms_memcopy.nn import TransferQueue
from ms_memcopy.ops import Memcpy2D
from .model import int64
from .report import step_ratio


@dataclass
class Sequence:
    name: str
    prompt: np.ndarray               # [prompt tokens, model_dim]
    inputs: np.ndarray               # [decode tokens, model_dim], one input per decode step
    done: int = 0                    # tokens in the cache
    blocks: List[int] = field(default_factory=list)        # device blocks, in token order
    host_blocks: List[int] = field(default_factory=list)   # host blocks while swapped out
    outputs: List[np.ndarray] = field(default_factory=list)

    @property
    def finished(self):
        return self.done == len(self.prompt) + len(self.inputs)


@dataclass
class Fork:
    parent: str
    at: int                          # fork once the parent holds at least this many tokens
    inputs: np.ndarray               # the child's own decode inputs after the fork
    child: Sequence = None


class Engine:
    """Decodes sequences round-robin over a BlockPool, preempting by swap when the pool runs dry."""

    def __init__(self, prefill, step, pool, block_size, max_blocks):
        self.prefill_cell, self.step_cell, self.pool = prefill, step, pool
        self.block_size, self.max_blocks = block_size, max_blocks
        self.write = Memcpy2D("write")
        self.fail_on_swap_out = False
        self.swaps = []    # (direction, mapping, seconds, bytes)
        self.copies = []   # (mapping, seconds, bytes)

    def warm_up(self):
        """One untimed swap out, swap in and fork, so the log times steady-state calls."""
        blocks = self.pool.allocate(1)
        blocks = self.pool.swap_in(self.pool.swap_out(blocks))
        self.pool.free(blocks + self.pool.fork(blocks))
        self.pool.host_buffer.wait()

    # -- block movement: one SwapBlocks or CopyBlocks call over every cache --
    def swap_out(self, seq):
        blocks = seq.blocks + ([self.pool.num_blocks] if self.fail_on_swap_out else [])  # fault tests only
        seq.host_blocks = self._timed(self.swaps, "d2h", self.pool.swap_out, blocks)
        seq.blocks = []

    def swap_in(self, seq):
        seq.blocks = self._timed(self.swaps, "h2d", self.pool.swap_in, seq.host_blocks)
        seq.host_blocks = []

    def fork(self, parent, fork):
        done = parent.done - len(parent.prompt)
        child = Sequence(f"{parent.name}.fork", parent.prompt,
                         np.concatenate([parent.inputs[:done], fork.inputs]), done=parent.done,
                         outputs=list(parent.outputs))
        child.blocks = self._timed(self.copies, None, self.pool.fork, parent.blocks)
        fork.child = child
        return child

    def _timed(self, log, direction, move, blocks):
        start = time.perf_counter()
        moved_to = move(blocks)
        self.pool.host_buffer.wait()  # waits for the queued launches
        seconds = time.perf_counter() - start
        mapping = np.array([blocks, moved_to], np.int64).T
        nbytes = len(blocks) * self.pool.bytes_per_block
        log.append((mapping, seconds, nbytes) if direction is None else (direction, mapping, seconds, nbytes))
        return moved_to

    # -- decoding --
    def prefill(self, seq):
        t = len(seq.prompt)
        seq.blocks = self.pool.allocate(-(-t // self.block_size))
        y, kvs = self.prefill_cell(ms.Tensor(seq.prompt))
        for cache, kv in zip(self.pool.caches, kvs):
            for b, block in enumerate(seq.blocks):
                tile = kv[b * self.block_size:min(t, (b + 1) * self.block_size)]
                self.write(cache, tile, int64(block * self.block_size), int64(0))
        seq.outputs.append(y.asnumpy())
        seq.done = t

    def step(self, seq):
        pos = seq.done
        if pos // self.block_size >= len(seq.blocks):
            seq.blocks += self.pool.allocate(1)
        row = seq.blocks[pos // self.block_size] * self.block_size + pos % self.block_size
        table = np.zeros(self.max_blocks, np.int64)
        table[:len(seq.blocks)] = seq.blocks
        x = ms.Tensor(seq.inputs[pos - len(seq.prompt)][None])
        seq.outputs.append(self.step_cell(x, int64(pos), int64(row), ms.Tensor(table)).asnumpy())
        seq.done += 1

    def blocks_needed(self, seq):
        """Blocks seq must get before its next token."""
        if seq.done == 0:
            return -(-len(seq.prompt) // self.block_size)
        return 1 if seq.done // self.block_size >= len(seq.blocks) else 0

    def run(self, sequences, forks=()):
        """Decodes every sequence (and every fork's child) to its end; returns the number of preemptions."""
        waiting, running, swapped = list(sequences), [], []
        pending = list(forks)
        preemptions = 0
        while waiting or running or swapped:
            # Swapped sequences resume first, oldest first; new ones are admitted only when none waits.
            while swapped and self.pool.num_free_blocks >= len(swapped[0].host_blocks) + 1:
                seq = swapped.pop(0)
                self.swap_in(seq)
                running.append(seq)
            while waiting and not swapped and self.pool.num_free_blocks >= self.blocks_needed(waiting[0]) + 1:
                seq = waiting.pop(0)
                self.prefill(seq)
                running.append(seq)
            if not running:
                raise RuntimeError("the block pool cannot hold even one sequence")
            for seq in list(running):
                if seq not in running:
                    continue  # preempted earlier in this round
                while self.blocks_needed(seq) > self.pool.num_free_blocks:
                    victim = running.pop()  # the most recently admitted
                    self.swap_out(victim)
                    swapped.insert(0, victim)
                    preemptions += 1
                    if victim is seq:
                        break
                if seq not in running:
                    continue
                self.step(seq)
                for fork in list(pending):
                    if fork.parent != seq.name or seq.done < fork.at:
                        continue
                    while self.pool.num_free_blocks < len(seq.blocks) and running[-1] is not seq:
                        victim = running.pop()  # the fork preempts like a sequence that needs blocks
                        self.swap_out(victim)
                        swapped.insert(0, victim)
                        preemptions += 1
                    if self.pool.num_free_blocks >= len(seq.blocks):
                        pending.remove(fork)
                        running.append(self.fork(seq, fork))
                if seq.finished:
                    running.remove(seq)
                    self.pool.free(seq.blocks)
                    seq.blocks = []
        if pending:
            raise RuntimeError(f"forks never had room: {[f.parent for f in pending]}")
        return preemptions


class OverlapEngine(Engine):
    """Engine's scheduler with the swaps and forks overlapping decoding, through a TransferQueue.

    A round decodes every running sequence once. Swap-ins of the preempted sequences (oldest first, as
    many as the free blocks allow) are submitted at the start of a round and the sequences decode from the
    next one; a swap-out is submitted when a sequence needs blocks that are not free, and the blocks return
    at the start of the next round (the sequence waits that round, the others decode). A fork's child
    joins in the next round too. Every job submitted in a round is waited for at the start of the next
    (wait() returns at once when it has finished): the decisions never depend on timing, so every rank of
    a tensor-parallel run makes the same ones (finished() is polled before each step only to learn early
    which jobs need no wait)."""

    def __init__(self, prefill, step, pool, block_size, max_blocks, part_bytes=None):
        super().__init__(prefill, step, pool, block_size, max_blocks)
        self.queue = TransferQueue(pool, part_bytes=part_bytes)
        self.reported = set()     # jobs finished() has reported
        self.submitted = {"swap_out": 0, "swap_in": 0, "fork": 0}

    def warm_up(self):
        blocks = self.pool.allocate(1)
        host = self.queue.wait(self.queue.submit("swap_out", blocks))
        blocks = self.queue.wait(self.queue.submit("swap_in", host))
        child = self.queue.wait(self.queue.submit("fork", blocks))
        self.pool.free(blocks + child)

    def submit(self, kind, blocks):
        self.submitted[kind] += 1
        return self.queue.submit(kind, blocks)

    def finish(self, job):
        if job not in self.reported:
            self.queue.wait(job)
        self.reported.discard(job)

    def step(self, seq):
        self.pool.check_writable(seq.blocks)  # the pool refuses blocks of a job in flight: never a race
        self.reported.update(self.queue.finished())
        super().step(seq)

    def measure_steps(self, seq, steps, seed=0):
        """Decode step seconds with a transfer in flight and without. seq (prefilled, one block free for
        it) decodes the same token again and again, each step beginning with the finished() poll the
        scheduler makes (it launches the next part of a paced job). A round submits a swap-out of ballast
        blocks (all the other free device blocks, at most the free host blocks) and times the steps that
        begin while it is in flight; the ballast is swapped back in (waited for) and as many steps are
        timed without a transfer. Rounds go on until `steps` steps were timed with one. Returns
        step_ratio's figures, the mean steps per swap-out, and the ballast's bytes."""
        ballast = self.pool.allocate(min(self.pool.num_free_blocks - 1, self.pool.num_free_host_blocks))
        pos, outputs = seq.done, len(seq.outputs)
        with_t, without, rounds = [], [], 0
        nbytes = len(ballast) * self.pool.bytes_per_block

        def timed_step():
            """Seconds of one step, or None when the poll reports the swap-out finished (no step)."""
            seq.done = pos
            start = time.perf_counter()
            if job in self.queue.finished():
                return None
            Engine.step(self, seq)
            seconds = time.perf_counter() - start
            del seq.outputs[outputs:]
            return seconds

        try:
            while len(with_t) < steps:
                job, rounds, before = self.queue.submit("swap_out", ballast), rounds + 1, len(with_t)
                host = self.queue.destination(job)
                while (seconds := timed_step()) is not None:
                    with_t.append(seconds)
                ballast = self.queue.wait(self.queue.submit("swap_in", host))
                job = None
                without += [timed_step() for _ in range(max(1, len(with_t) - before))]
        finally:
            self.queue.wait_all()
            self.pool.free(ballast)
        return step_ratio(with_t, without, seed) + [len(with_t) / max(rounds, 1), nbytes]

    def settle(self, incoming, blocks):
        """Waits for the forks of this round that read blocks (before they are swapped out or freed)."""
        for job, _, reads in incoming:
            if job not in self.reported and set(reads) & set(blocks):
                self.queue.wait(job)
                self.reported.add(job)

    def preempt(self, running, swapped, incoming):
        """Submits the swap-out of the most recently admitted sequence; returns it and the blocks it frees."""
        victim = running.pop()
        self.settle(incoming, victim.blocks)
        job = self.submit("swap_out", victim.blocks)
        victim.host_blocks, freed, victim.blocks = self.queue.destination(job), len(victim.blocks), []
        incoming.append((job, None, []))
        swapped.insert(0, victim)
        return victim, freed

    def run(self, sequences, forks=()):
        waiting, running, swapped = list(sequences), [], []
        pending = list(forks)
        preemptions = 0
        incoming = []   # (job, the sequence it brings in or None, device blocks it reads): this round's jobs
        reserved = 0    # blocks last round's swap-outs freed for a sequence or a fork that waited for them
        while waiting or running or swapped or incoming:
            for job, arriving, _ in incoming:  # submitted last round: finished meanwhile, as a rule
                self.finish(job)
                if arriving is not None:
                    running.append(arriving)
            incoming = []
            while swapped and self.pool.num_free_blocks - reserved >= len(swapped[0].host_blocks) + 1:
                seq = swapped.pop(0)
                job = self.submit("swap_in", seq.host_blocks)
                seq.blocks, seq.host_blocks = self.queue.destination(job), []
                incoming.append((job, seq, []))
            while (waiting and not swapped and not incoming
                   and self.pool.num_free_blocks - reserved >= self.blocks_needed(waiting[0]) + 1):
                seq = waiting.pop(0)
                self.prefill(seq)
                running.append(seq)
            if not running and not incoming:
                raise RuntimeError("the block pool cannot hold even one sequence")
            releasing = 0   # device blocks this round's swap-outs give back at the start of the next
            reserved = 0
            for seq in list(running):
                if seq not in running:
                    continue  # preempted earlier in this round
                while running and self.blocks_needed(seq) > self.pool.num_free_blocks + releasing:
                    victim, freed = self.preempt(running, swapped, incoming)
                    releasing += freed
                    preemptions += 1
                    if victim is seq:
                        break
                if seq not in running:
                    continue
                if self.blocks_needed(seq) > self.pool.num_free_blocks:
                    reserved += self.blocks_needed(seq)
                    continue  # its blocks come with this round's swap-outs: it decodes in the next one
                self.step(seq)
                for fork in list(pending):
                    if fork.parent != seq.name or seq.done < fork.at:
                        continue
                    while self.pool.num_free_blocks + releasing < len(seq.blocks) and running[-1] is not seq:
                        releasing += self.preempt(running, swapped, incoming)[1]
                        preemptions += 1
                    if self.pool.num_free_blocks < len(seq.blocks):
                        reserved += len(seq.blocks)  # the fork waits for this round's swap-outs
                    else:
                        pending.remove(fork)
                        done = seq.done - len(seq.prompt)
                        child = Sequence(f"{seq.name}.fork", seq.prompt,
                                         np.concatenate([seq.inputs[:done], fork.inputs]), done=seq.done,
                                         outputs=list(seq.outputs))
                        job = self.submit("fork", seq.blocks)
                        child.blocks = self.queue.destination(job)
                        fork.child = child
                        incoming.append((job, child, list(seq.blocks)))
                if seq.finished:
                    running.remove(seq)
                    self.settle(incoming, seq.blocks)
                    self.pool.free(seq.blocks)
                    seq.blocks = []
        if pending:
            raise RuntimeError(f"forks never had room: {[f.parent for f in pending]}")
        return preemptions
