"""aclrtHostRegister, aclrtHostRegisterV2, aclrtHostGetDevicePointer and aclrtHostUnregister against CANN 9.1's
rules and codes (docs/host_runtime.md, "Registered host memory"), and copies from and to registered memory
taking the pinned (asynchronous) path."""
import ctypes
import re
import threading
from pathlib import Path

import numpy as np
import pytest

from ms_memcopy import _acl_lib, _paths, acl_constants as C
from ms_memcopy import runtime as rt

from _acl_support import ATTR_D2H, code, rand_bytes

PAGE = 4096
INVALID_PARAM, RT_PARAM_INVALID, FEATURE_NOT_SUPPORT = 100000, 107000, 207000
ALREADY_REGISTERED, NOT_REGISTERED, CONTEXT_NULL = 507910, 507911, 107002
MAPPED, PINNED = C.ACL_HOST_REG_MAPPED, C.ACL_HOST_REG_PINNED
D2H, H2D = C.ACL_MEMCPY_DEVICE_TO_HOST, C.ACL_MEMCPY_HOST_TO_DEVICE


def aligned(nbytes, pages_before=1):
    """A uint8 array of nbytes starting on a 4 KiB boundary, with pages_before pages of slack in front."""
    raw = np.zeros(nbytes + (pages_before + 1) * PAGE, np.uint8)
    start = (-raw.ctypes.data) % PAGE + pages_before * PAGE
    return raw[start:start + nbytes]


def _address(ptr):
    return ptr if isinstance(ptr, int) else ptr.ctypes.data


@pytest.fixture
def registrations(acl_device):
    """Registers through rt and unregisters whatever is still registered when the test ends."""
    live = []

    class Registrations:
        @staticmethod
        def v1(ptr, size, register_type=C.ACL_HOST_REGISTER_MAPPED):
            dev = rt.host_register(ptr, size, register_type)
            live.append(_address(ptr))
            return dev

        @staticmethod
        def v2(ptr, size, flag=PINNED):
            rt.host_register_v2(ptr, size, flag)
            live.append(_address(ptr))

        @staticmethod
        def unregister(ptr):
            live.remove(ptr)
            rt.host_unregister(ptr)

    yield Registrations
    for ptr in live:
        rt.host_unregister(ptr)


def test_header_values_are_cann_91s():
    text = (Path(_paths.shipped_include()) / "acl" / "acl_rt.h").read_text()
    defines = {m[1]: int(m[2], 16) for m in re.finditer(r"#define (ACL_HOST_REG_\w+) 0x([0-9A-Fa-f]+)UL", text)}
    assert defines == {"ACL_HOST_REG_MAPPED": 0x2, "ACL_HOST_REG_IOMEMORY": 0x4, "ACL_HOST_REG_READONLY": 0x8,
                       "ACL_HOST_REG_PINNED": 0x10000000}
    enum = re.search(r"typedef enum \{(.*?)\} aclrtHostRegisterType;", text, re.S)[1]
    values = {k.strip(): int(v, 0) for k, v in (item.split("=") for item in enum.split(",") if item.strip())}
    assert values == {"ACL_HOST_REGISTER_MAPPED": 0, "ACL_HOST_REGISTER_IOMEMORY": 4, "ACL_HOST_REGISTER_READONLY": 8}
    for name, value in {**defines, **values}.items():
        assert getattr(C, name) == value, name
    assert (C.ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED, C.ACL_ERROR_HOST_MEMORY_NOT_REGISTERED) == (507910, 507911)


# --- ACL layer: NULL, size 0, reserved flag (100000) ------------------------------------------------------

def test_acl_layer_checks_are_100000(acl_device):
    mem = aligned(PAGE)
    out = ctypes.c_void_p()
    v1 = _acl_lib.func("aclrtHostRegister")
    assert v1(None, PAGE, 0, ctypes.byref(out)) == INVALID_PARAM
    assert v1(mem.ctypes.data, PAGE, 0, None) == INVALID_PARAM  # devPtr NULL
    assert v1(mem.ctypes.data, 0, 0, ctypes.byref(out)) == INVALID_PARAM
    assert v1(mem.ctypes.data, 0, 99, ctypes.byref(out)) == INVALID_PARAM  # size before type
    assert code(rt.host_register_v2, 0, PAGE, PINNED) == INVALID_PARAM
    assert code(rt.host_register_v2, mem, 0, PINNED) == INVALID_PARAM
    assert code(rt.host_register_v2, mem, 0, 0) == INVALID_PARAM  # size before flag
    get = _acl_lib.func("aclrtHostGetDevicePointer")
    assert get(None, ctypes.byref(out), 0) == INVALID_PARAM
    assert get(mem.ctypes.data, None, 0) == INVALID_PARAM
    assert code(rt.host_get_device_pointer, mem, 1) == INVALID_PARAM  # flag is reserved, before the lookup
    assert code(rt.host_unregister, 0) == INVALID_PARAM


