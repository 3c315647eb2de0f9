"""ms_memcopy.acl: pyACL conventions (codes and (value, ret) tuples, never AclError), pyACL's argument
parsing (each call's PyArg_ParseTuple format, as its C wrapper), acl.util, and pyACL-style scripts that
run unchanged."""
import ctypes
import warnings

import numpy as np
import pytest

import ms_memcopy.acl as acl
from ms_memcopy import _acl_lib
from ms_memcopy import acl_constants as C

INVALID_PARAM = 100000
RT_PARAM_INVALID = 107000
RT_CONTEXT_NULL = 107002
RT_STREAM_CONTEXT = 107003
RT_INVALID_MEMORY_TYPE = 107016
RT_INVALID_HANDLE = 107017
SIZE_MAX = 2**64 - 1

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
fail_index, ret = acl.rt.memcpy_batch_async([acl.util.numpy_to_ptr(np_out2)], [size], [dev_ptr2], [size],
                                            [attr], [0], stream)
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
    ptr, ret = acl.rt.malloc(64, C.ACL_MEM_MALLOC_HUGE_FIRST)
    assert ret == 0 and isinstance(ptr, int) and ptr % 64 == 0
    host, ret = acl.rt.malloc_host(64)
    assert ret == 0 and isinstance(host, int) and host % 64 == 0
    size, ret = acl.rt.get_memcpy_desc_size(C.ACL_MEMCPY_INNER_DEVICE_TO_DEVICE)
    assert (size, ret) == (32, 0)  # the default profile (Ascend910B)
    assert acl.rt.synchronize_stream_with_timeout(stream, -1) == 0
    assert (acl.rt.free(ptr), acl.rt.free_host(host), acl.rt.destroy_stream(stream)) == (0, 0, 0)


def test_event_calls(acl_device):
    stream, ret = acl.rt.create_stream()
    event, ret2 = acl.rt.create_event()
    assert (ret, ret2) == (0, 0) and isinstance(event, int) and event != 0
    assert acl.rt.query_event_status(event) == (C.ACL_EVENT_RECORDED_STATUS_NOT_READY, 0)
    assert acl.rt.record_event(event, stream) == 0
    assert acl.rt.synchronize_event(event) == 0
    assert acl.rt.query_event_status(event) == (C.ACL_EVENT_RECORDED_STATUS_COMPLETE, 0)
    assert acl.rt.destroy_event(event) == 0
    assert acl.rt.destroy_event(event) == 107017
    assert acl.rt.create_event_with_flag(0)[1] == 107000  # no flag (ApiErrorDecorator::EventCreate)
    assert acl.rt.create_event_with_flag(0x40)[1] == 107000  # ACL_EVENT_IPC is aclrtCreateEventExWithFlag's
    event, ret = acl.rt.create_event_with_flag(C.ACL_EVENT_EXTERNAL)
    assert ret == 0 and acl.rt.destroy_event(event) == 0
    with pytest.raises(TypeError):
        acl.rt.record_event(np.int64(event), stream)  # pyACL takes Python ints only
    assert acl.rt.destroy_stream(stream) == 0


def test_acl_failures_return_codes_and_never_raise(acl_device):
    assert acl.rt.get_device() == (0, 0)
    assert acl.rt.free(0) == INVALID_PARAM
    assert acl.rt.malloc(0, 0) == (0, INVALID_PARAM)
    assert acl.rt.malloc_host(0) == (0, INVALID_PARAM)
    assert acl.rt.get_memcpy_desc_size(8)[1] == INVALID_PARAM
    assert acl.rt.set_device(10**6) == 107001
    assert acl.rt.memcpy(0, 16, 0, 16, C.ACL_MEMCPY_HOST_TO_DEVICE) == INVALID_PARAM
    assert acl.rt.memcpy_async_with_desc(0, 6, 0) == INVALID_PARAM
    assert acl.rt.destroy_stream(0) == INVALID_PARAM
    msg = acl.get_recent_err_msg()
    assert isinstance(msg, str) and msg.startswith("aclrtDestroyStream")
    assert acl.get_recent_err_msg() == msg


