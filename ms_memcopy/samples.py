"""One sample call for every op of configs/ops/*.yaml, with the numpy expectation of its results.

Each family's module (ms_memcopy/ops/<family>.py) holds the sample calls of its ops in ``SAMPLES``;
this module gathers them for the families of configs/ops. ``SAMPLES`` maps each op name
(:func:`ms_memcopy.op_defs.all_op_defs`) to a function of a HostBuffer of at least
``HOST_BUFFER_BYTES`` bytes that returns a :class:`Sample`: the op built through its public
class for that form, the inputs of one call (Parameters for in-place targets, so a graph can write
them), the numpy values of its outputs, and what the call writes (HostBuffer bytes or an in-place
target) with the numpy values expected there. A sample that reads the HostBuffer fills it first.

The tests run every sample in GRAPH_MODE and PYNATIVE_MODE and compare it against numpy, and so
does ``python -m ms_memcopy npu-check``; their per-form lists come from here, and a test fails when
an op of configs/ops has no sample. Importing this module imports MindSpore.
"""
import importlib
from typing import Callable, Dict

from . import op_defs
from .host_buffer import HostBuffer
from .ops._samples import Sample

__all__ = ["HOST_BUFFER_BYTES", "GRADIENT_ONLY", "SAMPLES", "Sample", "sample"]

#: The HostBuffer size every sample fits in.
HOST_BUFFER_BYTES = 1024
#: The ops no public class builds: a bprop's (GradientOp, without Python checks of its own; its eager
#: calls take the bprop's checked inputs).
GRADIENT_ONLY = frozenset({"memcpy2d_extract_like"})


def _gather() -> Dict[str, Callable[[HostBuffer], Sample]]:
    found = {}
    for family in op_defs.families():
        found.update(importlib.import_module(f"{__package__}.ops.{family}").SAMPLES)
    return found


#: op name -> sample(host_buffer): the ``SAMPLES`` of every family's module, ms_memcopy/ops/<family>.py.
SAMPLES: Dict[str, Callable[[HostBuffer], Sample]] = _gather()


def sample(op_name: str, host_buffer: HostBuffer) -> Sample:
    """The sample call of op_name on host_buffer (KeyError naming the op when it has none)."""
    try:
        make = SAMPLES[op_name]
    except KeyError:
        raise KeyError(f"configs/ops defines {op_name!r} but ms_memcopy/samples.py has no sample call for it; "
                       f"add one to SAMPLES of ms_memcopy/ops/<family>.py") from None
    return make(host_buffer)
