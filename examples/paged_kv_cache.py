"""Paged KV cache with preemption by swap, the way vLLM schedules it, on ms_memcopy's in-place primitives.

A small decoder runs in GRAPH_MODE. Its K and V caches are Parameters of shape
[num_blocks, block_size, width] (256 MiB in all by default), written in place with Memcpy2D("write"):
a prompt's keys and values one block tile at a time, then one token row per decode step. Several
sequences compete for the block pool of an ms_memcopy.nn.BlockPool, smaller than their demand: when a
running sequence needs a block and none is free, the scheduler preempts the most recently admitted one by
swapping its blocks out to the pool's pinned host blocks (SwapBlocks "d2h": one batched call for all
caches), and resumes it later by swapping them back in (SwapBlocks "h2d"). One sequence forks: the child
gets copies of the parent's blocks (CopyBlocks) and decodes on with inputs of its own.

Every sequence's outputs are compared with the same model decoding that sequence alone, without
interruption; the report gives the blocks and bytes moved, the swap bandwidth in the run, and every swap
replayed three ways: SwapBlocks, MindSpore's swap_cache (what vLLM's MindSpore port calls) and one built-in
copy per block, side by side.

With --overlap the same sequences are decoded a second time by a scheduler that overlaps the swaps with
decoding (ms_memcopy.nn.TransferQueue, the copies on a stream of their own): it swaps the next preempted
sequence in while the others decode, and a swap-out does not stop the others decoding (the sequence that
needed the blocks waits a round). Every job submitted in one round of decode steps is waited for at the start
of the next, so the schedule is the same on every rank. The queue paces its jobs (part_bytes,
--transfer-part-mib, 32 MiB by default): each decode step's finished() poll launches at most one part.
Its outputs must equal each sequence decoded alone; the report adds the decode step time with a transfer
in flight against without one, and the total time of both schedulers.

    python examples/paged_kv_cache.py [--cache-mib 256] [--sequences 6] [--layers 4] [--overlap]
"""
import argparse
import os
import sys
import time
from dataclasses import dataclass, field
from typing import List

import numpy as np

import mindspore as ms
from mindspore import nn, ops

from ms_memcopy import runtime
from ms_memcopy.nn import BlockPool, TransferQueue
from ms_memcopy.ops import Memcpy2D, SwapBlocks

MiB = 1 << 20


def int64(*values):
    return ms.Tensor(np.array(values, dtype=np.int64))


# ---- the model ------------------------------------------------------------------------------------