# --- runtime layer: type and flag --------------------------------------------------------------------------

@pytest.mark.parametrize("register_type", [1, 2, 0x10, 0x0C | 0x100, -1])
def test_register_type_outside_iomemory_readonly_is_207000(acl_device, register_type):
    assert code(rt.host_register, aligned(PAGE), PAGE, register_type) == FEATURE_NOT_SUPPORT


@pytest.mark.parametrize("register_type", [0, 4, 8, 12])
def test_register_types_cann_accepts(registrations, register_type):
    mem = aligned(PAGE)
    assert registrations.v1(mem, PAGE, register_type) == mem.ctypes.data  # the mapped address is the host address


@pytest.mark.parametrize("flag", [0, 1, 0x10, PINNED | 0x20, 0x80000000])
def test_register_v2_flag_without_a_known_bit_or_with_an_unknown_one_is_107000(acl_device, flag):
    assert code(rt.host_register_v2, aligned(PAGE), PAGE, flag) == RT_PARAM_INVALID


@pytest.mark.parametrize("flag", [MAPPED, 0x4, 0x8, PINNED, MAPPED | PINNED, 0x2 | 0x4 | 0x8 | PINNED])
def test_register_v2_flags_cann_accepts(registrations, flag):
    registrations.v2(aligned(PAGE), PAGE, flag)


# --- the range: alignment, overlap, memory underneath -----------------------------------------------------

def test_start_must_be_4k_aligned_size_need_not(registrations):
    mem = aligned(3 * PAGE)
    assert code(rt.host_register_v2, mem.ctypes.data + 64, PAGE, PINNED) == RT_PARAM_INVALID
    assert code(rt.host_register, mem.ctypes.data + 2048, PAGE, 0) == RT_PARAM_INVALID
    registrations.v2(mem, 100)  # any size from an aligned start
    assert rt.get_mem_location(mem.ctypes.data + 99)[0] == C.ACL_MEM_LOCATION_TYPE_HOST
    assert rt.get_mem_location(mem.ctypes.data + 100)[0] == C.ACL_MEM_LOCATION_TYPE_UNREGISTERED


def test_overlap_with_a_registration_is_507910(registrations):
    mem = aligned(4 * PAGE, pages_before=1)
    p = mem.ctypes.data
    registrations.v2(p + PAGE, 2 * PAGE)
    for start, size in [(p + PAGE, 2 * PAGE), (p + PAGE, 1), (p + 2 * PAGE, PAGE), (p, PAGE + 1),
                        (p, 4 * PAGE)]:
        assert code(rt.host_register_v2, start, size, PINNED) == ALREADY_REGISTERED, (start - p, size)
        assert code(rt.host_register, start, size, 0) == ALREADY_REGISTERED, (start - p, size)
    registrations.v2(p, PAGE)  # adjacent ranges do not overlap
    registrations.v1(p + 3 * PAGE, PAGE)


def test_v2_reports_overlap_before_alignment_v1_after(registrations):
    """CANN checks a V2 range against the registrations in its runtime layer, before the driver sees the
    range; V1 goes straight to the driver, which looks at the address first (host choice: alignment)."""
    mem = aligned(2 * PAGE)
    registrations.v2(mem, 2 * PAGE)
    assert code(rt.host_register_v2, mem.ctypes.data + 64, 16, PINNED) == ALREADY_REGISTERED
    assert code(rt.host_register, mem.ctypes.data + 64, 16, 0) == RT_PARAM_INVALID


def _aligned_inside(base):
    return base + (-base) % PAGE


def test_device_memory_is_refused_and_malloc_host_memory_takes_mapping_only(registrations, acl_res):
    dev = acl_res.device(3 * PAGE)
    assert code(rt.host_register_v2, _aligned_inside(dev), PAGE, PINNED) == RT_PARAM_INVALID
    assert code(rt.host_register, _aligned_inside(dev), PAGE, 0) == RT_PARAM_INVALID
    pinned = acl_res.pinned(3 * PAGE)
    inside = _aligned_inside(pinned)
    assert code(rt.host_register_v2, inside, PAGE, PINNED) == RT_PARAM_INVALID  # already page-locked
    assert code(rt.host_register_v2, inside, 4 * PAGE, MAPPED) == RT_PARAM_INVALID  # crosses the allocation's end
    assert registrations.v1(inside, PAGE) == inside
    assert rt.host_get_device_pointer(inside) == inside
    assert rt.get_mem_location(inside)[2] == pinned  # still the allocation
    registrations.unregister(inside)
    assert code(rt.host_get_device_pointer, inside) == RT_PARAM_INVALID


def test_freeing_malloc_host_memory_ends_the_registrations_inside(acl_device):
    pinned = rt.malloc_host(3 * PAGE)
    inside = _aligned_inside(pinned)
    rt.host_register(inside, PAGE, 0)
    rt.free_host(pinned)
    assert code(rt.host_unregister, inside) == NOT_REGISTERED


