"""Peer devices: aclrtDeviceCanAccessPeer / EnablePeerAccess / DisablePeerAccess and copies between the memory of
two devices of one process (aclrtMemcpy, aclrtMemcpyAsync, the batch calls), with CANN's codes.

The codes: the ACL layer of CANN 9.1 refuses deviceId == peerDeviceId with 100000 and a non-zero flags with 200006;
the runtime layer gives 107001 for an id that is not a device, 107000 for deviceId outside [0, 64) or a NULL
canAccessPeer, 107002 without a current device, 207000 on a SoC without peer access. aclrtMemcpy(Async) refuse
kinds 6 and 7 at the ACL layer (100000); a D2D copy between two devices runs only once each device has enabled
the other, else 507013 (the copy engine's DMA error). Batch items between two devices are refused like any
device-to-device item (107000 at that item).
"""
import threading

import numpy as np
import pytest

import ms_memcopy.acl as acl
from ms_memcopy import AclError
from ms_memcopy import _acl_lib, _runtime_env
from ms_memcopy import runtime as rt
from ms_memcopy.acl_constants import (ACL_ERROR_FEATURE_UNSUPPORTED, ACL_ERROR_INVALID_PARAM,
                                      ACL_ERROR_RT_CONTEXT_NULL, ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                                      ACL_ERROR_RT_INVALID_DEVICEID, ACL_ERROR_RT_PARAM_INVALID,
                                      ACL_ERROR_RT_SYS_DMA, ACL_MEMCPY_DEFAULT, ACL_MEMCPY_DEVICE_TO_DEVICE,
                                      ACL_MEMCPY_DEVICE_TO_HOST, ACL_MEMCPY_HOST_TO_DEVICE,
                                      ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, ACL_MEMCPY_INTER_DEVICE_TO_DEVICE)
from tests._acl_support import DEVICE, HOST, code, rand_bytes

N = 4096
CROSS_KINDS = [ACL_MEMCPY_DEVICE_TO_DEVICE, ACL_MEMCPY_DEFAULT,
               # pinned/device endpoints force the real direction: these become D2D too
               ACL_MEMCPY_HOST_TO_DEVICE, ACL_MEMCPY_DEVICE_TO_HOST]


def _on_device(device_id, fn, *args):
    """fn(*args) with device_id current, then device 0 current again."""
    rt.set_device(device_id)
    try:
        return fn(*args)
    finally:
        rt.set_device(0)


def _set_access(a, b, enabled):
    """Enables or disables access from device a to device b (a is made current for the call)."""
    _on_device(a, rt.device_enable_peer_access if enabled else rt.device_disable_peer_access, b)


@pytest.fixture
def peers(acl_res):
    """acl_res plus a guarantee that no peer access between devices 0..2 outlives the test."""
    yield acl_res
    for a in range(3):
        for b in range(3):
            if a != b:
                _set_access(a, b, False)


@pytest.fixture
def pair(peers):
    """(src on device 0 holding random bytes, dst on device 1 holding zeros, the source bytes)."""
    data = rand_bytes(N, 11)
    src = peers.upload(data, device_id=0)
    dst = peers.upload(np.zeros(N, np.uint8), device_id=1)
    return src, dst, data


def _enable_both(a=0, b=1):
    _set_access(a, b, True)
    _set_access(b, a, True)


# --- the three peer-access calls -----------------------------------------------------------------------------

def test_can_access_peer_between_distinct_devices(peers):
    count = rt.get_device_count()
    for a, b in [(0, 1), (1, 0), (0, count - 1), (count - 1, 2)]:
        assert rt.device_can_access_peer(a, b) is True
    assert acl.rt.device_can_access_peer(1, 0) == (1, 0)


