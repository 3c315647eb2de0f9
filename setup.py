"""Build of ms_memcopy's C++ parts.

Two shared libraries are built into ms_memcopy/_lib with g++:

- libascendcl.so: the host ACL runtime (ops_impl/acl_host), a drop-in subset of
  CANN's libascendcl. Built only when CANN is absent.
- libms_memcopy_kernels.so: the copy kernels (ops_impl/kernels), linked against
  the host runtime, or against CANN's libascendcl when ASCEND_HOME_PATH or
  ASCEND_TOOLKIT_HOME names a CANN installation.

Then the op_def route's module (the primitives' one route) is built into
ms_memcopy/_lib/route/ by ms_memcopy.op_def_route.build (the only place its
sources and flags are listed) with MindSpore's CustomOpBuilder: pyproject.toml
puts MindSpore and ninja in the build environment, so ``pip install`` builds it
and the first primitive call does not. MS_MEMCOPY_BUILD_ROUTE=0 skips it (first
use then builds it), =1 makes a failure an error.

For wheels, the public headers and the configs are copied into the package
(ms_memcopy/include, ms_memcopy/configs); a source checkout reads them in place.
"""
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
HOST_INCLUDE = ROOT / "ops_impl" / "acl_host" / "include"
HOST_SOURCES = ROOT / "ops_impl" / "acl_host" / "src"
KERNEL_SOURCES = ROOT / "ops_impl" / "kernels"
# The CustomOpBuilder entry layer of the Ascend route: compiled by MindSpore at run time, not here.
EXTENSION_SOURCES = KERNEL_SOURCES / "ms_extension"
ACL_LIMITS = KERNEL_SOURCES / "acl_limits.h"  # CANN's limits, read by the host runtime and the kernels
BENCH_SOURCES = ROOT / "ops_impl" / "bench"  # libms_memcopy_bench.so, for `python -m ms_memcopy bench`
sys.path.insert(0, str(ROOT / "ops_impl" / "tools"))
from gen_soc_table import generate as generate_soc_table  # noqa: E402

sys.path.insert(0, str(ROOT))
from ms_memcopy import route_codegen  # noqa: E402  (write_if_changed for generated tables)
from ms_memcopy import acl_error_codes  # noqa: E402  (the kernels' code -> name table, from the ACL headers)
from ms_memcopy import dtypes  # noqa: E402  (the kernels' dtype table, from configs/dtypes.yaml)

CXXFLAGS = ["-std=c++17", "-O2", "-fPIC", "-pthread", "-fvisibility=hidden", "-Wall", "-Wextra"]
# MindSpore 2.10 wheels use the pre-C++11 std::string ABI; the kernels read MindSpore attributes.
KERNEL_ABI = ["-D_GLIBCXX_USE_CXX11_ABI=0"]


def cann_home():
    """The CANN installation to build against, or None for the host runtime."""
    for var in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"):
        path = os.environ.get(var)
        if path and (Path(path) / "include" / "acl" / "acl.h").exists():
            return Path(path)
    return None


def cxx():
    return os.environ.get("CXX", "g++")


def kernel_sources():
    """ops_impl/kernels/**/*.cpp but the entry layer: the shared code and each family's bodies/<family>.cpp."""
    sources = sorted(p for p in KERNEL_SOURCES.rglob("*.cpp") if EXTENSION_SOURCES not in p.parents)
    stems = [p.stem for p in sources]
    if len(set(stems)) != len(stems):  # the objects are named by stem
        raise RuntimeError(f"two kernel sources share a file name: {stems}")
    return sources


def newer_than(target, sources):
    if not target.exists():
        return True
    mtime = target.stat().st_mtime
    return any(s.stat().st_mtime > mtime for s in sources)


