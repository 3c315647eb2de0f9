"""Calibrated, interleaved timing.

A *loop* is a callable ``loop(iters) -> seconds`` that runs one operation ``iters`` times and
returns the elapsed time: the C loops of libms_memcopy_bench.so time themselves (no Python in the
measured span), Python callables are wrapped by :func:`python_loop`. Each loop is calibrated so
that one sample lasts at least ``sample_s``; then the samples of all the implementations of a
case are taken round-robin (for cases of close calls, each sample in slices taken in turns), so that a
burst of load from elsewhere on the machine hits all of them alike. The reported time per call is the
median over the samples; the minimum is kept too.
"""
import random
import statistics
import time

_MAX_ITERS = 1 << 24

#: ``pieces`` of :func:`measure` that slices every sample into single calls, taken in turns with the
#: other implementations' calls (for the closest calls: a drift or burst then falls on all of them alike;
#: for calls of tens of microseconds or more, since each slice costs a call of its loop)
EVERY_CALL = 0


def python_loop(fn):
    """A loop over a Python callable (its own call overhead is part of what is measured)."""
    def loop(iters):
        start = time.perf_counter()
        for _ in range(iters):
            fn()
        return time.perf_counter() - start
    return loop


def calibrate(loop, sample_s):
    """Iterations for one sample of at least sample_s seconds (one warm-up call first)."""
    loop(1)
    iters = 1
    while True:
        elapsed = loop(iters)
        if elapsed >= sample_s or iters >= _MAX_ITERS:
            return iters, elapsed / iters
        # Aim 20% past the target from the last estimate, growing at most 100x per step.
        grow = sample_s * 1.2 / elapsed if elapsed > 0 else 100.0
        iters = min(_MAX_ITERS, max(iters + 1, int(iters * min(100.0, grow))))


def _quartiles(values):
    """(first, third) quartile of values (both the value itself for fewer than two)."""
    if len(values) < 2:
        return values[0], values[0]
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], q[2]


def _slice(iters, pieces, p):
    """Iterations of slice p (0-based) of `pieces` slices of iters, the slices summing to iters."""
    return iters * (p + 1) // pieces - iters * p // pieces


def _cycle_order(names, cycle):
    """names in the order of slice cycle `cycle`: a shuffle seeded by the cycle's number (the same in every
    run), so that what an implementation leaves behind (MindSpore's worker threads still spinning after
    a burst of queued eager calls, caches filled with its data) falls on each of the others in turn, not
    always on the one after it in a fixed order."""
    order = list(names)
    random.Random(cycle).shuffle(order)
    return order


def measure(loops, sample_s, samples, pieces=1):
    """{name: {"us": median us per call, "us_min": ..., "us_q1": ..., "us_q3": ..., "iters": ..., "samples": n,
    "us_samples": [us per call of each sample]}} for a dict of loops. Sample k of every implementation is
    taken in the same round, so the ratios of round k are the repetitions the goals are judged over
    (targets.evaluate) and the spreads of the reported ratios (report). Within a round, each sample is
    taken in `pieces` slices in turns with the other implementations' slices (A's first slice, B's first,
    ..., A's second, ...), so that a burst of load from elsewhere on the machine falls on all of them alike
    rather than on the one sampled at that moment (EVERY_CALL: slices of one call each, the calls of all
    the implementations spread evenly over the round); each cycle of slices takes the implementations in
    an order of its own (:func:`_cycle_order`). The calibration runs are not samples: every sample
    is taken in a round."""
    plans = {name: calibrate(loop, sample_s)[0] for name, loop in loops.items()}
    if pieces == EVERY_CALL:
        pieces = max(plans.values())
    per_call = {name: [] for name in loops}
    names = list(loops)
    for k in range(max(1, samples)):
        spent = dict.fromkeys(loops, 0.0)
        for p in range(pieces):
            for name in _cycle_order(names, k * pieces + p):
                iters = _slice(plans[name], pieces, p)
                if iters:
                    spent[name] += loops[name](iters)
        for name, elapsed in spent.items():
            per_call[name].append(elapsed / plans[name])
    return {name: {"us": statistics.median(times) * 1e6, "us_min": min(times) * 1e6,
                   "us_q1": _quartiles(times)[0] * 1e6, "us_q3": _quartiles(times)[1] * 1e6, "iters": plans[name],
                   "samples": len(times), "us_samples": [t * 1e6 for t in times]}
            for name, times in per_call.items()}