def test_can_access_peer_codes_in_cann_order(peers):
    count = rt.get_device_count()
    assert code(rt.device_can_access_peer, 1, 1) == ACL_ERROR_INVALID_PARAM
    assert "cannot be equal to peerDeviceId" in rt.get_recent_err_msg()
    assert code(rt.device_can_access_peer, count + 1, count + 1) == ACL_ERROR_INVALID_PARAM  # checked first
    assert code(rt.device_can_access_peer, 0, count) == ACL_ERROR_RT_INVALID_DEVICEID
    assert code(rt.device_can_access_peer, 0, -1) == ACL_ERROR_RT_INVALID_DEVICEID
    assert code(rt.device_can_access_peer, 64, count) == ACL_ERROR_RT_INVALID_DEVICEID  # the peer comes first
    assert code(rt.device_can_access_peer, 64, 0) == ACL_ERROR_RT_PARAM_INVALID  # RT_MAX_DEV_NUM
    assert code(rt.device_can_access_peer, -1, 0) == ACL_ERROR_RT_PARAM_INVALID
    assert code(rt.device_can_access_peer, count, 0) == ACL_ERROR_RT_INVALID_DEVICEID
    # A NULL result pointer is a runtime-layer check in CANN: 107000, not the ACL layer's 100000.
    assert _acl_lib.func("aclrtDeviceCanAccessPeer")(None, 0, 1) == ACL_ERROR_RT_PARAM_INVALID
    assert acl.rt.device_can_access_peer(0, 0) == (0, ACL_ERROR_INVALID_PARAM)


@pytest.mark.parametrize("call", ["enable", "disable"])
def test_enable_disable_codes_in_cann_order(peers, call):
    count = rt.get_device_count()
    fn = rt.device_enable_peer_access if call == "enable" else rt.device_disable_peer_access
    assert rt.get_device() == 0
    assert code(fn, 0) == ACL_ERROR_INVALID_PARAM  # the current device itself
    assert "cannot be equal to peerDeviceId" in rt.get_recent_err_msg()
    assert code(fn, count) == ACL_ERROR_RT_INVALID_DEVICEID
    assert code(fn, -1) == ACL_ERROR_RT_INVALID_DEVICEID
    fn(1)
    fn(1)  # repeating an enable or a disable succeeds
    if call == "enable":
        # flags is reserved: 200006, before anything else (even an invalid peer)
        assert code(rt.device_enable_peer_access, 1, 1) == ACL_ERROR_FEATURE_UNSUPPORTED
        assert code(rt.device_enable_peer_access, count, 2) == ACL_ERROR_FEATURE_UNSUPPORTED
        assert "reserved parameter" in rt.get_recent_err_msg()
        assert acl.rt.device_enable_peer_access(1, 1) == ACL_ERROR_FEATURE_UNSUPPORTED
        assert acl.rt.device_enable_peer_access(2, 0) == 0
    else:
        assert acl.rt.device_disable_peer_access(2) == 0
        assert acl.rt.device_disable_peer_access(0) == ACL_ERROR_INVALID_PARAM


def test_peer_access_status_is_1_once_each_device_enabled_the_other(peers):
    count = rt.get_device_count()
    assert rt.device_peer_access_status(0, 1) is False
    _set_access(0, 1, True)
    assert rt.device_peer_access_status(0, 1) is False  # one direction
    assert acl.rt.device_peer_access_status(1, 0) == (0, 0)
    _set_access(1, 0, True)
    assert rt.device_peer_access_status(0, 1) is True and rt.device_peer_access_status(1, 0) is True
    assert acl.rt.device_peer_access_status(1, 0) == (1, 0)
    assert rt.device_peer_access_status(0, 2) is False
    assert rt.device_peer_access_status(1, 1) is False
    assert rt.device_peer_access_status(0, count) is False  # ids in [count, 64): 0, as the API page says
    assert code(rt.device_peer_access_status, 0, 64) == ACL_ERROR_RT_PARAM_INVALID
    assert code(rt.device_peer_access_status, -1, 1) == ACL_ERROR_RT_PARAM_INVALID
    assert _acl_lib.func("aclrtDevicePeerAccessStatus")(0, 1, None) == ACL_ERROR_INVALID_PARAM
    _set_access(0, 1, False)
    assert rt.device_peer_access_status(1, 0) is False


NO_DEVICE = """
import ms_memcopy.acl as acl
print(acl.rt.device_can_access_peer(0, 1))
print(acl.rt.device_enable_peer_access(1, 1), acl.rt.device_enable_peer_access(1, 0),
      acl.rt.device_disable_peer_access(1))
print(acl.rt.device_peer_access_status(0, 1))
"""


