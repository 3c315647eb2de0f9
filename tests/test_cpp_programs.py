"""Builds every C++ program under tests/cpp against the shipped ACL headers and library, runs it, and
expects exit status 0 and "ALL PASSED" on stdout.

The programs include only the public headers (acl/acl.h, acl_host/acl_host_ext.h) and link only
libascendcl, as a user's C++ code would. They need the host ACL runtime (acl_host_ext.h does not exist
in CANN) and g++.
"""
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ms_memcopy import _paths, _runtime_env, build_recipe

import _background

CPP_DIR = Path(__file__).resolve().parent / "cpp"
PROGRAMS = sorted(CPP_DIR.glob("*.cpp"))


def build_programs(out):
    """Every program compiled, two at a time, into out: {stem: (executable, the compiler's result)}, or None
    where they cannot be built. Started when the tests are collected (tests/_background.py)."""
    compiler = build_recipe.cxx()
    if shutil.which(compiler) is None or not _paths.uses_host_runtime():
        return None
    include = _paths.get_include()
    library = Path(_paths.get_acl_library())

    def build(source):
        exe = out / source.stem
        cmd = build_recipe.program_command(source, exe, include, library.parent, compiler=compiler)
        return source.stem, (exe, _background.run(cmd))

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(build, PROGRAMS))


@pytest.mark.parametrize("source", PROGRAMS, ids=lambda path: path.stem)
@pytest.mark.background.with_args(build_programs)
def test_cpp_program(source):
    if shutil.which(build_recipe.cxx()) is None:
        pytest.skip(f"{build_recipe.cxx()} is not installed")
    if not _paths.uses_host_runtime():
        pytest.skip("these programs test the host ACL runtime; this build uses CANN")
    exe, compiled = _background.result(build_programs)[source.stem]
    assert compiled.returncode == 0, f"{' '.join(compiled.args)}\n{compiled.stdout}{compiled.stderr}"
    env = _runtime_env.without_machine(os.environ)  # the programs choose their own SoC profile and device count
    result = subprocess.run([str(exe)], capture_output=True, text=True, env=env, timeout=300)
    output = f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert result.returncode == 0, output
    assert "ALL PASSED" in result.stdout, output
