"""Transfers against compiled steps under the host runtime's strict ordering (MS_MEMCOPY_STRICT_ORDER=1):
a GRAPH_MODE step that reads blocks a TransferQueue swap-in, or a graph's own SwapBlocksAsync, is still
writing is reported (an error naming both calls), while a read after the wait sees the new bytes. The
transfer streams are held by a host function, so the copies are in flight when the step reads. The
switch is read once per process: the scenarios run in one child interpreter."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from ms_memcopy import _runtime_env

SCENARIOS = r'''
import json, threading
import numpy as np
import mindspore as ms
from mindspore import nn, ops
from ms_memcopy import HostBuffer, runtime
from ms_memcopy.nn import BlockPool, TransferQueue
from ms_memcopy.ops import Memcpy2D, SwapBlocksAsync, WaitTransfer, transfer

ms.set_context(mode=ms.GRAPH_MODE, jit_config={"jit_level": "O0"})
BLOCK = (2, 4)
out = {}


class Hold:
    """Keeps the transfer streams' later tasks queued until released."""

    def __init__(self):
        runtime.set_device(0)
        self.gate = threading.Event()
        for lane in range(3):
            runtime.launch_host_func(transfer._library().msmc_transfer_lane_stream(0, lane),
                                    lambda: self.gate.wait(30))


def outcome(call):
    try:
        return {"value": call().tolist()}
    except Exception as e:
        return {"error": str(e)}


class ReadBlock(nn.Cell):
    """A model step reading one block of a cache (its rows, through Memcpy2D extract on the step's stream)."""

    def __init__(self, cache):
        super().__init__()
        self.cache = cache
        self.extract = Memcpy2D("extract", height=BLOCK[0], width=BLOCK[1])

    def construct(self, row):
        return self.extract(self.cache, row, ms.Tensor([0], ms.int64))


def rows(block):
    return ms.Tensor([block * BLOCK[0]], ms.int64)


# -- a TransferQueue swap-in, and a compiled step between the submit and its report
pool = BlockPool(num_caches=2, num_blocks=4, num_host_blocks=2, block_shape=BLOCK, dtype=ms.float32)
values = np.arange(2 * 4 * 8, dtype=np.float32).reshape(2, 4, *BLOCK)
for cache, v in zip(pool.caches, values):
    cache.set_data(ms.Tensor(v))
queue = TransferQueue(pool)
step = ReadBlock(pool.caches[0])
out["compiled"] = outcome(lambda: step(rows(3)).asnumpy())
host = pool.swap_out(pool.allocate(2))               # blocks 0 and 1 to the host, synchronously
hold = Hold()
job = queue.submit("swap_in", host)
blocks = queue.destination(job)
out["other_block_in_flight"] = outcome(lambda: step(rows(3)).asnumpy())
out["queue_read_in_flight"] = outcome(lambda: step(rows(blocks[0])).asnumpy())
hold.gate.set()
queue.wait(job)
after = ReadBlock(pool.caches[0])  # (a graph whose step failed refuses to run again)
out["queue_read_after_report"] = outcome(lambda: after(rows(blocks[0])).asnumpy())
out["queue_expected"] = values[0, 0].tolist()
pool.close()


# -- a graph's own swap-in, read before and after its wait
class SwapInThenRead(nn.Cell):
    def __init__(self, buf, k, v, waited):
        super().__init__()
        self.k, self.v = k, v
        self.swap_in = SwapBlocksAsync("h2d", buf, num_caches=2)
        self.wait = WaitTransfer(num_tensors=2, lane="h2d")
        self.extract = Memcpy2D("extract", height=BLOCK[0], width=BLOCK[1])
        self.waited = waited

    def construct(self, mapping, row):
        token = self.swap_in(self.k, self.v, mapping)
        if self.waited:
            moved = self.wait(self.k, self.v, token)
            return self.extract(ops.depend(self.k, moved), row, ms.Tensor([0], ms.int64))
        read = self.extract(self.k, row, ms.Tensor([0], ms.int64))  # the mistake: before the wait
        self.wait(self.k, self.v, token)
        return read


buf = HostBuffer(2 * 2 * 32)
buf.numpy(np.float32)[:] = -np.arange(32, dtype=np.float32)
for waited in (False, True):
    k = ms.Parameter(ms.Tensor(np.zeros((4, *BLOCK), np.float32)), name=f"k{waited}")
    v = ms.Parameter(ms.Tensor(np.zeros((4, *BLOCK), np.float32)), name=f"v{waited}")
    net = SwapInThenRead(buf, k, v, waited)
    mapping = ms.Tensor([[1, 2]], ms.int64)           # host block 1 into device block 2
    hold = None if waited else Hold()
    out[f"graph_waited_{waited}"] = outcome(lambda: net(mapping, rows(2)).asnumpy())
    if hold is not None:
        hold.gate.set()
    transfer.wait_transfers()
out["graph_expected"] = (-np.arange(8, 16, dtype=np.float32)).reshape(BLOCK).tolist()
out["races"] = runtime.order_check_counts().races
buf.close()
print(json.dumps(out))
'''


@pytest.fixture(scope="module")
def strict(tmp_path_factory):
    script = tmp_path_factory.mktemp("transfer_strict") / "scenarios.py"
    script.write_text(SCENARIOS)
    env = _runtime_env.without_machine(os.environ)
    env[_runtime_env.STRICT_ORDER] = "1"
    result = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def _race(entry):
    assert "error" in entry, f"no race reported: the step read {entry}"
    message = entry["error"]
    assert "ordering race" in message and "aclrtStreamWaitEvent" in message, message
    return message


def test_a_step_reading_blocks_a_queue_swap_in_still_writes_is_reported(strict):
    """Between the submit and the report, a compiled step that reads the swap-in's destination fails
    with the race naming both calls; one reading another block runs; after wait(job) the step reads
    the swapped-in bytes."""
    assert strict["compiled"] == strict["other_block_in_flight"] and "value" in strict["compiled"]
    message = _race(strict["queue_read_in_flight"])
    assert message.count("on stream") >= 2, message  # the step's read and the transfer's copy
    np.testing.assert_array_equal(strict["queue_read_after_report"]["value"], strict["queue_expected"])


def test_a_graph_reading_a_destination_before_its_wait_is_reported(strict):
    _race(strict["graph_waited_False"])
    np.testing.assert_array_equal(strict["graph_waited_True"]["value"], strict["graph_expected"])
    assert strict["races"] >= 2
