"""`python -m ms_memcopy npu-check`: the check to run once on a machine with CANN and an Ascend 910B/910C.

It builds the op_def route for the device target, runs every primitive form in PYNATIVE_MODE and in
GRAPH_MODE at jit_level O0 against numpy (pinned and pageable HostBuffers), an h2d -> d2h -> h2d
ordering graph, a built-in op chained after each in-place write (launches from different queue threads
must reach the stream in program order), and times a swap of 1024 blocks of 64 KiB over 2 caches
against one built-in copy per block. It prints one table row per check and exits non-zero if any
check fails.

Without an NPU, ``--dry-run`` runs the same checks on the CPU target through the op_def route (the
code path an NPU takes, with the host ACL runtime under it); the timings then say nothing about an NPU.
"""
import argparse
import os
import sys
import time

import numpy as np

CHECK_MODES = ("pynative", "graph O0")
BLOCKS, BLOCK_BYTES = 1024, 64 << 10


def _int64(*values):
    import mindspore as ms

    return ms.Tensor(np.array(values, np.int64))


def _as_numpy(tensor):
    return tensor.asnumpy()


class _Runner:
    """Calls an op eagerly (PYNATIVE) or inside a jit_level O0 Cell (GRAPH_MODE)."""

    def __init__(self, mode):
        self.mode = mode

    def __call__(self, op, *args):
        import mindspore as ms
        from mindspore import nn

        if self.mode == "pynative":
            return op(*args)

        class Net(nn.Cell):
            def __init__(self):
                super().__init__()
                self.op = op

            def construct(self, *inputs):
                return self.op(*inputs)

        net = Net()
        net.set_jit_config(ms.JitConfig(jit_level="O0"))
        return net(*args)


# ---- the checks: each raises AssertionError (or any error) on failure ---------------------------------

def check_batch(run, pinned):
    import mindspore as ms
    from . import HostBuffer
    from .ops import MemcpyBatch

    a, b = np.arange(6, dtype=np.float32), np.arange(12, dtype=np.int16).reshape(3, 4)
    with HostBuffer(4096, pinned=pinned) as buf:
        n = run(MemcpyBatch("d2h", buf, num_tensors=2), ms.Tensor(a), ms.Tensor(b), _int64(0, 64))
        np.testing.assert_array_equal(_as_numpy(n), [24, 24])
        a2, b2 = run(MemcpyBatch("h2d", buf, shapes=[(6,), (3, 4)], dtypes=[ms.float32, ms.int16]), _int64(0, 64))
        np.testing.assert_array_equal(_as_numpy(a2), a)
        np.testing.assert_array_equal(_as_numpy(b2), b)


def check_2d(run, pinned):
    import mindspore as ms
    from . import HostBuffer
    from .ops import Memcpy2D

    x = np.arange(30, dtype=np.float32).reshape(5, 6)
    np.testing.assert_array_equal(_as_numpy(run(Memcpy2D("extract", height=2, width=3), ms.Tensor(x), _int64(1),
                                                _int64(2))), x[1:3, 2:5])
    expected = x.copy()
    expected[3:5, 0:3] = 0
    y = run(Memcpy2D("insert"), ms.Tensor(x), ms.Tensor(np.zeros((2, 3), np.float32)), _int64(3), _int64(0))
    np.testing.assert_array_equal(_as_numpy(y), expected)
    with HostBuffer(1024, pinned=pinned) as buf:
        run(Memcpy2D("d2h", host_buffer=buf, pitch=32), ms.Tensor(x), _int64(128))
        rows = buf.numpy(np.uint8)[128:128 + 5 * 32].reshape(5, 32)[:, :24].copy().view(np.float32)
        np.testing.assert_array_equal(rows, x)
        x2 = run(Memcpy2D("h2d", host_buffer=buf, pitch=32, shape=(5, 6), dtype=ms.float32), _int64(128))
        np.testing.assert_array_equal(_as_numpy(x2), x)


def check_write(run, pinned):
    import mindspore as ms
    from mindspore import ops
    from .ops import Memcpy2D

    cache = ms.Parameter(ms.Tensor(np.zeros((64, 16), np.float32)), name="npu_check_cache")
    row = np.arange(16, dtype=np.float32)[None]
    n = run(Memcpy2D("write"), cache, ms.Tensor(row), _int64(5), _int64(0))
    np.testing.assert_array_equal(_as_numpy(n), [64])
    chained = ops.mul(cache, 2)  # a built-in op after the in-place write must see it
    expected = np.zeros((64, 16), np.float32)
    expected[5] = row[0]
    np.testing.assert_array_equal(_as_numpy(chained), expected * 2)


