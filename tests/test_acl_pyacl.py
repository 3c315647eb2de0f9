"""ms_memcopy.acl: pyACL conventions (codes and (value, ret) tuples, never AclError), acl.util, and a
pyACL-style script that runs unchanged."""
import ctypes
import warnings

import numpy as np
import pytest

import ms_memcopy.acl as acl
from ms_memcopy import _acl_lib

INVALID_PARAM = 100000
RT_PARAM_INVALID = 107000

PYACL_SCRIPT = r'''
import numpy as np
import ms_memcopy.acl as acl

ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEMCPY_HOST_TO_HOST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
ACL_MEMCPY_DEVICE_TO_DEVICE = 3
ACL_MEMCPY_INNER_DEVICE_TO_DEVICE = 6
NPY_FLOAT32 = 11


def check_ret(message, ret):
    if ret != 0:
        raise Exception("{} failed ret={}".format(message, ret))


ret = acl.init()
check_ret("acl.init", ret)
device_id = 0
ret = acl.rt.set_device(device_id)
check_ret("acl.rt.set_device", ret)
stream, ret = acl.rt.create_stream()
check_ret("acl.rt.create_stream", ret)

data = np.arange(1024, dtype=np.float32)
size = data.size * data.itemsize
host_ptr, ret = acl.rt.malloc_host(size)
check_ret("acl.rt.malloc_host", ret)
dev_ptr, ret = acl.rt.malloc(size, ACL_MEM_MALLOC_HUGE_FIRST)
check_ret("acl.rt.malloc", ret)
dev_ptr2, ret = acl.rt.malloc(size, ACL_MEM_MALLOC_HUGE_FIRST)
check_ret("acl.rt.malloc", ret)

bytes_data = data.tobytes()
bytes_ptr = acl.util.bytes_to_ptr(bytes_data)
ret = acl.rt.memcpy(host_ptr, size, bytes_ptr, size, ACL_MEMCPY_HOST_TO_HOST)
check_ret("acl.rt.memcpy", ret)
ret = acl.rt.memcpy_async(dev_ptr, size, host_ptr, size, ACL_MEMCPY_HOST_TO_DEVICE, stream)
check_ret("acl.rt.memcpy_async", ret)

desc_size, ret = acl.rt.get_memcpy_desc_size(ACL_MEMCPY_INNER_DEVICE_TO_DEVICE)
check_ret("acl.rt.get_memcpy_desc_size", ret)
desc, ret = acl.rt.malloc(desc_size, ACL_MEM_MALLOC_HUGE_FIRST)
check_ret("acl.rt.malloc", ret)
desc, ret = acl.rt.set_memcpy_desc(desc, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, dev_ptr, dev_ptr2, size, 0)
check_ret("acl.rt.set_memcpy_desc", ret)
ret = acl.rt.memcpy_async_with_desc(desc, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, stream)
check_ret("acl.rt.memcpy_async_with_desc", ret)

np_out = np.zeros(1024, dtype=np.float32)
out_ptr = acl.util.numpy_to_ptr(np_out)
ret = acl.rt.memcpy2d_async(out_ptr, 64, dev_ptr2, 64, 64, 64, ACL_MEMCPY_DEVICE_TO_HOST, stream)
check_ret("acl.rt.memcpy2d_async", ret)
ret = acl.rt.synchronize_stream(stream)
check_ret("acl.rt.synchronize_stream", ret)
assert (np_out == data).all()

ret = acl.rt.memcpy_async_with_condition(host_ptr, size, dev_ptr2, size, ACL_MEMCPY_DEVICE_TO_HOST, stream)
check_ret("acl.rt.memcpy_async_with_condition", ret)
ret = acl.rt.synchronize_stream(stream)
check_ret("acl.rt.synchronize_stream", ret)
result = acl.util.ptr_to_numpy(host_ptr, (1024,), NPY_FLOAT32)
assert (result == data).all()

attr = {"dst_loc": {"id": 0, "type": 0}, "src_loc": {"id": 0, "type": 1}}
np_out2 = np.zeros(1024, dtype=np.float32)
fail_index, ret = acl.rt.memcpy_batch_async([acl.util.numpy_to_ptr(np_out2)], [size], [dev_ptr2], [size], 1,
                                            [attr], [0], 1, stream)
check_ret("acl.rt.memcpy_batch_async", ret)
ret = acl.rt.synchronize_stream(stream)
assert (np_out2 == data).all()

ret = acl.rt.free(desc)
ret = acl.rt.free(dev_ptr)
ret = acl.rt.free(dev_ptr2)
ret = acl.rt.free_host(host_ptr)
check_ret("acl.rt.free_host", ret)
ret = acl.rt.destroy_stream(stream)
check_ret("acl.rt.destroy_stream", ret)
ret = acl.rt.reset_device(device_id)
check_ret("acl.rt.reset_device", ret)
ret = acl.finalize()
check_ret("acl.finalize", ret)
print("pyacl script done")
'''


