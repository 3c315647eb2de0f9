"""Cases of the in-place primitives over paged caches: a one-row write, block swaps and block copies.

The caches are Parameters (as a model holds its KV cache). Ours run in a GRAPH_MODE cell, and for the
swaps also as an eager call with the block table on the host (how a scheduler calls them). Baselines:
what users write instead over the same caches and mapping: MindSpore's ScatterUpdate (a built-in
in-place row write), ``mindspore._c_expression.swap_cache`` once per cache (what the MindSpore port of
vLLM calls), one built-in copy per block (``host[j] = cache[i]``), and one C++ memcpy of the same number
of bytes between two contiguous arrays (the bandwidth floor).
"""
import glob
import time

import numpy as np

from . import baselines as bl
from . import ms_graphs as g
from .cases_primitives import _host_buffer, _int64, _keep, _ops
from .case import BASELINE, OURS, REFERENCE, Case
from .timing import python_loop

ROW_BYTES = 4096  # the written row: 1024 float32


def _cache(array, name):
    import mindspore as ms

    return ms.Parameter(ms.Tensor(array), name=name)


def _synced(fn):
    """A loop of eager calls, each waited for (MindSpore queues eager launches on its own thread), made in
    PYNATIVE_MODE as a user's eager calls are (the untimed mode switch around the loop). Made in the
    GRAPH_MODE that the graph steps of the same case need, the process's first eager launch left
    MindSpore running later PYNATIVE calls through its frontend queue: docs/performance.md, 13."""
    import mindspore as ms

    from ms_memcopy._framework import sync_launches

    def step():
        fn()
        sync_launches()
    timed = python_loop(step)

    def loop(iters):
        previous = ms.get_context("mode")
        ms.set_context(mode=ms.PYNATIVE_MODE)
        try:
            return timed(iters)
        finally:
            ms.set_context(mode=previous)
    return loop


def _settled(loop, pause_s=0.05):
    """loop, followed by an untimed pause of at least two of its calls: MindSpore releases the big
    temporaries of a built-in that rewrites a whole cache after the step returns, which otherwise slows
    the next implementation's sample."""
    def run(iters):
        elapsed = loop(iters)
        time.sleep(max(pause_s, 2 * elapsed / iters))
        return elapsed
    return run


def _one_memcpy(nbytes):
    """One std::memcpy of nbytes between two contiguous arrays (pages touched before timing)."""
    src, dst = np.ones(nbytes, np.uint8), np.zeros(nbytes, np.uint8)
    return _keep(bl.memcpy_loop([bl.address(dst)], [bl.address(src)], [nbytes]), src, dst)


def last_level_cache_bytes():
    """The largest cache this core sees (sysfs, as the host runtime reads it), else 32 MiB."""
    sizes = []
    for path in glob.glob("/sys/devices/system/cpu/cpu0/cache/index*/size"):
        with open(path) as f:
            text = f.read().strip()
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            sizes.append(int(digits) * scale)
    return max(sizes, default=32 << 20)


def _cold(loops):
    """The loops of a case, each call preceded by an untimed read of twice the last-level cache, so that
    every call finds its buffers out of the cache (as a swap of a pool larger than the cache does)."""
    scratch = np.ones(2 * last_level_cache_bytes(), np.uint8)

    def cold(loop):
        def run(iters):
            elapsed = 0.0
            for _ in range(iters):
                np.count_nonzero(scratch)
                elapsed += loop(1)
            return elapsed
        return run
    return {name: (role, cold(loop)) for name, (role, loop) in loops.items()}


def _graph_cell(body, caches):
    """A cell holding `caches` as Parameters whose step is body(*caches, *inputs)."""
    from mindspore import nn

    class Cell(nn.Cell):
        def __init__(self):
            super().__init__()
            self.body = body
            self.caches = caches

        def construct(self, *inputs):
            return self.body(*self.caches, *inputs)
    return Cell()


