"""The Ascend route: the copy primitives as a MindSpore CustomOpBuilder module.

On Ascend, ``ops.Custom(func_type="aot")`` means Ascend C device kernels, so the primitives cannot
reach their C++ kernels that way; MindSpore's route for C++ operators that call runtime APIs is
``ops.CustomOpBuilder(..., backend="Ascend", op_def=...)``. This module builds that extension from
``ops_impl/kernels/ms_extension/`` (entries that run the same op bodies as the aot kernels, on the
stream MindSpore gives) and loads it. The op_def YAML it needs is generated here from
``configs/ops.yaml`` (through :mod:`ms_memcopy.op_defs`) into the build directory.

The same sources also build for ``backend="CPU"``, where the entries follow the CPU launch protocol
of the aot kernels; MindSpore 2.10 runs CustomOpBuilder ops on CPU in PYNATIVE_MODE only, and only
correctly with ``ms.runtime.launch_blocking()`` on (docs/ascend_route.md).

Each op of configs/ops.yaml becomes a function of the module named by its ``ascend_function``, whose
positional arguments are, in order (:func:`function_args`):

1. the op's inputs: a tensor each, a tuple of tensors for a variadic input;
2. its attribute values, as ints;
3. for an op whose outputs no input describes (the h2d forms): ``shape`` (tuple of ints) and
   ``dtype`` (a TypeId int) for a single output; ``shapes`` (every shape's dimensions one after the
   other), ``ranks`` and ``dtypes`` for a variadic one.

:data:`ROUTES` maps each primitive and mode to its op; :func:`call` arranges the arguments.

Example (PYNATIVE_MODE)::

    from ms_memcopy import ascend_route
    route = ascend_route.load()                  # backend from the device target
    y = route.memcpy2d_extract(x, row, col, 2, 3)
    y = ascend_route.call("memcpy2d_extract", (x, row, col), {"height": 2, "width": 3})
"""
import functools
import os
import shutil
import sys
import sysconfig
import threading
from pathlib import Path

import yaml

from . import _paths
from .op_defs import all_op_defs, op_def

BACKENDS = ("CPU", "Ascend")

# Primitive and mode -> the op of configs/ops.yaml (whose ascend_function names the route function).
ROUTES = {
    ("MemcpyBatch", "d2h"): "memcpy_batch_d2h",
    ("MemcpyBatch", "h2d"): "memcpy_batch_h2d",
    ("Memcpy2D", "extract"): "memcpy2d_extract",
    ("Memcpy2D", "extract_like"): "memcpy2d_extract_like",  # the gradient of insert
    ("Memcpy2D", "insert"): "memcpy2d_insert",
    ("Memcpy2D", "d2h"): "memcpy2d_d2h",
    ("Memcpy2D", "h2d"): "memcpy2d_h2d",
    ("MemcpyWithDesc", "copy"): "memcpy_desc_copy",
    ("MemcpyWithDesc", "window"): "memcpy_desc_window",
    ("MemcpyWithCondition", "d2d"): "memcpy_cond_d2d",
    ("MemcpyWithCondition", "d2h"): "memcpy_cond_d2h",
    ("MemcpyWithCondition", "h2d"): "memcpy_cond_h2d",
}

ENTRY_SOURCES = ("route_common.cpp", "route_pynative.cpp", "route_graph.cpp")
OP_DEF_FILE = "ms_memcopy_route_ops.yaml"

_ATTR_TYPES = {"int": "int", "listInt": "tuple[int]", "str": "str"}

_lock = threading.Lock()
_modules = {}


# ---- op_def YAML ------------------------------------------------------------------------------

def function_name(op_name):
    """The route function of an op of configs/ops.yaml."""
    return op_def(op_name).ascend_function


def output_spec_args(op):
    """The arguments that give the outputs of op when no input describes them.

    An output of dtype ``any`` takes its dtype (and shape) from an input of dtype ``any``; an op
    with none (the h2d forms) is told its outputs' shapes and dtypes by the caller. Returns
    ``[(name, yaml_dtype), ...]`` in argument order.
    """
    if any(t.dtype == "any" for t in op.inputs):
        return []
    outputs = [t for t in op.outputs if t.dtype == "any"]
    if not outputs:
        return []
    if len(op.outputs) != 1:
        raise ValueError(f"{op.name}: only a single (possibly variadic) output can be described by arguments")
    if outputs[0].variadic:
        return [("shapes", "tuple[int]"), ("ranks", "tuple[int]"), ("dtypes", "tuple[int]")]
    return [("shape", "tuple[int]"), ("dtype", "int")]


