"""HostBuffer: allocation, views, lifetime, and waiting for the copies in flight."""
import gc

import numpy as np
import pytest

from ms_memcopy import HostBuffer, runtime
from ms_memcopy.acl_constants import ACL_MEMCPY_DEVICE_TO_DEVICE, ACL_MEMCPY_DEVICE_TO_HOST, ACL_MEMCPY_HOST_TO_DEVICE


@pytest.mark.parametrize("pinned", [True, False])
def test_properties_and_views(pinned):
    with HostBuffer(100, pinned=pinned) as buf:
        assert buf.nbytes == 100 and buf.pinned is pinned and not buf.closed
        assert buf.ptr % 64 == 0
        location = runtime.get_mem_location(buf.ptr)
        assert location.type == (0 if pinned else 2)  # HOST (pinned) or UNREGISTERED (pageable)
        raw = buf.numpy()
        assert raw.dtype == np.uint8 and raw.shape == (100,)
        raw[:] = np.arange(100)
        f32 = buf.numpy(np.float32, (2, 3), offset=4)
        np.testing.assert_array_equal(f32.view(np.uint8).reshape(-1), np.arange(4, 28))
        assert buf.numpy(np.int64).shape == (12,)  # as many as fit
        assert buf.numpy(np.int16, shape=0).shape == (0,)
    assert buf.closed


def test_bad_arguments():
    with pytest.raises(TypeError, match="nbytes must be an int"):
        HostBuffer(1.5)
    with pytest.raises(ValueError, match="nbytes must be >= 0"):
        HostBuffer(-1)
    with pytest.raises(TypeError, match="pinned must be a bool"):
        HostBuffer(8, pinned=1)
    with HostBuffer(16) as buf:
        with pytest.raises(ValueError, match="offset 17 is outside the buffer of 16 bytes"):
            buf.numpy(offset=17)
        with pytest.raises(ValueError, match=r"needs 24 bytes from offset 0, but the buffer has 16"):
            buf.numpy(np.float64, (3,))


def test_empty_buffer():
    with HostBuffer(0) as buf:
        assert buf.nbytes == 0
        assert buf.numpy().shape == (0,)


def test_use_after_close_raises_and_views_stay_valid():
    buf = HostBuffer(32)
    view = buf.numpy()
    view[:] = 7
    buf.close()
    buf.close()  # idempotent
    for use in (lambda: buf.ptr, lambda: buf.numpy(), buf.wait, lambda: buf.buffer_id, buf.__enter__):
        with pytest.raises(ValueError, match="HostBuffer is closed"):
            use()
    gc.collect()
    assert (view == 7).all()  # the memory lives as long as a view of it does
    del view
    gc.collect()


def test_read_waits_for_an_asynchronous_write_in_flight(acl_res):
    """A pinned HostBuffer written by an async D2H copy queued behind a large copy: numpy() waits."""
    stream = acl_res.stream()
    big = 64 << 20
    a, b = acl_res.device(big), acl_res.device(big)
    data = np.random.default_rng(0).integers(0, 255, 1 << 20, dtype=np.uint8)
    src = acl_res.upload(data)
    with HostBuffer(data.size) as buf:
        buf.numpy()[:] = 0
        for _ in range(4):  # keep the stream busy for a while
            runtime.memcpy_async(b, big, a, big, ACL_MEMCPY_DEVICE_TO_DEVICE, stream)
        runtime.memcpy_async(buf, data.size, src, data.size, ACL_MEMCPY_DEVICE_TO_HOST, stream)
        np.testing.assert_array_equal(buf.numpy(), data)  # no explicit synchronize


def test_close_waits_for_an_asynchronous_read_in_flight(acl_res):
    stream = acl_res.stream()
    big = 64 << 20
    a, b = acl_res.device(big), acl_res.device(big)
    dst = acl_res.device(1 << 20)
    buf = HostBuffer(1 << 20)
    buf.numpy()[:] = 3
    for _ in range(4):
        runtime.memcpy_async(b, big, a, big, ACL_MEMCPY_DEVICE_TO_DEVICE, stream)
    runtime.memcpy_async(dst, buf.nbytes, buf, buf.nbytes, ACL_MEMCPY_HOST_TO_DEVICE, stream)
    buf.close()  # must not free the memory under the queued H2D copy
    runtime.synchronize_stream(stream)
    assert (acl_res.download(dst, 1 << 20) == 3).all()


@pytest.mark.parametrize("step", ["numpy", "wait", "close"])
def test_a_destroyed_stream_that_ran_a_copy_is_no_error(acl_res, step):
    """The stream of a finished copy into the buffer is destroyed; waiting for the buffer must not report
    the stale handle (destroying a stream waited for its copies)."""
    stream = acl_res.stream()
    data = np.arange(256, dtype=np.uint8)
    src = acl_res.upload(data)
    buf = HostBuffer(data.size)
    runtime.memcpy_async(buf, data.size, src, data.size, ACL_MEMCPY_DEVICE_TO_HOST, stream)
    runtime.synchronize_stream(stream)
    acl_res.forget_stream(stream)
    runtime.destroy_stream(stream)
    if step == "numpy":
        np.testing.assert_array_equal(buf.numpy(), data)
    elif step == "wait":
        buf.wait()
    buf.close()