def write_case(cache_bytes, note=""):
    """Memcpy2D("write") of one 4 KiB row into a float32 cache of cache_bytes, in place, in GRAPH_MODE."""
    cols = ROW_BYTES // 4
    rows = max(1, cache_bytes // ROW_BYTES)

    def build(stack):
        o = _ops()
        import mindspore as ms
        from mindspore import nn, ops as msops

        cache = _cache(np.zeros((rows, cols), np.float32), "cache")
        src = np.arange(cols, dtype=np.float32)
        row, zero = _int64(rows - 1), _int64(0)

        class ScatterCell(nn.Cell):
            def __init__(self):
                super().__init__()
                self.cache = _cache(np.zeros((rows, cols), np.float32), "scatter_cache")
                self.update = msops.ScatterUpdate()

            def construct(self, index, value):
                return self.update(self.cache, index, value)

        np_cache = np.empty((rows, cols), np.float32)  # pages are touched only where written
        last = rows - 1
        return {
            "Memcpy2D write": (OURS, g.graph_loop(_graph_cell(o.Memcpy2D("write"), (cache,)),
                                                  g.tensor(src.reshape(1, cols)), row, zero)),
            "ms ScatterUpdate": (BASELINE, _settled(g.graph_loop(ScatterCell(), ms.Tensor(np.array([last], np.int32)),
                                                                 g.tensor(src.reshape(1, cols))))),
            "numpy row": (BASELINE, python_loop(lambda: np.copyto(np_cache[last], src))),
        }
    return Case("ops.write", f"one {_size(ROW_BYTES)} row into a {_size(rows * ROW_BYTES)} cache{note}", ROW_BYTES,
                params={"cache_bytes": rows * ROW_BYTES}, build=build, samples_scale=3)  # a ratio of short calls


def _size(n):
    from .report import fmt_size

    return fmt_size(n)


def _mapping(rng, count, source_blocks, destination_blocks):
    """count (source, destination) pairs, both sides shuffled (no two items adjacent on both sides)."""
    return np.stack([rng.permutation(source_blocks)[:count], rng.permutation(destination_blocks)[:count]],
                    axis=1).astype(np.int64)


def swap_case(direction, block_bytes, count, num_caches, cold=False):
    """SwapBlocks of `count` blocks over `num_caches` caches of `count` blocks each, shuffled mapping; cold:
    every call (ours and the baselines') finds the caches and the host blocks out of the CPU's caches."""
    elements = block_bytes // 4
    nbytes = num_caches * count * block_bytes

    def build(stack):
        o = _ops()
        import mindspore as ms
        from mindspore._c_expression import swap_cache

        rng = np.random.default_rng(0)
        caches = tuple(_cache(rng.standard_normal((count, elements), dtype=np.float32), f"cache{l}")
                       for l in range(num_caches))
        buf = _host_buffer(stack, nbytes)
        host_view = buf.numpy(np.float32).reshape(num_caches, count, elements)
        host_view[:] = 1.0
        # The baselines' host caches are tensors of their own, made as swap_cache's callers make them
        # (ms.Tensor of a numpy array: the same offset within a 4 KiB page as the caches). Over the
        # HostBuffer's page-aligned memory, swap_cache's h2d copies ran 4.4x slower on an AMD EPYC
        # (docs/performance.md, finding 17): that run stays a reference, not the baseline.
        host_caches = [ms.Tensor(np.ones((count, elements), np.float32)) for _ in range(num_caches)]
        buffer_caches = [ms.Tensor.from_numpy(host_view[l]) for l in range(num_caches)]
        mapping = _mapping(rng, count, count, count)  # (source, destination) in the copy's direction
        mapping_tensor = ms.Tensor(mapping)
        pairs = mapping.tolist()
        to_host = direction == "d2h"
        op = o.SwapBlocks(direction, buf, num_caches=num_caches)

        def per_block():
            for cache, host in zip(caches, host_caches):
                for src, dst in pairs:
                    if to_host:
                        host[dst] = cache[src]
                    else:
                        cache[dst] = host[src]

        loops = {
            f"SwapBlocks {direction} (graph)": (OURS, g.graph_loop(_graph_cell(op, caches), mapping_tensor)),
            f"SwapBlocks {direction} (eager)": (OURS, _synced(lambda: op(*caches, mapping))),
            "swap_cache": (BASELINE, _synced(lambda: [swap_cache(h, c, mapping_tensor, to_host)
                                                      for c, h in zip(caches, host_caches)])),
            "swap_cache over the HostBuffer": (REFERENCE, _synced(lambda: [swap_cache(h, c, mapping_tensor, to_host)
                                                                          for c, h in zip(caches, buffer_caches)])),
            "one copy per block": (BASELINE, _synced(per_block)),
            "one memcpy (C++)": (BASELINE, _one_memcpy(nbytes)),
        }
        if cold:
            del loops["one copy per block"]  # seconds a call; the warm case compares against it
            return _cold(loops)
        return loops
    return Case("ops.SwapBlocks", f"{direction}, {num_caches} caches x {count} blocks of {_size(block_bytes)}"
                + (", cold" if cold else ""), nbytes, count=num_caches * count,
                params={"direction": direction, "block_bytes": block_bytes, "blocks": count, "caches": num_caches,
                        "cold": cold}, build=build)


def copy_blocks_case(block_bytes, count, num_caches, cold=False):
    """CopyBlocks of `count` blocks within each of `num_caches` caches of 2 * count blocks (sources and
    destinations disjoint, shuffled); cold: as in swap_case."""
    elements = block_bytes // 4
    nbytes = num_caches * count * block_bytes

    def build(stack):
        o = _ops()
        import mindspore as ms

        rng = np.random.default_rng(1)
        caches = tuple(_cache(rng.standard_normal((2 * count, elements), dtype=np.float32), f"cache{l}")
                       for l in range(num_caches))
        blocks = rng.permutation(2 * count)
        mapping = np.stack([blocks[:count], blocks[count:]], axis=1).astype(np.int64)
        mapping_tensor = ms.Tensor(mapping)
        pairs = mapping.tolist()
        op = o.CopyBlocks(num_caches=num_caches)

        def per_block():
            for cache in caches:
                for src, dst in pairs:
                    cache[dst] = cache[src]

        loops = {
            "CopyBlocks (graph)": (OURS, g.graph_loop(_graph_cell(op, caches), mapping_tensor)),
            "CopyBlocks (eager)": (OURS, _synced(lambda: op(*caches, mapping))),
            "one copy per block": (BASELINE, _synced(per_block)),
            "one memcpy (C++)": (BASELINE, _one_memcpy(nbytes)),
        }
        if cold:
            del loops["one copy per block"]
            return _cold(loops)
        return loops
    return Case("ops.CopyBlocks", f"{num_caches} caches x {count} blocks of {_size(block_bytes)}"
                + (", cold" if cold else ""), nbytes, count=num_caches * count,
                params={"block_bytes": block_bytes, "blocks": count, "caches": num_caches, "cold": cold}, build=build)


def cases(settings):
    from .settings import FULL

    note = "" if settings.write_cache_sizes == FULL.write_cache_sizes else \
        f" (full run: {', '.join(_size(n) for n in FULL.write_cache_sizes)})"
    out = [write_case(n, note) for n in settings.write_cache_sizes]
    block_bytes, count, num_caches = settings.swap_blocks
    for cold in (False, True):
        out += [swap_case(d, block_bytes, count, num_caches, cold) for d in ("d2h", "h2d")]
        out.append(copy_blocks_case(block_bytes, count, num_caches, cold))
    return out
