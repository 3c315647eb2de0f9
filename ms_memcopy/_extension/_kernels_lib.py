"""ctypes binding of the kernels library's HostBuffer table (ops_impl/kernels/host_buffers.h), of
the names its messages use (ops_impl/kernels/python_names.cpp) and of its counters of launches, of
value-dependent inputs by source and of owned resources (ops_impl/kernels/kernel_counters.h).

The kernels lease HostBuffers from this table by id; Python registers each
HostBuffer here, closes it here, and waits here for its in-flight copies.
Loading the library loads the ACL library it links against, not MindSpore.
"""
import ctypes
import functools
from collections import namedtuple
from ctypes import c_char_p, c_int32, c_int64, c_uint64, c_void_p
from typing import Optional

from . import _paths

_PROTOTYPES = {
    "msmc_hostbuffer_open": (c_int32, [c_int64, c_void_p, c_uint64, c_int32]),
    "msmc_hostbuffer_open_chunks": (c_int32, [c_int64, c_void_p, c_uint64]),
    "msmc_hostbuffer_close": (c_int32, [c_int64]),
    "msmc_hostbuffer_wait": (c_int32, [c_int64]),
    "msmc_hostbuffer_note_stream": (c_int32, [c_int64, c_void_p]),
    "msmc_op_label": (c_char_p, [c_char_p]),
    "msmc_acl_error_name": (c_char_p, [c_int32]),
    "msmc_graph_launch_count": (c_uint64, []),
    "msmc_eager_launch_count": (c_uint64, []),
    "msmc_graph_held_value_reads": (c_uint64, []),
    "msmc_graph_memory_value_reads": (c_uint64, []),
    "msmc_live_kernel_events": (c_int64, []),
    "msmc_live_kernel_pinned_bytes": (c_int64, []),
    "msmc_live_kernel_descriptor_bytes": (c_int64, []),
}


@functools.lru_cache(maxsize=None)
def library() -> ctypes.CDLL:
    """The loaded kernels library, with the HostBuffer table's prototypes set."""
    path = _paths.KERNELS_LIBRARY
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: reinstall ms_memcopy (`pip install .`) to build it")
    lib = ctypes.CDLL(str(path))
    for name, (restype, argtypes) in _PROTOTYPES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return lib


@functools.lru_cache(maxsize=None)
def op_label(op_name: str) -> str:
    """The label the kernels give op_name's errors ("Memcpy2D(extract)"); KeyError for an op without a body."""
    label = library().msmc_op_label(op_name.encode())
    if label is None:
        raise KeyError(f"no kernel body for op {op_name!r}")
    return label.decode()


def acl_error_name(code: int) -> Optional[str]:
    """The name the kernels' table gives ACL error code `code`, or None for a code it lacks."""
    name = library().msmc_acl_error_name(code)
    return None if name is None else name.decode()


LaunchCounts = namedtuple("LaunchCounts", ["graph", "eager"])
LaunchCounts.__doc__ = """Kernel launches so far in this process: through the graph kernels (the ``Custom_<op>``
KernelMods MindSpore selected) and through the eager entries (the module's PyboostRunner)."""

ValueReads = namedtuple("ValueReads", ["held", "memory"])
ValueReads.__doc__ = """How the graph kernels obtained their value-dependent (int64) inputs so far in this process:
from a value MindSpore held on the host for the KernelTensor (a constant), or from the tensor's memory
(``KernelTensor::GetValue`` copies it to the host: on Ascend a device-to-host copy and a stream
synchronization; on the CPU target the memory is host memory, read in place)."""

OwnedResources = namedtuple("OwnedResources", ["events", "pinned_bytes", "descriptor_bytes"])
OwnedResources.__doc__ = """The ACL resources the kernels hold now: events (result and descriptor slots,
HostBuffer fences), pinned host bytes of the result slots, device bytes of the memory-copy descriptors."""


def launch_counts() -> LaunchCounts:
    """The kernels' launch counters (:class:`LaunchCounts`)."""
    lib = library()
    return LaunchCounts(lib.msmc_graph_launch_count(), lib.msmc_eager_launch_count())


def value_reads() -> ValueReads:
    """The graph kernels' counters of value-dependent inputs by source (:class:`ValueReads`)."""
    lib = library()
    return ValueReads(lib.msmc_graph_held_value_reads(), lib.msmc_graph_memory_value_reads())


def owned_resources() -> OwnedResources:
    """The resources the kernels hold now (:class:`OwnedResources`); counted by the kernels
    themselves, so they read the same on CANN and on the host runtime."""
    lib = library()
    return OwnedResources(lib.msmc_live_kernel_events(), lib.msmc_live_kernel_pinned_bytes(),
                          lib.msmc_live_kernel_descriptor_bytes())
