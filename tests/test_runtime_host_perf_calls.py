"""The host calls that keep the kernels' launches cheap: runtime.set_stream_deferred
(aclhostSetStreamDeferred: copies queued on a deferred stream run when a thread waits for it;
tests/cpp/test_copy_engine.cpp covers timed waits, host functions and turning deferral off) and
runtime.register_device_memory_batch / unregister_device_memory_batch (one registry lock per call,
all or nothing)."""
import numpy as np
import pytest

from ms_memcopy import AclError
from ms_memcopy import runtime as rt
from ms_memcopy.acl_constants import ACL_MEM_LOCATION_TYPE_DEVICE as DEVICE
from ms_memcopy.acl_constants import ACL_MEM_LOCATION_TYPE_UNREGISTERED as UNREGISTERED
from ms_memcopy.acl_constants import ACL_MEMCPY_HOST_TO_DEVICE as H2D


def test_deferred_copies_run_at_synchronize(acl_res):
    stream = acl_res.stream()
    rt.set_stream_deferred(stream, True)
    src, dst = acl_res.pinned(4096), acl_res.device(4096)
    data = np.arange(4096, dtype=np.uint32).astype(np.uint8)
    acl_res.view(src, 4096)[:] = data
    for offset in (0, 1024, 2048):
        rt.memcpy_async(dst + offset, 1024, src + offset, 1024, H2D, stream)
    rt.synchronize_stream(stream)
    np.testing.assert_array_equal(acl_res.download(dst, 3072), data[:3072])
    rt.set_stream_deferred(stream, False)


def test_argument_checks(acl_res):
    with pytest.raises(TypeError, match="deferred must be a bool"):
        rt.set_stream_deferred(acl_res.stream(), 1)
    with pytest.raises(AclError) as err:
        rt.set_stream_deferred(None, True)
    assert err.value.code == 100000


def test_register_batch_round_trip(acl_device):
    arrays = [np.zeros(n, np.uint8) for n in (64, 100, 4096)]
    rt.register_device_memory_batch(arrays, [a.nbytes for a in arrays])
    try:
        assert [rt.get_mem_location(a).type for a in arrays] == [DEVICE] * 3
    finally:
        rt.unregister_device_memory_batch(arrays)
    assert [rt.get_mem_location(a).type for a in arrays] == [UNREGISTERED] * 3
    rt.register_device_memory_batch([], [])  # count 0
    rt.unregister_device_memory_batch([])


def test_register_batch_is_all_or_nothing(acl_res):
    first = np.zeros(256, np.uint8)
    pinned = acl_res.pinned(1024)
    with pytest.raises(AclError) as err:
        rt.register_device_memory_batch([first, pinned + 512], [256, 1024])  # item 1 partly overlaps pinned memory
    assert err.value.code == 107000 and "item 1" in err.value.message
    assert rt.get_mem_location(first).type == UNREGISTERED  # item 0 was released again
    with pytest.raises(AclError) as err:
        rt.register_device_memory_batch([first, None], [256, 64])
    assert err.value.code == 100000 and "item 1" in err.value.message


def test_unregister_batch_releases_the_known_ones(acl_device):
    a, b = np.zeros(64, np.uint8), np.zeros(64, np.uint8)
    rt.register_device_memory_batch([a, b], [64, 64])
    unknown = np.zeros(64, np.uint8)
    with pytest.raises(AclError) as err:
        rt.unregister_device_memory_batch([a, unknown, b])
    assert err.value.code == 107000 and "item 1" in err.value.message
    assert rt.get_mem_location(a).type == UNREGISTERED and rt.get_mem_location(b).type == UNREGISTERED