def test_without_a_device_can_access_works_enable_needs_one(run_python):
    out = run_python(NO_DEVICE)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split("\n")
    assert lines[0] == "(1, 0)"  # CANN's query needs no context
    assert lines[1] == f"{ACL_ERROR_FEATURE_UNSUPPORTED} {ACL_ERROR_RT_CONTEXT_NULL} {ACL_ERROR_RT_CONTEXT_NULL}"
    assert lines[2] == "(0, 0)"


PER_SOC = """
import ms_memcopy.acl as acl
print(acl.rt.set_device(0), acl.rt.device_can_access_peer(0, 1)[1], acl.rt.device_enable_peer_access(1, 0),
      acl.rt.device_disable_peer_access(1), acl.rt.device_enable_peer_access(0, 0),
      acl.rt.device_enable_peer_access(1, 3), acl.rt.device_peer_access_status(0, 1)[1])
"""


@pytest.mark.parametrize("soc,expected", [
    ("Ascend310B", ACL_ERROR_RT_FEATURE_NOT_SUPPORT),  # the driver has no peer access on 310B
    ("Ascend310P", 0), ("Ascend910", 0), ("Ascend950", 0), ("Ascend910C", 0)])
def test_peer_access_per_soc(run_python, soc, expected):
    out = run_python(PER_SOC, env={_runtime_env.SOC: soc})
    assert out.returncode == 0, out.stderr
    # same-device and flags checks come before the SoC gate
    assert out.stdout.split() == ["0", str(expected), str(expected), str(expected), str(ACL_ERROR_INVALID_PARAM),
                                  str(ACL_ERROR_FEATURE_UNSUPPORTED), "0"]  # the status query has no gate


# --- aclrtMemcpy / aclrtMemcpyAsync between devices ----------------------------------------------------------

@pytest.mark.parametrize("kind", CROSS_KINDS)
def test_sync_copy_between_devices_needs_access_both_ways(pair, peers, kind):
    src, dst, data = pair
    assert code(rt.memcpy, dst, N, src, N, kind) == ACL_ERROR_RT_SYS_DMA
    assert "aclrtDeviceEnablePeerAccess(1, 0) with device 0 current" in rt.get_recent_err_msg()
    _set_access(1, 0, True)  # one direction is not enough
    assert code(rt.memcpy, dst, N, src, N, kind) == ACL_ERROR_RT_SYS_DMA
    assert not peers.download(dst, N).any(), "a refused copy wrote to dst"
    _set_access(0, 1, True)
    rt.memcpy(dst, N, src, N, kind)
    np.testing.assert_array_equal(peers.download(dst, N), data)
    # and back, from device 1 to device 0, with device 1 current
    back = peers.upload(np.zeros(N, np.uint8), device_id=0)
    _on_device(1, rt.memcpy, back, N, dst, N, kind)
    np.testing.assert_array_equal(peers.download(back, N), data)
    _set_access(0, 1, False)
    fresh = peers.upload(np.zeros(N, np.uint8), device_id=1)
    assert code(rt.memcpy, fresh, N, src, N, kind) == ACL_ERROR_RT_SYS_DMA
    assert not peers.download(fresh, N).any()


@pytest.mark.parametrize("kind", [ACL_MEMCPY_INTER_DEVICE_TO_DEVICE, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE])
@pytest.mark.parametrize("access", [False, True])
def test_inter_and_inner_kinds_are_refused_by_the_acl_layer(pair, peers, kind, access):
    src, dst, _ = pair
    if access:
        _enable_both()
    stream = peers.stream()
    assert code(rt.memcpy, dst, N, src, N, kind) == ACL_ERROR_INVALID_PARAM
    assert code(rt.memcpy_async, dst, N, src, N, kind, stream) == ACL_ERROR_INVALID_PARAM
    assert code(rt.memcpy_async_with_condition, dst, N, src, N, kind, stream) == ACL_ERROR_INVALID_PARAM
    rt.synchronize_stream(stream)
    assert not peers.download(dst, N).any()


@pytest.mark.parametrize("kind", CROSS_KINDS)
def test_async_copy_between_devices_fails_when_it_executes(pair, peers, kind):
    src, dst, data = pair
    stream = peers.stream()
    rt.memcpy_async(dst, N, src, N, kind, stream)  # accepted at the call, as CANN's runtime does
    with pytest.raises(AclError) as err:
        rt.synchronize_stream(stream)
    assert err.value.code == ACL_ERROR_RT_SYS_DMA
    assert "nothing was copied" in str(err.value)
    assert not peers.download(dst, N).any()
    rt.synchronize_stream(stream)  # the failure is reported once
    _enable_both()
    rt.memcpy_async_with_condition(dst, N, src, N, kind, stream)
    rt.synchronize_stream(stream)
    np.testing.assert_array_equal(peers.download(dst, N), data)


