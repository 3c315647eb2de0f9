"""The host values of an eager call's int64 tensors (offsets, rows, block mappings), read back once
for the checks and the launch."""
import contextlib
import threading

import numpy as np


class _HostValuesOfCall(threading.local):
    """The host values of the int64 tensors of the eager call in progress on this thread, read once
    for the checks and the launch ({id(tensor): (tensor, values)})."""

    by_id = None


_host_values_of_call = _HostValuesOfCall()


@contextlib.contextmanager
def reading_host_values_once():
    """Within the block, each int64 tensor of the call is read back to the host (``asnumpy``) at most
    once (:func:`host_values`). Re-entrant: an inner block shares the outer one's values."""
    if _host_values_of_call.by_id is not None:
        yield
        return
    _host_values_of_call.by_id = {}
    try:
        yield
    finally:
        _host_values_of_call.by_id = None


def remember_host_values(tensor, values):
    """Gives the host values of tensor, known without reading it back (a mapping given as numpy)."""
    if _host_values_of_call.by_id is not None:
        _host_values_of_call.by_id[id(tensor)] = (tensor, np.asarray(values, dtype=np.int64))


def host_values(tensor):
    """The values of an int64 tensor on the host (numpy): read once per eager call."""
    memo = _host_values_of_call.by_id
    if memo is not None and id(tensor) in memo:
        return memo[id(tensor)][1]
    values = tensor.asnumpy()
    if memo is not None:
        memo[id(tensor)] = (tensor, values)  # the tensor is kept so that its id stays its own
    return values
