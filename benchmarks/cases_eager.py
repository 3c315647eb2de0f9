"""The eager case: primitives called from Python in PYNATIVE_MODE, as a serving scheduler calls them,
against MindSpore's ops.Identity called the same way (cli.collect runs it last, see there)."""
import time

import numpy as np

from . import ms_graphs as g
from .case import BASELINE, OURS, Case
from .cases_primitives import SMALL, _host_buffer, _int64, _ops

QUEUED_MATMUL = 128  # queued work: one MatMul of two QUEUED_MATMUL^2 float32 matrices
FRESH_INPUTS = 64  # new values taken in turns: the offsets and mappings of the rows "new", every op's new int64 Tensors


def eager_case():
    """Eager (PYNATIVE) calls on a 16-element float32 tensor, against ops.Identity called eagerly on the
    same tensor, three ways:

    - one call at a time, each waiting for MindSpore's queues (as a caller reading the result does):
      an offset or block mapping new at every call (taken in turn from FRESH_INPUTS) against one
      repeated;
    - a loop of calls with a new int64 Tensor value each and one wait after the last (what a
      scheduler's loop costs per call);
    - one call behind queued eager work (a MatMul): the time the call takes to return, which is the
      queued work's time if the call waits for MindSpore's queues;
    - every op of configs/ops, its sample call (ms_memcopy/samples.py) one at a time as above, with the
      sample's inputs repeated and with its int64 Tensor inputs new Tensor objects at every call (see
      _every_op).

    Every int64 Tensor is used once before the timing, so that no row pays MindSpore's first use of a
    Tensor on a share of its calls; the samples are taken in 20 slices each, every cycle of slices
    taking the rows in an order of its own (timing.measure).
    """
    def build(stack):
        o = _ops()
        import mindspore as ms
        from mindspore import ops as msops

        from ms_memcopy._framework import sync_launches

        previous = ms.get_context("mode")
        ms.set_context(mode=ms.PYNATIVE_MODE)
        stack.callback(ms.set_context, mode=previous)
        x = g.tensor(np.arange(SMALL, dtype=np.float32))
        slots = 4096
        buf = _host_buffer(stack, slots * SMALL * 4)
        d2h = o.MemcpyWithCondition("d2h", host_buffer=buf)
        # (each row its own int64 Tensors: no row's time depends on which Tensors another row used)
        loop_offsets, queued_offsets = ([_int64(i * SMALL * 4) for i in range(slots)] for _ in range(2))
        # A new offset or mapping at every call, from FRESH_INPUTS live ones as a scheduler holds: cycling
        # through 4096 offset Tensors measured 1.4-1.6x one repeated offset (MindSpore's state of a Tensor
        # last used thousands of calls before is out of the CPU's caches), through 64 1.0-1.2x.
        offsets = [_int64(i * SMALL * 4) for i in range(FRESH_INPUTS)]
        caches = [ms.Parameter(g.tensor(np.zeros((64, SMALL), np.float32)), name=f"bench_eager_cache{i}")
                  for i in range(2)]
        copy = o.CopyBlocks(num_caches=2)
        mappings = [np.array([[i % 32, 32 + (i * 7) % 32]], np.int64) for i in range(slots)]
        loop_mappings, queued_mappings = ([g.tensor(m) for m in mappings] for _ in range(2))
        identity = msops.Identity()
        matmul, square = msops.MatMul(), g.tensor(np.ones((QUEUED_MATMUL, QUEUED_MATMUL), np.float32))

        # Each Tensor used once before the timing: its first use as any op's input costs MindSpore its
        # device memory (ops.Identity: 57 us on a new tensor against 32 us on a repeated one; ours 29
        # against 21), which the rows would pay on a share of their calls that depends on their count.
        for offset in (*offsets, *loop_offsets, *queued_offsets):
            d2h(x, offset)
        for mapping in (*loop_mappings, *queued_mappings):
            copy(*caches, mapping)
        sync_launches()

        def calls(fn):
            state = {"i": 0}

            def step():
                fn(state["i"] % slots)
                state["i"] += 1
                sync_launches()
            step()
            return g.python_loop(step)

        def loop_of_calls(fn):
            state = {"i": 0}

            def loop(iters):
                start = time.perf_counter()
                for _ in range(iters):
                    fn(state["i"] % slots)
                    state["i"] += 1
                sync_launches()
                return time.perf_counter() - start
            return loop

        def behind_queued_work(fn):
            def loop(iters):
                spent = 0.0
                for i in range(iters):
                    matmul(square, square)
                    start = time.perf_counter()
                    fn(i % slots)
                    spent += time.perf_counter() - start
                    sync_launches()
                return spent
            return loop

        return {
            "MemcpyWithCondition d2h, new offset": (OURS, calls(lambda i: d2h(x, offsets[i % FRESH_INPUTS]))),
            "MemcpyWithCondition d2h, same offset": (OURS, calls(lambda i: d2h(x, offsets[0]))),
            "CopyBlocks, new mapping": (OURS, calls(lambda i: copy(*caches, mappings[i % FRESH_INPUTS]))),
            "CopyBlocks, same mapping": (OURS, calls(lambda i: copy(*caches, mappings[0]))),
            "ms Identity (eager)": (BASELINE, calls(lambda i: identity(x))),
            "loop: MemcpyWithCondition d2h, new Tensor offset": (OURS, loop_of_calls(
                lambda i: d2h(x, loop_offsets[i]))),
            "loop: CopyBlocks, new Tensor mapping": (OURS, loop_of_calls(lambda i: copy(*caches, loop_mappings[i]))),
            "loop: ms Identity": (BASELINE, loop_of_calls(lambda i: identity(x))),
            "behind queued work: MemcpyWithCondition d2h, Tensor offset": (
                OURS, behind_queued_work(lambda i: d2h(x, queued_offsets[i]))),
            "behind queued work: CopyBlocks, Tensor mapping": (
                OURS, behind_queued_work(lambda i: copy(*caches, queued_mappings[i]))),
            "behind queued work: ms Identity": (BASELINE, behind_queued_work(lambda i: identity(x))),
            **_every_op(stack),
        }
    return Case("ops.eager", f"eager call on {SMALL} float32", SMALL * 4, build=build, samples_scale=3, pieces=20,
                params={"queued_matmul": QUEUED_MATMUL})


