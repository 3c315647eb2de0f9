"""Host runtime rows that follow CANN's runtime source where its public pages say otherwise.

One test per behaviour, each asserting CANN's exact code: invalid stream handles (107017), streams of
another device (107003), aclrtMemcpy2dAsync's NULL stream, misaligned descriptors at the call,
aclGetRecentErrMsg's per-thread text, aclFinalize / aclrtResetDevice codes, the timeout 0 rejection
(after the handle check), the context aclrtDestroyStream and aclrtSynchronizeStream need, and the
synchronous 2D copy that resolves to device-to-device.
"""

import numpy as np
import pytest

from ms_memcopy import acl_constants as C
from ms_memcopy import _runtime_env, errors
from ms_memcopy import runtime as rt
from _acl_support import ATTR_D2H, CHILD_PRELUDE, code, on_a_new_thread

INVALID_PARAM = 100000
REPEAT_FINALIZE = 100037
RT_PARAM_INVALID = 107000
RT_CONTEXT_NULL = 107002
RT_STREAM_CONTEXT = 107003
RT_INVALID_HANDLE = 107017
RT_FEATURE_NOT_SUPPORT = 207000
RT_CONTEXT_RELEASE_ERROR = 507007
H2D, D2H, D2D, DEFAULT = 1, 2, 3, 4
INNER_D2D = 6


def test_new_error_codes_have_their_header_names():
    assert (C.ACL_ERROR_RT_INVALID_HANDLE, C.ACL_ERROR_RT_CONTEXT_RELEASE_ERROR) == (107017, 507007)
    assert errors.error_name(107017) == "ACL_ERROR_RT_INVALID_HANDLE"
    assert errors.error_name(507007) == "ACL_ERROR_RT_CONTEXT_RELEASE_ERROR"


def _stream_calls(acl_res):
    """Every call that takes a stream, as (name, call(stream)) with arguments valid apart from the stream."""
    dev = acl_res.device(256)
    pinned = acl_res.pinned(256)
    desc = acl_res.device(64)
    rt.set_memcpy_desc(desc, INNER_D2D, dev, dev + 128, 64)
    return [
        ("synchronize_stream", lambda s: rt.synchronize_stream(s)),
        ("synchronize_stream_with_timeout", lambda s: rt.synchronize_stream_with_timeout(s, 10)),
        ("destroy_stream", lambda s: rt.destroy_stream(s)),
        ("memcpy_async", lambda s: rt.memcpy_async(dev, 64, pinned, 64, H2D, s)),
        ("memcpy_async_with_condition", lambda s: rt.memcpy_async_with_condition(dev, 64, pinned, 64, H2D, s)),
        ("memcpy2d_async", lambda s: rt.memcpy2d_async(dev, 16, pinned, 16, 16, 4, H2D, s)),
        ("memcpy_async_with_desc", lambda s: rt.memcpy_async_with_desc(desc, INNER_D2D, s)),
        ("memcpy_batch_async", lambda s: rt.memcpy_batch_async([pinned], [64], [dev], [64], [ATTR_D2H], [0], s)),
        ("memcpy_batch_async_v2",
         lambda s: rt.memcpy_batch_async_v2([pinned], [64], [dev], [64], [ATTR_D2H], [0], s)),
        ("set_stream_deferred", lambda s: rt.set_stream_deferred(s, True)),
        ("launch_host_func", lambda s: rt.launch_host_func(s, lambda: None)),
    ]


def test_destroyed_and_unknown_stream_handles_are_107017_everywhere(acl_res):
    dead = rt.create_stream()
    rt.destroy_stream(dead)
    for name, call in _stream_calls(acl_res):
        for stream in (dead, 0xDEAD0000):
            assert code(call, stream) == RT_INVALID_HANDLE, (name, hex(stream))


def _stream_on_device_1():
    rt.set_device(1)
    try:
        return rt.create_stream()
    finally:
        rt.set_device(0)
        rt.reset_device(0)  # the set_device(0) above counted one more reference


@pytest.mark.parametrize("call", ["memcpy_async", "memcpy2d_async"])
def test_stream_of_another_device_is_107003(acl_res, call):
    dev = acl_res.upload(np.zeros(64, np.uint8))
    pinned = acl_res.pinned(64)
    acl_res.view(pinned, 64)[:] = 7
    stream = _stream_on_device_1()
    try:
        if call == "memcpy_async":
            assert code(rt.memcpy_async, dev, 64, pinned, 64, H2D, stream) == RT_STREAM_CONTEXT
        else:
            assert code(rt.memcpy2d_async, dev, 16, pinned, 16, 16, 4, H2D, stream) == RT_STREAM_CONTEXT
        assert "another context (on device 1)" in rt.get_recent_err_msg().split("\n")[0]
        rt.synchronize_stream(stream)
        assert not acl_res.download(dev, 64).any(), "the refused copy was enqueued"
        # A copy with a pageable endpoint never reaches the stream's context check (CANN's pageable path
        # is a stream synchronize plus a synchronous copy).
        data = np.arange(64, dtype=np.uint8)
        rt.memcpy_async(dev, 64, data, 64, H2D, stream)
        np.testing.assert_array_equal(acl_res.download(dev, 64), data)
    finally:
        rt.set_device(1)  # aclrtDestroyStream needs the stream's context current (CANN's ApiImpl::StreamDestroy)
        rt.destroy_stream(stream)
        rt.set_device(0)
        rt.reset_device(0)
        rt.reset_device(1)
        rt.reset_device(1)


