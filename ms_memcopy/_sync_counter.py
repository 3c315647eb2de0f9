"""SyncCounter: counts the calls into MindSpore's synchronizing entry points while installed.

Each of these waits for MindSpore's PyNative pipeline (frontend, backend and launch queues) before it
does its work: reading a tensor on the host, the executor's sync, and the stream and event API of
``mindspore.runtime`` (``WaitForward`` in MindSpore's source). tests/test_no_wait.py counts them over
eager calls and tests/test_transfer_queue.py over a TransferQueue's submits and polls; npu-check
reports the queue's count on an NPU.
"""
from typing import Dict

from ._framework import _pynative_executor


def _entry_points():
    """(owner, attribute name) of every synchronizing entry point MindSpore has."""
    import mindspore as ms

    runtime = ms.runtime
    return [(ms.Tensor, "asnumpy"), (ms.Tensor, "data_sync"), (ms.Tensor, "__array__"), (ms.Tensor, "tolist"),
            (ms.Tensor, "item"), (type(_pynative_executor()), "sync"), (runtime, "synchronize"),
            (runtime, "current_stream"), (runtime.Stream, "synchronize"), (runtime.Stream, "query"),
            (runtime.Stream, "wait_event"), (runtime.Stream, "wait_stream"), (runtime.Stream, "record_event"),
            (runtime.Event, "record"), (runtime.Event, "wait"), (runtime.Event, "synchronize"),
            (runtime.Event, "query")]


class SyncCounter:
    """Counts the calls into MindSpore's synchronizing entry points inside a ``with`` block.

    ``calls`` maps each entry point ("Tensor.asnumpy", "Event.query", ...) to its count; ``total()``
    sums them. The entry points are wrapped on entering and restored on leaving.
    """

    def __init__(self):
        self.calls: Dict[str, int] = {}
        self._saved = []

    def __enter__(self) -> "SyncCounter":
        for owner, name in _entry_points():
            if hasattr(owner, name):
                label = f"{getattr(owner, '__name__', owner)}.{name}"
                original = vars(owner).get(name, None)
                self._saved.append((owner, name, original))
                setattr(owner, name, self._counting(label, getattr(owner, name)))
        if len(self.calls) < 4:
            raise AssertionError(f"found too few synchronizing entry points: {sorted(self.calls)}")
        return self

    def __exit__(self, *exc: object) -> None:
        for owner, name, original in reversed(self._saved):
            if original is None:
                delattr(owner, name)  # it was inherited: the base's is seen again
            else:
                setattr(owner, name, original)
        self._saved = []

    def total(self) -> int:
        return sum(self.calls.values())

    def _counting(self, label, fn):
        self.calls[label] = 0

        def counted(*args, **kwargs):
            self.calls[label] += 1
            return fn(*args, **kwargs)
        return counted
