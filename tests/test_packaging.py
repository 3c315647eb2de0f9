"""The source distribution carries everything the build needs, and the package metadata is complete."""
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

import ms_memcopy

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def sdist_names(tmp_path_factory):
    if not (ROOT / "setup.py").exists():
        pytest.skip("not a source checkout")
    out = tmp_path_factory.mktemp("sdist")
    result = subprocess.run([sys.executable, "setup.py", "-q", "sdist", "-d", str(out)], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    (archive,) = out.glob("*.tar.gz")
    with tarfile.open(archive) as tar:
        names = {name.split("/", 1)[1]: name for name in tar.getnames() if "/" in name}
        pkg_info = tar.extractfile(names["PKG-INFO"]).read().decode()
    return names, pkg_info


def tracked(pattern):
    result = subprocess.run(["git", "ls-files", pattern], cwd=ROOT, capture_output=True, text=True)
    if result.returncode != 0:
        pytest.skip("not a git checkout")
    return [line for line in result.stdout.splitlines() if line]


def test_sdist_has_every_build_input(sdist_names):
    needed = [*tracked("ops_impl"), *tracked("configs"), "LICENSE", "README.md", "setup.py", "pyproject.toml",
              "ms_memcopy/py.typed", *tracked("ms_memcopy/*.py"), *tracked("benchmarks/*.py")]
    missing = [name for name in needed if name not in sdist_names[0]]
    assert not missing, missing


def test_sdist_metadata(sdist_names):
    pkg_info = sdist_names[1]
    assert f"\nVersion: {ms_memcopy.__version__}\n" in pkg_info
    assert "Requires-Python: <3.12,>=3.9" in pkg_info or "Requires-Python: >=3.9,<3.12" in pkg_info
    assert "License :: OSI Approved :: Apache Software License" in pkg_info


def test_metadata_has_one_version_and_a_license():
    text = (ROOT / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in text and '\nversion = "' not in text
    assert "Apache-2.0" in text and (ROOT / "LICENSE").read_text().startswith("Apache License")
    assert ms_memcopy.__version__.count(".") == 2