def test_access_is_checked_when_the_queued_copy_runs(pair, peers):
    src, dst, data = pair
    stream = peers.stream()
    gate = threading.Event()
    rt.launch_host_func(stream, gate.wait)
    rt.memcpy_async(dst, N, src, N, ACL_MEMCPY_DEVICE_TO_DEVICE, stream)  # queued behind the gate, no access yet
    _enable_both()
    gate.set()
    rt.synchronize_stream(stream)
    np.testing.assert_array_equal(peers.download(dst, N), data)
    # and the reverse: access removed before the queued copy runs
    other = peers.upload(np.zeros(N, np.uint8), device_id=1)
    gate.clear()
    rt.launch_host_func(stream, gate.wait)
    rt.memcpy_async(other, N, src, N, ACL_MEMCPY_DEVICE_TO_DEVICE, stream)
    _set_access(1, 0, False)
    gate.set()
    assert code(rt.synchronize_stream, stream) == ACL_ERROR_RT_SYS_DMA
    assert not peers.download(other, N).any()


def test_2d_async_between_devices_follows_the_same_rule(pair, peers):
    src, dst, data = pair
    stream = peers.stream()
    width, height, spitch, dpitch = 48, 16, 64, 128
    rt.memcpy2d_async(dst, dpitch, src, spitch, width, height, ACL_MEMCPY_DEVICE_TO_DEVICE, stream)
    assert code(rt.synchronize_stream, stream) == ACL_ERROR_RT_SYS_DMA
    assert not peers.download(dst, N).any()
    _enable_both()
    rt.memcpy2d_async(dst, dpitch, src, spitch, width, height, ACL_MEMCPY_DEFAULT, stream)
    rt.synchronize_stream(stream)
    expected = np.zeros(N, np.uint8)
    rows = data[:height * spitch].reshape(height, spitch)[:, :width]
    expected[:height * dpitch].reshape(height, dpitch)[:, :width] = rows
    np.testing.assert_array_equal(peers.download(dst, N), expected)


def test_same_device_and_host_copies_need_no_peer_access(peers):
    data = rand_bytes(N, 3)
    a = peers.upload(data, device_id=1)
    b = peers.upload(np.zeros(N, np.uint8), device_id=1)
    rt.memcpy(b, N, a, N, ACL_MEMCPY_DEVICE_TO_DEVICE)  # both on device 1, device 0 current
    np.testing.assert_array_equal(peers.download(b, N), data)
    np.testing.assert_array_equal(peers.download(a, N), data)  # D2H from another device's memory


# --- batch copies --------------------------------------------------------------------------------------------

def _attr(dst_id, dst_type, src_id, src_type):
    return {"dst_loc": {"id": dst_id, "type": dst_type}, "src_loc": {"id": src_id, "type": src_type}}


@pytest.mark.parametrize("call", ["memcpy_batch", "memcpy_batch_async"])
@pytest.mark.parametrize("access", [False, True])
def test_batch_refuses_device_to_device_items_between_devices(pair, peers, call, access):
    src, dst, data = pair
    if access:
        _enable_both()
    pinned = peers.pinned(N)
    peers.view(pinned, N)[:] = 5
    host_dst = peers.upload(np.zeros(N, np.uint8), device_id=0)
    dsts, srcs = [host_dst, dst], [pinned, src]
    attrs = [_attr(0, DEVICE, 0, HOST), _attr(1, DEVICE, 0, DEVICE)]  # both attributes name the real locations
    args = (dsts, [N, N], srcs, [N, N], attrs, [0, 1])
    stream = peers.stream()
    with pytest.raises(AclError) as err:
        getattr(rt, call)(*args, *((stream,) if call.endswith("async") else ()))
    assert err.value.code == ACL_ERROR_RT_PARAM_INVALID and err.value.fail_index == 1
    assert "only host-to-device and device-to-host" in str(err.value)
    rt.synchronize_stream(stream)
    assert not peers.download(dst, N).any(), "the refused item was copied"
    if call == "memcpy_batch":  # validated before any copy
        assert not peers.download(host_dst, N).any()
    else:  # the async loop enqueues item 0 before it reaches item 1, as CANN's does
        np.testing.assert_array_equal(peers.download(host_dst, N), np.full(N, 5, np.uint8))


