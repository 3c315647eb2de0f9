"""ms_memcopy.runtime's Python side: what it accepts as pointers, streams and batch arguments, and that
misuse raises TypeError/ValueError naming the argument before any C call."""
import numpy as np
import pytest

from ms_memcopy import AclError, _acl_lib
from ms_memcopy import runtime as rt
from ms_memcopy.acl_constants import (
    ACL_MEM_LOCATION_TYPE_DEVICE as DEVICE,
    ACL_MEM_LOCATION_TYPE_HOST as HOST,
    ACL_MEMCPY_DEVICE_TO_HOST as D2H,
    ACL_MEMCPY_HOST_TO_DEVICE as H2D,
)

ATTR_H2D = {"dst_loc": {"id": 0, "type": DEVICE}, "src_loc": {"id": 0, "type": HOST}}


class FakeHostBuffer:
    """What a future HostBuffer looks like to the runtime: an integer .ptr (and .nbytes)."""

    def __init__(self, array, with_nbytes=True):
        self._array = array
        self.ptr = array.ctypes.data
        if with_nbytes:
            self.nbytes = array.nbytes


@pytest.fixture
def no_c_calls(monkeypatch, acl_device):
    """Fails the test if any ACL function is called."""
    _acl_lib.lib()

    def refuse(name):
        raise AssertionError(f"{name} was called although the Python arguments are invalid")

    monkeypatch.setattr(_acl_lib, "func", refuse)


def test_public_api_covers_every_c_call():
    expected = {"init", "finalize", "get_recent_err_msg", "get_soc_name", "set_device", "reset_device",
                "get_device", "get_device_count", "create_stream", "destroy_stream", "synchronize_stream",
                "synchronize_stream_with_timeout", "malloc", "malloc_host", "free", "free_host", "memcpy",
                "memcpy_async", "memcpy_async_with_condition", "memcpy2d", "memcpy2d_async",
                "get_memcpy_desc_size", "set_memcpy_desc", "memcpy_async_with_desc", "memcpy_batch",
                "memcpy_batch_async", "memcpy_batch_v2", "memcpy_batch_async_v2", "register_device_memory",
                "unregister_device_memory", "register_device_memory_batch", "unregister_device_memory_batch",
                "get_mem_location", "set_stream_deferred", "launch_host_func", "soc_profile", "get_run_mode",
                "synchronize_device", "create_context", "destroy_context", "set_current_context",
                "get_current_context", "get_mem_info", "memset", "memset_async", "device_can_access_peer",
                "device_enable_peer_access", "device_disable_peer_access", "device_peer_access_status",
                "create_event", "create_event_with_flag", "destroy_event", "record_event", "query_event_status",
                "synchronize_event", "stream_wait_event", "host_wait_count", "live_resource_counts",
                "order_check_counts", "check_host_access", "complete_stream"}
    assert expected <= set(rt.__all__)
    assert len(_acl_lib.PROTOTYPES) + len(_acl_lib.HOST_PROTOTYPES) == len(expected)  # one function per C call
    for name in expected:
        assert callable(getattr(rt, name))
    assert "differs from the C API" in rt.__doc__


# --- pointers ------------------------------------------------------------------------------------------

def test_pointer_forms_int_array_and_ptr_object(acl_res):
    data = np.arange(64, dtype=np.uint8)
    dev = acl_res.device(64)
    rt.memcpy(dev, 64, data, 64, H2D)  # numpy array
    out1 = np.zeros(64, np.uint8)
    rt.memcpy(out1.ctypes.data, 64, dev, 64, D2H)  # int
    out2 = np.zeros(64, np.uint8)
    rt.memcpy(FakeHostBuffer(out2), 64, dev, 64, D2H)  # .ptr object
    out3 = np.zeros(64, np.uint8)
    rt.memcpy(FakeHostBuffer(out3, with_nbytes=False), 64, np.uint64(dev), np.int64(64), D2H)  # numpy ints
    for out in (out1, out2, out3):
        np.testing.assert_array_equal(out, data)


def test_none_and_zero_are_null(acl_res):
    dev = acl_res.device(64)
    for null in (None, 0):
        with pytest.raises(AclError) as info:
            rt.memcpy(dev, 64, null, 16, H2D)
        assert info.value.code == 100000


@pytest.mark.parametrize("bad", ["0x1000", 1.0, b"\x00", True, [1]])
def test_pointer_of_wrong_type(no_c_calls, bad):
    with pytest.raises(TypeError, match="src"):
        rt.memcpy(0x1000, 16, bad, 16, H2D)