def test_batch_returns_fail_index_and_ret(acl_res):
    """The project's batch extension in pyACL's list convention: the counts are the list lengths."""
    stream = acl_res.stream()
    dsts = [acl_res.device(64) for _ in range(3)]
    sources = [np.full(64, i, np.uint8) for i in range(3)]
    srcs = [a.ctypes.data for a in sources]
    attr = {"dst_loc": {"id": 0, "type": C.ACL_MEM_LOCATION_TYPE_DEVICE},
            "src_loc": {"id": 0, "type": C.ACL_MEM_LOCATION_TYPE_HOST}}
    args = (dsts, [64] * 3, srcs, [64, 64, 0], [attr], [0])
    assert acl.rt.memcpy_batch_async(*args, stream) == (2, RT_PARAM_INVALID)
    assert acl.rt.memcpy_batch(*args) == (2, RT_PARAM_INVALID)
    assert acl.rt.memcpy_batch(dsts, [64] * 3, srcs, [64] * 3, [attr], [0]) == (SIZE_MAX, 0)
    # ACL-layer errors leave fail_index at its initial SIZE_MAX
    assert acl.rt.memcpy_batch(dsts, [1] * 3, srcs, [64] * 3, [attr], [0]) == (SIZE_MAX, INVALID_PARAM)
    assert acl.rt.memcpy_batch([], [], [], [], [], []) == (SIZE_MAX, INVALID_PARAM)  # numBatches 0
    assert acl.rt.memcpy_batch_v2(dsts, [64] * 3, srcs, [64] * 3, [attr], [0]) == 0
    assert acl.rt.memcpy_batch_async_v2(dsts, [64] * 3, srcs, [64, 0, 64], [attr], [0], stream) == RT_PARAM_INVALID
    for i, dst in enumerate(dsts):
        assert (acl_res.download(dst, 64) == i).all()


@pytest.mark.parametrize("lists", [
    ([1], [64, 64], [1], [64], [{}], [0]),        # dest_maxs longer than dsts
    ([1, 2], [64, 64], [1, 2], [64], [{}], [0]),  # sizes shorter
    ([1], [64], [1], [64], [{}, {}], [0]),        # attrs longer than attrs_indexes
])
def test_batch_lists_of_different_lengths_are_invalid_param(acl_res, lists):
    dst = acl_res.upload(np.zeros(64, np.uint8))
    lists = ([dst] * len(lists[0]),) + lists[1:]
    assert acl.rt.memcpy_batch(*lists) == (SIZE_MAX, INVALID_PARAM)
    assert acl.rt.memcpy_batch_async(*lists, 0) == (SIZE_MAX, INVALID_PARAM)
    assert acl.rt.memcpy_batch_v2(*lists) == INVALID_PARAM
    assert not acl_res.download(dst, 64).any()


def test_set_memcpy_desc_returns_the_descriptor(acl_res):
    desc = acl_res.device(64)
    src, dst = acl_res.device(64), acl_res.device(64)
    assert acl.rt.set_memcpy_desc(desc, 6, src, dst, 64, 0) == (desc, 0)
    assert acl.rt.set_memcpy_desc(desc, 6, src, dst, 64, desc) == (desc, INVALID_PARAM)


# --- pyACL's argument parsing (its C wrappers' PyArg_ParseTuple formats) --------------------------------

ZIXFY_SCRIPT = r"""
import ms_memcopy.acl as acl


class Net:  # as zixfy/pyACL-inference's model class
    def __init__(self, device_id):
        self.device_id = device_id
        assert acl.init() == 0
        assert acl.rt.set_device(self.device_id) == 0
        self.context, ret = acl.rt.create_context(self.device_id)
        assert ret == 0

    def sync(self):
        return acl.rt.synchronize_device(self.device_id)


net = Net(0)
print(net.sync(), acl.rt.destroy_context(net.context), acl.rt.reset_device(0), acl.finalize(0))
"""