@pytest.mark.parametrize("call", ["memcpy_batch", "memcpy_batch_async"])
def test_batch_host_to_peer_device_follows_the_attribute_device_id(peers, call):
    data = rand_bytes(N, 7)
    pinned = peers.pinned(N)
    peers.view(pinned, N)[:] = data
    dst = peers.upload(np.zeros(N, np.uint8), device_id=1)  # device 0 stays current
    extra = () if call == "memcpy_batch" else (peers.stream(),)
    with pytest.raises(AclError) as err:  # attribute device id 0 != the real device 1
        getattr(rt, call)([dst], [N], [pinned], [N], [_attr(0, DEVICE, 0, HOST)], [0], *extra)
    assert err.value.code == ACL_ERROR_RT_PARAM_INVALID and err.value.fail_index == 0
    assert "of device 1" in str(err.value)
    assert not peers.download(dst, N).any()
    # CANN checks only that the attribute names the memory's real device, not the current one
    getattr(rt, call)([dst], [N], [pinned], [N], [_attr(1, DEVICE, 0, HOST)], [0], *extra)
    if extra:
        rt.synchronize_stream(extra[0])
    np.testing.assert_array_equal(peers.download(dst, N), data)


# --- a KV-cache block migration between two devices of one process --------------------------------------------

def test_kv_block_migration_between_devices_of_one_process(peers):
    """What a runtime-level migration looks like: blocks of a sequence moved from the caches of device 0 to those
    of device 1 with one aclrtMemcpyAsync per block, after enabling peer access both ways."""
    num_blocks, block_bytes, layers = 8, 512, 2
    src_caches = [rand_bytes(num_blocks * block_bytes, 100 + layer) for layer in range(layers)]
    src = [peers.upload(cache, device_id=0) for cache in src_caches]
    dst = [peers.upload(np.zeros(num_blocks * block_bytes, np.uint8), device_id=1) for _ in range(layers)]
    mapping = np.array([[0, 5], [3, 1], [7, 2]], np.int64)  # (block on device 0, block on device 1)
    assert rt.device_can_access_peer(0, 1) and rt.device_can_access_peer(1, 0)
    _enable_both()
    stream = peers.stream()
    for layer in range(layers):
        for s, d in mapping:
            rt.memcpy_async(dst[layer] + int(d) * block_bytes, block_bytes, src[layer] + int(s) * block_bytes,
                            block_bytes, ACL_MEMCPY_DEVICE_TO_DEVICE, stream)
    rt.synchronize_stream(stream)
    for layer in range(layers):
        expected = np.zeros((num_blocks, block_bytes), np.uint8)
        expected[mapping[:, 1]] = src_caches[layer].reshape(num_blocks, block_bytes)[mapping[:, 0]]
        np.testing.assert_array_equal(peers.download(dst[layer], num_blocks * block_bytes).reshape(expected.shape),
                                      expected)


def test_pyacl_script_with_peer_copy(peers):
    """The CANN sample's sequence in pyACL form: query, enable both ways, copy, disable."""
    data = rand_bytes(N, 21)
    can, ret = acl.rt.device_can_access_peer(0, 1)
    assert (can, ret) == (1, 0)
    src = peers.upload(data, device_id=0)
    dst = peers.upload(np.zeros(N, np.uint8), device_id=1)
    assert acl.rt.device_enable_peer_access(1, 0) == 0
    assert acl.rt.set_device(1) == 0
    assert acl.rt.device_enable_peer_access(0, 0) == 0
    assert acl.rt.memcpy(dst, N, src, N, ACL_MEMCPY_DEVICE_TO_DEVICE) == 0
    assert acl.rt.device_disable_peer_access(0) == 0
    assert acl.rt.set_device(0) == 0
    assert acl.rt.device_disable_peer_access(1) == 0
    np.testing.assert_array_equal(peers.download(dst, N), data)
    assert acl.rt.memcpy(dst, N, src, N, ACL_MEMCPY_DEVICE_TO_DEVICE) == ACL_ERROR_RT_SYS_DMA
