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
import hashlib
import os
import shutil
import sys
import sysconfig
import threading
from pathlib import Path

from . import _paths, route_codegen
from .op_defs import all_op_defs, op_def

BACKENDS = ("CPU", "Ascend")

FINGERPRINT_FILE = "ms_memcopy_route.fingerprint"
PYNATIVE_SOURCE = "route_pynative.cpp"
ENTRY_SOURCES = ("route_common.cpp", "route_infer.cpp", PYNATIVE_SOURCE, "route_cpu_kernel.cpp",
                 "route_ascend_kernel.cpp", "route_tuple_pass.cpp")
# register_custom_pass's name of each backend's device
PASS_DEVICES = {"CPU": "cpu", "Ascend": "ascend"}

_lock = threading.Lock()
_modules = {}
_registered_pass_devices = set()


# ---- which route ------------------------------------------------------------------------------

def on_ascend():
    """True when MindSpore's device target is Ascend."""
    import mindspore as ms

    return ms.get_context("device_target") == "Ascend"


def selected_route():
    """The route a primitive takes: "op_def", on every device (kept for code that asked)."""
    return "op_def"


# ---- build ------------------------------------------------------------------------------------

def kernels_dir():
    """The kernels' source directory: ops_impl/kernels of a checkout, or its copy inside a wheel."""
    for candidate in (_paths.PACKAGE_DIR / "kernels_src", _paths.SOURCE_ROOT / "ops_impl" / "kernels"):
        if (candidate / "ms_extension" / ENTRY_SOURCES[0]).exists():
            return candidate
    raise FileNotFoundError("ms_memcopy's kernel sources (ops_impl/kernels/ms_extension) were not found: "
                            "the op_def route needs a source checkout or a wheel that ships them")


def _check_backend(backend):
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    return backend


def default_backend():
    """'Ascend' when MindSpore's device target is Ascend, else 'CPU'."""
    return "Ascend" if on_ascend() else "CPU"


def module_name(backend):
    return f"ms_memcopy_route_{_check_backend(backend).lower()}"


def _leaf(backend):
    import mindspore as ms

    return f"{_check_backend(backend).lower()}-ms{ms.__version__}"


def packaged_build_dir(backend):
    """Where the installation's own build of the module is (``setup.py`` builds it there when
    MindSpore is importable at install time): ``ms_memcopy/_lib/route/<backend>-ms<version>``."""
    return _paths.LIB_DIR / "route" / _leaf(backend)


def default_build_dir(backend):
    """Where the route is built and loaded from.

    ``$MS_MEMCOPY_ROUTE_BUILD_DIR/<backend>`` if set; else the installation's build
    (:func:`packaged_build_dir`) if there is one; else ``$MS_COMPILER_CACHE_PATH/ms_memcopy_route/<backend>``
    (MindSpore's own cache variable), else ``$XDG_CACHE_HOME`` or ``~/.cache`` ``/ms_memcopy/route/<backend>``,
    each per MindSpore version and, in a shared cache, per installation.
    """
    leaf = _leaf(backend)
    if os.environ.get("MS_MEMCOPY_ROUTE_BUILD_DIR"):
        return Path(os.environ["MS_MEMCOPY_ROUTE_BUILD_DIR"]) / leaf
    if (packaged_build_dir(backend) / FINGERPRINT_FILE).exists():
        return packaged_build_dir(backend)
    # A shared cache holds one build per installation: the module finds the kernels library by the
    # absolute path of the installation that built it, so two checkouts must not share a build.
    leaf = f"{leaf}-{hashlib.sha256(str(_paths.LIB_DIR.resolve()).encode()).hexdigest()[:12]}"
    if os.environ.get("MS_COMPILER_CACHE_PATH"):
        return Path(os.environ["MS_COMPILER_CACHE_PATH"]) / "ms_memcopy_route" / leaf
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "ms_memcopy" / "route" / leaf


def mindspore_plugin_dir():
    """The wheel's lib/plugin directory (libmindspore_ops_cpu, libmindspore_hardware_abstract)."""
    import mindspore

    return Path(mindspore.__file__).resolve().parent / "lib" / "plugin"


