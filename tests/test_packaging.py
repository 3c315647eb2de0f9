"""The source distribution carries everything the build needs, the package metadata is complete, and
a checkout never silently hides an installed wheel from the tests."""
import os
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
    assert "\nLicense-Expression: Apache-2.0\n" in pkg_info and "\nLicense-File: LICENSE\n" in pkg_info


def test_metadata_has_one_version_and_a_license():
    text = (ROOT / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in text and '\nversion = "' not in text
    assert "Apache-2.0" in text and (ROOT / "LICENSE").read_text().startswith("Apache License")
    assert ms_memcopy.__version__.count(".") == 2


# ---- the checkout does not hide an installed wheel (tests/_import_check.py) ---------------------

def test_a_checkout_hiding_a_wheel_is_a_problem(tmp_path):
    from _import_check import shadowing_problem

    checkout, wheel = tmp_path / "checkout" / "ms_memcopy", tmp_path / "site-packages" / "ms_memcopy"
    problem = shadowing_problem(checkout, [(wheel, False)], checkout_wanted=False)
    assert f"installed at {wheel}, but the tests would import {checkout}" in problem
    assert "MS_MEMCOPY_TEST_CHECKOUT=1" in problem and "python -P -m pytest" in problem
    assert shadowing_problem(checkout, [(wheel, False)], checkout_wanted=True) is None
    assert shadowing_problem(wheel, [(wheel, False)], checkout_wanted=False) is None  # the wheel is tested
    assert shadowing_problem(checkout, [(wheel, True)], checkout_wanted=False) is None  # editable: a checkout
    assert shadowing_problem(checkout, [(checkout, False)], checkout_wanted=False) is None  # its own egg-info
    assert shadowing_problem(checkout, [], checkout_wanted=False) is None


def test_python_m_pytest_in_a_checkout_stops_when_a_wheel_is_installed(tmp_path):
    """End to end: a (stand-in) wheel on PYTHONPATH, `python -m pytest` run in the checkout."""
    site = tmp_path / "site"
    (site / "ms_memcopy").mkdir(parents=True)
    (site / "ms_memcopy" / "__init__.py").write_text("")
    info = site / "ms_memcopy-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ms_memcopy\nVersion: 0.1.0\n")
    root = ROOT.resolve()
    env = {k: v for k, v in os.environ.items() if k != "MS_MEMCOPY_TEST_CHECKOUT"}
    env["PYTHONPATH"] = str(site)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--co", "tests/test_version_only"]
    stopped = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert stopped.returncode == 4, stopped.stdout + stopped.stderr
    assert f"ms_memcopy is installed at {site / 'ms_memcopy'}" in stopped.stderr
    env["MS_MEMCOPY_TEST_CHECKOUT"] = "1"
    allowed = subprocess.run([*command[:-1], "-v", "tests/test_packaging.py"], cwd=root, env=env,
                             capture_output=True, text=True, timeout=120)
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert f"ms_memcopy: imported from {root / 'ms_memcopy'} (this checkout)" in allowed.stdout