def test_ids_of_closed_buffers_are_reused_once_no_primitive_holds_them():
    """A primitive's buffer id is one of its attributes (MindSpore keeps state per distinct value), so ids
    are reused; an id comes back only when the buffer is closed and every primitive built on it is gone."""
    import mindspore as ms
    from ms_memcopy.ops import MemcpyBatch

    first = HostBuffer(64)
    first_id = first.buffer_id
    op = MemcpyBatch("d2h", first, num_tensors=1)
    first.close()
    second = HostBuffer(64)
    assert second.buffer_id != first_id  # op may still launch with first_id: it must not name `second`
    x = ms.Tensor(np.ones(4, np.float32))
    with pytest.raises(ValueError, match="the HostBuffer is closed"):
        op(x, ms.Tensor(np.array([0], np.int64)))
    del op
    gc.collect()
    third = HostBuffer(64)
    assert third.buffer_id == first_id
    for b in (second, third):
        b.close()


def test_a_compiled_graph_never_reaches_a_buffer_that_reused_its_id():
    import mindspore as ms
    from ms_memcopy.ops import MemcpyWithCondition

    from _ops_support import FnCell

    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        old = HostBuffer(16)
        net = FnCell(MemcpyWithCondition("d2h", host_buffer=old))
        x = ms.Tensor(np.ones(2, np.float32))
        offset = ms.Tensor(np.array([0], np.int64))
        net(x, offset)
        old.close()
        fresh = [HostBuffer(16) for _ in range(4)]
        for b in fresh:
            b.numpy()[:] = 7
        with pytest.raises(ValueError, match="the HostBuffer is closed"):
            net(x, offset)
        assert all((b.numpy() == 7).all() for b in fresh)
        for b in fresh:
            b.close()
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


# --- the calling thread's context (aclrtMallocHost needs one, as CANN's ApiImpl::HostMalloc) ----------------

PINNED_ON_A_THREAD_WITHOUT_A_CONTEXT = r'''
import os
from ms_memcopy import AclError, HostBuffer, runtime
if os.environ.get("SET_DEVICE_FIRST"):
    runtime.set_device(int(os.environ["SET_DEVICE_FIRST"]))
try:
    runtime.get_current_context()
    print("context")
except AclError as e:
    print(e.code)
try:
    with HostBuffer(64) as buf:
        print(runtime.get_device(), runtime.get_mem_location(buf.ptr).type)
except ValueError as e:
    print("ValueError", e)
with HostBuffer(64, pinned=False) as buf:  # pageable memory needs no context
    print("pageable", runtime.get_mem_location(buf.ptr).type)
'''


@pytest.mark.parametrize("device_id,expected", [("3", "3"), ("", "0"), (" +2", "2")])
def test_pinned_buffer_sets_the_device_of_device_id_on_a_thread_without_a_context(run_python, device_id, expected):
    """A fresh process has no context anywhere (107002); the pinned buffer sets DEVICE_ID's device (the
    device the CPU kernels use, HostTargetDevice) and allocates host memory there."""
    result = run_python(PINNED_ON_A_THREAD_WITHOUT_A_CONTEXT, env={"DEVICE_ID": device_id})
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["107002", f"{expected} 0", "pageable 2"]


def test_pinned_buffer_keeps_the_threads_context(run_python):
    result = run_python(PINNED_ON_A_THREAD_WITHOUT_A_CONTEXT, env={"DEVICE_ID": "3", "SET_DEVICE_FIRST": "1"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["context", "1 0", "pageable 2"]


@pytest.mark.parametrize("device_id", ["x", "-1", "2147483648", "3 ", "1_0"])
def test_pinned_buffer_rejects_a_malformed_device_id(run_python, device_id):
    result = run_python(PINNED_ON_A_THREAD_WITHOUT_A_CONTEXT, env={"DEVICE_ID": device_id})
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["107002", f'ValueError DEVICE_ID is not a device id: "{device_id}"',
                                          "pageable 2"]


def test_acl_device_with_cann_is_mindspores_current_device(monkeypatch):
    """With CANN (no host runtime) and MindSpore imported, the device is MindSpore's current device."""
    import sys
    import types

    from ms_memcopy import _framework, _paths

    fake = types.SimpleNamespace(get_current_device=lambda: types.SimpleNamespace(device_target="Ascend", device_id=5))
    monkeypatch.setattr(_paths, "uses_host_runtime", lambda: False)
    monkeypatch.setitem(sys.modules, "mindspore", fake)
    monkeypatch.setenv("DEVICE_ID", "2")
    assert _framework.acl_device() == 5
    monkeypatch.delitem(sys.modules, "mindspore")
    assert _framework.acl_device() == 2  # MindSpore not imported: DEVICE_ID