def build_options(backend, generated_include):
    """The sources, include paths and link flags of the route for backend (CustomOpBuilder arguments)."""
    _check_backend(backend)
    if not _paths.KERNELS_LIBRARY.exists():
        raise FileNotFoundError(f"{_paths.KERNELS_LIBRARY} is missing: build ms_memcopy first "
                                "(`python setup.py build_ext --inplace` or `pip install .`)")
    kernels = kernels_dir()
    lib_dir = str(_paths.LIB_DIR)
    # mindspore_common (in the wheel's lib directory, which CustomOpBuilder passes with -L): the infer
    # functions ask it whether a graph is being compiled; mindspore_backend_common: the graph pass.
    ldflags = [f"-L{lib_dir}", "-lms_memcopy_kernels", "-lmindspore_common", "-lmindspore_backend_common"]
    if backend == "CPU":
        if _paths.uses_host_runtime():
            ldflags.append("-lascendcl")  # the host ACL runtime; on Ascend CustomOpBuilder links CANN's
        plugin = str(mindspore_plugin_dir())
        # The CPU kernel factory and NativeCpuKernelMod live in the wheel's CPU plugin.
        ldflags += [f"-L{plugin}", "-lmindspore_ops_cpu", "-lmindspore_hardware_abstract", f"-Wl,-rpath,{plugin}"]
    # The kernels library: where it is now, and relative to a build inside the package (_lib/route/<leaf>/),
    # which moves with the package ("$$" is ninja's escape for "$").
    ldflags += [f"-Wl,-rpath,{lib_dir}", "-Wl,-rpath,'$$ORIGIN/../..'"]
    return {
        "sources": [str(kernels / "ms_extension" / name) for name in ENTRY_SOURCES],
        "include_paths": [str(generated_include), str(kernels), str(kernels / "ms_extension"), _paths.get_include()],
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


def builder(backend, build_dir):
    """The ops.CustomOpBuilder of the route for backend, its generated files written into build_dir."""
    from mindspore import ops

    if find_ninja() is None:
        raise FileNotFoundError("CustomOpBuilder needs ninja: pip install ninja")
    directory = Path(build_dir)
    op_def_path, include = route_codegen.write_sources(directory / "generated")
    options = build_options(backend, include)
    return ops.CustomOpBuilder(module_name(backend), options["sources"], backend=backend,
                               include_paths=options["include_paths"], ldflags=options["ldflags"],
                               op_def=[str(op_def_path)], build_dir=str(directory))


def _fingerprint(backend, route_builder):
    """A digest of what the module is built from: the kernels' sources and headers and the generated
    files (by their paths relative to their directories, so that an installed build still matches),
    the compile flags, the backend, MindSpore's version and the kernels library it links."""
    import mindspore

    digest = hashlib.sha256()
    kernels = kernels_dir()
    generated = Path(route_builder.build_dir) / "generated"
    files = [(p.relative_to(kernels), p) for p in [*kernels.rglob("*.h"), *kernels.rglob("*.cpp")]]
    files += [(p.relative_to(generated), p) for p in generated.glob("*/*")]
    for name, path in sorted(files):
        digest.update(str(name).encode())
        digest.update(path.read_bytes())
    digest.update(_paths.KERNELS_LIBRARY.read_bytes())
    for part in (backend, mindspore.__version__, route_builder.get_cflags()):
        digest.update(repr(part).encode())
    return digest.hexdigest()


def build(backend=None, build_dir=None):
    """Builds the module for backend into build_dir (default :func:`default_build_dir`) unless the
    build there is up to date; returns the module's path. CustomOpBuilder regenerates and recompiles
    its op_def registration on every build, so an up-to-date build is recognised here by a
    fingerprint of its inputs and not rebuilt."""
    backend = _check_backend(backend or default_backend())
    directory = Path(build_dir) if build_dir is not None else default_build_dir(backend)
    route_builder = builder(backend, directory)
    stamp = directory / FINGERPRINT_FILE
    module_path = directory / f"{module_name(backend)}.so"
    fingerprint = _fingerprint(backend, route_builder)
    if module_path.exists() and stamp.exists() and stamp.read_text() == fingerprint:
        return str(module_path)
    path = route_builder.build()
    stamp.write_text(fingerprint)
    return path


def compile_ascend_kernels(out_dir, jobs=2):
    """Compiles the module's translation units for backend Ascend (``-DCUSTOM_ASCEND_OP``, the
    Ascend KernelMods registered in CustomKernelFactory) with CustomOpBuilder's own flags, against
    the wheel's headers and this project's ACL headers, and links them against the wheel's
    libmindspore_ops_ascend with ``--allow-shlib-undefined`` (CANN's libraries are absent). The
    result cannot be loaded without CANN: this keeps the Ascend code compiling where there is none.
    Every unit is compiled with the project's Ascend branches on. The PyNative entries include
    MindSpore's extension header, whose Ascend form needs CANN's own headers: that unit is compiled
    with the header's CPU form and the project's branches on (``MSMC_ASCEND_BRANCHES``, route_common.h).
    Returns the library's path; raises RuntimeError with the compiler's output on failure."""
    import subprocess
    from concurrent.futures import ThreadPoolExecutor

    import mindspore

    out_dir = Path(out_dir)
    route_builder = builder("CPU", out_dir)  # backend "Ascend" would require CANN
    options = build_options("CPU", out_dir / "generated" / "include")
    cflags = [flag for flag in route_builder.get_cflags() if flag != "-pie"]
    includes = [f"-I{p}" for p in route_builder.get_include_paths()]
    includes.append(f"-I{sysconfig.get_paths()['include']}")
    cxx = os.environ.get("CXX", "g++")

    def ascend_branches(source):
        return "-DMSMC_ASCEND_BRANCHES" if source.endswith(PYNATIVE_SOURCE) else "-DCUSTOM_ASCEND_OP"

    commands = [[cxx, *cflags, ascend_branches(source), *includes, "-c", source, "-o",
                 str(out_dir / (Path(source).stem + ".o"))] for source in options["sources"]]

    def run(command):
        return subprocess.run(command, capture_output=True, text=True)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for command, result in zip(commands, pool.map(run, commands)):
            if result.returncode != 0:
                raise RuntimeError(f"compiling {command[-3]} failed:\n{result.stderr[-4000:]}")
    ms_lib = Path(mindspore.__file__).resolve().parent / "lib"
    library = out_dir / "ms_memcopy_route_ascend_check.so"
    link = [cxx, "-shared", *(c[-1] for c in commands), "-o", str(library), f"-L{ms_lib}", "-lmindspore_core",
            "-lmindspore_common", "-lmindspore_backend_common",
            "-lmindspore_ms_backend", "-lmindspore_pynative", "-lmindspore_pynative_utils", "-lmindspore_pyboost",
            "-lmindspore_hardware_abstract",
            f"-L{mindspore_plugin_dir()}",
            "-lmindspore_ops_ascend", f"-L{_paths.LIB_DIR}", "-lms_memcopy_kernels", "-lascendcl",
            *_python_link_flags(), "-Wl,--allow-shlib-undefined"]
    result = run(link)
    if result.returncode != 0:
        raise RuntimeError(f"linking the Ascend kernels failed:\n{result.stderr[-4000:]}")
    return library


def _load_cpu_plugin():
    """Loads the wheel's CPU plugin libraries the module links, from this MindSpore: a module built by
    ``pip install`` in an isolated build environment carries that environment's path, so the loader
    must find them already loaded (by their names) rather than look them up."""
    import ctypes

    for path in (mindspore_plugin_dir().parent / "libmindspore_hardware_abstract.so",
                 mindspore_plugin_dir() / "libmindspore_ops_cpu.so"):
        ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)


