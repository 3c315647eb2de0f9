"""The Ascend compile check: the op_def route's module compiled with its Ascend branches on where
there is no CANN (:func:`compile_ascend_kernels`)."""
import os
import sysconfig
from pathlib import Path
from typing import List, Union

from . import _paths
from .route_build import PYNATIVE_SOURCES, build_options, builder, mindspore_plugin_dir


def compile_ascend_kernels(out_dir: Union[str, Path], jobs: int = 2) -> Path:
    """Compiles the module's translation units for backend Ascend (``-DCUSTOM_ASCEND_OP``, the
    Ascend KernelMods registered in CustomKernelFactory) with CustomOpBuilder's own flags, against
    the wheel's headers and this project's ACL headers, and links them against the wheel's
    libmindspore_ops_ascend with ``--allow-shlib-undefined`` (CANN's libraries are absent). The
    result cannot be loaded without CANN: this keeps the Ascend code compiling where there is none.
    Every unit is compiled with the project's Ascend branches on. The PyNative entries include
    MindSpore's extension header, whose Ascend form needs CANN's own headers: those units are compiled
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
        return "-DMSMC_ASCEND_BRANCHES" if Path(source).name in PYNATIVE_SOURCES else "-DCUSTOM_ASCEND_OP"

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


def _python_link_flags() -> List[str]:
    """The flags that resolve the PyNative unit's Python symbols in a link made with --no-undefined
    (an extension module takes them from the interpreter at load time); none where Python has no
    shared library, and then undefined symbols are not checked."""
    if not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        return []
    library = sysconfig.get_config_var("LDLIBRARY")  # libpython3.X.so
    return [f"-L{sysconfig.get_config_var('LIBDIR')}", f"-l{library[3:-3]}", "-Wl,--no-undefined"]
