"""Strict device memory (MS_MEMCOPY_STRICT_DEVICE=1): the host cannot access aclrtMalloc memory at the
address it was given, as on an NPU, while every ACL call still moves its bytes; pinned and framework
memory stay host memory. Each case runs in a child interpreter with the variable set (or not) there."""
import json
import signal

import pytest

from ms_memcopy import _runtime_env

STRICT = {_runtime_env.STRICT_DEVICE: "1"}

HOST_ACCESS = r'''
import ctypes, sys
import ms_memcopy.acl as acl

assert acl.rt.set_device(0) == 0
dev, ret = acl.rt.malloc(64, 0)
assert ret == 0
data = bytes(range(100, 164))
assert acl.rt.memcpy(dev, 64, acl.util.bytes_to_ptr(data), 64, 1) == 0  # H2D
out = ctypes.create_string_buffer(64)
assert acl.rt.memcpy(ctypes.addressof(out), 64, dev, 64, 2) == 0  # D2H
print("d2h", out.raw.hex(), flush=True)
if sys.argv[-1] == "write":
    ctypes.memset(dev + 8, 0, 1)
    print("host write done", flush=True)
else:
    print("host read", ctypes.string_at(dev + 8, 4).hex(), flush=True)
'''


@pytest.mark.parametrize("access", ["read", "write"])
def test_a_host_access_of_device_memory_is_sigsegv_in_strict_mode(run_python, tmp_path, access):
    script = tmp_path / "host_access.py"
    script.write_text(HOST_ACCESS)
    result = run_python(f"import runpy, sys\nsys.argv.append({access!r})\nrunpy.run_path({str(script)!r})\n",
                        env=STRICT)
    assert result.returncode == -signal.SIGSEGV, result.stderr
    assert result.stdout.splitlines() == [f"d2h {bytes(range(100, 164)).hex()}"]  # the copy, then nothing


@pytest.mark.parametrize("value", [None, "0", "", "yes"])
def test_device_memory_is_host_memory_otherwise(run_python, value):
    """Only "1" turns the mode on; the child drops an inherited variable for the unset case."""
    if value is None:
        script, env = "import os\nos.environ.pop('MS_MEMCOPY_STRICT_DEVICE', None)\n" + HOST_ACCESS, {}
    else:
        script, env = HOST_ACCESS, {_runtime_env.STRICT_DEVICE: value}
    result = run_python(script, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"d2h {bytes(range(100, 164)).hex()}",
                                          f"host read {bytes(range(108, 112)).hex()}"]