def test_pyacl_style_script_runs_unchanged(run_python):
    result = run_python(PYACL_SCRIPT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "pyacl script done"


# --- return conventions ------------------------------------------------------------------------------

def test_value_and_ret_tuples(acl_device):
    assert acl.rt.get_device() == (0, 0)
    count, ret = acl.rt.get_device_count()
    assert ret == 0 and count >= 2
    stream, ret = acl.rt.create_stream()
    assert ret == 0 and isinstance(stream, int) and stream != 0
    ptr, ret = acl.rt.malloc(64, acl.ACL_MEM_MALLOC_HUGE_FIRST)
    assert ret == 0 and isinstance(ptr, int) and ptr % 64 == 0
    host, ret = acl.rt.malloc_host(64)
    assert ret == 0 and isinstance(host, int) and host % 64 == 0
    size, ret = acl.rt.get_memcpy_desc_size(acl.ACL_MEMCPY_INNER_DEVICE_TO_DEVICE)
    assert (size, ret) == (32, 0)  # the default profile (Ascend910B)
    assert acl.rt.synchronize_stream_with_timeout(stream, -1) == 0
    assert (acl.rt.free(ptr), acl.rt.free_host(host), acl.rt.destroy_stream(stream)) == (0, 0, 0)


def test_acl_failures_return_codes_and_never_raise(acl_device):
    assert acl.rt.get_device() == (0, 0)
    assert acl.rt.free(0) == INVALID_PARAM
    assert acl.rt.malloc(0, 0) == (0, INVALID_PARAM)
    assert acl.rt.malloc_host(0) == (0, INVALID_PARAM)
    assert acl.rt.get_memcpy_desc_size(8)[1] == INVALID_PARAM
    assert acl.rt.set_device(10**6) == 107001
    assert acl.rt.memcpy(0, 16, 0, 16, acl.ACL_MEMCPY_HOST_TO_DEVICE) == INVALID_PARAM
    assert acl.rt.memcpy_async_with_desc(0, 6, 0) == INVALID_PARAM
    assert acl.rt.destroy_stream(0) == INVALID_PARAM
    msg = acl.get_recent_err_msg()
    assert isinstance(msg, str) and msg.startswith("aclrtDestroyStream")
    assert acl.get_recent_err_msg() == msg


def test_batch_returns_fail_index_and_ret(acl_res):
    stream = acl_res.stream()
    dsts = [acl_res.device(64) for _ in range(3)]
    srcs = [np.full(64, i, np.uint8) for i in range(3)]
    attr = {"dst_loc": {"id": 0, "type": acl.ACL_MEM_LOCATION_TYPE_DEVICE},
            "src_loc": {"id": 0, "type": acl.ACL_MEM_LOCATION_TYPE_HOST}}
    args = (dsts, [64] * 3, srcs, [64, 64, 0], 3, [attr], [0], 1)
    assert acl.rt.memcpy_batch_async(*args, stream) == (2, RT_PARAM_INVALID)
    assert acl.rt.memcpy_batch(*args) == (2, RT_PARAM_INVALID)
    assert acl.rt.memcpy_batch(dsts, [64] * 3, srcs, [64] * 3, 3, [attr], [0], 1) == (acl.SIZE_MAX, 0)
    # ACL-layer errors leave fail_index at its initial SIZE_MAX
    assert acl.rt.memcpy_batch(dsts, [1] * 3, srcs, [64] * 3, 3, [attr], [0], 1) == (acl.SIZE_MAX, INVALID_PARAM)
    assert acl.rt.memcpy_batch(None, None, None, [0, 0], 2, None, None, 0) == (acl.SIZE_MAX, 0)
    assert acl.rt.memcpy_batch_v2(dsts, [64] * 3, srcs, [64] * 3, 3, [attr], [0], 1) == 0
    assert acl.rt.memcpy_batch_async_v2(dsts, [64] * 3, srcs, [64, 0, 64], 3, [attr], [0], 1, stream) == \
        RT_PARAM_INVALID
    # lists longer than their count: only the first num_* entries are passed
    assert acl.rt.memcpy_batch(dsts + [0], [64] * 4, srcs + [None], [64] * 4, 3, [attr, "unused"], [0, 5], 1) == \
        (acl.SIZE_MAX, 0)
    for i, dst in enumerate(dsts):
        assert (acl_res.download(dst, 64) == i).all()


def test_set_memcpy_desc_returns_the_descriptor(acl_res):
    desc = acl_res.device(64)
    src, dst = acl_res.device(64), acl_res.device(64)
    assert acl.rt.set_memcpy_desc(desc, 6, src, dst, 64, 0) == (desc, 0)
    assert acl.rt.set_memcpy_desc(desc, 6, src, dst, 64, desc) == (desc, INVALID_PARAM)


# --- Python-level misuse raises ------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda: acl.rt.malloc("64", 0),
    lambda: acl.rt.memcpy(1.5, 16, 0, 16, 1),
    lambda: acl.rt.memcpy(0, 16, 0, 16, "h2d"),
    lambda: acl.rt.create_stream(1),
    lambda: acl.rt.memcpy_async(0, 16, 0, 16, 1, "stream"),
    lambda: acl.rt.memcpy_batch(0, [1], [0], [1], 1, [{}], [0], 1),
    lambda: acl.rt.memcpy_batch([0], [1], [0], [1], 1, [42], [0], 1),
    lambda: acl.util.numpy_to_ptr([1, 2, 3]),
    lambda: acl.util.ptr_to_numpy(0, (4,), object()),
])
def test_misuse_is_type_error(acl_device, call):
    with pytest.raises(TypeError):
        call()


