"""Long builds that a test waits for, started in the background when the session's tests are collected.

A test marked ``@pytest.mark.background.with_args(build)`` (with_args: a mark called with one function
would decorate it) calls ``_background.result(build)``: the return value of ``build(directory)``, which
conftest.py's pytest_collection_finish started in a thread of this process (in a fresh directory of its
own) when the test was among the tests collected. Most of the suite keeps one core busy, so a long
compile (the Ascend compile check) runs on the other while the tests before it run. Builds run their
commands with ``run``: niced, so that the tests keep priority, and ended when the session ends.
"""
import shutil
import subprocess
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

NICE = ["nice", "-n", "10"] if shutil.which("nice") else []

_lock = threading.Lock()
_futures = {}
_processes = []
_executor = None
_directory = None


def start(build):
    """Starts build(directory) in the background, once per session."""
    global _executor, _directory
    with _lock:
        if build in _futures:
            return
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="background_build")
            _directory = tempfile.TemporaryDirectory(prefix="ms_memcopy_background_")
        directory = Path(tempfile.mkdtemp(prefix=build.__name__ + "_", dir=_directory.name))
        _futures[build] = _executor.submit(build, directory)


def result(build):
    """What build(directory) returned (or raised), waiting for it; started now if it was not."""
    start(build)
    return _futures[build].result()


def run(cmd, **kwargs):
    """subprocess.run(cmd, capture_output=True, text=True, **kwargs), niced, ended by close()."""
    with _lock:
        process = subprocess.Popen([*NICE, *map(str, cmd)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, **kwargs)
        _processes.append(process)
    stdout, stderr = process.communicate()
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def close():
    """Ends the builds' processes still running, waits for the builds and removes their directories."""
    global _executor, _directory
    with _lock:
        for process in _processes:
            if process.poll() is None:
                process.kill()
        executor, directory = _executor, _directory
        _executor = _directory = None
        _futures.clear()
        _processes.clear()
    if executor is not None:
        executor.shutdown(wait=True)
        directory.cleanup()