def function_args(op_name):
    """The route function's positional argument names for an op of configs/ops.yaml."""
    op = op_def(op_name)
    return ([t.name for t in op.inputs] + [a.name for a in op.attrs] +
            [name for name, _ in output_spec_args(op)])


def op_def_entries():
    """The CustomOpBuilder op_def of every op of configs/ops.yaml, as a dict ready for YAML."""
    entries = {}
    for op in all_op_defs().values():
        args = {}
        for t in op.inputs:
            args[t.name] = {"dtype": "tuple[tensor]" if t.variadic else "tensor"}
        for a in op.attrs:
            if a.type not in _ATTR_TYPES:
                raise ValueError(f"{op.name}: attribute {a.name} has type {a.type}, which the op_def cannot express")
            args[a.name] = {"dtype": _ATTR_TYPES[a.type]}
        for name, dtype in output_spec_args(op):
            if name in args:
                raise ValueError(f"{op.name}: argument {name} would be defined twice")
            args[name] = {"dtype": dtype}
        returns = {t.name: {"dtype": "tuple[tensor]" if t.variadic else "tensor"} for t in op.outputs}
        entries[op.ascend_function] = {"args": args, "returns": returns}
    return entries


def op_def_yaml():
    """The op_def YAML text (generated, never committed)."""
    header = "# Generated by ms_memcopy.ascend_route from configs/ops.yaml; do not edit.\n"
    return header + yaml.safe_dump(op_def_entries(), sort_keys=False, default_flow_style=False)


def write_op_def(directory):
    """Writes the op_def YAML into directory (created if needed); returns its path."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / OP_DEF_FILE
    text = op_def_yaml()
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    return path


# ---- build ------------------------------------------------------------------------------------

def kernels_dir():
    """The kernels' source directory: ops_impl/kernels of a checkout, or its copy inside a wheel."""
    for candidate in (_paths.PACKAGE_DIR / "kernels_src", _paths.SOURCE_ROOT / "ops_impl" / "kernels"):
        if (candidate / "ms_extension" / ENTRY_SOURCES[0]).exists():
            return candidate
    raise FileNotFoundError("ms_memcopy's kernel sources (ops_impl/kernels/ms_extension) were not found: "
                            "the Ascend route needs a source checkout or a wheel that ships them")


def _check_backend(backend):
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    return backend


def default_backend():
    """'Ascend' when MindSpore's device target is Ascend, else 'CPU'."""
    import mindspore as ms

    return "Ascend" if ms.get_context("device_target") == "Ascend" else "CPU"


def module_name(backend):
    return f"ms_memcopy_route_{_check_backend(backend).lower()}"


def default_build_dir(backend):
    """Where the route is built: outside the source tree.

    ``$MS_MEMCOPY_ROUTE_BUILD_DIR/<backend>`` if set, else ``$MS_COMPILER_CACHE_PATH/ms_memcopy_route/<backend>``
    (MindSpore's own cache variable), else ``$XDG_CACHE_HOME`` or ``~/.cache`` ``/ms_memcopy/route/<backend>``,
    each per MindSpore version.
    """
    import mindspore as ms

    leaf = f"{_check_backend(backend).lower()}-ms{ms.__version__}"
    if os.environ.get("MS_MEMCOPY_ROUTE_BUILD_DIR"):
        return Path(os.environ["MS_MEMCOPY_ROUTE_BUILD_DIR"]) / leaf
    if os.environ.get("MS_COMPILER_CACHE_PATH"):
        return Path(os.environ["MS_COMPILER_CACHE_PATH"]) / "ms_memcopy_route" / leaf
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "ms_memcopy" / "route" / leaf


