"""The measurements and the report of examples/paged_kv_cache.py: step-time ratios, swaps replayed three
ways, the tables printed."""
import os
import time

import numpy as np

import mindspore as ms

from ms_memcopy.ops import SwapBlocks
from .model import MiB, describe_caches


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


def report(args, table, ranks, num_caches, num_blocks, block_bytes, rank_block_bytes, prompt, fork, demand,
           decoded, sequences, same_outputs, ok, loads):
    def gbps(nbytes, seconds):
        return nbytes / seconds / 1e9 if seconds > 0 else float("inf")

    print("Paged KV cache with preemption by swap (ms_memcopy, GRAPH_MODE, CPU target, host ACL runtime)")
    print(f"  model: {args.layers} layers, {args.heads} heads x {args.head_dim}, model dim {args.model_dim}; "
          + describe_caches(args, num_caches, num_blocks, block_bytes))
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
        print_overlap(table, args, loads)
    print(f"  time: {table[:, -1].max():.0f} s")
    print("  result: " + ("PASS" if ok else "FAIL"))


#: the first of the 15 columns of each overlapped scheduler's figures (column 26: the synchronous total)
OVERLAP_COLUMNS = {"eager": 27, "graph": 42}


def cpu_model():
    """The CPU's model name from /proc/cpuinfo ("unknown" where there is none)."""
    try:
        with open("/proc/cpuinfo") as info:
            return next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), "unknown")
    except OSError:
        return "unknown"


def print_step_ratio(figures, parts, goal):
    """The decode step time with a transfer in flight against without one (rank 0's steps)."""
    with_s, n_with, without_s, n_without, ratio, lo, hi, steps_per_job, ballast = figures
    if np.isnan(ratio):
        print(f"  decode step: too few steps to compare ({int(n_with)} with a transfer in flight, "
              f"{int(n_without)} without)")
        return
    verdict = "met" if hi <= goal else ("not met" if lo > goal else "unsure")
    print(f"  decode step with a transfer in flight (swap-outs of {ballast / MiB:.0f} MiB {parts}: "
          f"{steps_per_job:.1f} steps each): median {with_s * 1e3:.1f} ms over {int(n_with)} steps; without: "
          f"{without_s * 1e3:.1f} ms over {int(n_without)} steps; ratio {ratio:.2f}x (90% bootstrap interval "
          f"{lo:.2f}x-{hi:.2f}x); goal <= {goal:.2f}x: {verdict}")


def print_scheduler(table, first, name, parts, goal):
    """An overlapped scheduler's lines (its figures from column `first`); returns its total seconds."""
    diff, seconds = table[:, first + 1].max(), table[0, first + 2]
    swap_in, swap_out, preemptions = table[0, first + 12:first + 15]
    print(f"  {name}: {int(preemptions)} preemptions, {int(swap_out)} swap-outs and {int(swap_in)} swap-ins "
          f"submitted while the others decode; outputs vs. the synchronous runs: max |diff| = {diff:g}")
    print_step_ratio(table[0, first + 3:first + 12], parts, goal)
    return seconds


def print_overlap(table, args, loads):
    """The --overlap lines of the report (rank 0's step times; every rank's outputs were checked)."""
    sync_s = table[0, 26]
    paced = (f"launched in parts of {args.transfer_part_mib} MiB, one per step" if args.transfer_part_mib
             else "launched whole")
    overlap_s = print_scheduler(table, OVERLAP_COLUMNS["eager"],
                                "overlapped scheduler (TransferQueue, copies on their own stream)", paced, 1.15)
    if args.overlap != "graph":
        print(f"  total time of the decoding, two runs each (synchronous, overlapped, overlapped, synchronous): "
              f"overlapped scheduler {overlap_s:.1f} s, synchronous scheduler {sync_s:.1f} s "
              f"({overlap_s / sync_s:.2f}x)")
    else:
        parts = (f"in parts of {args.graph_part_mib} MiB, one per lane and step" if args.graph_part_mib
                 else "whole, in one step")
        graph_s = print_scheduler(table, OVERLAP_COLUMNS["graph"],
                                  "overlapped scheduler in the compiled step (SwapBlocksAsync, CopyBlocksAsync and "
                                  f"WaitTransfer inside the decode graph, transfers {parts})", parts, 1.10)
        print(f"  total time of the decoding, two runs each (synchronous, eager, graph, graph, eager, synchronous): "
              f"graph-overlapped scheduler {graph_s:.1f} s, eager-overlapped {overlap_s:.1f} s, synchronous "
              f"{sync_s:.1f} s (graph {graph_s / sync_s:.2f}x the synchronous, {graph_s / overlap_s:.2f}x the eager)")
    start, end = loads
    print(f"  machine: {cpu_model()}, {os.cpu_count()} CPUs; load average (1, 5, 15 min) at the start "
          f"{start[0]:.2f} {start[1]:.2f} {start[2]:.2f}, at the end {end[0]:.2f} {end[1]:.2f} {end[2]:.2f} "
          f"(other jobs share the CPUs: the step ratios are only as steady as the load)")
