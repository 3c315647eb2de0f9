import ctypes
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import _background
import _import_check
from ms_memcopy import _runtime_env


# ---------------------------------------------------------------------------------------------
# Which ms_memcopy is under test (_import_check.py): reported in the header; a checkout that hides
# an installed wheel stops the session.
# ---------------------------------------------------------------------------------------------

def _imported_package():
    import ms_memcopy

    return Path(ms_memcopy.__file__).resolve().parent


def pytest_report_header(config):
    return _import_check.describe(_imported_package())


def pytest_configure(config):
    problem = _import_check.shadowing_problem(_imported_package(), _import_check.installed_distributions(),
                                              os.environ.get(_import_check.CHECKOUT_ENV) == "1")
    if problem:
        raise pytest.UsageError(problem)
    _children_import_the_same_copy(_imported_package())


def _children_import_the_same_copy(imported):
    """A checkout built in place (no install) is importable here only because `python -m pytest` put
    the current directory on sys.path; the Python processes that tests start run elsewhere, so they
    get the checkout through PYTHONPATH and import the copy under test, as after `pip install -e .`."""
    if imported != _import_check.CHECKOUT / "ms_memcopy":
        return
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(_import_check.CHECKOUT) not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(_import_check.CHECKOUT), *paths])


# ---------------------------------------------------------------------------------------------
# Long builds that tests wait for (tests/_background.py): a test marked
# @pytest.mark.background.with_args(build) has its build started when the session's tests are collected,
# to compile while other tests run.
# ---------------------------------------------------------------------------------------------