def check_desc_condition(run, pinned):
    import mindspore as ms
    from . import HostBuffer
    from .ops import MemcpyWithCondition, MemcpyWithDesc

    x = np.arange(30, dtype=np.float32).reshape(5, 6)
    np.testing.assert_array_equal(_as_numpy(run(MemcpyWithDesc(), ms.Tensor(x))), x)
    np.testing.assert_array_equal(_as_numpy(run(MemcpyWithDesc(count=4), ms.Tensor(x), _int64(7))),
                                  x.reshape(-1)[7:11])
    np.testing.assert_array_equal(_as_numpy(run(MemcpyWithCondition("d2d"), ms.Tensor(x))), x)
    with HostBuffer(4096, pinned=pinned) as buf:
        run(MemcpyWithCondition("d2h", host_buffer=buf), ms.Tensor(x), _int64(256))
        y = run(MemcpyWithCondition("h2d", host_buffer=buf, shape=(5, 6), dtype=ms.float32), _int64(256))
        np.testing.assert_array_equal(_as_numpy(y), x)


def check_blocks(run, pinned):
    import mindspore as ms
    from . import HostBuffer
    from .ops import CopyBlocks, SwapBlocks

    rng = np.random.default_rng(0)
    data = [rng.standard_normal((8, 4, 16)).astype(np.float32) for _ in range(2)]
    caches = [ms.Parameter(ms.Tensor(d), name=f"npu_check_blocks{i}") for i, d in enumerate(data)]
    mapping = np.array([[1, 0], [6, 3]], np.int64)
    block_bytes = 4 * 16 * 4
    with HostBuffer(2 * 4 * block_bytes, pinned=pinned) as buf:
        moved = run(SwapBlocks("d2h", buf, num_caches=2), *caches, ms.Tensor(mapping))
        np.testing.assert_array_equal(_as_numpy(moved), [2 * 2 * block_bytes])
        host = buf.numpy(np.float32).reshape(2, 4, 4, 16)
        for l in range(2):
            np.testing.assert_array_equal(host[l, 0], data[l][1])
            np.testing.assert_array_equal(host[l, 3], data[l][6])
        run(SwapBlocks("h2d", buf, num_caches=2), *caches, ms.Tensor(np.array([[0, 7]], np.int64)))
        run(CopyBlocks(num_caches=2), *caches, ms.Tensor(np.array([[2, 5]], np.int64)))
        for l in range(2):
            got = _as_numpy(caches[l])
            np.testing.assert_array_equal(got[7], data[l][1])
            np.testing.assert_array_equal(got[5], data[l][2])


def check_ordering(run, pinned):
    """h2d -> d2h -> h2d on one HostBuffer inside one graph (or in program order eagerly)."""
    import mindspore as ms
    from mindspore import nn, ops
    from . import HostBuffer
    from .ops import MemcpyBatch

    with HostBuffer(256, pinned=pinned) as buf:
        buf.numpy(np.float32)[:8] = np.arange(8)
        read = MemcpyBatch("h2d", buf, shapes=[(8,)], dtypes=[ms.float32])
        write = MemcpyBatch("d2h", buf, num_tensors=1)

        class Chain(nn.Cell):
            def __init__(self):
                super().__init__()
                self.read, self.write = read, write

            def construct(self, offsets):
                (first,) = self.read(offsets)
                n = self.write(first * 2, offsets)
                (second,) = self.read(ops.depend(offsets, n))
                return first, second

        first, second = run(Chain(), _int64(0))
        np.testing.assert_array_equal(_as_numpy(first), np.arange(8))
        np.testing.assert_array_equal(_as_numpy(second), np.arange(8) * 2)