@pytest.mark.parametrize("call,name", [
    (lambda: acl.rt.malloc(-1, 0), "size"),
    (lambda: acl.rt.memcpy(0, -16, 0, 16, 1), "dest_max"),
    (lambda: acl.rt.memcpy(0, 16, 0, 16, 2**40), "kind"),
    (lambda: acl.rt.memcpy_batch([0], [1], [0], [1], 2, None, None, 0), "dest_maxs"),
    (lambda: acl.rt.memcpy_batch([0, 0], [1, 1], [0, 0], [1, 1], 2, [], [], 1), "attrs"),
    (lambda: acl.rt.set_device(2**31), "device_id"),
])
def test_misuse_is_value_error_naming_the_argument(acl_device, call, name):
    with pytest.raises(ValueError, match=name):
        call()


# --- acl.util ------------------------------------------------------------------------------------------

def test_numpy_to_ptr_is_the_data_pointer():
    a = np.arange(10, dtype=np.int32)
    assert acl.util.numpy_to_ptr(a) == a.ctypes.data
    assert acl.util.numpy_to_ptr(a[3:]) == a.ctypes.data + 12


def test_numpy_to_ptr_warns_on_discontiguous_arrays():
    a = np.arange(20, dtype=np.int32)
    with pytest.warns(RuntimeWarning, match="discontiguous"):
        assert acl.util.numpy_to_ptr(a[::2]) == a.ctypes.data
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        acl.util.numpy_to_ptr(a)


