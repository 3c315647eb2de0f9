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

With --model mla each layer's caches are an MLA-like latent cache (float16, --latent-dim values a token)
and a rope key cache (float32, --rope-dim values a token): caches of different block shapes and dtypes in
one pool, each swap still one SwapBlocks call over all of them. The host pool is then memory the script
maps itself (anonymous mmaps), pinned by registration (HostBuffer.wrap) and given to the pool as two
chunks (host blocks numbered across them); the outputs must again equal each sequence decoded alone.

With --overlap graph a third scheduler decodes them again with the same schedule, its transfers inside
the compiled decode step (paged_kv/graph_overlap.py): while a swap is pending each step is one graph that
waits on the transfer streams for the parts the step before issued (WaitTransfer) and queues the next
part of the pending swap-out and swap-in (SwapBlocksAsync, --graph-part-mib each) before the layers read
the caches. The report adds its step time with a transfer in flight against without one and the total
time of the three schedulers, in the order synchronous, eager, graph, graph, eager, synchronous.

    python examples/paged_kv_cache.py [--cache-mib 256] [--sequences 6] [--layers 4] [--overlap [graph]]
                                      [--model mha|mla]
"""
import argparse
import mmap
import os
import sys
import time

import numpy as np

import mindspore as ms
from mindspore import ops

from ms_memcopy import HostBuffer, runtime
from ms_memcopy.nn import BlockPool
from paged_kv.graph_overlap import GraphOverlapEngine, TransferStep
from paged_kv.model import NUMPY_DTYPES, DecodeStep, MiB, Prefill, block_bytes, cache_specs, make_layers
from paged_kv.report import OVERLAP_COLUMNS, replay, report
from paged_kv.scheduler import Engine, Fork, OverlapEngine, Sequence


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
    parser.add_argument("--model", choices=("mha", "mla"), default="mha",
                        help="mha: K and V caches per layer; mla: an MLA-like latent (float16) and rope (float32) "
                             "cache per layer, with a registered host pool of two chunks")
    parser.add_argument("--latent-dim", type=int, default=512, help="--model mla: latent values per token")
    parser.add_argument("--rope-dim", type=int, default=64, help="--model mla: rope key values per token")
    parser.add_argument("--graph-part-mib", type=int, default=16,
                        help="--overlap graph: the MiB a transfer moves per decode step (one part per lane and "
                             "step); 0: whole jobs in one step")
    parser.add_argument("--overlap", nargs="?", const="eager", choices=("eager", "graph"),
                        help="decode the sequences again with the scheduler that overlaps swaps with decoding "
                             "(TransferQueue) and compare step and total times with the synchronous one; "
                             "--overlap graph: also with the swaps inside the compiled decode step")
    args = parser.parse_args(argv)
    if args.heads % args.head_groups:
        parser.error("heads must be a multiple of head-groups")
    if args.model == "mla" and not 0 < args.rope_dim < args.head_dim:
        parser.error("--model mla: rope-dim must be between 0 and head-dim")
    return args


def plan(args):
    """Pool size from the cache budget; prompts sized so that the sequences need at least 1.2x the pool
    and each one crosses into its last block while it decodes (where preemption happens)."""
    width = args.heads * args.head_dim
    shapes, dtypes = cache_specs(args, width)
    layer_block_bytes = block_bytes(shapes, dtypes)
    cache_block_bytes = layer_block_bytes // 2  # a block of one cache (of the two caches' mean, --model mla)
    num_caches = 2 * args.layers
    num_blocks = args.cache_mib * MiB // (args.layers * layer_block_bytes)
    blocks_per_sequence = max(2, -(-num_blocks * 6 // (5 * args.sequences)))
    prompt = (blocks_per_sequence - 1) * args.block_size - args.decode // 2
    if prompt < 1:
        raise SystemExit("the prompts would be empty: give --cache-mib more or --decode less")
    max_blocks = -(-(prompt + args.decode // 2 + max(args.decode - args.decode // 2, args.fork_decode))
                   // args.block_size)
    if max_blocks + 1 > num_blocks:
        raise SystemExit(f"the pool of {num_blocks} blocks is too small for one sequence; give --cache-mib more")
    return width, cache_block_bytes, num_caches, num_blocks, prompt, max_blocks


def build(args, rank, ranks, width, num_blocks, host_blocks, max_blocks, name):
    """A BlockPool of this rank's caches and the model over it (this rank's heads). --model mla: the host
    pool is two chunks of memory mapped here, registered (HostBuffer.wrap): close them with close_pool."""
    shapes, dtypes = cache_specs(args, width // ranks)
    host = {}
    if args.model == "mla":
        host_block_bytes = block_bytes(shapes, dtypes) * args.layers
        halves = (host_blocks - host_blocks // 2, host_blocks // 2)
        host["host_buffers"] = [HostBuffer.wrap(mmap.mmap(-1, max(1, n) * host_block_bytes)) for n in halves]
    pool = BlockPool(2 * args.layers, num_blocks, host_blocks, shapes * args.layers, dtypes * args.layers,
                     name=name, **host)
    layers = make_layers(args, rank, ranks)
    return pool, Prefill(layers), DecodeStep(layers, pool.caches, args.block_size, max_blocks)


def close_pool(pool):
    """Closes the pool, then its host chunks (the registered ones of --model mla stay open with the pool)."""
    pool.close()
    for chunk in pool.host_chunks:
        chunk.close()


def host_caches_for_replay(pool, demand):
    """Host tensors of the pool's caches' shapes, the targets of the replayed swap_cache calls, made as
    its callers make them (ms.Tensor of a numpy array). Not views of the pool's page-aligned HostBuffer:
    there swap_cache's copies may meet a 4 KiB aliasing cliff that callers' tensors do not
    (docs/performance.md, finding 17)."""
    return [ms.Tensor(np.zeros((demand, *shape), NUMPY_DTYPES[dtype]))
            for shape, dtype in zip(pool.block_shapes, pool.dtypes)]


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
    began, load_at_start = time.perf_counter(), os.getloadavg()

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

        host_caches = host_caches_for_replay(pool, demand)
        replayed = replay(engine.swaps, pool, host_caches, args.repeats, args.per_block_swaps)
        del host_caches
    finally:
        close_pool(pool)

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
    stats += [sync_seconds + overlap["sync_seconds"] if overlap else np.nan]
    for kind in OVERLAP_COLUMNS:  # 15 columns each, from OVERLAP_COLUMNS[kind]
        figures = overlap["figures"].get(kind) if overlap else None
        if figures is None:
            stats += [0.0] + [np.nan] * 14
        else:
            stats += [1.0, overlap["diff"][kind], overlap["seconds"][kind], *figures["steps"], figures["swap_in"],
                      figures["swap_out"], figures["preemptions"]]
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
            close_pool(ref_pool)
    table[rank, -1] = time.perf_counter() - began
    same_outputs = bool((table[:, 1] == table[0, 1]).all())
    ok = table[0, 0] == 0.0 and same_outputs and (table[:, 2] > 0).all() and (table[:, 3] == 1).all()
    for first in OVERLAP_COLUMNS.values():
        if (table[:, first] == 1).all():
            ok = ok and (table[:, first + 1] == 0.0).all()
    if rank == 0:
        report(args, table, ranks, num_caches, num_blocks, block_bytes, rank_block_bytes, prompt, fork, demand,
               decoded, len(checked), same_outputs, ok, (load_at_start, os.getloadavg()))
    return 0 if ok else 1


def run_overlapped(args, prefill, step, pool, max_blocks, finished, fork):
    """The same sequences decoded again on the same pool by the overlapped schedulers: the eager one
    (OverlapEngine, TransferQueue) and, with --overlap graph, the one whose transfers are inside the
    compiled step (GraphOverlapEngine), in the order eager, [graph, graph,] eager, then synchronous (with
    the synchronous run before, each scheduler's total time is a sum over an ABBA (ABCCBA) order, which
    evens out a load that drifts); each scheduler's first run also times the decode steps (measure_steps).
    Returns the figures and the sequences whose inputs match none of the runs checked before (a fork made
    at another token), which are decoded alone."""
    refs = {}
    unmatched = []
    kinds = ["eager"] + (["graph"] if args.overlap == "graph" else [])
    diff, seconds, figures = dict.fromkeys(kinds, 0.0), dict.fromkeys(kinds, 0.0), {}

    def check(decoded, kind=None):
        for seq in decoded:
            ref = next((r for r in refs.get(seq.name, []) if np.array_equal(r.inputs, seq.inputs)), None)
            if ref is None:
                unmatched.append(seq)
                refs.setdefault(seq.name, []).append(seq)
            else:  # the synchronous rerun (kind None) counts for every overlapped scheduler
                gap = float(np.abs(np.concatenate(seq.outputs) - np.concatenate(ref.outputs)).max())
                for k in [kind] if kind else kinds:
                    diff[k] = max(diff[k], gap)

    def fresh():
        return ([Sequence(seq.name, seq.prompt, seq.inputs) for seq in finished if not seq.name.endswith(".fork")],
                Fork(fork.parent, fork.at, fork.inputs))

    def engine_for(kind):
        if kind == "eager":
            return OverlapEngine(prefill, step, pool, args.block_size, max_blocks, args.transfer_part_mib * MiB or None)
        return GraphOverlapEngine(prefill, step, pool, args.block_size, max_blocks, args.graph_part_mib * MiB or None,
                                  transfer_step)

    transfer_step = TransferStep(step, pool) if "graph" in kinds else None
    for seq in finished:
        refs.setdefault(seq.name, []).append(seq)
    for kind in kinds + kinds[::-1]:
        sequences, again = fresh()
        engine = engine_for(kind)
        try:
            engine.warm_up()
            began = time.perf_counter()
            preemptions = engine.run(sequences, [again])
            seconds[kind] += time.perf_counter() - began
            if kind not in figures:
                probe = Sequence("probe", sequences[0].prompt, sequences[0].inputs)
                engine.prefill(probe)
                figures[kind] = {"steps": engine.measure_steps(probe, args.step_rounds), "preemptions": preemptions,
                                 "swap_in": engine.submitted["swap_in"], "swap_out": engine.submitted["swap_out"]}
                pool.free(probe.blocks)
        finally:
            engine.queue.close()
        check([*sequences, again.child], kind)
    sequences, again = fresh()
    began = time.perf_counter()
    Engine(prefill, step, pool, args.block_size, max_blocks).run(sequences, [again])
    sync_seconds = time.perf_counter() - began
    check([*sequences, again.child])
    return {"diff": diff, "seconds": seconds, "sync_seconds": sync_seconds, "unmatched": unmatched,
            "figures": figures}


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
