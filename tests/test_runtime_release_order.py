"""Devices and contexts released in any order, not only the newest first.

Each sequence runs in a child process: before the fix, releasing anything but the newest device or
context dereferenced a moved-from default stream and killed the process (SIGSEGV). After each
release the remaining context must still run work, and its copies must be right.
"""
import subprocess
import sys
import textwrap

import pytest

SEQUENCES = {
    "older device reset": """
        rt.set_device(0); rt.set_device(1); rt.reset_device(0)
        check_current_context_works()
    """,
    "device reset under a created context": """
        rt.set_device(0); ctx = rt.create_context(0); rt.reset_device(0)
        check_current_context_works()
        rt.destroy_context(ctx)
    """,
    "older of two contexts on one device destroyed": """
        rt.set_device(0); c1 = rt.create_context(0); c2 = rt.create_context(0); rt.destroy_context(c1)
        rt.set_current_context(c2)
        check_current_context_works()
    """,
    "context on device 0 destroyed while one on device 1 lives": """
        c0 = rt.create_context(0); c1 = rt.create_context(1); rt.destroy_context(c0)
        rt.set_current_context(c1)
        check_current_context_works()
    """,
    "context on device 1 destroyed while one on device 0 lives": """
        c0 = rt.create_context(0); c1 = rt.create_context(1); rt.set_current_context(c0); rt.destroy_context(c1)
        check_current_context_works()
    """,
}

PRELUDE = """
import numpy as np
from ms_memcopy import runtime as rt
from ms_memcopy.acl_constants import ACL_MEMCPY_DEVICE_TO_HOST, ACL_MEMCPY_HOST_TO_DEVICE

def check_current_context_works():
    src = np.arange(256, dtype=np.uint8)
    dev = rt.malloc(src.nbytes)
    host = rt.malloc_host(src.nbytes)
    out = rt.malloc_host(src.nbytes)
    np.ctypeslib.as_array((np.ctypeslib.ctypes.c_uint8 * src.nbytes).from_address(host))[:] = src
    stream = rt.create_stream()
    rt.memcpy_async(dev, src.nbytes, host, src.nbytes, ACL_MEMCPY_HOST_TO_DEVICE, stream)
    rt.memcpy_async(out, src.nbytes, dev, src.nbytes, ACL_MEMCPY_DEVICE_TO_HOST, stream)
    rt.synchronize_stream(stream)
    got = np.ctypeslib.as_array((np.ctypeslib.ctypes.c_uint8 * src.nbytes).from_address(out)).copy()
    assert (got == src).all(), got
    rt.destroy_stream(stream)
    rt.free(dev); rt.free_host(host); rt.free_host(out)

rt.init()
"""


@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_release_in_any_order(name):
    code = PRELUDE + textwrap.dedent(SEQUENCES[name]) + "\nprint('done')\n"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    assert result.stdout.strip().endswith("done")