@pytest.mark.parametrize("code,dtype", [(0, np.bool_), (1, np.int8), (2, np.uint8), (3, np.int16), (4, np.uint16),
                                        (5, np.int32), (6, np.uint32), (7, np.int64), (8, np.uint64),
                                        (9, np.int64), (10, np.uint64), (11, np.float32), (12, np.float64),
                                        (23, np.float16)])
def test_ptr_to_numpy_takes_pyacl_type_numbers(code, dtype):
    src = np.arange(12).astype(dtype)
    view = acl.util.ptr_to_numpy(src.ctypes.data, (3, 4), code)
    assert view.dtype == np.dtype(dtype) and view.shape == (3, 4)
    np.testing.assert_array_equal(view, src.reshape(3, 4))


def test_ptr_to_numpy_takes_numpy_dtypes_and_is_a_view():
    src = np.arange(6, dtype=np.float32)
    for t in (np.float32, np.dtype("float32"), "float32"):
        view = acl.util.ptr_to_numpy(src.ctypes.data, (2, 3), t)
        assert view.dtype == np.float32
        np.testing.assert_array_equal(view.ravel(), src)
    view[0, 0] = 42
    assert src[0] == 42
    assert acl.util.ptr_to_numpy(0, (0,), 11).shape == (0,)


def test_ptr_to_numpy_rejects_unknown_type_numbers_and_null():
    with pytest.raises(ValueError, match="type 17"):
        acl.util.ptr_to_numpy(1, (1,), 17)  # NPY_OBJECT
    with pytest.raises(ValueError, match="NULL"):
        acl.util.ptr_to_numpy(0, (4,), 11)


def test_bytes_and_pointers():
    data = bytes(range(100))
    ptr = acl.util.bytes_to_ptr(data)
    assert ctypes.string_at(ptr, 100) == data
    assert acl.util.ptr_to_bytes(ptr, 100) == data
    ba = bytearray(b"abc")
    assert acl.util.ptr_to_bytes(acl.util.bytes_to_ptr(ba), 3) == b"abc"
    assert acl.util.ptr_to_bytes(0, 0) == b""
    with pytest.raises(TypeError):
        acl.util.bytes_to_ptr("text")


def test_pyacl_layer_copies_through_util_pointers(acl_res):
    data = np.random.default_rng(80).integers(0, 2**31, 256).astype(np.int32)
    size = data.nbytes
    dev, ret = acl.rt.malloc(size, acl.ACL_MEM_MALLOC_HUGE_FIRST)
    assert ret == 0
    try:
        assert acl.rt.memcpy(dev, size, acl.util.numpy_to_ptr(data), size, acl.ACL_MEMCPY_HOST_TO_DEVICE) == 0
        out = np.zeros_like(data)
        assert acl.rt.memcpy(acl.util.numpy_to_ptr(out), size, dev, size, acl.ACL_MEMCPY_DEVICE_TO_HOST) == 0
        np.testing.assert_array_equal(out, data)
    finally:
        assert acl.rt.free(dev) == 0


def test_missing_library_function_is_named(monkeypatch):
    _acl_lib.lib()
    monkeypatch.delitem(_acl_lib._functions, "aclrtMemcpyBatchV2")
    with pytest.raises(NotImplementedError, match="aclrtMemcpyBatchV2"):
        acl.rt.memcpy_batch_v2([0], [1], [0], [0], 1, None, None, 0)
