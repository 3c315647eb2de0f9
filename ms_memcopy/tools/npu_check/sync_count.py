"""The npu-check row that counts the calls into MindSpore's synchronizing entry points
(ms_memcopy._sync_counter.SyncCounter) over eager calls with int64 Tensor values
(check_eager_sync_count): 0 expected, as tests/test_no_wait.py counts on the CPU."""
import numpy as np

from ..._sync_counter import SyncCounter
from ._common import DISTINCT_CALLS, _int64, _set_mode, _wait_for_device


def check_eager_sync_count() -> str:
    """DISTINCT_CALLS eager calls each of MemcpyWithCondition("d2h") with a Tensor offset and CopyBlocks
    with a Tensor mapping: the calls into MindSpore's synchronizing entry points (0 expected), then the
    bytes against numpy."""
    import mindspore as ms

    from ... import HostBuffer
    from ...ops import CopyBlocks, MemcpyWithCondition

    _set_mode("pynative")
    x = np.arange(16, dtype=np.float32)
    caches = [ms.Parameter(ms.Tensor(np.arange(64 * 8, dtype=np.float32).reshape(64, 8) + 1000 * l),
                           name=f"npu_check_sync_cache{l}") for l in range(2)]
    origin = [c.asnumpy().copy() for c in caches]
    with HostBuffer(DISTINCT_CALLS * x.nbytes, pinned=True) as buf:
        d2h, copy = MemcpyWithCondition("d2h", host_buffer=buf), CopyBlocks(num_caches=2)
        xt = ms.Tensor(x)
        offsets = [_int64(i * x.nbytes) for i in range(DISTINCT_CALLS)]
        mappings = [ms.Tensor(np.array([[i % 32, 32 + i % 32]], np.int64)) for i in range(DISTINCT_CALLS)]
        d2h(xt, offsets[0])  # the kernel instances are made at the first calls
        copy(*caches, mappings[0])
        _wait_for_device()
        with SyncCounter() as counter:
            for i in range(DISTINCT_CALLS):
                d2h(xt, offsets[i])
                copy(*caches, mappings[i])
        _wait_for_device()
        written = buf.numpy(np.float32).reshape(DISTINCT_CALLS, 16).copy()
    expected = [o.copy() for o in origin]
    for e, o in zip(expected, origin):
        e[32:64] = o[0:32]
    if not np.array_equal(written, np.broadcast_to(x, written.shape)) or any(
            not np.array_equal(c.asnumpy(), e) for c, e in zip(caches, expected)):
        raise AssertionError("the copies differ from numpy's")
    text = (f"{counter.total()} calls into MindSpore's synchronizing entry points over {2 * DISTINCT_CALLS} eager "
            f"calls with Tensor offsets and mappings")
    if counter.total():
        raise AssertionError(f"{text}: {counter.calls}")
    return text
