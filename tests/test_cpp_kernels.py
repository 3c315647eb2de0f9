"""Builds the C++ tests of the copy kernels (tests/cpp_kernels) from the kernel sources and the
shipped ACL library, runs them, and expects exit status 0 and "ALL PASSED"."""
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ms_memcopy import _paths, _runtime_env, build_recipe

import _background

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / build_recipe.KERNELS
PROGRAMS = sorted((ROOT / build_recipe.KERNEL_TESTS).glob("*.cpp"))


def build_programs(out):
    """Every program built once: the kernel sources compiled once, two at a time, then each program
    compiled and linked with their objects: {stem: (executable, the compiler's result)}. Started when
    the tests are collected (tests/_background.py)."""
    if not _paths.uses_host_runtime():
        return {}
    include, library = _paths.get_include(), Path(_paths.get_acl_library())
    build_recipe.write_kernel_tables(out, _paths.shipped_include())  # as setup.py writes them
    objects = [out / f"{source.stem}.o" for source in build_recipe.kernel_sources(KERNELS)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        compiled = list(pool.map(_background.run, [
            build_recipe.kernel_object_command(source, obj, include, KERNELS, out)
            for source, obj in zip(build_recipe.kernel_sources(KERNELS), objects)]))
        failed = next((result for result in compiled if result.returncode != 0), None)

        def build(source):
            exe = out / source.stem
            if failed is not None:
                return source.stem, (exe, failed)
            cmd = build_recipe.program_command(source, exe, include, library.parent, kernels_dir=KERNELS,
                                               generated=out, kernel_objects=objects)
            return source.stem, (exe, _background.run(cmd))

        return dict(pool.map(build, PROGRAMS))


@pytest.mark.skipif(not _paths.uses_host_runtime(), reason="these programs run on the host ACL runtime")
@pytest.mark.parametrize("source", PROGRAMS, ids=lambda p: p.stem)
@pytest.mark.background.with_args(build_programs)
def test_kernel_program(source):
    exe, compiled = _background.result(build_programs)[source.stem]
    assert compiled.returncode == 0, compiled.stderr
    env = _runtime_env.without_machine(os.environ)
    result = subprocess.run([str(exe)], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0 and "ALL PASSED" in result.stdout, result.stdout + result.stderr
