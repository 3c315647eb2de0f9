"""The one compile recipe of ms_memcopy's C++ code: the sources, include directories, generated tables and
flags of

- the shared libraries (setup.py: the host ACL runtime libascendcl.so, libms_memcopy_kernels.so and
  libms_memcopy_bench.so),
- the C++ test programs (tests/test_cpp_programs.py, tests/test_cpp_kernels.py),
- their sanitizer builds (ops_impl/tools/run_sanitizers.py: :data:`SANITIZERS`),
- and the include directories of the op_def route's module (:mod:`ms_memcopy.route_build`; its compile
  flags are MindSpore's CustomOpBuilder's).

Paths are given relative to a source checkout's root (``root``). Only the standard library is used:
setup.py imports this module before anything is built.
"""
import importlib.util
import os
from pathlib import Path
from typing import Iterable, List, Optional, Sequence, Union

from .. import dtypes
from .._acl import error_codes as acl_error_codes
from . import route_codegen

#: A path argument: a str or a Path.
PathLike = Union[str, os.PathLike[str]]

STD = "-std=c++17"
WARNINGS = ("-Wall", "-Wextra")
#: The shared libraries.
LIBRARY_FLAGS = (STD, "-O2", "-fPIC", "-pthread", "-fvisibility=hidden", *WARNINGS)
#: MindSpore 2.10 wheels use the pre-C++11 std::string ABI; the kernels library reads MindSpore attributes.
KERNEL_ABI = ("-D_GLIBCXX_USE_CXX11_ABI=0",)
#: The kernels built against the host ACL runtime (its extension calls) rather than CANN.
HOST_ACL_DEFINE = "-DMS_MEMCOPY_HOST_ACL=1"
#: The C++ test programs.
TEST_FLAGS = (STD, "-O1", "-g", "-pthread", *WARNINGS)
#: The sanitizer builds: the runtime and the test programs get SANITIZER_FLAGS plus one variant's flags.
SANITIZER_FLAGS = (STD, "-g", "-O1", "-fno-omit-frame-pointer", "-pthread", *WARNINGS)
SANITIZERS = {
    "asan+ubsan": ("-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"),
    "tsan": ("-fsanitize=thread",),
}

HOST_INCLUDE = Path("ops_impl", "acl_host", "include")  # the public ACL headers of the host runtime
HOST_SOURCES = Path("ops_impl", "acl_host", "src")
HOST_EXPORT_MAP = Path("ops_impl", "acl_host", "libascendcl.map")
KERNELS = Path("ops_impl", "kernels")  # also acl_limits.h, which the host runtime reads too
ENTRY_LAYER = "ms_extension"  # under KERNELS: the route's entry layer, compiled by CustomOpBuilder
BENCH_SOURCES = Path("ops_impl", "bench")
SOC_PROFILES = Path("configs", "soc_profiles.yaml")
SOC_TABLE_GENERATOR = Path("ops_impl", "tools", "gen_soc_table.py")
CPP_TESTS = Path("tests", "cpp")  # programs of the host runtime's public C API
KERNEL_TESTS = Path("tests", "cpp_kernels")  # programs linking the kernel sources


def cxx() -> str:
    """The C++ compiler: $CXX, else g++."""
    return os.environ.get("CXX", "g++")


def host_runtime_sources(root: PathLike) -> List[Path]:
    return sorted((Path(root) / HOST_SOURCES).glob("*.cpp"))


def host_runtime_includes(root: PathLike, generated: PathLike) -> List[Path]:
    """Include directories of the host runtime's sources; `generated` holds soc_profiles.inc."""
    root = Path(root)
    return [root / HOST_INCLUDE, Path(generated), root / HOST_SOURCES, root / KERNELS]


def host_runtime_link_flags(root: PathLike) -> List[str]:
    # The version script keeps libstdc++ template instances (vague linkage, default visibility) local.
    return ["-Wl,-soname,libascendcl.so", f"-Wl,--version-script={Path(root) / HOST_EXPORT_MAP}"]


def write_host_tables(root: PathLike, generated: PathLike) -> None:
    """Writes the host runtime's generated table (soc_profiles.inc, from configs/soc_profiles.yaml) into
    `generated`."""
    root = Path(root)
    spec = importlib.util.spec_from_file_location("gen_soc_table", root / SOC_TABLE_GENERATOR)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {root / SOC_TABLE_GENERATOR}")
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    Path(generated).mkdir(parents=True, exist_ok=True)
    generator.generate(root / SOC_PROFILES, Path(generated) / "soc_profiles.inc")