class Attention(nn.Cell):
    """Weights of one layer. The heads form head groups; each group's output projection is computed on
    its own and the groups' projections are summed in order. Under tensor parallelism (ranks > 1) a rank
    holds the heads of its own groups (their columns of wq, wk, wv and rows of wo, cut from the same
    seeded weights) and an AllReduce sums the ranks' projections: with 2 ranks and 2 groups that is the
    same sum as in one process, so the outputs are identical."""

    def __init__(self, index, model_dim, heads, head_dim, groups, rank=0, ranks=1):
        super().__init__()
        rng = np.random.default_rng(1000 + index)
        width = heads * head_dim
        mine = slice(rank * width // ranks, (rank + 1) * width // ranks)

        def weight(name, rows, cols, part):
            values = rng.standard_normal((rows, cols)).astype(np.float32) / np.sqrt(rows)
            return ms.Parameter(ms.Tensor(np.ascontiguousarray(values[part])), name=f"layer{index}.{name}")

        self.wq, self.wk, self.wv = (weight(n, model_dim, width, (slice(None), mine)) for n in ("wq", "wk", "wv"))
        self.wo = weight("wo", width, model_dim, (mine, slice(None)))
        self.heads, self.head_dim, self.groups = heads // ranks, head_dim, groups // ranks
        self.width = width // ranks
        self.scale = float(1 / np.sqrt(head_dim))
        self.all_reduce = ops.AllReduce() if ranks > 1 else None

    def attend(self, q, keys, values, visible):
        """q [t, width], keys/values [n, width] (this rank's heads), visible [t, n] -> x update [t, model_dim]."""
        t, n = q.shape[0], keys.shape[0]
        qh = q.reshape(t, self.heads, self.head_dim).transpose(1, 0, 2)
        kh = keys.reshape(n, self.heads, self.head_dim).transpose(1, 2, 0)
        vh = values.reshape(n, self.heads, self.head_dim).transpose(1, 0, 2)
        scores = ops.matmul(qh, kh) * self.scale
        scores = ops.where(visible.reshape(1, t, n), scores, ops.full_like(scores, -1e30))
        context = ops.matmul(ops.softmax(scores, axis=-1), vh).transpose(1, 0, 2).reshape(t, self.width)
        per_group = self.width // self.groups
        out = ops.matmul(context[:, :per_group], self.wo[:per_group])
        for g in range(1, self.groups):
            part = slice(g * per_group, (g + 1) * per_group)
            out = out + ops.matmul(context[:, part], self.wo[part])
        if self.all_reduce is not None:
            out = self.all_reduce(out)
        return out


class DecodeStep(nn.Cell):
    """One token through every layer: writes its key and value rows into the caches in place (row
    `row` of each cache's 2-D view), then attends over the sequence's blocks (`table`)."""

    def __init__(self, layers, caches, block_size, max_blocks):
        super().__init__()
        self.layers = nn.CellList(layers)
        self.caches = ms.ParameterTuple(caches)
        self.write = Memcpy2D("write")
        self.block_size, self.max_blocks = block_size, max_blocks
        self.token_index = ms.Tensor(np.arange(max_blocks * block_size, dtype=np.int64))
        self.zero = int64(0)

    def construct(self, x, pos, row, table):
        n = self.max_blocks * self.block_size
        visible = (self.token_index <= pos).reshape(1, n)
        for i, layer in enumerate(self.layers):
            k_cache, v_cache = self.caches[2 * i], self.caches[2 * i + 1]
            written = self.write(k_cache, ops.matmul(x, layer.wk), row, self.zero)
            written = written + self.write(v_cache, ops.matmul(x, layer.wv), row, self.zero)
            keys = ops.gather(k_cache, table, 0).reshape(n, -1)
            values = ops.gather(v_cache, table, 0).reshape(n, -1)
            x = ops.depend(x, written)
            x = x + layer.attend(ops.matmul(x, layer.wq), keys, values, visible)
        return x


class Prefill(nn.Cell):
    """A whole prompt through every layer with causal attention. Returns the last token's output and,
    per layer, the prompt's keys and values [t, width] (the engine writes them into its blocks)."""

    def __init__(self, layers):
        super().__init__()
        self.layers = nn.CellList(layers)

    def construct(self, x):
        t = x.shape[0]
        causal = ops.arange(t).reshape(t, 1) >= ops.arange(t).reshape(1, t)
        kvs = ()
        for layer in self.layers:
            keys, values = ops.matmul(x, layer.wk), ops.matmul(x, layer.wv)
            kvs = kvs + (keys, values)
            x = x + layer.attend(ops.matmul(x, layer.wq), keys, values, causal)
        return x[t - 1:], kvs


# ---- the scheduler ---------------------------------------------------------------------------------

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
        nbytes = len(blocks) * self.pool.num_caches * self.pool.block_bytes
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
        nbytes = len(ballast) * self.pool.num_caches * self.pool.block_bytes

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


def step_ratio(with_t, without, seed=0, resamples=2000):
    """(median step seconds with a transfer in flight, n, without, n, ratio of the medians, 5th and 95th
    percentile of the ratio over bootstrap resamples); NaN where a side has fewer than 3 steps."""
    with_t, without = np.array(with_t), np.array(without)
    if len(with_t) < 3 or len(without) < 3:
        return [float(np.median(with_t)) if len(with_t) else np.nan, len(with_t),
                float(np.median(without)) if len(without) else np.nan, len(without), np.nan, np.nan, np.nan]
    rng = np.random.default_rng(seed)
    ratios = [np.median(rng.choice(with_t, len(with_t))) / np.median(rng.choice(without, len(without)))
              for _ in range(resamples)]
    lo, hi = np.percentile(ratios, [5, 95])
    ratio = float(np.median(with_t) / np.median(without))
    return [float(np.median(with_t)), len(with_t), float(np.median(without)), len(without), ratio, float(lo),
            float(hi)]


# ---- the same swaps, replayed three ways ------------------------------------------------------------

def median_seconds(run, wait, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        wait()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def replay(swaps, pool, host_caches, repeats, per_block_limit):
    """Every swap of the run again, the median of `repeats` runs each, as (a) one SwapBlocks call,
    (b) MindSpore's swap_cache once per cache (what vLLM's MindSpore port calls), and (c) one built-in
    copy per block and cache (`host[j] = cache[i]`; only the first `per_block_limit` swaps of each
    direction, it is slow). Returns {method: {direction: (seconds, bytes)}}."""
    from mindspore._c_expression import swap_cache

    ops_by_direction = {d: SwapBlocks(d, pool.host_buffer, num_caches=pool.num_caches) for d in ("d2h", "h2d")}
    caches = tuple(pool.caches)
    result = {m: {"d2h": [0.0, 0], "h2d": [0.0, 0]} for m in ("SwapBlocks", "swap_cache", "one copy per block")}

    def add(method, direction, seconds, nbytes):
        result[method][direction][0] += seconds
        result[method][direction][1] += nbytes

    counts = {"d2h": 0, "h2d": 0}
    for direction, mapping, _, nbytes in swaps:
        to_host = direction == "d2h"
        m = ms.Tensor(mapping)
        op = ops_by_direction[direction]
        add("SwapBlocks", direction,
            median_seconds(lambda: op(*caches, mapping), pool.host_buffer.wait, repeats), nbytes)
        add("swap_cache", direction, median_seconds(
            lambda: [swap_cache(h, c, m, to_host) for c, h in zip(caches, host_caches)], lambda: None, repeats),
            nbytes)
        if counts[direction] < per_block_limit:
            counts[direction] += 1

            def per_block():
                for cache, host in zip(caches, host_caches):
                    for src, dst in mapping.tolist():
                        if to_host:
                            host[dst] = cache[src]
                        else:
                            cache[dst] = host[src]

            waited = host_caches[-1] if to_host else caches[-1]
            add("one copy per block", direction, median_seconds(per_block, waited.asnumpy, 1), nbytes)
    return result


# ---- main ---------------------------------------------------------------------------------------

def scheduler_served_elsewhere():
    """Whether another msrun's scheduler (a process with MS_ROLE=MS_SCHED and this MS_SCHED_PORT) listens on
    this scheduler's port on this machine. A port held by anything else is not such a scheduler."""
    import psutil

    port = os.environ.get("MS_SCHED_PORT", "")
    for conn in psutil.net_connections("tcp"):
        if conn.status != psutil.CONN_LISTEN or str(conn.laddr.port) != port or conn.pid in (None, os.getpid()):
            continue
        try:
            env = psutil.Process(conn.pid).environ()
        except psutil.Error:
            continue
        if env.get("MS_ROLE") == "MS_SCHED" and env.get("MS_SCHED_PORT") == port:
            return True
    return False


def distributed():
    """(rank, ranks, device): msrun's workers join the collective group; a plain run is rank 0 of 1.
    A plain run's device is DEVICE_ID (default 0). Under msrun it is MindSpore's device id after init(),
    the device the copy kernels set: msrun exports DEVICE_ID as the worker's index on its node, and init()
    replaces it (setenv) with the worker's local rank among the workers registered from the same host name.
    On one node the two agree; with two msrun on one machine (two nodes simulated) rank 1 is local rank 1.

    Every msrun whose --master_addr is an address of its own machine starts a scheduler (this script with
    MS_ROLE=MS_SCHED). On real hosts that is only the rank-0 host; when several msrun share one machine they
    all start one on the same port, one binds it and the others fail in init(): such a scheduler stands down
    (exit 0) when another msrun's scheduler holds the port, and the cluster runs on the one that bound it."""
    device = int(os.environ.get("DEVICE_ID", "0"))
    if int(os.environ.get("RANK_SIZE", os.environ.get("MS_WORKER_NUM", "1"))) <= 1:
        return 0, 1, device
    from mindspore.communication import get_group_size, get_rank, init

    try:
        init()
    except RuntimeError:
        if os.environ.get("MS_ROLE") == "MS_SCHED" and scheduler_served_elsewhere():
            print(f"scheduler: {os.environ.get('MS_SCHED_HOST')}:{os.environ.get('MS_SCHED_PORT')} is served by "
                  "another msrun's scheduler on this machine (nodes simulated on one host); this one stands down",
                  flush=True)
            os._exit(0)
        raise
    return get_rank(), get_group_size(), int(ms.get_context("device_id"))


def gather(values, ranks):
    """Every rank's list of floats, as a [ranks, len(values)] array (on every rank)."""
    row = np.array([values], np.float64)
    if ranks == 1:
        return row
    return ops.AllGather()(ms.Tensor(row)).asnumpy()


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache-mib", type=int, default=256, help="device K/V caches in all, MiB")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--head-dim", type=int, default=128)
    parser.add_argument("--head-groups", type=int, default=2, help="head groups summed in order (as TP ranks do)")
    parser.add_argument("--model-dim", type=int, default=64)
    parser.add_argument("--block-size", type=int, default=16, help="tokens per block")
    parser.add_argument("--sequences", type=int, default=6)
    parser.add_argument("--decode", type=int, default=48, help="decode steps per sequence")
    parser.add_argument("--fork-decode", type=int, default=24, help="decode steps of the forked child")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each replayed swap (the median is kept)")
    parser.add_argument("--fail-on-rank", type=int, default=-1,
                        help="for fault tests: this rank's first swap-out gets a block number past the pool")
    parser.add_argument("--per-block-swaps", type=int, default=2,
                        help="swaps per direction replayed as one built-in copy per block (it is slow)")
    parser.add_argument("--step-rounds", type=int, default=20,
                        help="--overlap: decode steps timed with a transfer in flight (at least), and as many "
                             "without")
    parser.add_argument("--transfer-part-mib", type=int, default=32,
                        help="--overlap: the TransferQueue's part_bytes in MiB (a job moves at most this much per "
                             "decode step); 0: whole jobs at once")
    parser.add_argument("--overlap", action="store_true",
                        help="decode the sequences again with the scheduler that overlaps swaps with decoding "
                             "(TransferQueue) and compare step and total times with the synchronous one")
    args = parser.parse_args(argv)
    if args.heads % args.head_groups:
        parser.error("heads must be a multiple of head-groups")
    return args


def plan(args):
    """Pool size from the cache budget; prompts sized so that the sequences need at least 1.2x the pool
    and each one crosses into its last block while it decodes (where preemption happens)."""
    width = args.heads * args.head_dim
    block_bytes = args.block_size * width * 4
    num_caches = 2 * args.layers
    num_blocks = args.cache_mib * MiB // (num_caches * block_bytes)
    blocks_per_sequence = max(2, -(-num_blocks * 6 // (5 * args.sequences)))
    prompt = (blocks_per_sequence - 1) * args.block_size - args.decode // 2
    if prompt < 1:
        raise SystemExit("the prompts would be empty: give --cache-mib more or --decode less")
    max_blocks = -(-(prompt + args.decode // 2 + max(args.decode - args.decode // 2, args.fork_decode))
                   // args.block_size)
    if max_blocks + 1 > num_blocks:
        raise SystemExit(f"the pool of {num_blocks} blocks is too small for one sequence; give --cache-mib more")
    return width, block_bytes, num_caches, num_blocks, prompt, max_blocks


def build(args, rank, ranks, width, num_blocks, host_blocks, max_blocks, name):
    """A BlockPool of this rank's caches and the model over it (this rank's heads)."""
    pool = BlockPool(2 * args.layers, num_blocks, host_blocks, (args.block_size, width // ranks), ms.float32,
                     name=name)
    layers = [Attention(i, args.model_dim, args.heads, args.head_dim, args.head_groups, rank, ranks)
              for i in range(args.layers)]
    return pool, Prefill(layers), DecodeStep(layers, pool.caches, args.block_size, max_blocks)


def decode_alone(prefill, step, pool, finished, args, max_blocks):
    """Each finished sequence decoded again alone, uninterrupted: (max |diff| of the outputs, tokens)."""
    solo = Engine(prefill, step, pool, args.block_size, max_blocks)
    diff, decoded = 0.0, 0
    for seq in finished:
        alone = Sequence(seq.name, seq.prompt, seq.inputs)
        solo.run([alone])
        diff = max(diff, float(np.abs(np.concatenate(seq.outputs) - np.concatenate(alone.outputs)).max()))
        decoded += len(alone.outputs)
    return diff, decoded


def run(args, rank, ranks):
    width, block_bytes, num_caches, num_blocks, prompt, max_blocks = plan(args)
    rank_block_bytes = block_bytes // ranks
    rng = np.random.default_rng(7)
    sequences = [Sequence(f"s{i}", rng.standard_normal((prompt, args.model_dim)).astype(np.float32),
                          rng.standard_normal((args.decode, args.model_dim)).astype(np.float32))
                 for i in range(args.sequences)]
    fork = Fork("s0", prompt + args.decode // 2,
                rng.standard_normal((args.fork_decode, args.model_dim)).astype(np.float32))
    demand = sum(-(-(prompt + args.decode) // args.block_size) for _ in sequences)
    began = time.perf_counter()

    pool, prefill, step = build(args, rank, ranks, width, num_blocks, demand, max_blocks, "kv")
    try:
        engine = Engine(prefill, step, pool, args.block_size, max_blocks)
        engine.fail_on_swap_out = args.fail_on_rank == rank
        if args.overlap:  # both schedulers are timed: the graphs are compiled before either
            Engine(prefill, step, pool, args.block_size, max_blocks).run(
                [Sequence("warm-up", sequences[0].prompt, sequences[0].inputs[:2])])
        engine.warm_up()
        sync_began = time.perf_counter()
        preemptions = engine.run(sequences, [fork])
        sync_seconds = time.perf_counter() - sync_began
        finished = [*sequences, fork.child]
        outputs = np.concatenate([np.concatenate(seq.outputs) for seq in finished])
        overlap = run_overlapped(args, prefill, step, pool, max_blocks, finished, fork) if args.overlap else None

        host_view = pool.host_buffer.numpy(np.float32).reshape(num_caches, demand, args.block_size, -1)
        host_caches = [ms.Tensor.from_numpy(host_view[i]) for i in range(num_caches)]
        replayed = replay(engine.swaps, pool, host_caches, args.repeats, args.per_block_swaps)
        del host_view, host_caches
    finally:
        pool.close()

    def log_totals(direction):
        log = [entry for entry in engine.swaps if entry[0] == direction]
        return (sum(len(entry[1]) for entry in log), sum(entry[2] for entry in log), sum(entry[3] for entry in log))

    stats = [0.0, float(outputs.astype(np.float64).sum()), float(preemptions), float(len(engine.copies))]
    for direction in ("d2h", "h2d"):
        blocks, seconds, nbytes = log_totals(direction)
        stats += [blocks, seconds, nbytes]
        stats += [replayed[m][direction][k] for m in ("SwapBlocks", "swap_cache", "one copy per block")
                  for k in (0, 1)]
    mapping, seconds, nbytes = engine.copies[0] if engine.copies else (np.zeros((0, 2)), 0.0, 0)
    stats += [len(mapping), seconds, nbytes, len(engine.swaps)]
    if overlap is None:
        stats += [0.0] + [np.nan] * 15
    else:
        stats += [1.0, overlap["diff"], sync_seconds + overlap["sync_seconds"], overlap["seconds"], *overlap["steps"],
                  overlap["swap_in"], overlap["swap_out"], overlap["preemptions"]]
    stats += [float(os.environ.get("DEVICE_ID", "0")), float(runtime.get_device()), time.perf_counter() - began]
    table = np.array(gather(stats, ranks))  # a copy of its own: rank 0 fills in the reference below

    # Reference: every sequence decoded alone, uninterrupted, by the single-process model (under
    # tensor parallelism rank 0 builds it whole, without collectives, beside its share). It runs after the
    # last collective: the other ranks are done and do not wait for it in one (the CPU collective's wait
    # times out when rank 0 takes long, as it can on 2 busy cores). Column 0 is the reference's max |diff|.
    # The overlapped run's sequences whose inputs differ from the synchronous run's (a fork made at another
    # token) are decoded alone too; the others were compared with the synchronous run's outputs.
    checked = finished + (overlap["unmatched"] if overlap is not None else [])
    decoded = sum(len(seq.outputs) for seq in checked)
    if ranks == 1:
        table[0, 0], decoded = decode_alone(prefill, step, pool, checked, args, max_blocks)
    elif rank == 0:
        ref_pool, ref_prefill, ref_step = build(args, 0, 1, width, num_blocks, demand, max_blocks, "ref")
        try:
            table[0, 0], decoded = decode_alone(ref_prefill, ref_step, ref_pool, checked, args, max_blocks)
        finally:
            ref_pool.close()
    table[rank, -1] = time.perf_counter() - began
    same_outputs = bool((table[:, 1] == table[0, 1]).all())
    ok = table[0, 0] == 0.0 and same_outputs and (table[:, 2] > 0).all() and (table[:, 3] == 1).all()
    if args.overlap:
        ok = ok and (table[:, 27] == 0.0).all()
    if rank == 0:
        report(args, table, ranks, num_caches, num_blocks, block_bytes, rank_block_bytes, prompt, fork, demand,
               decoded, len(checked), same_outputs, ok)
    return 0 if ok else 1


def report(args, table, ranks, num_caches, num_blocks, block_bytes, rank_block_bytes, prompt, fork, demand,
           decoded, sequences, same_outputs, ok):
    def gbps(nbytes, seconds):
        return nbytes / seconds / 1e9 if seconds > 0 else float("inf")

    print("Paged KV cache with preemption by swap (ms_memcopy, GRAPH_MODE, CPU target, host ACL runtime)")
    print(f"  model: {args.layers} layers, {args.heads} heads x {args.head_dim}, model dim {args.model_dim}; "
          f"K/V caches: {num_caches} Parameters x {num_blocks} blocks of {args.block_size} tokens "
          f"({block_bytes // 1024} KiB) = {num_caches * num_blocks * block_bytes / MiB:.0f} MiB")
    if ranks > 1:
        devices = ", ".join(f"rank {r}: DEVICE_ID {int(table[r, -3])}, ACL device {int(table[r, -2])}"
                            for r in range(ranks))
        print(f"  tensor parallel: {ranks} ranks, {args.heads // ranks} heads and {rank_block_bytes // 1024} KiB "
              f"blocks each, attention outputs summed by AllReduce ({devices})")
    print(f"  sequences: {args.sequences} x ({prompt} prompt + {args.decode} decoded tokens), and a fork of "
          f"s0 after {fork.at} tokens (+{args.fork_decode}); demand {demand} blocks for a pool of {num_blocks}")
    print(f"  preemptions: {int(table[0, 2])}; swaps: {int(table[0, 25])}, each one SwapBlocks call over all "
          f"{num_caches} caches" + (" of each rank" if ranks > 1 else ""))
    for d, label in enumerate(("swap out", "swap in ")):
        base = 4 + d * 9
        blocks, run_s, run_b = table[0, base], table[:, base + 1], table[:, base + 2]
        if blocks == 0:
            continue
        ours_s, ours_b = table[:, base + 3], table[:, base + 4]
        theirs_s, theirs_b = table[:, base + 5], table[:, base + 6]
        pb_s, pb_b = table[:, base + 7], table[:, base + 8]
        ours, theirs, per_block = (gbps(b.sum(), s.max()) for s, b in ((ours_s, ours_b), (theirs_s, theirs_b),
                                                                       (pb_s, pb_b)))
        print(f"  {label}: {int(blocks)} blocks x {num_caches} caches = {run_b.sum() / MiB:.0f} MiB; in the run "
              f"{gbps(run_b.sum(), run_s.max()):.2f} GB/s; replayed: SwapBlocks {ours:.2f} GB/s | swap_cache "
              f"{theirs:.2f} GB/s (SwapBlocks {ours / theirs:.2f}x) | one copy per block {per_block:.2f} GB/s "
              f"(SwapBlocks {ours / per_block:.1f}x)")
        if ranks > 1:
            print("    per rank, SwapBlocks replayed: " + ", ".join(
                f"rank {r} {gbps(ours_b[r], ours_s[r]):.2f} GB/s" for r in range(ranks))
                  + f"; all ranks together {ours:.2f} GB/s")
    copies = table[0, 22:25]
    if copies[0] > 0:
        nbytes = table[:, 24].sum()
        print(f"  fork: CopyBlocks of {int(copies[0])} blocks x {num_caches} caches = {nbytes / MiB:.0f} MiB, "
              f"{gbps(nbytes, table[:, 23].max()):.2f} GB/s")
    against = "the single-process model decoding each sequence alone" if ranks > 1 else "each sequence decoded alone"
    print(f"  outputs vs. {against}: max |diff| = {table[0, 0]:g} over {decoded} "
          f"tokens of {sequences} sequences" + ("" if ranks == 1 else
                                                 f"; every rank's outputs identical: {same_outputs}"))
    if args.overlap:
        print_overlap(table, args)
    print(f"  time: {table[:, -1].max():.0f} s")
    print("  result: " + ("PASS" if ok else "FAIL"))


def run_overlapped(args, prefill, step, pool, max_blocks, finished, fork):
    """The same sequences decoded again on the same pool, in the order overlapped, overlapped, synchronous
    (with the synchronous run before, the schedulers' total times are sums over an ABBA order, which evens
    out a load that drifts); the first overlapped run also times the decode steps (measure_steps). Returns
    the figures and the sequences whose inputs match none of the runs checked before (a fork made at
    another token), which are decoded alone."""
    refs = {}
    unmatched, diff = [], 0.0

    def check(decoded):
        nonlocal diff
        for seq in decoded:
            ref = next((r for r in refs.get(seq.name, []) if np.array_equal(r.inputs, seq.inputs)), None)
            if ref is None:
                unmatched.append(seq)
                refs.setdefault(seq.name, []).append(seq)
            else:
                diff = max(diff, float(np.abs(np.concatenate(seq.outputs) - np.concatenate(ref.outputs)).max()))

    def fresh():
        return ([Sequence(seq.name, seq.prompt, seq.inputs) for seq in finished if not seq.name.endswith(".fork")],
                Fork(fork.parent, fork.at, fork.inputs))

    for seq in finished:
        refs.setdefault(seq.name, []).append(seq)
    seconds, figures = 0.0, {}
    for first in (True, False):
        sequences, again = fresh()
        engine = OverlapEngine(prefill, step, pool, args.block_size, max_blocks,
                               args.transfer_part_mib * MiB or None)
        try:
            engine.warm_up()
            began = time.perf_counter()
            preemptions = engine.run(sequences, [again])
            seconds += time.perf_counter() - began
            if first:
                probe = Sequence("probe", sequences[0].prompt, sequences[0].inputs)
                engine.prefill(probe)
                figures = {"steps": engine.measure_steps(probe, args.step_rounds), "preemptions": preemptions,
                           "swap_in": engine.submitted["swap_in"], "swap_out": engine.submitted["swap_out"]}
                pool.free(probe.blocks)
        finally:
            engine.queue.close()
        check([*sequences, again.child])
    sequences, again = fresh()
    began = time.perf_counter()
    Engine(prefill, step, pool, args.block_size, max_blocks).run(sequences, [again])
    sync_seconds = time.perf_counter() - began
    check([*sequences, again.child])
    return {"diff": diff, "seconds": seconds, "sync_seconds": sync_seconds, "unmatched": unmatched, **figures}


def print_overlap(table, args):
    """The --overlap lines of the report (rank 0's step times; every rank's outputs were checked)."""
    diff, sync_s, overlap_s = table[:, 27].max(), table[0, 28], table[0, 29]
    with_s, n_with, without_s, n_without, ratio, lo, hi, steps_per_job, ballast = table[0, 30:39]
    paced = (f"launched in parts of {args.transfer_part_mib} MiB, one per step" if args.transfer_part_mib
             else "launched whole")
    swap_in, swap_out, preemptions = table[0, 39:42]
    print(f"  overlapped scheduler (TransferQueue, copies on their own stream): {int(preemptions)} preemptions, "
          f"{int(swap_out)} swap-outs and {int(swap_in)} swap-ins submitted while the others decode; outputs vs. "
          f"the synchronous runs: max |diff| = {diff:g}")
    if np.isnan(ratio):
        print(f"  decode step: too few steps to compare ({int(n_with)} with a transfer in flight, "
              f"{int(n_without)} without)")
    else:
        verdict = "met" if hi <= 1.15 else ("not met" if lo > 1.15 else "unsure")
        print(f"  decode step with a transfer in flight (swap-outs of {ballast / MiB:.0f} MiB {paced}: "
              f"{steps_per_job:.1f} steps each): median {with_s * 1e3:.1f} ms over {int(n_with)} steps; without: "
              f"{without_s * 1e3:.1f} ms over {int(n_without)} steps; ratio {ratio:.2f}x (90% bootstrap interval "
              f"{lo:.2f}x-{hi:.2f}x); goal <= 1.15x: {verdict}")
    print(f"  total time of the decoding, two runs each (synchronous, overlapped, overlapped, synchronous): "
          f"overlapped scheduler {overlap_s:.1f} s, synchronous scheduler {sync_s:.1f} s ({overlap_s / sync_s:.2f}x)")


def main(argv=None):
    args = parse_args(argv)
    ms.set_context(mode=ms.GRAPH_MODE)
    rank, ranks, device = distributed()
    if args.head_groups % ranks or args.heads % ranks:
        raise SystemExit(f"heads and head-groups must be multiples of the {ranks} ranks")
    runtime.set_device(device)
    try:
        return run(args, rank, ranks)
    except Exception as error:
        print(f"rank {rank}: {type(error).__name__}: {error}", file=sys.stderr, flush=True)
        if ranks > 1:
            os._exit(1)  # peers waiting in a collective are ended by msrun when this worker fails
        raise


if __name__ == "__main__":
    sys.exit(main())
