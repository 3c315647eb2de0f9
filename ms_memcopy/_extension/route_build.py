"""Building the op_def route's module: its sources, include paths and link flags, where it is built,
and the fingerprint that keeps an up-to-date build from being rebuilt (:mod:`ms_memcopy.op_def_route`).
"""
import hashlib
import os
import shutil
import sysconfig
from pathlib import Path
from typing import Any, Dict, Optional, Union

from . import _paths, build_recipe, route_codegen

BACKENDS = ("CPU", "Ascend")

FINGERPRINT_FILE = "ms_memcopy_route.fingerprint"
#: The units of the eager entries, which include MindSpore's extension header (ms_extension/api.h).
PYNATIVE_SOURCES = ("route_pynative.cpp", "route_eager_args.cpp", "route_runner.cpp")
ENTRY_SOURCES = ("route_common.cpp", "route_infer.cpp", *PYNATIVE_SOURCES, "route_cpu_kernel.cpp",
                 "route_ascend_kernel.cpp", "route_tuple_pass.cpp")


def on_ascend() -> bool:
    """True when MindSpore's device target is Ascend."""
    import mindspore as ms

    return ms.get_context("device_target") == "Ascend"


def kernels_dir() -> Path:
    """The kernels' source directory: ops_impl/kernels of a checkout, or its copy inside a wheel."""
    for candidate in (_paths.PACKAGE_DIR / "kernels_src", _paths.SOURCE_ROOT / "ops_impl" / "kernels"):
        if (candidate / build_recipe.ENTRY_LAYER / ENTRY_SOURCES[0]).exists():
            return candidate
    raise FileNotFoundError("ms_memcopy's kernel sources (ops_impl/kernels/ms_extension) were not found: "
                            "the op_def route needs a source checkout or a wheel that ships them")


def _check_backend(backend: str) -> str:
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    return backend


def default_backend() -> str:
    """'Ascend' when MindSpore's device target is Ascend, else 'CPU'."""
    return "Ascend" if on_ascend() else "CPU"


def module_name(backend: str) -> str:
    return f"ms_memcopy_route_{_check_backend(backend).lower()}"


def _leaf(backend: str) -> str:
    import mindspore as ms

    return f"{_check_backend(backend).lower()}-ms{ms.__version__}"


def packaged_build_dir(backend: str) -> Path:
    """Where the installation's own build of the module is (``setup.py`` builds it there when
    MindSpore is importable at install time): ``ms_memcopy/_lib/route/<backend>-ms<version>``."""
    return _paths.LIB_DIR / "route" / _leaf(backend)


def default_build_dir(backend: str) -> Path:
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


def mindspore_plugin_dir() -> Path:
    """The wheel's lib/plugin directory (libmindspore_ops_cpu, libmindspore_hardware_abstract)."""
    import mindspore

    return Path(mindspore.__file__).resolve().parent / "lib" / "plugin"


def build_options(backend: str, generated_include: Union[str, Path]) -> Dict[str, Any]:
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
        "sources": [str(kernels / build_recipe.ENTRY_LAYER / name) for name in ENTRY_SOURCES],
        "include_paths": [str(p) for p in
                          build_recipe.route_includes(kernels, _paths.get_include(), generated_include)],
        "ldflags": " ".join(ldflags),
    }


def find_ninja() -> Optional[str]:
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


def builder(backend: str, build_dir: Union[str, Path]) -> Any:
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


def _fingerprint(backend: str, route_builder: Any) -> str:
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


def build(backend: Optional[str] = None, build_dir: Union[str, Path, None] = None) -> str:
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
