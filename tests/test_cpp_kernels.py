"""Builds the C++ tests of the copy kernels (tests/cpp_kernels) from the kernel sources and the
shipped ACL library, runs them, and expects exit status 0 and "ALL PASSED"."""
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ms_memcopy import _paths, _runtime_env, build_recipe

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / build_recipe.KERNELS
PROGRAMS = sorted((ROOT / build_recipe.KERNEL_TESTS).glob("*.cpp"))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Every program built once, two compilers at a time (each compiles the kernel sources with it):
    {stem: (executable, the compiler's result)}."""
    out = tmp_path_factory.mktemp("cpp_kernels")
    library = Path(_paths.get_acl_library())
    build_recipe.write_kernel_tables(out, _paths.shipped_include())  # as setup.py writes them

    def build(source):
        exe = out / source.stem
        cmd = build_recipe.program_command(source, exe, _paths.get_include(), library.parent, kernels_dir=KERNELS,
                                           generated=out)
        return source.stem, (exe, subprocess.run(cmd, capture_output=True, text=True))

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(build, PROGRAMS))


@pytest.mark.skipif(not _paths.uses_host_runtime(), reason="these programs run on the host ACL runtime")
@pytest.mark.parametrize("source", PROGRAMS, ids=lambda p: p.stem)
def test_kernel_program(source, built):
    exe, compiled = built[source.stem]
    assert compiled.returncode == 0, compiled.stderr
    env = _runtime_env.without_machine(os.environ)
    result = subprocess.run([str(exe)], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0 and "ALL PASSED" in result.stdout, result.stdout + result.stderr
