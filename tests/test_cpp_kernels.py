"""Builds the C++ tests of the copy kernels (tests/cpp_kernels) from the kernel sources and the
shipped ACL library, runs them, and expects exit status 0 and "ALL PASSED"."""
import os
import subprocess
from pathlib import Path

import pytest

from ms_memcopy import _paths, _runtime_env, build_recipe

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / build_recipe.KERNELS
PROGRAMS = sorted((ROOT / build_recipe.KERNEL_TESTS).glob("*.cpp"))


@pytest.mark.skipif(not _paths.uses_host_runtime(), reason="these programs run on the host ACL runtime")
@pytest.mark.parametrize("source", PROGRAMS, ids=lambda p: p.stem)
def test_kernel_program(source, tmp_path):
    library = Path(_paths.get_acl_library())
    exe = tmp_path / source.stem
    build_recipe.write_kernel_tables(tmp_path, _paths.shipped_include())  # as setup.py writes them
    cmd = build_recipe.program_command(source, exe, _paths.get_include(), library.parent, kernels_dir=KERNELS,
                                       generated=tmp_path)
    built = subprocess.run(cmd, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    env = _runtime_env.without_machine(os.environ)
    result = subprocess.run([str(exe)], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0 and "ALL PASSED" in result.stdout, result.stdout + result.stderr
