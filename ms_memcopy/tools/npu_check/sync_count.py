"""Counting the calls into MindSpore's synchronizing entry points (SyncCounter), and the npu-check row
that counts them over eager calls with int64 Tensor values (check_eager_sync_count): 0 expected, as
tests/test_no_wait.py counts on the CPU."""
import numpy as np

from ._common import DISTINCT_CALLS, _int64, _set_mode, _wait_for_device

#: (owner, attribute) of MindSpore's entry points that wait for queued PYNATIVE launches; the owners
#: are looked up when counting starts (the executor's class, mindspore.runtime).
SYNC_ENTRY_POINTS = (("Tensor", "asnumpy"), ("Tensor", "data_sync"), ("Tensor", "__array__"),
                     ("Tensor", "tolist"), ("Tensor", "item"), ("executor", "sync"), ("runtime", "synchronize"))


_INHERITED = object()  # an entry point its owner inherits (restored by deleting the counting one)


class SyncCounter:
    """While entered, counts the calls into MindSpore's synchronizing entry points (``calls``: {name:
    count}); they still run. Restores every entry point on exit."""

    def __init__(self):
        self.calls = {}
        self._saved = []

    def __enter__(self):
        import mindspore as ms

        from ..._framework import _pynative_executor

        owners = {"Tensor": ms.Tensor, "executor": type(_pynative_executor()), "runtime": ms.runtime}
        for owner_name, name in SYNC_ENTRY_POINTS:
            owner = owners[owner_name]
            if hasattr(owner, name):
                self._saved.append((owner, name, vars(owner).get(name, _INHERITED)))
                setattr(owner, name, self._counting(f"{owner_name}.{name}", getattr(owner, name)))
        return self

    def __exit__(self, *exc):
        for owner, name, original in reversed(self._saved):
            if original is _INHERITED:
                delattr(owner, name)
            else:
                setattr(owner, name, original)
        self._saved.clear()
        return False

    def _counting(self, label, fn):
        self.calls[label] = 0

        def counted(*args, **kwargs):
            self.calls[label] += 1
            return fn(*args, **kwargs)
        return counted

    def total(self):
        return sum(self.calls.values())


def check_eager_sync_count():
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