NULL_STREAM_2D = """
import ms_memcopy.acl as acl
import numpy as np
host = np.arange(64, dtype=np.uint8)
out = np.zeros(64, dtype=np.uint8)
print(acl.rt.memcpy2d_async(acl.util.numpy_to_ptr(out), 16, acl.util.numpy_to_ptr(host), 16, 16, 4, 4, 0))
print(acl.rt.set_device(0))
dev, ret = acl.rt.malloc(64, 0)
pinned, ret = acl.rt.malloc_host(64)
print(acl.rt.memcpy2d_async(dev, 16, pinned, 16, 16, 4, 1, 0))
"""


@pytest.mark.parametrize("soc,with_device", [("Ascend910B", 0), ("Ascend950", 0), ("Ascend910C", 0),
                                              ("Ascend310B", RT_PARAM_INVALID), ("Ascend310P", RT_PARAM_INVALID),
                                              ("Ascend910", RT_PARAM_INVALID)])
def test_memcpy2d_async_null_stream(run_python, soc, with_device):
    """Without a device the NULL stream is 107000 everywhere (not 107002); with one, only the SoCs that have
    a default-stream path for 2D copies accept it."""
    result = run_python(NULL_STREAM_2D, env={_runtime_env.SOC: soc})
    assert result.returncode == 0, result.stderr
    assert [int(v) for v in result.stdout.split()] == [RT_PARAM_INVALID, 0, with_device]


def test_misaligned_descriptor_is_rejected_at_the_call(acl_res):
    stream = acl_res.stream()
    desc = acl_res.device(128)
    src = acl_res.device(64)
    assert code(rt.memcpy_async_with_desc, desc + 8, INNER_D2D, stream) == RT_PARAM_INVALID
    assert "64-byte aligned" in rt.get_recent_err_msg().split("\n")[0]
    rt.set_memcpy_desc(desc, INNER_D2D, src, src, 64)
    assert code(rt.synchronize_stream, stream) == 0, "nothing was enqueued, so nothing fails later"


@pytest.mark.parametrize("count,stored", [(4 * 2**30, 0), (4 * 2**30 - 1, 2**32 - 1), (4 * 2**30 - 64, 2**32 - 64)])
def test_descriptor_count_is_stored_in_32_bits(acl_res, count, stored):
    """CANN's Context::SetMemcpyDesc accepts count <= 4 GiB and stores it in rtMemcpyAddrInfo::len, a
    uint32_t: exactly 4 GiB is stored as 0 and the copy moves nothing; aclrtMemcpyAsyncWithDesc and the
    synchronize succeed (CANN's host side never reads the length, so nothing in its source fails it).
    The device memory is never touched beyond the first page: the host runtime maps it lazily."""
    base = acl_res.device(2 * count)
    src, dst = base, base + count
    rt.memcpy(src, 64, np.full(64, 0x11, np.uint8), 64, H2D)
    rt.memcpy(dst, 64, np.full(64, 0xEE, np.uint8), 64, H2D)
    desc = acl_res.device(rt.get_memcpy_desc_size(INNER_D2D))
    rt.set_memcpy_desc(desc, INNER_D2D, src, dst, count)
    raw = acl_res.download(desc, 32)
    assert int(raw[24:28].view(np.uint32)[0]) == stored  # the count field (docs/host_runtime.md)
    assert int(raw[28:32].view(np.uint32)[0]) == 0  # reserved
    if stored == 0:
        stream = acl_res.stream()
        rt.memcpy_async_with_desc(desc, INNER_D2D, stream)
        rt.synchronize_stream(stream)
        np.testing.assert_array_equal(acl_res.download(dst, 64), np.full(64, 0xEE, np.uint8))