def build_options(backend):
    """The sources, include paths and link flags of the route for backend (CustomOpBuilder arguments)."""
    _check_backend(backend)
    if not _paths.KERNELS_LIBRARY.exists():
        raise FileNotFoundError(f"{_paths.KERNELS_LIBRARY} is missing: build ms_memcopy first "
                                "(`python setup.py build_ext --inplace` or `pip install .`)")
    kernels = kernels_dir()
    lib_dir = str(_paths.LIB_DIR)
    ldflags = [f"-L{lib_dir}", "-lms_memcopy_kernels"]
    if backend == "CPU" and _paths.uses_host_runtime():
        ldflags.append("-lascendcl")  # the host ACL runtime; on Ascend CustomOpBuilder links CANN's
    ldflags.append(f"-Wl,-rpath,{lib_dir}")
    return {
        "sources": [str(kernels / "ms_extension" / name) for name in ENTRY_SOURCES],
        "include_paths": [str(kernels), str(kernels / "ms_extension"), _paths.get_include()],
        "ldflags": " ".join(ldflags),
    }


def find_ninja():
    """Path of the ninja CustomOpBuilder runs, or None. A ninja installed in this Python environment
    (the `ninja` package of the test extra) counts even when the environment is not activated: its
    scripts directory is then put on PATH for the build."""
    found = shutil.which("ninja")
    if found:
        return found
    scripts = sysconfig.get_path("scripts")
    found = shutil.which("ninja", path=scripts)
    if found:
        os.environ["PATH"] = os.pathsep.join([scripts, os.environ.get("PATH", "")])
    return found


def load(backend=None, build_dir=None):
    """Builds (when its sources changed) and loads the route for backend; cached per backend.

    Args:
        backend: "Ascend" or "CPU"; by default from MindSpore's device target. "Ascend" needs CANN
            (ASCEND_OPP_PATH set, as CustomOpBuilder requires).
        build_dir: where to build; by default :func:`default_build_dir`. Ignored once the backend's
            module is loaded in this process (a loaded extension cannot be replaced).

    Returns:
        The module of route functions (MindSpore's proxy: in GRAPH_MODE the op_def's primitives, in
        PYNATIVE_MODE the same primitives calling the C++ entries).
    """
    backend = _check_backend(backend or default_backend())
    with _lock:
        module = _modules.get(backend)
        if module is not None:
            return module
        from mindspore import ops

        # The kernels library holds the HostBuffer table: load it from its own path first so that
        # the extension binds to this very copy.
        from . import _kernels_lib

        _kernels_lib.library()
        if find_ninja() is None:
            raise FileNotFoundError("CustomOpBuilder needs ninja: pip install ninja")
        directory = Path(build_dir) if build_dir is not None else default_build_dir(backend)
        directory.mkdir(parents=True, exist_ok=True)
        options = build_options(backend)
        op_def_path = write_op_def(directory / "op_def")
        builder = ops.CustomOpBuilder(module_name(backend), options["sources"], backend=backend,
                                      include_paths=options["include_paths"], ldflags=options["ldflags"],
                                      op_def=[str(op_def_path)], build_dir=str(directory))
        module = builder.load()
        _modules[backend] = module
        return module


def loaded(backend):
    """The route module of backend if this process has loaded it, else None."""
    return _modules.get(_check_backend(backend))


# ---- calls ------------------------------------------------------------------------------------

def type_id(dtype):
    """The TypeId int of a MindSpore dtype (what the route's dtype arguments hold)."""
    from mindspore._c_expression import typing

    return int(typing.type_to_type_id(dtype))


def output_spec_values(op_name, shapes, dtypes):
    """The values of op's output-describing arguments (:func:`output_spec_args`).

    shapes and dtypes are lists, one entry per output tensor (one for a non-variadic output).
    """
    op = op_def(op_name)
    names = [name for name, _ in output_spec_args(op)]
    if not names:
        return []
    shapes = [tuple(int(d) for d in s) for s in shapes]
    ids = [type_id(d) for d in dtypes]
    if names[0] == "shape":
        if len(shapes) != 1 or len(ids) != 1:
            raise ValueError(f"{op_name} has one output: give one shape and one dtype")
        return [shapes[0], ids[0]]
    return [tuple(d for s in shapes for d in s), tuple(len(s) for s in shapes), tuple(ids)]


