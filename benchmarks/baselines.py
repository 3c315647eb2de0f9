"""What a user would pick instead of ms_memcopy, over the same buffers: numpy and plain C++.

numpy: a per-item ``np.copyto`` loop, one big copy, slice assignment for 2D. C++: std::memcpy loops
timed in C (``native``), the floor; for large single copies also split across threads (the best
memcpy bandwidth of the machine's cores). MindSpore built-ins are in ``ms_graphs``.
"""
import ctypes
import os

import numpy as np

from . import native
from .timing import python_loop


def usable_cores():
    """Cores this process may run on (what the host runtime's copy pool also counts)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def view(ptr, nbytes):
    """A writable uint8 numpy array over nbytes at address ptr (host memory, which with the host
    runtime includes "device" memory)."""
    if nbytes == 0:
        return np.empty(0, np.uint8)
    return np.frombuffer((ctypes.c_uint8 * nbytes).from_address(ptr), np.uint8)


def address(array):
    return array.__array_interface__["data"][0]


# --- numpy --------------------------------------------------------------------------------------------

def numpy_copyto_items(dst_arrays, src_arrays):
    """for d, s in zip(...): np.copyto(d, s)."""
    pairs = list(zip(dst_arrays, src_arrays))

    def run():
        for d, s in pairs:
            np.copyto(d, s)
    return python_loop(run)


def numpy_one_copy(dst, src):
    """np.copyto(dst, src): one big copy of the same number of bytes."""
    return python_loop(lambda: np.copyto(dst, src))


def numpy_slice_assign(dst2d, src2d, width):
    """dst2d[:, :width] = src2d[:, :width] (pitched rows on either side)."""
    def run():
        dst2d[:, :width] = src2d[:, :width]
    return python_loop(run)


# --- C++ ----------------------------------------------------------------------------------------------

def memcpy_loop(dsts, srcs, sizes):
    return native.memcpy_items(dsts, srcs, sizes)


def memcpy_rows(dst, dpitch, src, spitch, width, height):
    return native.memcpy_rows(dst, dpitch, src, spitch, width, height)


def memcpy_split(dst, src, nbytes, threads):
    return native.memcpy_threads(dst, src, nbytes, threads)
