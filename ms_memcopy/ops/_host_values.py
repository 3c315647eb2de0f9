"""The host values an eager call already has for its int64 tensors (a block mapping given as numpy or
a list, made a Tensor for the call). No tensor is ever read back here: a Tensor's values are read
where its launch runs (the module's KernelInstance), so an eager call never waits for MindSpore's queues."""
from typing import Any, Dict, Iterator, Optional, Tuple
import contextlib
import threading

import numpy as np


class _HostValuesOfCall(threading.local):
    """The host values of the int64 tensors of the eager call in progress on this thread, read once
    for the checks and the launch ({id(tensor): (tensor, values)})."""

    by_id: Optional[Dict[int, Tuple[Any, Any]]] = None


_host_values_of_call = _HostValuesOfCall()


@contextlib.contextmanager
def reading_host_values_once() -> Iterator[None]:
    """Within the block, the host values given with :func:`remember_host_values` are the call's
    (:func:`host_values`). Re-entrant: an inner block shares the outer one's values."""
    if _host_values_of_call.by_id is not None:
        yield
        return
    _host_values_of_call.by_id = {}
    try:
        yield
    finally:
        _host_values_of_call.by_id = None


def remember_host_values(tensor: Any, values: Any) -> None:
    """Gives the host values of tensor, known without reading it back (a mapping given as numpy)."""
    if _host_values_of_call.by_id is not None:
        _host_values_of_call.by_id[id(tensor)] = (tensor, np.asarray(values, dtype=np.int64))


def host_values(tensor: Any) -> Optional[np.ndarray]:
    """The host values remembered for tensor in this call (numpy), or None: then the launch reads the
    tensor itself, in MindSpore's launch order."""
    memo = _host_values_of_call.by_id
    if memo is not None and id(tensor) in memo:
        return memo[id(tensor)][1]
    return None