class BuildSharedLibs(build_ext):
    """Builds plain shared libraries (no Python ABI suffix) with g++."""

    def get_ext_filename(self, fullname):
        return os.path.join(*fullname.split(".")) + ".so"

    def copy_extensions_to_source(self):
        for ext in self.extensions:
            (ROOT / os.path.dirname(self.get_ext_filename(ext.name))).mkdir(parents=True, exist_ok=True)
        super().copy_extensions_to_source()

    def build_extension(self, ext):
        out = Path(self.get_ext_fullpath(ext.name))
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(self.build_temp) / ext.name
        tmp.mkdir(parents=True, exist_ok=True)
        if ext.name.endswith("libascendcl"):
            self._build_host_runtime(out, tmp)
        elif ext.name.endswith("libms_memcopy_bench"):
            self._build_bench(out, tmp)
        else:
            self._build_kernels(out, tmp)

    def _compile_and_link(self, sources, out, tmp, flags, link_args, deps):
        # Generated tables (soc_profiles.inc) are dependencies too.
        headers = [p for d in map(Path, deps) for p in ([d] if d.is_file() else
                                                        (p for pattern in ("*.h", "*.inc") for p in d.rglob(pattern)))]
        objects = []
        jobs = []
        for src in sources:
            obj = tmp / (src.stem + ".o")
            objects.append(obj)
            if newer_than(obj, [src, *headers]):
                jobs.append([cxx(), *CXXFLAGS, *flags, "-c", str(src), "-o", str(obj)])
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            for cmd, result in zip(jobs, pool.map(self._run, jobs)):
                if result.returncode != 0:
                    sys.stderr.write(result.stdout + result.stderr)
                    raise RuntimeError("compilation failed: " + " ".join(cmd))
                if result.stderr:
                    sys.stderr.write(result.stderr)
        if newer_than(out, objects) or jobs:
            cmd = [cxx(), "-shared", "-pthread", *map(str, objects), "-o", str(out), *link_args]
            result = self._run(cmd)
            if result.returncode != 0:
                sys.stderr.write(result.stdout + result.stderr)
                raise RuntimeError("link failed: " + " ".join(cmd))

    @staticmethod
    def _run(cmd):
        print(" ".join(cmd))
        return subprocess.run(cmd, capture_output=True, text=True)

    def _build_host_runtime(self, out, tmp):
        gen = tmp / "generated"
        gen.mkdir(exist_ok=True)
        generate_soc_table(ROOT / "configs" / "soc_profiles.yaml", gen / "soc_profiles.inc")
        sources = sorted(HOST_SOURCES.glob("*.cpp"))
        # acl_limits.h, CANN's limits shared with the kernels, lives beside the kernels.
        flags = [f"-I{HOST_INCLUDE}", f"-I{gen}", f"-I{HOST_SOURCES}", f"-I{KERNEL_SOURCES}"]
        # The version script keeps libstdc++ template instances (vague linkage, default visibility) local.
        export_map = ROOT / "ops_impl" / "acl_host" / "libascendcl.map"
        link = ["-Wl,-soname,libascendcl.so", f"-Wl,--version-script={export_map}"]
        self._compile_and_link(sources, out, tmp, flags, link, [HOST_INCLUDE, HOST_SOURCES, gen, ACL_LIMITS])

    def _build_bench(self, out, tmp):
        # Timing loops of `python -m ms_memcopy bench`; they call ACL through pointers, so no link flags.
        self._compile_and_link(sorted(BENCH_SOURCES.glob("*.cpp")), out, tmp, [], [], [BENCH_SOURCES])

    def _build_kernels(self, out, tmp):
        gen = tmp / "generated"
        route_codegen.write_if_changed(gen / acl_error_codes.KERNEL_TABLE_FILE, acl_error_codes.kernel_table_source(
            acl_error_codes.read_error_codes(HOST_INCLUDE)))
        route_codegen.write_if_changed(gen / dtypes.TABLE_FILE, dtypes.table_source())
        sources = kernel_sources()
        cann = cann_home()
        if cann:
            include, libdir = cann / "include", cann / "lib64"
            flags = [f"-I{include}"]
        else:
            include, libdir = HOST_INCLUDE, out.parent
            flags = [f"-I{include}", "-DMS_MEMCOPY_HOST_ACL=1"]
        flags += [f"-I{KERNEL_SOURCES}", f"-I{gen}", *KERNEL_ABI]
        link = [f"-L{libdir}", "-lascendcl", f"-Wl,-rpath,{'$ORIGIN' if not cann else libdir}", "-Wl,--no-undefined"]
        self._compile_and_link(sources, out, tmp, flags, link, [include, KERNEL_SOURCES, gen])


class BuildSharedLibsAndRoute(BuildSharedLibs):
    """The shared libraries, then the op_def route's module (see the module docstring)."""

    def run(self):
        super().run()
        wanted = os.environ.get("MS_MEMCOPY_BUILD_ROUTE", "auto")
        if wanted == "0":
            return
        package_parent = ROOT if (self.inplace or getattr(self, "editable_mode", False)) else Path(self.build_lib)
        backend = "Ascend" if cann_home() else "CPU"
        script = ("import sys; sys.path.insert(0, sys.argv[1]); from ms_memcopy import op_def_route as r; "
                  "print(r.build(sys.argv[2], r.packaged_build_dir(sys.argv[2])))")
        try:
            import mindspore  # noqa: F401  (only to know whether the route can be built here)
        except ImportError:
            if wanted == "1":
                raise RuntimeError("MS_MEMCOPY_BUILD_ROUTE=1 but MindSpore is not importable here") from None
            print("ms_memcopy: MindSpore is not importable in this build environment; the op_def route's "
                  "module will be built on first use")
            return
        print(f"ms_memcopy: building the op_def route's module for {backend} (about 1-2 minutes)")
        result = subprocess.run([sys.executable, "-c", script, str(package_parent), backend],
                                capture_output=True, text=True)
        if result.returncode != 0:
            sys.stderr.write(result.stdout[-4000:] + result.stderr[-4000:])
            if wanted == "1":
                raise RuntimeError("building the op_def route's module failed")
            print("ms_memcopy: building the op_def route's module failed; it will be built on first use")
        elif not (self.inplace or getattr(self, "editable_mode", False)):
            # A wheel carries the module, not its objects (an up-to-date build is never recompiled).
            for leftover in Path(result.stdout.strip().splitlines()[-1]).parent.glob("*.o"):
                leftover.unlink()


class BuildPyWithData(build_py):
    """Copies the public headers, the configs and the kernel sources (which the Ascend route compiles
    with CustomOpBuilder) into the package of a wheel."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        pkg = Path(self.build_lib) / "ms_memcopy"
        for src, dst in ((HOST_INCLUDE, pkg / "include"), (ROOT / "configs", pkg / "configs"),
                         (KERNEL_SOURCES, pkg / "kernels_src")):
            if dst.exists():
                shutil.rmtree(dst)
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))


def extensions():
    exts = []
    if cann_home() is None:
        exts.append(Extension("ms_memcopy._lib.libascendcl", sources=[]))
    if kernel_sources():
        exts.append(Extension("ms_memcopy._lib.libms_memcopy_kernels", sources=[]))
    if list(BENCH_SOURCES.glob("*.cpp")):
        exts.append(Extension("ms_memcopy._lib.libms_memcopy_bench", sources=[]))
    return exts


setup(
    ext_modules=extensions(),
    cmdclass={"build_ext": BuildSharedLibsAndRoute, "build_py": BuildPyWithData},
)
