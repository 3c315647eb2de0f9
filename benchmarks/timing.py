"""Calibrated, interleaved timing.

A *loop* is a callable ``loop(iters) -> seconds`` that runs one operation ``iters`` times and
returns the elapsed time: the C loops of libms_memcopy_bench.so time themselves (no Python in the
measured span), Python callables are wrapped by :func:`python_loop`. Each loop is calibrated so
that one sample lasts at least ``sample_s``; then the samples of all the implementations of a
case are taken round-robin, so that a burst of load from elsewhere on the machine hits all of them
alike. The reported time per call is the median over the samples; the minimum is kept too.
"""
import statistics
import time

_MAX_ITERS = 1 << 24


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


def measure(loops, sample_s, samples):
    """{name: {"us": median us per call, "us_min": ..., "us_q1": ..., "us_q3": ..., "iters": ..., "samples": n,
    "us_samples": [us per call of each sample]}} for a dict of loops. Sample k of every implementation is
    taken in the same round, so the ratios of round k are the repetitions the goals are judged over
    (targets.evaluate) and the spreads of the reported ratios (report)."""
    plans = {}
    for name, loop in loops.items():
        iters, first = calibrate(loop, sample_s)
        plans[name] = (iters, [first])
    for _ in range(max(0, samples - 1)):
        for name, loop in loops.items():
            iters, per_call = plans[name]
            per_call.append(loop(iters) / iters)
    return {name: {"us": statistics.median(per_call) * 1e6, "us_min": min(per_call) * 1e6,
                   "us_q1": _quartiles(per_call)[0] * 1e6, "us_q3": _quartiles(per_call)[1] * 1e6, "iters": iters,
                   "samples": len(per_call), "us_samples": [t * 1e6 for t in per_call]}
            for name, (iters, per_call) in plans.items()}