def test_malloc_host_needs_a_context_after_its_null_and_size_checks(run_python):
    """CANN: the ACL layer's NULL and size-0 checks (100000), then ApiImpl::HostMalloc's context check
    (107002); aclrtFreeHost needs no context (an unknown pointer is 107000, not 107002)."""
    result = run_python(
        "import ctypes\n"
        "from ms_memcopy import _acl_lib\n"
        "malloc_host, free_host = _acl_lib.func('aclrtMallocHost'), _acl_lib.func('aclrtFreeHost')\n"
        "p = ctypes.c_void_p()\n"
        "print(malloc_host(None, 64), malloc_host(ctypes.byref(p), 0), malloc_host(ctypes.byref(p), 64), p.value,\n"
        "      free_host(None), free_host(ctypes.c_void_p(64 * 1024)))\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(INVALID_PARAM), str(INVALID_PARAM), str(RT_CONTEXT_NULL), "None",
                                     str(INVALID_PARAM), str(RT_PARAM_INVALID)]


DESTROYED_OWN_CONTEXT = CHILD_PRELUDE + r"""
import threading
rt.set_device(0)
event, pinned, stream = rt.create_event(), rt.malloc_host(64), rt.create_stream()
rt.record_event(event, stream)
primary = rt.get_current_context()
ctx = rt.create_context(1)
rt.destroy_context(ctx)
print(code(rt.get_current_context), code(rt.create_event), code(rt.malloc_host, 64), code(rt.get_device))
print(code(rt.synchronize_event, event), code(rt.free_host, pinned))
print(code(rt.set_current_context, ctx))
seen = []
reader = threading.Thread(target=lambda: seen.append(rt.get_device()))
reader.start()
reader.join()
print(*seen)
rt.set_current_context(primary)
print(rt.get_device(), code(rt.destroy_event, event), code(rt.destroy_stream, stream))
"""


def test_destroying_the_threads_own_context_leaves_it_without_one(run_python):
    """Context::TearDown clears the calling thread's current context (CANN's unit test
    RunDestroyedContextHandleRejectedCase: rtCtxGetCurrent is 107002): no fallback to the device it set
    before. aclrtSynchronizeEvent and aclrtFreeHost need no context; setting the destroyed context is
    107000 (ApiErrorDecorator::ContextSetCurrent). A thread that never set a device still has the process
    default (the host runtime's stand-in for aclInit's default device)."""
    result = run_python(DESTROYED_OWN_CONTEXT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"{RT_CONTEXT_NULL} {RT_CONTEXT_NULL} {RT_CONTEXT_NULL} {RT_CONTEXT_NULL}",
                                          "0 0", str(RT_PARAM_INVALID), "0", "0 0 0"]