def pytest_collection_finish(session):
    """Starts the background builds of the tests collected (tests/_background.py). A pytest-xdist worker
    collects every test but runs only the files it is given: its builds start when a test asks for them."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    for item in session.items:
        if any(m.args and m.args[0] is True for m in item.iter_markers("skipif")):
            continue  # skipped whatever the build gives (a long test the default run leaves out)
        for marker in item.iter_markers("background"):
            _background.start(marker.args[0])


def pytest_unconfigure(config):
    _background.close()


# ---------------------------------------------------------------------------------------------
# ACL runtime and pyACL layer fixtures (tests/test_runtime_*.py, tests/test_acl_*.py)
#
# acl_device    session: device 0 is the main thread's current device (and, being the first
#               device set, the process default for threads that never set one).
# acl_res       per test: allocates device/pinned memory and streams, and releases all of it
#               (streams synchronized and destroyed, memory freed) when the test ends.
# run_python    per test: runs a Python script in a fresh interpreter (own SoC profile, device
#               count, aclInit state), written to the test's tmp_path.
# ---------------------------------------------------------------------------------------------

# Environment variables of the host runtime that a subprocess must not inherit by accident.
HOST_RUNTIME_ENV = _runtime_env.MACHINE


@pytest.fixture(scope="session")
def acl_device():
    """The in-process ACL tests assume the default SoC profile and at least 2 devices; the other
    profiles run in subprocesses (test_runtime_soc.py)."""
    import yaml

    from ms_memcopy import _acl_lib, _paths, runtime

    with open(_paths.configs_dir() / "soc_profiles.yaml", encoding="utf-8") as f:
        default = yaml.safe_load(f)["default"]
    profile = runtime.soc_profile() if _acl_lib.has("aclhostGetSocProfile") else default
    if profile != default or runtime.get_device_count() < 2:
        pytest.fail(f"the in-process ACL tests need the default SoC profile {default} and >= 2 devices; "
                    f"got {profile} and {runtime.get_device_count()}: unset {HOST_RUNTIME_ENV}")
    runtime.set_device(0)
    return 0


class AclResources:
    """Device memory, pinned host memory and streams of one test, all released by close()."""

    def __init__(self, runtime):
        self.rt = runtime
        self._device = []  # (ptr, device_id)
        self._pinned = []
        self._streams = []

    def device(self, nbytes, device_id=0):
        previous = self.rt.get_device()
        if device_id != previous:
            self.rt.set_device(device_id)
        try:
            ptr = self.rt.malloc(nbytes)
        finally:
            if device_id != previous:
                self.rt.set_device(previous)
        self._device.append((ptr, device_id))
        return ptr

    def pinned(self, nbytes):
        ptr = self.rt.malloc_host(nbytes)
        self._pinned.append(ptr)
        return ptr

    def stream(self):
        s = self.rt.create_stream()
        self._streams.append(s)
        return s

    def forget_stream(self, stream):
        """For tests that destroy a stream themselves."""
        self._streams.remove(stream)

    @staticmethod
    def view(ptr, nbytes):
        """A uint8 numpy view of host-accessible memory (pinned host memory)."""
        return np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(ptr))

    def upload(self, data, device_id=0):
        """New device memory holding the bytes of the numpy array data."""
        data = np.ascontiguousarray(data)
        ptr = self.device(max(data.nbytes, 1), device_id)
        self.rt.memcpy(ptr, data.nbytes, data, data.nbytes, 1)  # ACL_MEMCPY_HOST_TO_DEVICE
        return ptr

    def download(self, ptr, nbytes):
        """The nbytes of device memory at ptr, as a new uint8 array."""
        out = np.empty(nbytes, np.uint8)
        self.rt.memcpy(out, nbytes, ptr, nbytes, 2)  # ACL_MEMCPY_DEVICE_TO_HOST
        return out

    def close(self):
        errors = []
        for s in reversed(self._streams):
            for step in (self.rt.synchronize_stream, self.rt.destroy_stream):
                try:
                    step(s)
                except Exception as e:  # report after releasing everything else
                    errors.append(e)
        for ptr in self._pinned:
            try:
                self.rt.free_host(ptr)
            except Exception as e:
                errors.append(e)
        current = self.rt.get_device()
        for ptr, device_id in self._device:
            try:
                if device_id != current:
                    self.rt.set_device(device_id)
                    current = device_id
                self.rt.free(ptr)
            except Exception as e:
                errors.append(e)
        if current != 0:
            self.rt.set_device(0)
        self._streams, self._pinned, self._device = [], [], []
        if errors:
            raise errors[0]


@pytest.fixture
def acl_res(acl_device):
    from ms_memcopy import runtime

    res = AclResources(runtime)
    yield res
    res.close()


@pytest.fixture
def run_python(tmp_path):
    """run_python(source, env={...}) -> CompletedProcess of ``python script.py`` in a clean environment."""
    counter = iter(range(1000))

    def run(source, env=None, timeout=60):
        script = tmp_path / f"script_{next(counter)}.py"
        script.write_text(source)
        full_env = _runtime_env.without_machine(os.environ)
        full_env.update(env or {})
        return subprocess.run([sys.executable, str(script)], env=full_env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=timeout)

    return run


# ---------------------------------------------------------------------------------------------
# Primitive tests (tests/test_ops_*.py, test_nn.py)
#
# ms_mode    runs the test in GRAPH_MODE and in PYNATIVE_MODE (CPU target).
# style      runs the test with the op called in an nn.Cell's construct, in ms.jit, and eagerly.
# ---------------------------------------------------------------------------------------------

@pytest.fixture
def route():
    """The primitives' one route (kept so that tests can name it in their ids and texts)."""
    return "op_def"


@pytest.fixture(params=["graph", "pynative"])
def ms_mode(request, route):
    import mindspore as ms

    ms.set_context(mode=ms.GRAPH_MODE if request.param == "graph" else ms.PYNATIVE_MODE)
    if ms.get_context("device_target") != "CPU":
        ms.set_device("CPU")  # only possible before MindSpore's runtime starts; CPU is this build's default
    yield request.param
    ms.set_context(mode=ms.PYNATIVE_MODE)


@pytest.fixture(params=["cell", "jit", "eager"])
def style(request):
    return request.param