def kernel_sources(kernels_dir: PathLike) -> List[Path]:
    """kernels_dir/**/*.cpp but the entry layer: the shared code and each family's bodies/<family>.cpp."""
    kernels_dir = Path(kernels_dir)
    sources = sorted(p for p in kernels_dir.rglob("*.cpp") if ENTRY_LAYER not in p.relative_to(kernels_dir).parts)
    stems = [p.stem for p in sources]
    if len(set(stems)) != len(stems):  # the objects are named by stem
        raise RuntimeError(f"two kernel sources share a file name: {stems}")
    return sources


def kernel_includes(kernels_dir: PathLike, acl_include: PathLike, generated: PathLike) -> List[Path]:
    """Include directories of the kernel sources: the ACL headers in use (the host runtime's or CANN's),
    the kernels, and their generated tables."""
    return [Path(acl_include), Path(kernels_dir), Path(generated)]


def route_includes(kernels_dir: PathLike, acl_include: PathLike, generated: PathLike) -> List[Path]:
    """Include directories of the op_def route's entry layer (kernels_dir/ms_extension)."""
    kernels_dir = Path(kernels_dir)
    return [Path(generated), kernels_dir, kernels_dir / ENTRY_LAYER, Path(acl_include)]


def write_kernel_tables(generated: PathLike, acl_include: PathLike) -> None:
    """Writes the kernels' generated tables into `generated` (unchanged files are left alone): the
    aclError code -> name table, from the ACL headers under acl_include, and the dtype table."""
    generated = Path(generated)
    route_codegen.write_if_changed(generated / acl_error_codes.KERNEL_TABLE_FILE, acl_error_codes.kernel_table_source(
        acl_error_codes.read_error_codes(acl_include)))
    route_codegen.write_if_changed(generated / dtypes.TABLE_FILE, dtypes.table_source())


def bench_sources(root: PathLike) -> List[Path]:
    return sorted((Path(root) / BENCH_SOURCES).glob("*.cpp"))


def includes(dirs: Iterable[PathLike]) -> List[str]:
    return [f"-I{d}" for d in dirs]


def kernel_object_command(source: PathLike, obj: PathLike, acl_include: PathLike, kernels_dir: PathLike,
                          generated: PathLike, flags: Sequence[str] = TEST_FLAGS,
                          compiler: Optional[str] = None) -> List[str]:
    """The command that compiles one kernel source (of kernel_sources) into the object obj as
    program_command compiles it, for programs that link the kernels' objects (kernel_objects) instead
    of compiling the sources each."""
    return [compiler or cxx(), *flags, *_kernel_flags(kernels_dir, generated), f"-I{acl_include}", "-c", str(source),
            "-o", str(obj)]


def _kernel_flags(kernels_dir: PathLike, generated: PathLike) -> List[str]:
    return [HOST_ACL_DEFINE, *includes([Path(kernels_dir), Path(generated)])]


def program_command(source: PathLike, exe: PathLike, acl_include: PathLike, library_dir: PathLike,
                    flags: Sequence[str] = TEST_FLAGS, kernels_dir: Optional[PathLike] = None,
                    generated: Optional[PathLike] = None, compiler: Optional[str] = None,
                    kernel_objects: Optional[Sequence[PathLike]] = None) -> List[str]:
    """The command that builds one C++ test program into exe, linked against libascendcl in library_dir.
    A kernel test (kernels_dir given) also compiles the kernel sources, against the host runtime, with
    the kernels' generated tables in `generated` (see write_kernel_tables), or links kernel_objects, the
    objects of those sources built by kernel_object_command."""
    kernel_part, kernel_flags = [], []
    if kernels_dir is not None:
        if generated is None:
            raise TypeError("a kernel test (kernels_dir given) needs generated, the kernels' generated tables")
        kernel_flags = _kernel_flags(kernels_dir, generated)
        kernel_part = [str(p) for p in (kernel_sources(kernels_dir) if kernel_objects is None else kernel_objects)]
    return [compiler or cxx(), *flags, *kernel_flags, f"-I{acl_include}", str(source), *kernel_part,
            f"-L{library_dir}", "-lascendcl", f"-Wl,-rpath,{library_dir}", "-o", str(exe)]
