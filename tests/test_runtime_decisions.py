"""Behaviour the host runtime decided where the spec leaves room: devices, the memory registry, stream
handles, freeing rules, no aclInit needed, and the host-only calls (acl_host/acl_host_ext.h)."""
import json
import os

import numpy as np
import pytest

from ms_memcopy import _runtime_env
from ms_memcopy import runtime as rt
from ms_memcopy.acl_constants import (
    ACL_MEM_LOCATION_TYPE_DEVICE as DEVICE,
    ACL_MEM_LOCATION_TYPE_HOST as HOST,
    ACL_MEM_LOCATION_TYPE_UNREGISTERED as UNREGISTERED,
)

from _acl_support import ATTR_D2H, D2D, D2H, H2D, code

INVALID_PARAM = 100000
RT_PARAM_INVALID = 107000
RT_INVALID_HANDLE = 107017
RT_INVALID_DEVICEID = 107001


def run_json(run_python, source, env=None):
    result = run_python(source, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


# --- devices -----------------------------------------------------------------------------------------

def test_device_count_default_is_8(acl_device):
    assert rt.get_device_count() == int(os.environ.get(_runtime_env.DEVICE_COUNT, 8))


@pytest.mark.parametrize("device_id,expected", [(-1, RT_INVALID_DEVICEID), (0, 0), (7, 0), (8, RT_INVALID_DEVICEID),
                                                (2**31 - 1, RT_INVALID_DEVICEID)])
def test_set_device_range(acl_device, device_id, expected):
    try:
        assert code(rt.set_device, device_id) == expected
        if expected == 0:
            assert rt.get_device() == device_id
    finally:
        rt.set_device(0)


def test_device_count_from_environment(run_python):
    out = run_json(run_python, (
        "import json, ms_memcopy.acl as acl\n"
        "print(json.dumps([acl.rt.get_device_count(), acl.rt.set_device(2), acl.rt.set_device(3)]))\n"),
        env={_runtime_env.DEVICE_COUNT: "3"})
    assert out == [[3, 0], 0, RT_INVALID_DEVICEID]


def test_first_device_set_is_the_default_of_other_threads(run_python):
    out = run_json(run_python, (
        "import json, threading\n"
        "from ms_memcopy import runtime as rt\n"
        "rt.set_device(3)\n"
        "rt.set_device(1)  # the current device changes, the process default stays 3\n"
        "seen = {}\n"
        "def worker():\n"
        "    seen['device'] = rt.get_device()\n"
        "    ptr = rt.malloc(64)\n"
        "    seen['loc'] = list(rt.get_mem_location(ptr))[:2]\n"
        "    rt.free(ptr)\n"
        "t = threading.Thread(target=worker); t.start(); t.join()\n"
        "print(json.dumps([rt.get_device(), seen['device'], seen['loc']]))\n"))
    assert out == [1, 3, [DEVICE, 3]]


def test_calls_do_not_need_acl_init(run_python):
    out = run_json(run_python, (
        "import json, numpy as np\n"
        "from ms_memcopy import runtime as rt\n"
        "rt.set_device(0)\n"
        "data = np.arange(100, dtype=np.uint8); out = np.zeros(100, np.uint8)\n"
        "dev = rt.malloc(100); s = rt.create_stream()\n"
        "rt.memcpy_async(dev, 100, data, 100, 1, s); rt.memcpy_async(out, 100, dev, 100, 2, s)\n"
        "rt.synchronize_stream(s); rt.destroy_stream(s); rt.free(dev)\n"
        "print(json.dumps(bool((out == data).all())))\n"))
    assert out is True


# --- memory registry ---------------------------------------------------------------------------------

def test_memory_locations(acl_res):
    dev = acl_res.device(1000)
    dev1 = acl_res.device(1000, device_id=1)
    pinned = acl_res.pinned(1000)
    pageable = np.zeros(1000, np.uint8)
    loc = rt.get_mem_location(dev)
    assert (loc.type, loc.device_id, loc.base) == (DEVICE, 0, dev) and loc.size >= 1000
    assert rt.get_mem_location(dev1)[:3] == (DEVICE, 1, dev1)
    loc = rt.get_mem_location(pinned)
    assert (loc.type, loc.base) == (HOST, pinned) and loc.size >= 1000
    assert rt.get_mem_location(pageable)[0] == UNREGISTERED
    assert rt.get_mem_location(pageable)[2:] == (0, 0)


@pytest.mark.parametrize("offset", [1, 64, 999])
def test_interior_pointers_resolve_to_their_allocation(acl_res, offset):
    dev, pinned = acl_res.device(1000), acl_res.pinned(1000)
    for base in (dev, pinned):
        whole, inner = rt.get_mem_location(base), rt.get_mem_location(base + offset)
        assert inner == whole


def test_allocations_are_64_byte_aligned(acl_res):
    for n in (1, 3, 64, 100, 4097):
        assert acl_res.device(n) % 64 == 0
        assert acl_res.pinned(n) % 64 == 0


@pytest.mark.parametrize("side", ["dst", "src"])
@pytest.mark.parametrize("past", [-1, 0, 1])
def test_copy_past_the_end_of_an_allocation(acl_res, side, past):
    """A copy that runs past the end of a registered allocation is 107000 (host-runtime safety extra);
    one that ends exactly at the end is fine. The end is the size the registry reports."""
    dev = acl_res.device(1000)
    end = rt.get_mem_location(dev).size
    count = 100 + past
    host = np.zeros(200, np.uint8)
    expected = RT_PARAM_INVALID if past > 0 else 0
    if side == "dst":
        assert code(rt.memcpy, dev + end - 100, count, host, count, H2D) == expected
    else:
        assert code(rt.memcpy, host, count, dev + end - 100, count, D2H) == expected


def test_copy_past_the_end_async_and_2d(acl_res):
    dev, other = acl_res.device(1024), acl_res.device(4096)
    end = rt.get_mem_location(dev).size
    stream = acl_res.stream()
    assert code(rt.memcpy_async, other, 4096, dev, end + 1, D2D, stream) == RT_PARAM_INVALID
    assert code(rt.memcpy2d_async, other, 64, dev, 64, 64, end // 64 + 1, D2D, stream) == RT_PARAM_INVALID
    rt.synchronize_stream(stream)


@pytest.mark.parametrize("case", ["device_interior", "pinned_via_free", "device_via_free_host",
                                  "pinned_interior", "pageable"])
def test_free_needs_the_base_of_the_right_kind(acl_res, case):
    dev, pinned = acl_res.device(256), acl_res.pinned(256)
    pageable = np.zeros(256, np.uint8)
    fn, ptr = {"device_interior": (rt.free, dev + 64), "pinned_via_free": (rt.free, pinned),
               "device_via_free_host": (rt.free_host, dev), "pinned_interior": (rt.free_host, pinned + 64),
               "pageable": (rt.free, pageable.ctypes.data)}[case]
    assert code(fn, ptr) == RT_PARAM_INVALID
    # still allocated and usable
    assert rt.get_mem_location(dev)[0] == DEVICE and rt.get_mem_location(pinned)[0] == HOST


# --- stream handles --------------------------------------------------------------------------------------

def test_destroyed_or_unknown_stream_handles(acl_res):
    dev = acl_res.device(64)
    host = np.zeros(64, np.uint8)
    dead = rt.create_stream()
    rt.destroy_stream(dead)
    bogus = 0xDEAD0000
    for stream in (dead, bogus):
        assert code(rt.synchronize_stream, stream) == RT_INVALID_HANDLE
        assert code(rt.synchronize_stream_with_timeout, stream, 10) == RT_INVALID_HANDLE
        assert code(rt.memcpy_async, dev, 64, host, 64, H2D, stream) == RT_INVALID_HANDLE
        assert code(rt.memcpy2d_async, dev, 8, host, 8, 8, 8, H2D, stream) == RT_INVALID_HANDLE
        assert code(rt.memcpy_batch_async, [host], [64], [dev], [64], [ATTR_D2H], [0], stream=stream) == \
            RT_INVALID_HANDLE
        assert code(rt.destroy_stream, stream) == RT_INVALID_HANDLE


def test_null_stream_is_the_default_stream(acl_res):
    data = np.arange(64, dtype=np.uint8)
    dev = acl_res.device(64)
    pinned = acl_res.pinned(64)
    rt.memcpy_async(dev, 64, data, 64, H2D)  # pageable: done on return
    rt.memcpy_async(pinned, 64, dev, 64, D2H, None)
    rt.synchronize_stream(None)
    assert (acl_res.view(pinned, 64) == data).all()


# --- host-only calls (aclhost*) --------------------------------------------------------------------------

def test_soc_profile_is_the_default(acl_device):
    import yaml

    from ms_memcopy import _paths

    with open(_paths.configs_dir() / "soc_profiles.yaml", encoding="utf-8") as f:
        assert rt.soc_profile() == yaml.safe_load(f)["default"]


def test_register_device_memory_makes_framework_memory_device_memory(acl_res):
    buf = np.arange(256, dtype=np.uint8)
    assert rt.get_mem_location(buf)[0] == UNREGISTERED
    rt.register_device_memory(buf, 256)
    try:
        loc = rt.get_mem_location(buf[100:])
        assert (loc.type, loc.device_id, loc.base, loc.size) == (DEVICE, 0, buf.ctypes.data, 256)
        out = np.zeros(256, np.uint8)
        stream = acl_res.stream()
        rt.memcpy_batch_async([out], [256], [buf], [256], [ATTR_D2H], [0], stream=stream)  # DEVICE source accepted
        rt.synchronize_stream(stream)
        assert (out == buf).all()
    finally:
        rt.unregister_device_memory(buf)
    assert rt.get_mem_location(buf)[0] == UNREGISTERED


def test_register_same_range_counts_references(acl_device):
    buf = np.zeros(128, np.uint8)
    rt.register_device_memory(buf, 128)
    rt.register_device_memory(buf, 128)
    rt.unregister_device_memory(buf)
    assert rt.get_mem_location(buf)[0] == DEVICE
    rt.unregister_device_memory(buf)
    assert rt.get_mem_location(buf)[0] == UNREGISTERED
    assert code(rt.unregister_device_memory, buf) == RT_PARAM_INVALID


def test_register_device_memory_errors(acl_res):
    buf = np.zeros(256, np.uint8)
    assert code(rt.register_device_memory, 0, 16) == INVALID_PARAM
    assert code(rt.register_device_memory, buf, 0) == INVALID_PARAM
    assert code(rt.unregister_device_memory, buf) == RT_PARAM_INVALID
    rt.register_device_memory(buf, 128)
    try:
        pinned = acl_res.pinned(256)
        assert code(rt.register_device_memory, pinned + 128, 512) == RT_PARAM_INVALID  # overlaps an allocation
        rt.set_device(1)
        try:  # another device's registration
            assert code(rt.register_device_memory, buf[64:], 128) == RT_PARAM_INVALID
        finally:
            rt.set_device(0)
    finally:
        rt.unregister_device_memory(buf)