def _every_op(stack):
    """{row: (OURS, loop)} for the sample call of every op of configs/ops: "every op: <label>, same inputs"
    and, for an op with int64 Tensor inputs (offsets, mappings, sizes), "every op: <label>, new int64
    Tensors", where each call takes new Tensor objects holding the sample's values (an op's check reads
    a Tensor value at its launch, whatever it holds: a new object is what a scheduler's new value costs;
    the d2h and CopyBlocks rows above also change the value). Each sample is timed as the call and a
    wait for MindSpore's queues, like ms Identity (eager); the asynchronous forms' transfers are then
    waited for outside the timed span, so that they do not pile up on their lanes."""
    import mindspore as ms

    from ms_memcopy import op_defs, samples
    from ms_memcopy._framework import sync_launches
    from ms_memcopy.ops import wait_transfers

    def timed(sample, inputs_at):
        def loop(iters):
            spent = 0.0
            for i in range(iters):
                inputs = inputs_at(i)
                start = time.perf_counter()
                sample.op(*inputs)
                sync_launches()
                spent += time.perf_counter() - start
                wait_transfers()
            return spent
        return loop

    rows = {}
    for name in op_defs.all_op_defs():
        if name in samples.GRADIENT_ONLY:
            continue
        sample = samples.sample(name, _host_buffer(stack, samples.HOST_BUFFER_BYTES))
        inputs = sample.inputs
        rows[f"every op: {sample.label}, same inputs"] = (OURS, timed(sample, lambda i, inputs=inputs: inputs))
        values = [i for i, v in enumerate(inputs)  # (a Parameter is a target written in place)
                  if isinstance(v, ms.Tensor) and not isinstance(v, ms.Parameter) and v.dtype == ms.int64]
        if values:
            fresh = [tuple(ms.Tensor(v.asnumpy()) if i in values else v for i, v in enumerate(inputs))
                     for _ in range(FRESH_INPUTS)]
            rows[f"every op: {sample.label}, new int64 Tensors"] = (
                OURS, timed(sample, lambda i, fresh=fresh: fresh[i % FRESH_INPUTS]))
    return rows
