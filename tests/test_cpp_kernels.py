"""Builds the C++ tests of the copy kernels (tests/cpp_kernels) from the kernel sources and the
shipped ACL library, runs them, and expects exit status 0 and "ALL PASSED"."""
import os
import subprocess
from pathlib import Path

import pytest

from ms_memcopy import _paths, _runtime_env, acl_error_codes, dtypes

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "ops_impl" / "kernels"
# The kernel sources the tests link (the shared code and bodies/<family>.cpp), without the MindSpore
# entry layers.
KERNEL_SOURCES = sorted(p for p in KERNELS.rglob("*.cpp") if "ms_extension" not in p.relative_to(KERNELS).parts)
PROGRAMS = sorted((Path(__file__).resolve().parent / "cpp_kernels").glob("*.cpp"))


@pytest.mark.skipif(not _paths.uses_host_runtime(), reason="these programs run on the host ACL runtime")
@pytest.mark.parametrize("source", PROGRAMS, ids=lambda p: p.stem)
def test_kernel_program(source, tmp_path):
    library = Path(_paths.get_acl_library())
    exe = tmp_path / source.stem
    # kernel_error.cpp's table, as setup.py generates it
    (tmp_path / acl_error_codes.KERNEL_TABLE_FILE).write_text(
        acl_error_codes.kernel_table_source(acl_error_codes.read_error_codes(_paths.shipped_include())))
    (tmp_path / dtypes.TABLE_FILE).write_text(dtypes.table_source())  # op bodies' ItemSize, as setup.py writes it
    cmd = [os.environ.get("CXX", "g++"), "-std=c++17", "-O1", "-g", "-pthread", "-Wall", "-Wextra",
           "-DMS_MEMCOPY_HOST_ACL=1", f"-I{_paths.get_include()}", f"-I{KERNELS}", f"-I{tmp_path}", str(source),
           *map(str, KERNEL_SOURCES), f"-L{library.parent}", "-lascendcl", f"-Wl,-rpath,{library.parent}",
           "-o", str(exe)]
    built = subprocess.run(cmd, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    env = _runtime_env.without_machine(os.environ)
    result = subprocess.run([str(exe)], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0 and "ALL PASSED" in result.stdout, result.stdout + result.stderr