def test_non_contiguous_array_is_type_error(no_c_calls):
    a = np.zeros((8, 8), np.uint8)
    with pytest.raises(TypeError, match="dst.*C-contiguous"):
        rt.memcpy(a[:, ::2], 32, 0x1000, 32, D2H)
    with pytest.raises(TypeError, match="src.*C-contiguous"):
        rt.memcpy_async(0x1000, 64, a.T, 64, H2D)


def test_array_smaller_than_the_call_is_value_error(no_c_calls):
    small = np.zeros(16, np.uint8)
    with pytest.raises(ValueError, match="dst.*17"):
        rt.memcpy(small, 17, 0x1000, 1, H2D)
    with pytest.raises(ValueError, match="src.*32"):
        rt.memcpy_async(0x1000, 64, small, 32, H2D)
    with pytest.raises(ValueError, match="dst"):
        rt.memcpy(FakeHostBuffer(small), 64, 0x1000, 1, H2D)
    with pytest.raises(ValueError, match="src"):
        rt.memcpy2d(0x1000, 8, small, 8, 8, 3, H2D)  # needs 2 * 8 + 8 = 24 bytes
    with pytest.raises(ValueError, match=r"dsts\[1\]"):
        rt.memcpy_batch([0x1000, small], [8, 64], [0x2000, 0x3000], [8, 8], [ATTR_H2D], [0])


def test_read_only_destination_is_value_error(no_c_calls):
    ro = np.frombuffer(bytes(64), np.uint8)
    with pytest.raises(ValueError, match="dst.*read-only"):
        rt.memcpy(ro, 64, 0x1000, 64, D2H)


@pytest.mark.parametrize("call,name", [
    (lambda: rt.memcpy(0x1000, -1, 0x2000, 1, H2D), "dest_max"),
    (lambda: rt.memcpy(0x1000, 8, 0x2000, -1, H2D), "count"),
    (lambda: rt.memcpy(0x1000, 2**64, 0x2000, 1, H2D), "dest_max"),
    (lambda: rt.memcpy(-5, 8, 0x2000, 1, H2D), "dst"),
    (lambda: rt.memcpy2d(0x1000, -1, 0x2000, 8, 8, 1, H2D), "dpitch"),
    (lambda: rt.memcpy2d(0x1000, 8, 0x2000, 8, 8, -1, H2D), "height"),
    (lambda: rt.malloc(-1), "size"),
    (lambda: rt.set_device(-(2**31) - 1), "device_id"),
    (lambda: rt.synchronize_stream_with_timeout(None, 2**31), "timeout"),
    (lambda: rt.memcpy_async(0x1000, 8, 0x2000, 8, H2D, stream=-1), "stream"),
    (lambda: rt.set_memcpy_desc(0x1000, 6, 0x2000, 0x3000, -1), "count"),
])
def test_negative_or_oversized_integers(no_c_calls, call, name):
    with pytest.raises(ValueError, match=name):
        call()


@pytest.mark.parametrize("call,name", [
    (lambda: rt.memcpy(0x1000, "8", 0x2000, 1, H2D), "dest_max"),
    (lambda: rt.memcpy(0x1000, 8, 0x2000, 1.0, H2D), "count"),
    (lambda: rt.memcpy(0x1000, 8, 0x2000, 1, None), "kind"),
    (lambda: rt.memcpy_async(0x1000, 8, 0x2000, 8, H2D, stream="s"), "stream"),
    (lambda: rt.memcpy_async(0x1000, 8, 0x2000, 8, H2D, stream=True), "stream"),
    (lambda: rt.init(42), "config_path"),
    (lambda: rt.malloc(True), "size"),
])
def test_wrong_types(no_c_calls, call, name):
    with pytest.raises(TypeError, match=name):
        call()