@pytest.mark.parametrize("how", ["destroyed", "unknown", "reset"])
def test_set_current_context_of_a_dead_context_is_107000(run_python, how):
    """ApiErrorDecorator::ContextSetCurrent: CHECK_CONTEXT_VALID_WITH_RETURN(inCtx, RT_ERROR_INVALID_VALUE)."""
    result = run_python(
        "from ms_memcopy import runtime as rt, AclError\n"
        "rt.set_device(0)\n"
        f"how = {how!r}\n"
        "if how == 'destroyed':\n"
        "    ctx = rt.create_context(0); rt.set_device(0); rt.destroy_context(ctx)\n"
        "elif how == 'unknown':\n"
        "    ctx = 0x7654320\n"
        "else:\n"
        "    rt.set_device(1); ctx = rt.get_current_context(); rt.reset_device(1); rt.set_device(0)\n"
        "try:\n"
        "    rt.set_current_context(ctx)\n"
        "except AclError as e:\n"
        "    print(e.code, rt.get_device())\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(RT_PARAM_INVALID), "0"]  # the thread keeps its context


def test_recent_error_message_is_kept_and_newest_first(acl_device):
    import ms_memcopy.acl as acl

    seen = {}

    def thread():
        seen["fresh"] = acl.get_recent_err_msg()
        assert acl.rt.free(0) == INVALID_PARAM
        seen["first"] = acl.get_recent_err_msg()
        seen["again"] = acl.get_recent_err_msg()
        assert acl.rt.malloc_host(0)[1] == INVALID_PARAM
        seen["both"] = acl.get_recent_err_msg()
        assert acl.rt.get_device_count()[1] == 0
        seen["after_success"] = acl.get_recent_err_msg()
        with pytest.raises(errors.AclError) as info:
            rt.free_host(0)
        seen["error_message"] = info.value.message
        seen["three"] = acl.get_recent_err_msg()

    on_a_new_thread(thread)
    assert seen["fresh"] is None
    assert seen["first"].startswith("aclrtFree: ") and seen["again"] == seen["first"]
    newest = seen["both"].split("\n")[0]
    assert newest.startswith("aclrtMallocHost: ") and seen["both"] == newest + "\n" + seen["first"]
    assert seen["after_success"] == seen["both"]
    # The raising layer reports only the message its failure added.
    assert seen["error_message"].startswith("aclrtFreeHost: ") and "\n" not in seen["error_message"]
    assert seen["three"] == seen["error_message"] + "\n" + seen["both"]


def test_finalize_without_init_then_again(run_python):
    result = run_python("import ms_memcopy.acl as acl\n"
                        "print(acl.finalize(), acl.finalize(), acl.init(), acl.finalize(), acl.finalize())\n")
    assert result.returncode == 0, result.stderr
    assert [int(v) for v in result.stdout.split()] == [0, REPEAT_FINALIZE, 0, 0, REPEAT_FINALIZE]


def test_reset_of_a_device_never_set_is_507007(run_python):
    result = run_python("import ms_memcopy.acl as acl\n"
                        "print(acl.rt.reset_device(3), acl.rt.set_device(3), acl.rt.reset_device(3),\n"
                        "      acl.rt.reset_device(3), acl.rt.reset_device(99))\n")
    assert result.returncode == 0, result.stderr
    assert [int(v) for v in result.stdout.split()] == [RT_CONTEXT_RELEASE_ERROR, 0, 0, RT_CONTEXT_RELEASE_ERROR,
                                                       107001]


def test_synchronize_with_timeout_zero_is_107000(acl_res):
    stream = acl_res.stream()
    assert code(rt.synchronize_stream_with_timeout, stream, 0) == RT_PARAM_INVALID
    assert code(rt.synchronize_stream_with_timeout, None, 0) == RT_PARAM_INVALID
    dead = rt.create_stream()
    rt.destroy_stream(dead)
    # The handle guard (rtStreamSynchronizeWithTimeout) comes before ApiErrorDecorator's timeout check;
    # only a timeout below -1 is refused first, by the ACL layer.
    assert code(rt.synchronize_stream_with_timeout, dead, 0) == RT_INVALID_HANDLE
    assert code(rt.synchronize_stream_with_timeout, dead, -2) == RT_PARAM_INVALID


def test_destroying_or_synchronizing_a_stream_needs_a_context(acl_device):
    """ApiImpl::StreamSynchronize and ApiImpl::StreamDestroy check the current context whatever the stream
    (107002 without one); StreamDestroy then needs the stream's own context (107003), while a stream of
    another context is synchronized (CANN switches to its context for the wait)."""
    codes = {}

    def on_a_thread():
        ctx1 = rt.create_context(1)
        stream = rt.create_stream()
        ctx0 = rt.create_context(0)
        codes["synchronize from another context"] = code(rt.synchronize_stream, stream)
        codes["destroy from another context"] = code(rt.destroy_stream, stream)
        rt.destroy_context(ctx0)
        codes["synchronize without a context"] = code(rt.synchronize_stream, stream)
        codes["synchronize with timeout without a context"] = code(rt.synchronize_stream_with_timeout, stream, 10)
        codes["destroy without a context"] = code(rt.destroy_stream, stream)
        rt.set_current_context(ctx1)
        codes["destroy in its context"] = code(rt.destroy_stream, stream)
        rt.destroy_context(ctx1)

    on_a_new_thread(on_a_thread)
    assert codes == {"synchronize from another context": 0, "destroy from another context": RT_STREAM_CONTEXT,
                     "synchronize without a context": RT_CONTEXT_NULL,
                     "synchronize with timeout without a context": RT_CONTEXT_NULL,
                     "destroy without a context": RT_CONTEXT_NULL, "destroy in its context": 0}


@pytest.mark.parametrize("kind,expected", [(D2D, RT_FEATURE_NOT_SUPPORT), (DEFAULT, RT_PARAM_INVALID),
                                           (H2D, RT_PARAM_INVALID), (D2H, RT_PARAM_INVALID)])
def test_sync_memcpy2d_between_device_buffers(acl_res, kind, expected):
    """Only an explicit D2D kind is 207000; DEFAULT or a kind corrected to D2D by the locations is 107000."""
    src = acl_res.upload(np.arange(64, dtype=np.uint8))
    dst = acl_res.upload(np.zeros(64, np.uint8))
    assert code(rt.memcpy2d, dst, 16, src, 16, 16, 4, kind) == expected
    assert not acl_res.download(dst, 64).any()


def test_error_text_is_bounded_and_error_messages_stay_short(acl_device):
    """The runtime keeps at most 64 KiB of text (oldest messages dropped); AclError.message stays the newest
    message even once older ones are being dropped."""
    seen = {}

    def thread():
        for _ in range(1200):  # about 100 bytes per message: well past the bound
            with pytest.raises(errors.AclError) as info:
                rt.malloc(0)
        seen["message"] = info.value.message
        seen["text"] = rt.get_recent_err_msg()

    on_a_new_thread(thread)
    assert seen["message"].startswith("aclrtMalloc: size is 0") and "\n" not in seen["message"]
    assert 60 * 1024 < len(seen["text"].encode()) <= 64 * 1024
    assert seen["text"].split("\n")[-1].startswith("aclrtMalloc: ")  # whole messages are dropped