def call(op_name, inputs, attrs, out_shapes=None, out_dtypes=None, backend=None):
    """Runs op_name of configs/ops.yaml through the route.

    Args:
        op_name: an op of configs/ops.yaml (see :data:`ROUTES`).
        inputs: its inputs in order; a variadic input is a list or tuple of tensors.
        attrs: {attribute name: value} for every attribute of the op; ``buffer_id`` may be given
            as the HostBuffer itself, whose reads then wait for MindSpore's queued launches.
        out_shapes, out_dtypes: the output shapes and dtypes, for the ops that need them (h2d forms).
        backend: the module to use (default: from the device target).
    """
    op = op_def(op_name)
    if set(attrs) != set(op.attr_names):
        raise ValueError(f"{op_name} takes attributes {list(op.attr_names)}, got {sorted(attrs)}")
    if len(inputs) != len(op.inputs):
        raise ValueError(f"{op_name} takes {len(op.inputs)} inputs, got {len(inputs)}")
    args = [tuple(x) if t.variadic else x for t, x in zip(op.inputs, inputs)]
    args += [_attr_value(attrs[name]) for name in op.attr_names]
    if output_spec_args(op):
        if out_shapes is None or out_dtypes is None:
            raise ValueError(f"{op_name} needs out_shapes and out_dtypes")
        args += output_spec_values(op_name, out_shapes, out_dtypes)
    module = load(backend)
    return getattr(module, op.ascend_function)(*args)


# ---- the primitives on Ascend ------------------------------------------------------------------

GRAPH_MODE_MESSAGE = (
    "ms_memcopy {primitive}: on Ascend the copy primitives run eagerly (PYNATIVE_MODE, outside ms.jit) "
    "through the Ascend route; inside GRAPH_MODE or ms.jit call the route's functions instead "
    "(ms_memcopy.ascend_route.load().{function}(...), see docs/ascend_route.md)")


def on_ascend():
    """True when MindSpore's device target is Ascend: the primitives then use this route."""
    import mindspore as ms

    return ms.get_context("device_target") == "Ascend"


def check_graph_use(op_name):
    """Raises RuntimeError on Ascend: a primitive is being compiled into a graph there (see
    GRAPH_MODE_MESSAGE). Called by the primitives' __infer__."""
    if on_ascend():
        primitive = next((f"{p}({m})" for (p, m), op in ROUTES.items() if op == op_name), op_name)
        raise RuntimeError(GRAPH_MODE_MESSAGE.format(primitive=primitive, function=function_name(op_name)))


def route_for(op_name, attrs, out_shape=None, out_dtype=None, backend=None):
    """A function running a primitive's eager call through the route.

    The primitives of ms_memcopy.ops call it with their flat eager arguments (a variadic input's
    tensors one by one) when :func:`on_ascend`; out_shape and out_dtype are the primitive's output
    functions, used for the ops whose outputs no input describes.
    """
    op = op_def(op_name)
    attrs = dict(attrs)
    spec = bool(output_spec_args(op))

    def run(args):
        args = list(args)
        inputs = []
        for i, t in enumerate(op.inputs):
            if t.variadic:
                rest = len(op.inputs) - i - 1
                inputs.append(tuple(args[:len(args) - rest]))
                args = args[len(args) - rest:]
            else:
                inputs.append(args.pop(0))
        shapes = dtypes = None
        if spec:
            flat = [x for group in inputs for x in (group if isinstance(group, tuple) else (group,))]
            shapes = out_shape(*(x.shape for x in flat))
            dtypes = out_dtype(*(x.dtype for x in flat))
            if not op.outputs[0].variadic:
                shapes, dtypes = [shapes], [dtypes]
        return call(op_name, inputs, attrs, shapes, dtypes, backend=backend)

    return run


def _attr_value(value):
    from .host_buffer import HostBuffer

    if isinstance(value, HostBuffer):
        value._attach_primitive()  # as the primitives do: its reads wait for queued launches
        return value.buffer_id
    return value


@functools.lru_cache(maxsize=None)
def _describe():
    return {key: function_name(op) for key, op in ROUTES.items()}


def functions():
    """{(primitive, mode): route function name} for every primitive and mode."""
    return dict(_describe())


if __name__ == "__main__":  # python -m ms_memcopy.ascend_route: print the generated op_def
    sys.stdout.write(op_def_yaml())