# --- batch arguments -----------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,error,name", [
    ({"dsts": [0x1000, 0x2000, 0x5000]}, ValueError, "same length"),
    ({"sizes": [8, 8, 8]}, ValueError, "same length"),
    ({"attrs_indexes": [0, 1]}, ValueError, "attrs_indexes"),
    ({"dsts": 0x1000}, TypeError, "dsts"),
    ({"sizes": "8"}, TypeError, "sizes"),
    ({"attrs": [{"dst_loc": {"id": 0, "type": 1}}]}, ValueError, "src_loc"),
    ({"attrs": [{"dstLoc": {"id": 0, "type": 1}, "src_loc": {"id": 0, "type": 0}}]}, ValueError, "dstLoc"),
    ({"attrs": [{"dst_loc": {"id": 0}, "src_loc": {"id": 0, "type": 0}}]}, ValueError, "type"),
    ({"attrs": [{"dst_loc": {"id": -1, "type": 1}, "src_loc": {"id": 0, "type": 0}}]}, ValueError, "id"),
    ({"attrs": [{"dst_loc": (0, 1), "src_loc": {"id": 0, "type": 0}}]}, TypeError, "dst_loc"),
    ({"attrs": [dict(ATTR_H2D, rsv=[0] * 17)]}, ValueError, "rsv"),
    ({"attrs": [dict(ATTR_H2D, rsv=[256])]}, ValueError, "rsv"),
    ({"attrs": ["h2d"]}, TypeError, r"attrs\[0\]"),
    ({"sizes": [8, -8]}, ValueError, r"sizes\[1\]"),
])
def test_batch_argument_misuse(no_c_calls, kwargs, error, name):
    args = dict(dsts=[0x1000, 0x2000], dest_maxs=[8, 8], srcs=[0x3000, 0x4000], sizes=[8, 8],
                attrs=[ATTR_H2D], attrs_indexes=[0])
    args.update(kwargs)
    with pytest.raises(error, match=name):
        rt.memcpy_batch_async(**args)


def test_batch_accepts_ctypes_attrs_tuples_and_numpy_lists(acl_res):
    attr = _acl_lib.aclrtMemcpyBatchAttr()
    attr.dstLoc.id, attr.dstLoc.type = 0, DEVICE
    attr.srcLoc.id, attr.srcLoc.type = 0, HOST
    data = [np.full(32, i, np.uint8) for i in range(3)]
    dsts = np.array([acl_res.device(32) for _ in range(3)], dtype=np.uint64)
    stream = acl_res.stream()
    rt.memcpy_batch_async(dsts, np.full(3, 32), tuple(data), (32, 32, 32), (attr,), np.zeros(1, np.int64),
                          stream=stream)
    rt.synchronize_stream(stream)
    for i, dst in enumerate(dsts):
        assert (acl_res.download(int(dst), 32) == i).all()


def test_empty_batch_reaches_acl(acl_device):
    with pytest.raises(AclError) as info:
        rt.memcpy_batch([], [], [], [], [ATTR_H2D], [0])
    assert (info.value.code, info.value.api) == (100000, "aclrtMemcpyBatch")


# --- streams and results -------------------------------------------------------------------------------

def test_streams_are_ints(acl_res):
    s = acl_res.stream()
    assert isinstance(s, int) and s != 0
    rt.synchronize_stream(np.uint64(s))
    rt.synchronize_stream_with_timeout(s, -1)


def test_mem_location_is_a_named_tuple(acl_res):
    dev = acl_res.device(128)
    loc = rt.get_mem_location(dev + 5)
    assert isinstance(loc, rt.MemLocation)
    assert (loc.type, loc.device_id, loc.base) == (DEVICE, 0, dev)


# --- contexts, run mode, memory information, memset (raising layer) ---------------------------------------

def test_raising_layer_context_calls(run_python):
    result = run_python(
        "from ms_memcopy import runtime as rt, AclError\n"
        "rt.set_device(0)\n"
        "primary = rt.get_current_context()\n"
        "ctx = rt.create_context(1)\n"
        "assert rt.get_current_context() == ctx != primary and rt.get_device() == 1\n"
        "rt.synchronize_device()\n"
        "rt.set_current_context(primary)\n"
        "assert rt.get_device() == 0\n"
        "rt.destroy_context(ctx)\n"
        "try:\n"
        "    rt.set_current_context(ctx)\n"
        "except AclError as e:\n"
        "    print(e.code, e.api)\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["107000", "aclrtSetCurrentContext"]  # ApiErrorDecorator::ContextSetCurrent


def test_raising_layer_memory_calls(acl_res):
    import numpy as np

    from ms_memcopy.acl_constants import ACL_HBM_MEM, ACL_HOST

    assert rt.get_run_mode() == ACL_HOST
    free, total = rt.get_mem_info(ACL_HBM_MEM)
    assert 0 < free <= total
    dev = acl_res.upload(np.zeros(64, np.uint8))
    rt.memset(dev, 64, 3, 32)
    stream = acl_res.stream()
    rt.memset_async(dev + 32, 32, 4, 32, stream)
    rt.synchronize_stream(stream)
    np.testing.assert_array_equal(acl_res.download(dev, 64), np.repeat(np.uint8([3, 4]), 32))
    with pytest.raises(AclError) as info:
        rt.memset(dev, 16, 1, 32)
    assert (info.value.code, info.value.api) == (107000, "aclrtMemset")
    with pytest.raises(ValueError, match="ptr"):
        rt.memset(np.zeros(8, np.uint8), 16, 1, 16)  # the array holds fewer bytes than max_count