def test_a_script_passing_arguments_to_synchronize_device_runs(run_python):
    """pyACL's wrapper of aclrtSynchronizeDevice never reads its argument tuple: zixfy/pyACL-inference
    passes the device id."""
    result = run_python(ZIXFY_SCRIPT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0", "0", "0", "0"]


NO_ARGUMENT_CALLS = [acl.rt.synchronize_device, acl.rt.get_run_mode, acl.rt.get_device, acl.rt.get_device_count,
                     acl.rt.get_context, acl.get_soc_name]


@pytest.mark.parametrize("call", NO_ARGUMENT_CALLS, ids=lambda c: c.__name__)
def test_calls_whose_wrapper_parses_nothing_ignore_positional_arguments(acl_device, call):
    expected = call()
    assert call(0) == expected
    assert call(object(), None, "text", 1.5) == expected
    with pytest.raises(TypeError):
        call(device_id=0)  # METH_VARARGS: no keyword arguments


def test_create_stream_and_create_event_ignore_positional_arguments(acl_res):
    stream, ret = acl.rt.create_stream(7, "flags")
    assert ret == 0 and stream != 0 and acl.rt.destroy_stream(stream) == 0
    event, ret = acl.rt.create_event(C.ACL_EVENT_SYNC)
    assert ret == 0 and event != 0 and acl.rt.destroy_event(event) == 0
    with pytest.raises(TypeError):
        acl.rt.create_stream(flags=0)


def test_finalize_and_get_recent_err_msg_ignore_positional_arguments(run_python):
    script = ("import ms_memcopy.acl as acl\n"
              "print(acl.init(), acl.rt.free(0), acl.get_recent_err_msg(1, 2) == acl.get_recent_err_msg(),\n"
              "      acl.finalize('ignored'), acl.finalize())\n")
    result = run_python(script)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0", "100000", "True", "0", "100037"]  # ACL_ERROR_REPEAT_FINALIZE


def test_pointer_arguments_are_masked_to_64_bits_and_take_bool(acl_res):
    """Format k: PyLong_AsUnsignedLongMask, bool included; the C call's code comes back, nothing raises."""
    assert acl.rt.free(-1) == RT_PARAM_INVALID  # 0xFFFF_FFFF_FFFF_FFFF: not an allocation
    assert acl.rt.free(True) == RT_PARAM_INVALID  # address 1
    assert acl.rt.free(False) == INVALID_PARAM  # NULL
    assert acl.rt.free(2**64) == INVALID_PARAM  # masked to NULL
    ptr, ret = acl.rt.malloc(64, C.ACL_MEM_MALLOC_HUGE_FIRST)
    assert ret == 0
    assert acl.rt.free(ptr + 2**64) == 0  # masked to ptr itself
    assert acl.rt.free(ptr) == RT_PARAM_INVALID  # already freed
    stream, ret = acl.rt.create_stream()
    assert acl.rt.destroy_stream(stream - 2**64) == 0  # negative: masked to the handle
    assert acl.rt.synchronize_stream(-1) == RT_INVALID_HANDLE
    assert acl.rt.synchronize_stream(2**64) == 0  # masked to NULL: the default stream


def test_size_arguments_are_masked_to_64_bits_and_take_bool(acl_res):
    assert acl.rt.malloc(-1, 0) == (0, INVALID_PARAM)  # SIZE_MAX: size plus CANN's 64-byte append overflows
    one_byte, ret = acl.rt.malloc(True, 0)
    assert ret == 0 and one_byte != 0 and acl.rt.free(one_byte) == 0
    dev = acl_res.upload(np.zeros(32, np.uint8))
    assert acl.rt.memset(dev, 2**64 + 16, 0xAB, 16) == 0  # max_count masked to 16
    assert acl.rt.memset(dev, 16, 0xCD, 2**64 + 17) == RT_PARAM_INVALID  # count 17 > max_count 16
    assert acl.rt.memset(dev, 32, 1, True) == 0  # one byte
    np.testing.assert_array_equal(acl_res.download(dev, 32), np.uint8([1] + [0xAB] * 15 + [0] * 16))


@pytest.mark.parametrize("bad", [np.int64(1), np.uint64(1), None, 1.0, "1", np.zeros(1, np.uint8)],
                         ids=["np.int64", "np.uint64", "None", "float", "str", "ndarray"])
def test_pointer_arguments_are_ints_only(acl_device, bad):
    with pytest.raises(TypeError, match="acl.rt.free"):
        acl.rt.free(bad)
    with pytest.raises(TypeError, match="acl.rt.memcpy"):
        acl.rt.memcpy(0, bad, 0, 16, C.ACL_MEMCPY_HOST_TO_DEVICE)


def test_int_arguments_take_bool_and_index_types_and_refuse_overflow_with_type_error(acl_device):
    """Format i: PyLong_AsLong (so numpy integers are accepted), range of a C int. pyACL's CHECK_NULL turns
    the parser's OverflowError into a TypeError."""
    assert acl.rt.set_device(True) == 0 and acl.rt.get_device() == (1, 0)
    assert acl.rt.set_device(np.int64(0)) == 0 and acl.rt.get_device() == (0, 0)
    assert acl.rt.get_mem_info(np.int32(C.ACL_HBM_MEM))[2] == 0
    for value in (2**31, -(2**31) - 1, 2**64):
        with pytest.raises(TypeError, match="acl.rt.set_device"):
            acl.rt.set_device(value)
    with pytest.raises(TypeError, match="acl.rt.memcpy"):
        acl.rt.memcpy(0, 16, 0, 16, 2**40)  # kind
    with pytest.raises(TypeError, match="acl.rt.memset"):
        acl.rt.memset(0, 16, 2**31, 16)  # value
    for bad in (1.0, "0", None):
        with pytest.raises(TypeError):
            acl.rt.set_device(bad)


def test_flag_arguments_are_masked_to_32_bits(acl_res):
    """Format I: PyLong_AsUnsignedLongMask, no overflow check."""
    event, ret = acl.rt.create_event_with_flag(C.ACL_EVENT_EXTERNAL + 2**32)
    assert ret == 0 and acl.rt.destroy_event(event) == 0
    assert acl.rt.create_event_with_flag(-1) == (0, RT_PARAM_INVALID)  # 0xFFFF_FFFF: not a flag set
    assert acl.rt.device_enable_peer_access(1, 2**32 + 1) == acl.rt.device_enable_peer_access(1, 1) != 0
    with pytest.raises(TypeError):
        acl.rt.create_event_with_flag(1.0)


@pytest.mark.parametrize("call", [
    lambda: acl.rt.malloc(64),
    lambda: acl.rt.malloc(64, 0, 0),
    lambda: acl.rt.set_memcpy_desc(0, 6, 0, 0, 64),
    lambda: acl.rt.memcpy_async(0, 16, 0, 16, 1),
    lambda: acl.rt.set_device(),
    lambda: acl.rt.free(0, 0),
    lambda: acl.rt.memcpy_batch([], [], [], [], []),
    lambda: acl.util.ptr_to_bytes(0),
    lambda: acl.util.bytes_to_ptr(),
    lambda: acl.util.numpy_to_ptr(np.zeros(1), np.zeros(1)),
    lambda: acl.init("a.json", "b.json"),
], ids=["malloc-1", "malloc-3", "set_memcpy_desc-5", "memcpy_async-5", "set_device-0", "free-2", "batch-5",
        "ptr_to_bytes-1", "bytes_to_ptr-0", "numpy_to_ptr-2", "init-2"])
def test_parsed_calls_take_exactly_their_arguments(acl_device, call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(TypeError):
            call()


@pytest.mark.parametrize("call", [
    lambda: acl.rt.malloc(size=64, policy=0),
    lambda: acl.rt.set_device(device_id=0),
    lambda: acl.util.ptr_to_bytes(ptr=0, size=0),
    lambda: acl.rt.memcpy(0, 16, 0, 16, 1, stream=0),
])
def test_keyword_arguments_are_type_error(acl_device, call):
    with pytest.raises(TypeError):
        call()


@pytest.mark.parametrize("call", [
    lambda: acl.rt.malloc("64", 0),
    lambda: acl.rt.memcpy(1.5, 16, 0, 16, 1),
    lambda: acl.rt.memcpy(0, 16, 0, 16, "h2d"),
    lambda: acl.rt.memcpy_async(0, 16, 0, 16, 1, "stream"),
    lambda: acl.rt.memcpy_async(0, 16, 0, 16, 1, None),
    lambda: acl.rt.memset_async(0, 16, 0, 16, None),
    lambda: acl.rt.synchronize_stream(np.int64(1)),
    lambda: acl.rt.memcpy_batch(0, [1], [0], [1], [{}], [0]),
    lambda: acl.rt.memcpy_batch((0,), (1,), (0,), (1,), [{}], [0]),  # lists, not tuples
    lambda: acl.rt.memcpy_batch([0], [1], [0], [1], [42], [0]),
    lambda: acl.rt.memcpy_batch([np.int64(1)], [1], [1], [1], [{}], [0]),
    lambda: acl.util.ptr_to_numpy(0, (4,), object()),
    lambda: acl.util.ptr_to_numpy(0, (4,), np.float32),  # a NumPy type number, not a dtype
    lambda: acl.util.ptr_to_numpy(1, (4.0,), 11),
    lambda: acl.util.ptr_to_bytes(np.int64(1), 1),
    # init takes an optional str without NUL characters (the parser's ValueError becomes a TypeError)
    lambda: acl.init(b"acl.json"),
    lambda: acl.init(None),
    lambda: acl.init("acl\0.json"),
])
def test_misuse_is_type_error(acl_device, call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(TypeError):
            call()


def test_acl_modules_hold_the_calls_and_nothing_else():
    """As pyACL's acl, acl.rt and acl.util (scripts test ``"bytes_to_ptr" in dir(acl.util)``): no helper
    imports, constants or private names."""
    import types

    for module in (acl, acl.rt, acl.util):
        names = {name for name in dir(module) if not name.startswith("__")}
        assert names == set(module.__all__), module.__name__
        for name in names - {"rt", "util"}:
            assert isinstance(getattr(module, name), types.FunctionType), f"{module.__name__}.{name}"
            assert getattr(module, name).__module__ == module.__name__
    assert {"rt", "util"} <= set(dir(acl)) and "bytes_to_ptr" in dir(acl.util)
    assert not [name for name in dir(acl) if name.startswith("ACL_")]


def test_constants_module_has_the_constants():
    assert (C.ACL_HOST, C.ACL_DEVICE, C.ACL_HBM_MEM, C.ACL_MEM_P2P_HUGE1G) == (1, 0, 1, 17)


# --- acl.util ------------------------------------------------------------------------------------------

def deprecations(record):
    return [w for w in record if w.category is Warning and "deprecated" in str(w.message)]


def test_numpy_to_ptr_is_the_data_pointer_and_warns_on_every_call():
    a = np.arange(10, dtype=np.int32)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert acl.util.numpy_to_ptr(a) == a.ctypes.data
        assert acl.util.numpy_to_ptr(a[3:]) == a.ctypes.data + 12
    assert len(deprecations(record)) == 2 and len(record) == 2
    assert all(w.filename == __file__ for w in record)  # the caller's line


def test_numpy_to_ptr_warns_again_on_arrays_that_are_not_c_contiguous():
    a = np.arange(20, dtype=np.int32)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert acl.util.numpy_to_ptr(a[::2]) == a.ctypes.data
        assert acl.util.numpy_to_ptr(np.asfortranarray(a.reshape(4, 5))) != 0
    assert len(deprecations(record)) == 2 and len(record) == 4
    assert all(w.category is Warning and w.filename == __file__ for w in record)


@pytest.mark.parametrize("call", [acl.util.numpy_to_ptr, acl.util.numpy_contiguous_to_ptr])
@pytest.mark.parametrize("value", [[1, 2, 3], b"abc", 0, None, np.float32(1)], ids=repr)
def test_numpy_calls_refuse_a_non_ndarray_with_value_error(call, value):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="ndarray"):
            call(value)
    assert len(deprecations(record)) == 1  # pyACL warns before it looks at the argument


@pytest.mark.parametrize("code,dtype", [(0, np.bool_), (1, np.int8), (2, np.uint8), (3, np.int16), (4, np.uint16),
                                        (5, np.int32), (6, np.uint32), (7, np.int64), (8, np.uint64),
                                        (9, np.int64), (10, np.uint64), (11, np.float32), (12, np.float64),
                                        (23, np.float16)])
def test_ptr_to_numpy_takes_pyacl_type_numbers(code, dtype):
    src = np.arange(12).astype(dtype)
    with pytest.warns(Warning, match="deprecated"):
        view = acl.util.ptr_to_numpy(src.ctypes.data, (3, 4), code)
    assert view.dtype == np.dtype(dtype) and view.shape == (3, 4)
    np.testing.assert_array_equal(view, src.reshape(3, 4))


def test_ptr_to_numpy_is_a_writeable_view(recwarn):
    src = np.arange(6, dtype=np.float32)
    view = acl.util.ptr_to_numpy(src.ctypes.data, (2, 3), 11)
    view[0, 0] = 42
    assert src[0] == 42
    assert acl.util.ptr_to_numpy(src.ctypes.data, (True, 3), np.int64(11)).shape == (1, 3)  # i and shape ints
    assert acl.util.ptr_to_numpy(src.ctypes.data, (), 11).shape == ()
    assert acl.util.ptr_to_numpy(0, (0,), 11).shape == (0,)


@pytest.mark.parametrize("shape,error", [
    ([4], ValueError), (4, ValueError), ((4.0,), TypeError), (("4",), TypeError), ((-1,), ValueError),
    ((2**64,), ValueError), ((2**63,), ValueError), ((2**62, 2**62), ValueError),
])
def test_ptr_to_numpy_shape_errors(recwarn, shape, error):
    """pyACL: PyTuple_Size (a non-tuple is a ValueError), PyLong elements (else TypeError) read by
    PyLong_AsVoidPtr (out of range: ValueError), numpy's dimension checks (ValueError)."""
    src = np.zeros(4, np.uint8)
    with pytest.raises(error):
        acl.util.ptr_to_numpy(src.ctypes.data, shape, 2)


def test_ptr_to_numpy_rejects_unknown_type_numbers_and_null(recwarn):
    with pytest.raises(ValueError, match="type 17"):
        acl.util.ptr_to_numpy(1, (1,), 17)  # NPY_OBJECT
    with pytest.raises(ValueError, match="type 99"):
        acl.util.ptr_to_numpy(1, (1,), 99)
    with pytest.raises(ValueError, match="NULL"):
        acl.util.ptr_to_numpy(0, (4,), 11)


def test_bytes_and_pointers():
    data = bytes(range(100))
    ptr = acl.util.bytes_to_ptr(data)
    assert ctypes.string_at(ptr, 100) == data
    assert acl.util.ptr_to_bytes(ptr, 100) == data
    assert acl.util.ptr_to_bytes(ptr + 2**64, True) == data[:1]  # k: masked, bool
    assert acl.util.ptr_to_bytes(0, 0) == b"" and acl.util.ptr_to_bytes(-1, 0) == b""
    assert acl.util.ptr_to_bytes(0, 4) == bytes(4)  # PyBytes_FromStringAndSize(NULL, 4): 4 fresh bytes

    class Blob(bytes):
        pass

    assert acl.util.ptr_to_bytes(acl.util.bytes_to_ptr(Blob(b"abc")), 3) == b"abc"


@pytest.mark.parametrize("value", [bytearray(b"abc"), "text", memoryview(b"abc"), np.zeros(3, np.uint8), 0],
                         ids=["bytearray", "str", "memoryview", "ndarray", "int"])
def test_bytes_to_ptr_refuses_non_bytes_with_value_error(value):
    with pytest.raises(ValueError, match="bytes"):
        acl.util.bytes_to_ptr(value)


@pytest.mark.parametrize("size", [2**63, 2**64 - 1, -1])
def test_ptr_to_bytes_refuses_sizes_from_2_63_with_value_error(size):
    with pytest.raises(ValueError, match="2\\*\\*63"):
        acl.util.ptr_to_bytes(1, size)


def test_pyacl_layer_copies_through_util_pointers(acl_res):
    data = np.random.default_rng(80).integers(0, 2**31, 256).astype(np.int32)
    size = data.nbytes
    dev, ret = acl.rt.malloc(size, C.ACL_MEM_MALLOC_HUGE_FIRST)
    assert ret == 0
    try:
        src = data.tobytes()
        assert acl.rt.memcpy(dev, size, acl.util.bytes_to_ptr(src), size, C.ACL_MEMCPY_HOST_TO_DEVICE) == 0
        out, ret = acl.rt.malloc_host(size)
        assert ret == 0
        assert acl.rt.memcpy(out, size, dev, size, C.ACL_MEMCPY_DEVICE_TO_HOST) == 0
        assert acl.util.ptr_to_bytes(out, size) == src
        assert acl.rt.free_host(out) == 0
    finally:
        assert acl.rt.free(dev) == 0


def test_missing_library_function_is_named(monkeypatch):
    _acl_lib.lib()
    monkeypatch.delitem(_acl_lib._functions, "aclrtMemcpyBatchV2")
    with pytest.raises(NotImplementedError, match="aclrtMemcpyBatchV2"):
        acl.rt.memcpy_batch_v2([1], [1], [1], [0], [], [])


# --- the calls real pyACL scripts need: contexts, run mode, device sync, memory info, memset -----------

def test_pyacl_memory_sample_runs(run_python):
    """examples/pyacl_memory_sample.py: written as the Ascend memory samples, with `import ms_memcopy.acl as acl`."""
    from pathlib import Path

    sample = Path(__file__).resolve().parents[1] / "examples" / "pyacl_memory_sample.py"
    result = run_python(sample.read_text())
    assert result.returncode == 0, result.stderr
    assert result.stdout.rstrip().endswith("pyacl memory sample: PASS")
    assert "free 0 ->" not in result.stdout


CONTEXT_SCRIPT = r'''
import json, threading
import ms_memcopy.acl as acl
out = {}
out["get_before"] = acl.rt.get_context()[1]
out["create_bad_device"] = acl.rt.create_context(99)[1]
out["set_device"] = acl.rt.set_device(0)
primary, out["get_primary"] = acl.rt.get_context()
ctx, out["create"] = acl.rt.create_context(1)
cur, _ = acl.rt.get_context()
out["current_is_new"] = cur == ctx and ctx != primary and ctx != 0
out["device_in_ctx"] = acl.rt.get_device()
stream, _ = acl.rt.create_stream()
dev, _ = acl.rt.malloc(64, 0)
host, _ = acl.rt.malloc_host(64)
out["copy_in_ctx"] = acl.rt.memcpy_async(dev, 64, host, 64, 1, stream)
out["sync_device"] = acl.rt.synchronize_device()
out["set_primary"] = acl.rt.set_context(primary)
out["device_in_primary"] = acl.rt.get_device()
out["copy_other_ctx"] = acl.rt.memcpy_async(dev, 64, host, 64, 1, stream)
out["memset_other_ctx"] = acl.rt.memset_async(dev, 64, 1, 64, stream)
seen = {}
def thread():
    seen["set"] = acl.rt.set_context(ctx)
    seen["device"] = acl.rt.get_device()
    seen["copy"] = acl.rt.memcpy_async(dev, 64, host, 64, 1, stream)
    seen["sync"] = acl.rt.synchronize_stream(stream)
t = threading.Thread(target=thread); t.start(); t.join()
out["thread"] = seen
out["destroy_primary"] = acl.rt.destroy_context(primary)
out["set_ctx_again"] = acl.rt.set_context(ctx)
out["destroy"] = acl.rt.destroy_context(ctx)
out["get_after_destroy"] = acl.rt.get_context()[1]  # the thread's own current context: none left
out["stream_after_destroy"] = acl.rt.synchronize_stream(stream)
out["destroy_again"] = acl.rt.destroy_context(ctx)
out["set_destroyed"] = acl.rt.set_context(ctx)
out["destroy_null"] = acl.rt.destroy_context(0)
out["set_null"] = acl.rt.set_context(0)
print(json.dumps(out))
'''


def test_contexts_are_bound_to_devices_and_threads(run_python):
    import json

    result = run_python(CONTEXT_SCRIPT)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out == {
        "get_before": RT_CONTEXT_NULL, "create_bad_device": 107001, "set_device": 0, "get_primary": 0,
        "create": 0, "current_is_new": True, "device_in_ctx": [1, 0], "copy_in_ctx": 0, "sync_device": 0,
        "set_primary": 0, "device_in_primary": [0, 0], "copy_other_ctx": RT_STREAM_CONTEXT,
        "memset_other_ctx": RT_STREAM_CONTEXT,
        "thread": {"set": 0, "device": [1, 0], "copy": 0, "sync": 0},
        "destroy_primary": RT_CONTEXT_NULL, "set_ctx_again": 0, "destroy": 0, "get_after_destroy": RT_CONTEXT_NULL,
        "stream_after_destroy": RT_INVALID_HANDLE, "destroy_again": RT_CONTEXT_NULL, "set_destroyed": RT_PARAM_INVALID,
        "destroy_null": INVALID_PARAM, "set_null": INVALID_PARAM}


def test_run_mode_is_host(acl_device):
    assert acl.rt.get_run_mode() == (C.ACL_HOST, 0)


def test_get_mem_info_tracks_device_allocations(acl_res):
    free0, total, ret = acl.rt.get_mem_info(C.ACL_HBM_MEM)
    assert ret == 0 and 0 < free0 <= total
    ptr = acl_res.device(1 << 20)
    free1, total1, ret = acl.rt.get_mem_info(C.ACL_DDR_MEM)
    padded = 1 << 20 | 32  # the allocation's recorded size on the default SoC (32 bytes of padding)
    assert (ret, total1, free0 - free1) == (0, total, padded)
    assert acl.rt.get_mem_info(18)[2] == RT_INVALID_MEMORY_TYPE
    assert acl.rt.get_mem_info(-1)[2] == RT_INVALID_MEMORY_TYPE
    assert ptr


def test_memset_and_memset_async(acl_res):
    dev = acl_res.upload(np.zeros(256, np.uint8))
    stream = acl_res.stream()
    assert acl.rt.memset(dev, 256, 0x1FF, 100) == 0  # the low byte of value
    expected = np.zeros(256, np.uint8)
    expected[:100] = 0xFF
    np.testing.assert_array_equal(acl_res.download(dev, 256), expected)
    assert acl.rt.memset_async(dev + 128, 128, 7, 128, stream) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    expected[128:] = 7
    np.testing.assert_array_equal(acl_res.download(dev, 256), expected)
    assert acl.rt.memset_async(dev, 256, 9, 256, 0) == 0  # the default stream
    assert acl.rt.synchronize_device() == 0
    np.testing.assert_array_equal(acl_res.download(dev, 256), np.full(256, 9, np.uint8))
    # codes: count 0 first, then NULL, count > max_count, pageable memory, an invalid stream
    assert acl.rt.memset(0, 0, 1, 0) == 0
    assert acl.rt.memset(0, 16, 1, 16) == INVALID_PARAM
    assert acl.rt.memset(dev, 16, 1, 32) == RT_PARAM_INVALID
    host = np.zeros(16, np.uint8)
    assert acl.rt.memset(host.ctypes.data, 16, 1, 16) == RT_PARAM_INVALID
    assert not host.any()
    # aclrtMemsetAsync sets pageable memory on the calling thread before it returns (CANN's MemSetAsync)
    assert acl.rt.memset_async(host.ctypes.data, 16, 0x102, 8, stream) == 0
    np.testing.assert_array_equal(host, np.repeat(np.uint8([2, 0]), 8))
    assert acl.rt.memset_async(dev, 256, 1, 256, 0xDEAD0000) == RT_INVALID_HANDLE
    assert acl.rt.memset_async(dev, 16, 1, 256, stream) == RT_PARAM_INVALID
    np.testing.assert_array_equal(acl_res.download(dev, 256), np.full(256, 9, np.uint8))


def test_numpy_contiguous_to_ptr(recwarn):
    a = np.arange(20, dtype=np.int32)
    ptr, out = acl.util.numpy_contiguous_to_ptr(a)
    assert out is a and ptr == a.ctypes.data
    strided = a[::2]
    ptr, out = acl.util.numpy_contiguous_to_ptr(strided)
    assert out.flags.c_contiguous and ptr == out.ctypes.data
    np.testing.assert_array_equal(np.frombuffer(ctypes.string_at(ptr, out.nbytes), np.int32), strided)
    fortran = np.asfortranarray(a.reshape(4, 5))
    ptr, out = acl.util.numpy_contiguous_to_ptr(fortran)
    assert out.flags.c_contiguous and (out == fortran).all() and ptr == out.ctypes.data
    assert deprecations(recwarn.list) and all(w.category is Warning for w in recwarn.list)


def test_every_wrapper_takes_positional_arguments_only():
    import inspect

    for module in (acl.rt, acl.util):
        for name in module.__all__:
            params = inspect.signature(getattr(module, name)).parameters.values()
            kinds = {p.kind for p in params}
            assert kinds <= {inspect.Parameter.POSITIONAL_ONLY}, f"{module.__name__}.{name}"
            assert all(p.default is inspect.Parameter.empty for p in params), f"{module.__name__}.{name}"


def test_init_takes_an_optional_str(run_python, tmp_path):
    config = tmp_path / "acl.json"
    config.write_text("{}")
    result = run_python("import ms_memcopy.acl as acl\n"
                        f"print(acl.init(), acl.finalize(), acl.init({str(config)!r}), acl.finalize(), acl.init(''))\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0", "0", "0", "0", "0"]