def test_overflowing_range_is_107000(acl_device):
    assert code(rt.host_register_v2, 2**64 - PAGE, 2 * PAGE, PINNED) == RT_PARAM_INVALID


# --- unregister, device pointer ---------------------------------------------------------------------------

def test_unregister_takes_a_registrations_start_once(registrations):
    mem = aligned(2 * PAGE)
    assert code(rt.host_unregister, mem) == NOT_REGISTERED  # unknown
    registrations.v2(mem, 2 * PAGE)
    assert code(rt.host_unregister, mem.ctypes.data + PAGE) == NOT_REGISTERED  # interior
    registrations.unregister(mem.ctypes.data)
    assert code(rt.host_unregister, mem) == NOT_REGISTERED  # twice
    assert rt.get_mem_location(mem)[0] == C.ACL_MEM_LOCATION_TYPE_UNREGISTERED
    registrations.v2(mem, PAGE)  # registrable again


def test_device_pointer_of_mapped_registrations_only(registrations):
    mem = aligned(3 * PAGE)
    p = mem.ctypes.data
    assert code(rt.host_get_device_pointer, p) == RT_PARAM_INVALID  # before
    registrations.v2(p, PAGE, PINNED)
    assert code(rt.host_get_device_pointer, p) == RT_PARAM_INVALID  # pinned, not mapped
    registrations.v2(p + PAGE, PAGE, MAPPED | PINNED)
    assert rt.host_get_device_pointer(p + PAGE) == p + PAGE
    assert code(rt.host_get_device_pointer, p + PAGE + 8) == RT_PARAM_INVALID  # interior
    assert registrations.v1(p + 2 * PAGE, PAGE) == p + 2 * PAGE
    assert rt.host_get_device_pointer(p + 2 * PAGE) == p + 2 * PAGE
    registrations.unregister(p + PAGE)
    assert code(rt.host_get_device_pointer, p + PAGE) == RT_PARAM_INVALID  # after


def test_calls_need_a_current_context(run_python):
    result = run_python("""
import numpy as np
from ms_memcopy import runtime as rt, AclError
raw = np.zeros(3 * 4096, np.uint8); p = raw.ctypes.data + (-raw.ctypes.data) % 4096
codes = []
for call in (lambda: rt.host_register_v2(p, 4096, 0x10000000), lambda: rt.host_register(p, 4096, 0),
             lambda: rt.host_get_device_pointer(p), lambda: rt.host_unregister(p),
             lambda: rt.host_register_v2(p, 4096, 0)):
    try:
        call(); codes.append(0)
    except AclError as e:
        codes.append(e.code)
print(codes)
""")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-5:] == ["[107002,", "107002,", "107002,", "107002,", "107000]"]


# --- copies: registered memory is pinned -----------------------------------------------------------------

def _hold(stream):
    gate = threading.Event()
    rt.launch_host_func(stream, lambda: gate.wait(30))
    return gate


@pytest.mark.parametrize("api", ["memcpy_async", "memcpy_batch_async"])
@pytest.mark.parametrize("flag", [PINNED, MAPPED])
def test_d2h_into_registered_memory_is_asynchronous(registrations, acl_res, api, flag):
    """The stream is held: a D2H into registered memory returns with the copy still queued (pageable memory
    would wait for the stream), and the data is there after the stream ran. Unregistered again, the same
    copy completes before it returns."""
    n = 2 * PAGE
    data = rand_bytes(n, 5)
    dev = acl_res.upload(data)
    host = aligned(n)
    registrations.v2(host, n, flag)
    assert rt.get_mem_location(host)[0] == C.ACL_MEM_LOCATION_TYPE_HOST
    stream = acl_res.stream()

    def copy():
        if api == "memcpy_async":
            rt.memcpy_async(host, n, dev, n, D2H, stream)
        else:
            rt.memcpy_batch_async([host], [n], [dev], [n], [ATTR_D2H], [0], stream=stream)

    gate = _hold(stream)
    try:
        copy()
        assert not gate.is_set()
        assert not host.any(), "the copy ran before the stream was released"
    finally:
        gate.set()
    rt.synchronize_stream(stream)
    np.testing.assert_array_equal(host, data)

    registrations.unregister(host.ctypes.data)
    host[:] = 0
    gate = _hold(stream)
    timer = threading.Timer(0.2, gate.set)
    try:
        timer.start()
        copy()
        np.testing.assert_array_equal(host, data)  # pageable again: done on return, no synchronize
    finally:
        timer.cancel()
        gate.set()


def test_h2d_from_registered_memory_round_trips(registrations, acl_res):
    n = 3 * PAGE + 5
    host = aligned(n)
    host[:] = rand_bytes(n, 9)
    registrations.v1(host, n)
    dev = acl_res.device(n)
    stream = acl_res.stream()
    rt.memcpy_async(dev, n, host, n, H2D, stream)
    rt.synchronize_stream(stream)
    np.testing.assert_array_equal(acl_res.download(dev, n), host)
