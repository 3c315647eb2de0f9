"""The checks of the transfer streams: a TransferQueue's submits and polls against MindSpore's
synchronizing entry points, and a compiled graph with an asynchronous swap and its wait."""
import time

import numpy as np

from ._common import _set_mode

QUEUE_SUBMITS = 1000
SWAP_BLOCK = (16, 64)  # 4 KiB float32 blocks


def check_queue_syncs() -> str:
    """1,000 TransferQueue submits (fork, swap-out, swap-in in turn), each polled with finished() until
    reported: the calls into MindSpore's synchronizing entry points (each drains its PyNative pipeline),
    which must be 0, and the sequence's bytes at the end."""
    import mindspore as ms
    from ..._sync_counter import SyncCounter
    from ...nn import BlockPool, TransferQueue

    _set_mode("pynative")
    values = [np.random.default_rng(l).standard_normal((2, *SWAP_BLOCK)).astype(np.float32) for l in range(2)]
    pool = BlockPool(num_caches=2, num_blocks=6, num_host_blocks=2, block_shape=SWAP_BLOCK, dtype=ms.float32)
    try:
        table = pool.allocate(2)
        for cache, v in zip(pool.caches, values):
            cache.set_data(ms.Tensor(np.concatenate([v, np.zeros((4, *SWAP_BLOCK), np.float32)])))
        queue = TransferQueue(pool)
        pool.free(queue.wait(queue.submit("fork", table)))  # the first launches build the kernels
        polls, deadline = 0, time.monotonic() + 120
        with SyncCounter() as counter:
            for submit in range(QUEUE_SUBMITS):
                kind = ("fork", "swap_out", "swap_in")[submit % 3]
                job = queue.submit(kind, table)
                new = queue.destination(job)
                while job not in queue.finished():
                    polls += 1
                    if time.monotonic() > deadline:
                        raise AssertionError(f"{kind} job {job} not reported by finished() within 120 s")
                if kind == "fork":
                    pool.free(table)
                table = new
        for l, cache in enumerate(pool.caches):
            np.testing.assert_array_equal(cache.asnumpy()[table], values[l], err_msg=f"cache {l}")
        queue.close()
    finally:
        pool.close()
    if counter.total():
        drains = ", ".join(f"{name} x{n}" for name, n in sorted(counter.calls.items()) if n)
        raise AssertionError(f"{counter.total()} calls into MindSpore's synchronizing entry points: {drains}")
    return f"0 MindSpore syncs over {QUEUE_SUBMITS} submits and {polls + QUEUE_SUBMITS} polls; same bytes"


def _swap_step(buf, src, dst):
    """A graph: a write into src (the compute stream), src's blocks swapped out behind it, then swapped
    into dst; each wait before the read that needs it."""
    import mindspore as ms
    from mindspore import nn, ops
    from ...ops import Memcpy2D, SwapBlocksAsync, WaitTransfer

    class SwapStep(nn.Cell):
        def __init__(self):
            super().__init__()
            self.src, self.dst = ms.ParameterTuple(src), ms.ParameterTuple(dst)
            self.write = Memcpy2D("write")
            self.swap_out = SwapBlocksAsync("d2h", buf, num_caches=2)
            self.swap_in = SwapBlocksAsync("h2d", buf, num_caches=2)
            self.saved = WaitTransfer(num_tensors=2, lane="d2h")
            self.loaded = WaitTransfer(num_tensors=2, lane="h2d")

        def construct(self, data, at_row, out_mapping, in_mapping):
            # (side-effect ops, each ordered after the one before; the reads take the wait's output)
            self.write(self.src[0], data, at_row, ms.Tensor([0], ms.int64))
            token = self.swap_out(self.src[0], self.src[1], out_mapping)
            self.saved(self.src[0], self.src[1], token)
            token = self.swap_in(self.dst[0], self.dst[1], in_mapping)
            loaded = self.loaded(self.dst[0], self.dst[1], token)
            return loaded, ops.depend(self.dst[0], loaded) * 1, ops.depend(self.dst[1], loaded) * 1

    step = SwapStep()
    step.set_jit_config(ms.JitConfig(jit_level="O0"))
    return step


def check_graph_transfer() -> str:
    """A GRAPH_MODE O0 step: Memcpy2D write into block 1 of a cache, SwapBlocksAsync d2h of blocks 1 and
    3 (after the write: the event on the compute stream), WaitTransfer, SwapBlocksAsync h2d of those host
    blocks into other caches, WaitTransfer, and reads after the wait: numpy bytes everywhere."""
    import mindspore as ms
    from ... import HostBuffer
    from ...ops import wait_transfers

    _set_mode("graph O0")
    try:
        shape = (4, *SWAP_BLOCK)
        src_values = [np.random.default_rng(7 + l).standard_normal(shape).astype(np.float32) for l in range(2)]
        src = [ms.Parameter(ms.Tensor(v), name=f"npu_check_async_src{l}") for l, v in enumerate(src_values)]
        dst = [ms.Parameter(ms.Tensor(np.zeros(shape, np.float32)), name=f"npu_check_async_dst{l}") for l in range(2)]
        row = np.full((1, SWAP_BLOCK[1]), 3.5, np.float32)
        with HostBuffer(2 * 4 * SWAP_BLOCK[0] * SWAP_BLOCK[1] * 4) as buf:
            step = _swap_step(buf, src, dst)
            out_mapping, in_mapping = np.array([[1, 0], [3, 2]], np.int64), np.array([[0, 3], [2, 0]], np.int64)
            moved, k, v = step(ms.Tensor(row), ms.Tensor([SWAP_BLOCK[0] + 5], ms.int64), ms.Tensor(out_mapping),
                               ms.Tensor(in_mapping))
            wait_transfers()
            src_values[0][1, 5] = row[0]  # the write the swap-out must follow
            expected = [np.zeros(shape, np.float32) for _ in range(2)]
            for l in range(2):
                expected[l][3], expected[l][0] = src_values[l][1], src_values[l][3]
            np.testing.assert_array_equal(k.asnumpy(), expected[0], err_msg="read after the swap-in's wait, cache 0")
            np.testing.assert_array_equal(v.asnumpy(), expected[1], err_msg="read after the swap-in's wait, cache 1")
            host = buf.numpy(np.float32, (2, 4, *SWAP_BLOCK))
            np.testing.assert_array_equal(host[0, 0], src_values[0][1], err_msg="swap-out after the write")
            nbytes = 2 * 2 * SWAP_BLOCK[0] * SWAP_BLOCK[1] * 4
            if moved.asnumpy().tolist() != [nbytes]:
                raise AssertionError(f"token {moved.asnumpy().tolist()}, expected [{nbytes}]")
    finally:
        _set_mode("pynative")
    return "same bytes: the swap-out after the write, the reads after the swap-in's wait"
