"""Build of ms_memcopy's C++ parts.

Shared libraries are built into ms_memcopy/_lib with g++ (or $CXX), their sources, include directories
and flags taken from ms_memcopy/_extension/build_recipe.py, the one compile recipe (the C++ tests and the sanitizer
runs use it too):

- libascendcl.so: the host ACL runtime (ops_impl/acl_host), a drop-in subset of
  CANN's libascendcl. Built only when CANN is absent.
- libms_memcopy_kernels.so: the copy kernels (ops_impl/kernels), linked against
  the host runtime, or against CANN's libascendcl when ASCEND_HOME_PATH or
  ASCEND_TOOLKIT_HOME names a CANN installation.
- libms_memcopy_bench.so: the timing loops of `python -m ms_memcopy bench`.

Then the op_def route's module (the primitives' one route) is built into
ms_memcopy/_lib/route/ by ms_memcopy.op_def_route.build (ms_memcopy.route_build
lists its entry sources; its include directories come from the recipe) with MindSpore's CustomOpBuilder: pyproject.toml
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
sys.path.insert(0, str(ROOT))
from ms_memcopy._extension import build_recipe as recipe  # noqa: E402  (sources, include directories, flags)

HOST_INCLUDE = ROOT / recipe.HOST_INCLUDE
KERNEL_SOURCES = ROOT / recipe.KERNELS


def cann_home():
    """The CANN installation to build against, or None for the host runtime."""
    for var in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"):
        path = os.environ.get(var)
        if path and (Path(path) / "include" / "acl" / "acl.h").exists():
            return Path(path)
    return None


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
        headers = [p for d in deps for pattern in ("*.h", "*.inc") for p in Path(d).rglob(pattern)]
        objects = []
        jobs = []
        for src in sources:
            obj = tmp / (src.stem + ".o")
            objects.append(obj)
            if newer_than(obj, [src, *headers]):
                jobs.append([recipe.cxx(), *recipe.LIBRARY_FLAGS, *flags, "-c", str(src), "-o", str(obj)])
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            for cmd, result in zip(jobs, pool.map(self._run, jobs)):
                if result.returncode != 0:
                    sys.stderr.write(result.stdout + result.stderr)
                    raise RuntimeError("compilation failed: " + " ".join(cmd))
                if result.stderr:
                    sys.stderr.write(result.stderr)
        if newer_than(out, objects) or jobs:
            cmd = [recipe.cxx(), "-shared", "-pthread", *map(str, objects), "-o", str(out), *link_args]
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
        recipe.write_host_tables(ROOT, gen)
        dirs = recipe.host_runtime_includes(ROOT, gen)
        self._compile_and_link(recipe.host_runtime_sources(ROOT), out, tmp, recipe.includes(dirs),
                               recipe.host_runtime_link_flags(ROOT), dirs)

    def _build_bench(self, out, tmp):
        # Timing loops of `python -m ms_memcopy bench`; they call ACL through pointers, so no link flags.
        self._compile_and_link(recipe.bench_sources(ROOT), out, tmp, [], [], [ROOT / recipe.BENCH_SOURCES])

    def _build_kernels(self, out, tmp):
        gen = tmp / "generated"
        recipe.write_kernel_tables(gen, HOST_INCLUDE)  # the error codes of the shipped ACL headers
        cann = cann_home()
        include, libdir = (cann / "include", cann / "lib64") if cann else (HOST_INCLUDE, out.parent)
        dirs = recipe.kernel_includes(KERNEL_SOURCES, include, gen)
        flags = [*recipe.includes(dirs), *([] if cann else [recipe.HOST_ACL_DEFINE]), *recipe.KERNEL_ABI]
        link = [f"-L{libdir}", "-lascendcl", f"-Wl,-rpath,{'$ORIGIN' if not cann else libdir}", "-Wl,--no-undefined"]
        self._compile_and_link(recipe.kernel_sources(KERNEL_SOURCES), out, tmp, flags, link, dirs)


class BuildSharedLibsAndRoute(BuildSharedLibs):
    """The shared libraries, then the op_def route's module (see the module docstring)."""

    def run(self):
        super().run()
        wanted = os.environ.get("MS_MEMCOPY_BUILD_ROUTE", "auto")
        if wanted == "0":
            return
        package_parent = ROOT if (self.inplace or getattr(self, "editable_mode", False)) else Path(self.build_lib)
        backend = "Ascend" if cann_home() else "CPU"
        script = ("import sys; sys.path.insert(0, sys.argv[1]); from ms_memcopy._extension import op_def_route as r; "
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
    if recipe.kernel_sources(KERNEL_SOURCES):
        exts.append(Extension("ms_memcopy._lib.libms_memcopy_kernels", sources=[]))
    if recipe.bench_sources(ROOT):
        exts.append(Extension("ms_memcopy._lib.libms_memcopy_bench", sources=[]))
    return exts


setup(
    ext_modules=extensions(),
    cmdclass={"build_ext": BuildSharedLibsAndRoute, "build_py": BuildPyWithData},
)