EVERY_PATH = r'''
import ctypes, json
import numpy as np
import ms_memcopy.acl as acl
from ms_memcopy import _acl_lib, runtime

H2D, D2H, D2D, INNER = 1, 2, 3, 6
out = {}
assert acl.rt.set_device(0) == 0
stream, _ = acl.rt.create_stream()
n = 4096
a, _ = acl.rt.malloc(n, 0)
b, _ = acl.rt.malloc(n, 0)
data = np.random.default_rng(7).integers(0, 256, n, dtype=np.uint8)

def upload(dst, array):
    assert acl.rt.memcpy(dst, array.nbytes, array.ctypes.data, array.nbytes, H2D) == 0

def download(src, count):
    host = np.zeros(count, np.uint8)
    assert acl.rt.memcpy(host.ctypes.data, count, src, count, D2H) == 0
    return host

upload(a, data)
# interior pointers through each byte mover
out["async_h2d"] = acl.rt.memcpy_async(b + 100, 50, data.ctypes.data + 7, 50, H2D, stream)
acl.rt.synchronize_stream(stream)
out["async_h2d_ok"] = bool((download(b + 100, 50) == data[7:57]).all())
out["d2d"] = acl.rt.memcpy_async(b + 1000, 300, a + 300, 300, D2D, stream)
acl.rt.synchronize_stream(stream)
out["d2d_ok"] = bool((download(b + 1000, 300) == data[300:600]).all())
pinned, _ = acl.rt.malloc_host(n)
out["d2h_pinned"] = acl.rt.memcpy_async(pinned, 64, a + 64, 64, D2H, stream)
acl.rt.synchronize_stream(stream)
out["pinned_is_host"] = bytes(ctypes.string_at(pinned, 64)) == data[64:128].tobytes()
out["staged"] = acl.rt.memcpy_async(b + 2000, 16, data.ctypes.data, 16, 5, stream)  # HOST_TO_BUF_TO_DEVICE
acl.rt.synchronize_stream(stream)
out["staged_ok"] = bool((download(b + 2000, 16) == data[:16]).all())
grid = np.zeros((8, 32), np.uint8)
out["2d_d2h"] = acl.rt.memcpy2d(grid.ctypes.data, 32, a + 5, 64, 16, 8, D2H)
out["2d_ok"] = all((grid[r, :16] == data[5 + 64 * r:21 + 64 * r]).all() for r in range(8))
out["2d_async_d2d"] = acl.rt.memcpy2d_async(b + 3000, 20, a + 1, 30, 10, 4, D2D, stream)
acl.rt.synchronize_stream(stream)
got = download(b + 3000, 80)
out["2d_async_d2d_ok"] = all((got[20 * r:20 * r + 10] == data[1 + 30 * r:11 + 30 * r]).all() for r in range(4))
out["memset"] = acl.rt.memset(b + 10, 5, 0xAB, 5)
out["memset_async"] = acl.rt.memset_async(b + 20, 5, 0xCD, 5, stream)
acl.rt.synchronize_stream(stream)
out["memset_ok"] = bool((download(b + 10, 5) == 0xAB).all() and (download(b + 20, 5) == 0xCD).all())
attr = {"dst_loc": {"id": 0, "type": 0}, "src_loc": {"id": 0, "type": 1}}
dst_host = np.zeros(2 * 32, np.uint8)
out["batch"] = list(acl.rt.memcpy_batch([dst_host.ctypes.data, dst_host.ctypes.data + 32], [32, 32],
                                        [a + 200, a + 400], [32, 32], [attr], [0]))
out["batch_ok"] = bool((dst_host[:32] == data[200:232]).all() and (dst_host[32:] == data[400:432]).all())
size, _ = acl.rt.get_memcpy_desc_size(INNER)
desc, _ = acl.rt.malloc(size, 0)
out["set_desc"] = acl.rt.set_memcpy_desc(desc, INNER, a + 128, b + 512, 256, 0)[1]
out["with_desc"] = acl.rt.memcpy_async_with_desc(desc, INNER, stream)
out["desc_sync"] = acl.rt.synchronize_stream(stream)
out["desc_ok"] = bool((download(b + 512, 256) == data[128:384]).all())
raw = download(desc, 32)  # the descriptor holds the device addresses, as CANN's
out["desc_fields"] = [int(raw[8:16].view(np.uint64)[0]) == a + 128, int(raw[16:24].view(np.uint64)[0]) == b + 512]
location = runtime.get_mem_location(a + 77)
out["location"] = [location.base == a, location.size >= n]
framework = np.arange(256, dtype=np.uint8)
out["register"] = _acl_lib.func("aclhostRegisterDeviceMemory")(framework.ctypes.data, framework.nbytes)
out["d2d_to_framework"] = acl.rt.memcpy_async(framework.ctypes.data, 64, a, 64, D2D, stream)
acl.rt.synchronize_stream(stream)
out["framework_is_host"] = bool((framework[:64] == data[:64]).all() and (framework[64:] == np.arange(64, 256)).all())
out["unregister"] = _acl_lib.func("aclhostUnregisterDeviceMemory")(framework.ctypes.data)
out["frees"] = [acl.rt.free(p) for p in (a, b, desc)] + [acl.rt.free_host(pinned)]
out["stream"] = acl.rt.destroy_stream(stream)
print(json.dumps(out))
'''


def test_every_byte_mover_reaches_strict_device_memory_at_interior_addresses(run_python):
    result = run_python(EVERY_PATH, env=STRICT)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    codes = {key: value for key, value in out.items() if isinstance(value, int) and not isinstance(value, bool)}
    assert codes == dict.fromkeys(codes, 0), codes
    assert out["batch"][1] == 0 and out["frees"] == [0, 0, 0, 0]
    checks = {key: value for key, value in out.items() if isinstance(value, bool)}
    assert checks == dict.fromkeys(checks, True), checks
    assert out["desc_fields"] == [True, True] and out["location"] == [True, True]


RELEASE = r'''
import json, os
import ms_memcopy.acl as acl

def mappings():
    with open("/proc/self/maps") as f:
        return sum("ms_memcopy-device-memory" in line for line in f)

def fds():
    return len(os.listdir("/proc/self/fd"))

assert acl.rt.set_device(0) == 0
fds_before = fds()
ptrs = [acl.rt.malloc(size, 0)[0] for size in (1, 4096, 4097, 1 << 20) * 50]
live = mappings()
codes = {acl.rt.free(p) for p in ptrs}
print(json.dumps({"live": live, "after": mappings(), "codes": sorted(codes), "fds": fds() - fds_before,
                  "aligned": all(p % 4096 == 0 for p in ptrs)}))
'''


def test_strict_allocations_release_their_mappings_and_keep_no_file_open(run_python):
    result = run_python(RELEASE, env=STRICT)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"live": 400, "after": 0, "codes": [0], "fds": 0, "aligned": True}