def _python_link_flags():
    """The flags that resolve the PyNative unit's Python symbols in a link made with --no-undefined
    (an extension module takes them from the interpreter at load time); none where Python has no
    shared library, and then undefined symbols are not checked."""
    if not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        return []
    library = sysconfig.get_config_var("LDLIBRARY")  # libpython3.X.so
    return [f"-L{sysconfig.get_config_var('LIBDIR')}", f"-l{library[3:-3]}", "-Wl,--no-undefined"]


def load(backend=None, build_dir=None):
    """Builds (when its sources changed) and loads the route for backend; cached per backend.

    Args:
        backend: "Ascend" or "CPU"; by default from MindSpore's device target. "Ascend" needs CANN
            (ASCEND_OPP_PATH set, as CustomOpBuilder requires).
        build_dir: where to build; by default :func:`default_build_dir`. Ignored once the backend's
            module is loaded in this process (a loaded extension cannot be replaced).

    Returns:
        The extension module: one function per op (PYNATIVE_MODE). Loading it registers the
        ``Custom_<op>`` primitives and their kernels for GRAPH_MODE, and the module's graph pass
        (:func:`register_tuple_pass`).

    Raises:
        RuntimeError: MindSpore refused the graph pass.
    """
    backend = _check_backend(backend or default_backend())
    if backend == "Ascend" and _paths.uses_host_runtime():
        raise RuntimeError("ms_memcopy was built without CANN (its kernels link the host ACL runtime, "
                           f"{_paths.HOST_ACL_LIBRARY}), so it cannot run on an NPU: reinstall it with CANN's "
                           "environment set (source CANN's set_env.sh, which sets ASCEND_HOME_PATH and "
                           "ASCEND_OPP_PATH), e.g. pip install --force-reinstall --no-deps .")
    with _lock:
        module = _modules.get(backend)
        if module is not None:
            return module
        from mindspore.ops import CustomOpBuilder

        # The kernels library holds the HostBuffer table: load it from its own path first so that
        # the extension binds to this very copy.
        from . import _kernels_lib

        _kernels_lib.library()
        if backend == "CPU":
            _load_cpu_plugin()
        directory = Path(build_dir) if build_dir is not None else default_build_dir(backend)
        path = build(backend, directory)
        # The raw extension, not CustomOpBuilder.load()'s proxy: its generated Python functions do
        # not handle prim_init arguments, and the primitives of ms_memcopy.ops are built here.
        module = CustomOpBuilder._import_module(path)
        register_tuple_pass(backend, path)
        _modules[backend] = module
        return module


