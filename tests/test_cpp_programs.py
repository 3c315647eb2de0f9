"""Builds every C++ program under tests/cpp against the shipped ACL headers and library, runs it, and
expects exit status 0 and "ALL PASSED" on stdout.

The programs include only the public headers (acl/acl.h, acl_host/acl_host_ext.h) and link only
libascendcl, as a user's C++ code would. They need the host ACL runtime (acl_host_ext.h does not exist
in CANN) and g++.
"""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ms_memcopy import _paths, _runtime_env, build_recipe

CPP_DIR = Path(__file__).resolve().parent / "cpp"
PROGRAMS = sorted(CPP_DIR.glob("*.cpp"))


@pytest.fixture
def build_program(tmp_path):
    """Returns build(source) -> path of the executable compiled into this test's tmp_path."""
    compiler = build_recipe.cxx()
    if shutil.which(compiler) is None:
        pytest.skip(f"{compiler} is not installed")
    if not _paths.uses_host_runtime():
        pytest.skip("these programs test the host ACL runtime; this build uses CANN")
    include = _paths.get_include()
    library = Path(_paths.get_acl_library())

    def build(source):
        exe = tmp_path / source.stem
        cmd = build_recipe.program_command(source, exe, include, library.parent, compiler=compiler)
        result = subprocess.run(cmd, capture_output=True, text=True)
        assert result.returncode == 0, f"{' '.join(cmd)}\n{result.stdout}{result.stderr}"
        return exe

    return build


@pytest.mark.parametrize("source", PROGRAMS, ids=lambda path: path.stem)
def test_cpp_program(source, build_program):
    exe = build_program(source)
    env = _runtime_env.without_machine(os.environ)  # the programs choose their own SoC profile and device count
    result = subprocess.run([str(exe)], capture_output=True, text=True, env=env, timeout=300)
    output = f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert result.returncode == 0, output
    assert "ALL PASSED" in result.stdout, output