def time_swap(pinned):
    """A swap-out of 1024 blocks of 64 KiB over 2 caches: SwapBlocks against one copy per block."""
    import mindspore as ms
    from . import HostBuffer
    from .ops import SwapBlocks

    shape = (BLOCKS, BLOCK_BYTES // 4)
    caches = [ms.Parameter(ms.Tensor(np.ones(shape, np.float32)), name=f"npu_check_swap{i}") for i in range(2)]
    mapping = np.stack([np.random.default_rng(1).permutation(BLOCKS), np.arange(BLOCKS)], 1).astype(np.int64)
    with HostBuffer(2 * BLOCKS * BLOCK_BYTES, pinned=pinned) as buf:
        op = SwapBlocks("d2h", buf, num_caches=2)
        op(*caches, mapping)
        buf.wait()
        start = time.perf_counter()
        op(*caches, mapping)
        buf.wait()
        ours = time.perf_counter() - start
        hosts = [ms.Tensor(np.zeros(shape, np.float32)) for _ in range(2)]
        start = time.perf_counter()
        for cache, host in zip(caches, hosts):
            for src, dst in mapping[:256].tolist():
                host[dst] = cache[src]
        hosts[-1].asnumpy()
        per_block = (time.perf_counter() - start) * BLOCKS / 256
    nbytes = 2 * BLOCKS * BLOCK_BYTES
    return (f"SwapBlocks {nbytes / ours / 1e9:.2f} GB/s, one copy per block {nbytes / per_block / 1e9:.2f} GB/s "
            f"(measured on 256 blocks), {per_block / ours:.0f}x")


CHECKS = (("MemcpyBatch d2h/h2d", check_batch), ("Memcpy2D extract/insert/d2h/h2d", check_2d),
          ("Memcpy2D write + built-in after it", check_write), ("MemcpyWithDesc / MemcpyWithCondition",
                                                                 check_desc_condition),
          ("SwapBlocks d2h/h2d, CopyBlocks", check_blocks), ("h2d -> d2h -> h2d ordering", check_ordering))


def run_checks(target):
    """Rows (check, mode, buffer, result, seconds) for every check; the timing row last."""
    import mindspore as ms

    rows = []
    for mode in CHECK_MODES:
        ms.set_context(mode=ms.PYNATIVE_MODE if mode == "pynative" else ms.GRAPH_MODE)
        runner = _Runner(mode)
        for pinned in (True, False):
            for name, check in CHECKS:
                start = time.perf_counter()
                try:
                    check(runner, pinned)
                    result = "ok"
                except Exception as error:  # noqa: BLE001 (every failure is a row of the report)
                    result = f"FAIL: {type(error).__name__}: {str(error).splitlines()[0][:160]}"
                rows.append((name, mode, "pinned" if pinned else "pageable", result, time.perf_counter() - start))
    ms.set_context(mode=ms.PYNATIVE_MODE)
    try:
        result = time_swap(pinned=True)
    except Exception as error:  # noqa: BLE001
        result = f"FAIL: {type(error).__name__}: {error}"
    rows.append((f"swap {BLOCKS} x {BLOCK_BYTES >> 10} KiB x 2 caches", "pynative", "pinned", result, 0.0))
    return rows


def table(rows):
    widths = [max(len(str(r[i])) for r in rows) for i in range(3)]
    lines = []
    for name, mode, buf, result, seconds in rows:
        lines.append(f"{name:<{widths[0]}}  {mode:<{widths[1]}}  {buf:<{widths[2]}}  {seconds:6.2f} s  {result}")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m ms_memcopy npu-check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true",
                        help="no NPU: run the same checks on the CPU target through the op_def route")
    args = parser.parse_args(argv)
    import mindspore as ms

    from . import op_def_route

    target = "CPU" if args.dry_run else "Ascend"
    if not args.dry_run and not os.environ.get("ASCEND_HOME_PATH") and not os.environ.get("ASCEND_OPP_PATH"):
        print("npu-check: no CANN installation is set up (ASCEND_HOME_PATH / ASCEND_OPP_PATH); on a machine "
              "without an NPU run `python -m ms_memcopy npu-check --dry-run`", file=sys.stderr)
        return 2
    ms.set_device(target)
    print(f"ms_memcopy npu-check: target {target}{' (dry run: timings say nothing about an NPU)' if args.dry_run else ''}")
    start = time.perf_counter()
    op_def_route.build(target)
    print(f"op_def route built for {target} in {time.perf_counter() - start:.1f} s")
    rows = run_checks(target)
    print(table(rows))
    failed = [r for r in rows if r[3].startswith("FAIL")]
    print(f"{len(rows) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