def register_tuple_pass(backend, module_path):
    """Registers the module's graph pass (:data:`route_codegen.TUPLE_PASS_NAME`, route_tuple_pass.cpp)
    for backend's device with ``mindspore.graph.register_custom_pass``, once per process (MindSpore
    would run a pass registered twice twice); :func:`load` does.

    The pass gives the kernels of the ops with a variadic input their tensors one by one: without it,
    an Ascend graph folds them into one temporary copy (RealMakeTuple), which the kernels refuse.
    MindSpore applies it to the graphs compiled after the registration. Raises RuntimeError when
    MindSpore refuses it."""
    from mindspore.graph import register_custom_pass

    device = PASS_DEVICES[_check_backend(backend)]
    if device in _registered_pass_devices:
        return
    if not register_custom_pass(route_codegen.TUPLE_PASS_NAME, str(module_path), device):
        variadic = ", ".join(op.name for op in all_op_defs().values() if op.length_attr is not None)
        raise RuntimeError(f"ms_memcopy: mindspore.graph.register_custom_pass refused the op_def route's graph pass "
                           f"{route_codegen.TUPLE_PASS_NAME} from {module_path} for device {device!r} (MindSpore's "
                           f"log says why); without it a graph on {backend} may hand the ops with a variadic input "
                           f"({variadic}) their tensors folded into one temporary copy")
    _registered_pass_devices.add(device)


def loaded(backend):
    """The route module of backend if this process has loaded it, else None."""
    return _modules.get(_check_backend(backend))


# ---- calls ------------------------------------------------------------------------------------

def type_id(dtype):
    """The TypeId int of a MindSpore dtype (what the route's dtype arguments hold)."""
    from mindspore._c_expression import typing

    return int(typing.type_to_type_id(dtype))


def given_values(op_name, shapes, dtypes):
    """The values of op's output-describing arguments (:func:`route_codegen.given_args`).

    shapes and dtypes are lists, one entry per output tensor (one for a non-variadic output).
    """
    op = op_def(op_name)
    names = [name for name, _, _ in route_codegen.given_args(op)]
    if not names:
        return []
    shapes = [tuple(int(d) for d in s) for s in shapes]
    ids = [type_id(d) for d in dtypes]
    if names[0] == "given_shape":
        if len(shapes) != 1 or len(ids) != 1:
            raise ValueError(f"{op_name} has one output: give one shape and one dtype")
        return [shapes[0], ids[0]]
    return [tuple(d for s in shapes for d in s), tuple(len(s) for s in shapes), tuple(ids)]


def call(op_name, inputs, attrs, out_shapes=None, out_dtypes=None, backend=None):
    """Runs op_name of configs/ops/*.yaml through the route's PyNative function; returns its outputs
    (a tuple for a variadic output, else the tensor).

    Args:
        op_name: an op of configs/ops/*.yaml.
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
    if op.outputs_given:
        if out_shapes is None or out_dtypes is None:
            raise ValueError(f"{op_name} needs out_shapes and out_dtypes")
        args += given_values(op_name, out_shapes, out_dtypes)
    outputs = getattr(load(backend), op.name)(*args)
    return outputs if op.outputs[0].variadic else outputs[0]


def _attr_value(value):
    from .host_buffer import HostBuffer

    if isinstance(value, HostBuffer):
        value._attach_primitive()  # as the primitives do: its reads wait for queued launches
        return value.buffer_id
    return value


if __name__ == "__main__":  # python -m ms_memcopy.op_def_route: print the generated op_def
    sys.stdout.write(route_codegen.op_def_yaml())
