"""The op_def route: the copy ops as a MindSpore CustomOpBuilder module, the one route of the
primitives on every device.

MindSpore runs host C++ that enqueues ACL calls on its own stream, in GRAPH_MODE and eagerly, through
``ops.CustomOpBuilder(..., op_def=[yaml])``: the op_def registers a ``Custom_<op>`` primitive with
an infer function, and a kernel registered under that name runs it in graphs (on Ascend a
``KernelMod`` in MindSpore's custom kernel factory, on CPU a ``NativeCpuKernelMod``). Eager calls run
through the module's PyboostRunner functions: ``KernelInstance(op, *init)(*inputs)`` keeps one
primitive's kernel state across calls and takes int64 inputs as host values. This module builds that
extension from ``ops_impl/kernels/ms_extension/`` plus files generated from configs/ops/*.yaml
(:mod:`ms_memcopy.route_codegen`), and loads it. Every kernel and PyNative function runs the op's
body (``ops_impl/kernels/bodies/<family>.cpp``). ``pip install`` builds it (setup.py); :func:`load` builds it only when
the installation's build is missing or out of date.
The module is also a MindSpore graph pass plugin: its pass unfolds the tuple input of the ops with
a variadic input, which an Ascend graph would otherwise fold into one temporary copy
(:func:`register_tuple_pass`).

The module's functions can also be called directly (PYNATIVE_MODE): each op of configs/ops/*.yaml is
a function named by the op taking the op_def arguments in order
(:func:`ms_memcopy.route_codegen.arg_names`; an int64 input as a Tensor, a numpy array or a sequence
of ints) and returning a tuple of tensors::

    from ms_memcopy import op_def_route
    (y,) = op_def_route.load().memcpy2d_extract(x, row, col, 2, 3)
    y = op_def_route.call("memcpy2d_extract", (x, row, col), {"height": 2, "width": 3})
"""
import sys

from . import _paths, route_codegen  # noqa: F401  (_paths: tests patch paths through this module)
from .route_ascend_check import compile_ascend_kernels  # noqa: F401
from .route_build import (  # noqa: F401
    BACKENDS, ENTRY_SOURCES, FINGERPRINT_FILE, PYNATIVE_SOURCES, _fingerprint, build, build_options, builder,
    default_backend, default_build_dir, find_ninja, kernels_dir, mindspore_plugin_dir, module_name, on_ascend,
    packaged_build_dir)
from .route_call import call, given_values, type_id  # noqa: F401
from .route_load import PASS_DEVICES, _modules, _registered_pass_devices, load, register_tuple_pass  # noqa: F401

# The jobs live in route_build (sources, flags, build directories, fingerprint), route_ascend_check (the
# Ascend compile check), route_load (load and the graph pass) and route_call (direct calls); this module
# is their one import path.


def selected_route() -> str:
    """The route a primitive takes: "op_def", on every device (kept for code that asked)."""
    return "op_def"


if __name__ == "__main__":  # python -m ms_memcopy.op_def_route: print the generated op_def
    sys.stdout.write(route_codegen.op_def_yaml())
