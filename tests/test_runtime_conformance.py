"""Every validation row of the ACL memory-copy calls returns its exact code, in the order docs/host_runtime.md gives.

Rows are grouped as in docs/host_runtime.md (copies, 2D copies, descriptor copies, batch copies, init/memory/streams).
Batch failIndex rows call the C functions through ctypes with a sentinel failIndex, so that "not written"
(sentinel kept) and "written SIZE_MAX" can be told apart. SoC feature gates (207000 per chip) are in
test_runtime_soc.py, the runtime decisions of the host runtime in test_runtime_decisions.py.
"""
import ctypes
import threading
from collections import namedtuple

import numpy as np
import pytest

from ms_memcopy import AclError, _acl_lib
from ms_memcopy import _convert as cv
from ms_memcopy import runtime as rt
from ms_memcopy.acl_constants import (
    ACL_MEM_LOCATION_TYPE_DEVICE as DEVICE,
    ACL_MEM_LOCATION_TYPE_HOST as HOST,
    ACL_MEM_LOCATION_TYPE_HOST_NUMA as HOST_NUMA,
    ACL_MEM_LOCATION_TYPE_UNREGISTERED as UNREGISTERED,
    SIZE_MAX,
)

from _acl_support import (ATTR_H2D, D2D, D2H, DEFAULT, H2BUF2D, H2D, H2H, INNER_D2D, INTER_D2D, code,
                          rand_bytes)

INVALID_PARAM = 100000
REPEAT_INITIALIZE = 100002
REPEAT_FINALIZE = 100037
RT_PARAM_INVALID = 107000
RT_INVALID_HANDLE = 107017
RT_FEATURE_NOT_SUPPORT = 207000
RT_MEMORY_ALLOCATION = 207001
RT_STREAM_SYNC_TIMEOUT = 507046
SENTINEL = 0x5EED  # a failIndex value no call writes: "left unwritten"


# --- copies: aclrtMemcpy / aclrtMemcpyAsync / aclrtMemcpyAsyncWithCondition ----------------------

Copy = namedtuple("Copy", ["api", "run", "sync"])

COPY_APIS = ["aclrtMemcpy", "aclrtMemcpyAsync", "aclrtMemcpyAsyncWithCondition"]
ASYNC_COPY_APIS = COPY_APIS[1:]


def _copy_fixture(api, acl_res):
    stream = acl_res.stream()
    fns = {"aclrtMemcpy": lambda *a: rt.memcpy(*a),
           "aclrtMemcpyAsync": lambda *a: rt.memcpy_async(*a, stream=stream),
           "aclrtMemcpyAsyncWithCondition": lambda *a: rt.memcpy_async_with_condition(*a, stream=stream)}
    return Copy(api, fns[api], lambda: rt.synchronize_stream(stream))


@pytest.fixture(params=COPY_APIS)
def copy(request, acl_res):
    return _copy_fixture(request.param, acl_res)


@pytest.fixture(params=ASYNC_COPY_APIS)
def async_copy(request, acl_res):
    return _copy_fixture(request.param, acl_res)


def test_copy_errors_name_the_c_function(copy, acl_res):
    dev = acl_res.device(64)
    with pytest.raises(AclError) as info:
        copy.run(dev, 64, 0, 16, H2D)
    assert (info.value.api, info.value.code, info.value.fail_index) == (copy.api, INVALID_PARAM, None)
    assert info.value.message, "the runtime gave no aclGetRecentErrMsg text"
    assert "\n" not in info.value.message, "AclError.message is this failure's message, not the older ones"
    text = rt.get_recent_err_msg()
    assert text.split("\n")[0] == info.value.message, "reading does not clear the text; the newest comes first"


def test_copy_count_zero_is_a_noop_checked_before_null(copy, acl_res):
    assert code(copy.run, 0, 0, 0, 0, H2D) == 0
    assert code(copy.run, 0, 64, 0, 0, D2D) == 0
    dev = acl_res.upload(np.full(64, 7, np.uint8))
    src = np.arange(64, dtype=np.uint8)
    assert code(copy.run, dev, 64, src, 0, H2D) == 0
    copy.sync()
    assert (acl_res.download(dev, 64) == 7).all()


@pytest.fixture(params=["dst", "src"])
def null_end(request, acl_res):
    """(dst, src) of a host-to-device copy of up to 64 bytes whose dst (or src) is NULL."""
    dev, host = acl_res.device(64), np.zeros(64, np.uint8)
    return (0, host) if request.param == "dst" else (dev, 0)


def test_copy_null_pointer(copy, null_end):
    dst, src = null_end
    assert code(copy.run, dst, 64, src, 16, H2D) == INVALID_PARAM


@pytest.mark.parametrize("kind", [INNER_D2D, INTER_D2D, 8, 100, -1])
def test_copy_kind_outside_0_to_5(copy, acl_res, kind):
    a, b = acl_res.device(64), acl_res.device(64)
    with pytest.raises(AclError) as info:
        copy.run(a, 64, b, 16, kind)
    assert info.value.code == INVALID_PARAM
    assert info.value.message and "expected" in info.value.message.lower(), info.value.message


@pytest.mark.parametrize("kind", [H2H, H2D, D2H, D2D, DEFAULT, H2BUF2D])
def test_copy_kinds_0_to_5_pass_the_kind_check(copy, acl_res, kind):
    """Kinds 0..5 pass MemcpyKindTranslate; pinned -> device is then an H2D whatever the kind says
    (H2H on the async calls is the one exception: test_async_h2h_not_supported)."""
    if kind == H2H and copy.api != "aclrtMemcpy":
        kind = DEFAULT
    data = rand_bytes(64, 9)
    src = acl_res.pinned(64)
    acl_res.view(src, 64)[:] = data
    dev = acl_res.device(64)
    assert code(copy.run, dev, 64, src, 64, kind) == 0
    copy.sync()
    assert (acl_res.download(dev, 64) == data).all()


@pytest.mark.parametrize("count", [63, 64, 65])
def test_copy_count_against_dest_max(copy, acl_res, count):
    src = rand_bytes(128, count)
    dev = acl_res.upload(np.zeros(128, np.uint8))
    expected = 0 if count <= 64 else RT_PARAM_INVALID
    assert code(copy.run, dev, 64, src, count, H2D) == expected
    copy.sync()
    ref = np.zeros(128, np.uint8)
    if expected == 0:
        ref[:count] = src[:count]
    assert (acl_res.download(dev, 128) == ref).all()


@pytest.mark.parametrize("dest_max", [0, 1])
def test_memcpy_sync_dest_max_zero(acl_res, dest_max):
    dev = acl_res.device(64)
    src = np.ones(64, np.uint8)
    assert code(rt.memcpy, dev, dest_max, src, 1, H2D) == (RT_PARAM_INVALID if dest_max == 0 else 0)


def test_copy_dst_equal_src_is_a_noop(copy, acl_res):
    data = rand_bytes(256, 1)
    dev = acl_res.upload(data)
    assert code(copy.run, dev, 256, dev, 256, D2D) == 0
    copy.sync()
    assert (acl_res.download(dev, 256) == data).all()


@pytest.mark.parametrize("memory", ["pinned", "pageable"])
def test_async_h2h_not_supported(async_copy, acl_res, memory):
    if memory == "pinned":
        a, b = acl_res.pinned(64), acl_res.pinned(64)
        acl_res.view(a, 64)[:] = 5
        acl_res.view(b, 64)[:] = 9
        dst_view = acl_res.view(b, 64)
    else:
        a, b = np.full(64, 5, np.uint8), np.full(64, 9, np.uint8)
        dst_view = b
    assert code(async_copy.run, b, 64, a, 64, H2H) == RT_FEATURE_NOT_SUPPORT
    async_copy.sync()
    assert (dst_view == 9).all()


@pytest.mark.parametrize("direction,kind", [("h2d", D2H), ("h2d", D2D), ("d2h", H2D), ("d2d", H2D), ("d2d", D2H)])
def test_kind_contradicting_pinned_or_device_locations_is_corrected(copy, acl_res, direction, kind):
    """Both endpoints pinned or device memory: a kind that contradicts them is silently corrected."""
    data = rand_bytes(512, 2)
    pinned = acl_res.pinned(512)
    if direction == "h2d":
        acl_res.view(pinned, 512)[:] = data
        src, dst = pinned, acl_res.upload(np.zeros(512, np.uint8))
        read = lambda: acl_res.download(dst, 512)
    elif direction == "d2h":
        acl_res.view(pinned, 512)[:] = 0
        src, dst = acl_res.upload(data), pinned
        read = lambda: acl_res.view(pinned, 512)
    else:
        src, dst = acl_res.upload(data), acl_res.upload(np.zeros(512, np.uint8))
        read = lambda: acl_res.download(dst, 512)
    assert code(copy.run, dst, 512, src, 512, kind) == 0
    copy.sync()
    assert (read() == data).all()


@pytest.mark.parametrize("direction", ["d2h", "d2d"])
def test_host_to_buf_to_device_kind_needs_host_src_and_device_dst(copy, acl_res, direction):
    """Kind 5 is not auto-corrected: CANN's extended-location check (MemcpyAsyncCheckExLocation in
    hicann/runtime api_error.cc) requires a host source and a device destination, else 107000."""
    data = rand_bytes(128, 4)
    src = acl_res.upload(data)
    if direction == "d2h":
        dst = acl_res.pinned(128)
        acl_res.view(dst, 128)[:] = 0
        read = lambda: acl_res.view(dst, 128)
    else:
        dst = acl_res.upload(np.zeros(128, np.uint8))
        read = lambda: acl_res.download(dst, 128)
    assert code(copy.run, dst, 128, src, 128, H2BUF2D) == RT_PARAM_INVALID
    copy.sync()
    assert (read() == 0).all()


@pytest.mark.parametrize("kind,expected", [(D2H, RT_PARAM_INVALID), (H2D, 0), (D2D, 0)])
def test_pageable_to_device_kind_revision(copy, acl_res, kind, expected):
    """pageable -> device needs H2D or D2D; other kinds are 107000 (MemcpyKindReviseMap)."""
    src = rand_bytes(256, 3)
    dev = acl_res.upload(np.zeros(256, np.uint8))
    assert code(copy.run, dev, 256, src, 256, kind) == expected
    copy.sync()
    assert (acl_res.download(dev, 256) == (src if expected == 0 else 0)).all()


def test_pageable_to_device_with_h2h_kind_sync(acl_res):
    """The sync call allows H2H, so pageable -> device with H2H reaches the revision: 107000.
    (On the async calls H2H is 207000 first: test_async_h2h_not_supported.)"""
    src = rand_bytes(256, 4)
    dev = acl_res.upload(np.zeros(256, np.uint8))
    assert code(rt.memcpy, dev, 256, src, 256, H2H) == RT_PARAM_INVALID
    assert (acl_res.download(dev, 256) == 0).all()


# --- 2D copies: aclrtMemcpy2d / aclrtMemcpy2dAsync ------------------------------------------------

COPY2D_APIS = ["aclrtMemcpy2d", "aclrtMemcpy2dAsync"]


@pytest.fixture(params=COPY2D_APIS)
def copy2d(request, acl_res):
    stream = acl_res.stream()
    fns = {"aclrtMemcpy2d": lambda *a: rt.memcpy2d(*a),
           "aclrtMemcpy2dAsync": lambda *a: rt.memcpy2d_async(*a, stream=stream)}
    return Copy(request.param, fns[request.param], lambda: rt.synchronize_stream(stream))


@pytest.mark.parametrize("width,height", [(0, 4), (8, 0), (0, 0)])
def test_2d_zero_width_or_height_is_a_noop(copy2d, acl_res, width, height):
    dev = acl_res.upload(np.full(64, 3, np.uint8))
    src = np.arange(64, dtype=np.uint8)
    assert code(copy2d.run, dev, 16, src, 16, width, height, H2D) == 0
    copy2d.sync()
    assert (acl_res.download(dev, 64) == 3).all()


def test_2d_null_pointer(copy2d, null_end):
    dst, src = null_end
    assert code(copy2d.run, dst, 16, src, 16, 8, 4, H2D) == INVALID_PARAM


@pytest.mark.parametrize("spitch,dpitch,expected", [
    (8, 16, 0), (16, 8, 0),                              # width == pitch is allowed
    (7, 16, INVALID_PARAM), (16, 7, INVALID_PARAM),      # width > spitch, width > dpitch
])
def test_2d_width_against_pitch(copy2d, acl_res, spitch, dpitch, expected):
    src = np.arange(64, dtype=np.uint8)
    dev = acl_res.upload(np.zeros(64, np.uint8))
    assert code(copy2d.run, dev, dpitch, src, spitch, 8, 3, H2D) == expected


@pytest.mark.parametrize("kind", [H2H, H2BUF2D, INNER_D2D, INTER_D2D, 8])
def test_2d_kind_outside_h2d_d2h_d2d_default(copy2d, acl_res, kind):
    a, b = acl_res.device(64), acl_res.device(64)
    assert code(copy2d.run, a, 16, b, 16, 8, 2, kind) == INVALID_PARAM


@pytest.mark.parametrize("pitch", ["dpitch", "spitch"])
def test_2d_zero_pitch_hits_width_check_first(copy2d, acl_res, pitch):
    """dpitch/spitch == 0 (runtime: 107000) always has width > pitch, which the ACL layer rejects first."""
    dev, src = acl_res.device(64), np.ones(64, np.uint8)
    dpitch, spitch = (0, 16) if pitch == "dpitch" else (16, 0)
    assert code(copy2d.run, dev, dpitch, src, spitch, 1, 1, H2D) == INVALID_PARAM


def _limit_case(copy2d, acl_res, width, height):
    nbytes = width * height
    src = np.full(nbytes, 0x5A, np.uint8)
    src[::4093] = 0xA5
    src[-1] = 0x3C
    dev = acl_res.device(nbytes)
    ret = code(copy2d.run, dev, width, src, width, width, height, H2D)
    copy2d.sync()
    return ret, src, dev


@pytest.mark.parametrize("height,expected", [(5242879, 0), (5242880, 0), (5242881, RT_PARAM_INVALID)])
def test_2d_height_limit(copy2d, acl_res, height, expected):
    ret, src, dev = _limit_case(copy2d, acl_res, 1, height)
    assert ret == expected
    if expected == 0:
        assert (acl_res.download(dev, height) == src).all()


@pytest.mark.parametrize("width,expected", [(4999999, 0), (5000000, 0), (5000001, RT_PARAM_INVALID)])
def test_2d_width_limit(copy2d, acl_res, width, expected):
    ret, src, dev = _limit_case(copy2d, acl_res, width, 1)
    assert ret == expected
    if expected == 0:
        assert (acl_res.download(dev, width) == src).all()


def test_memcpy2d_sync_device_to_device_not_supported(acl_res):
    a = acl_res.upload(np.arange(64, dtype=np.uint8))
    b = acl_res.upload(np.zeros(64, np.uint8))
    assert code(rt.memcpy2d, b, 16, a, 16, 8, 4, D2D) == RT_FEATURE_NOT_SUPPORT
    assert (acl_res.download(b, 64) == 0).all()


# --- descriptor copies ---------------------------------------------------------------------------

@pytest.fixture
def desc_setup(acl_res):
    """(desc, src, dst, stream) with src holding 0..255 and a descriptor of the reported size."""
    size = rt.get_memcpy_desc_size(INNER_D2D)
    desc = acl_res.device(max(size, 128))
    src = acl_res.upload(np.arange(256, dtype=np.uint8))
    dst = acl_res.upload(np.zeros(256, np.uint8))
    return desc, src, dst, acl_res.stream()


@pytest.mark.parametrize("kind", [8, 9, 100])
def test_desc_kind_8_or_more(desc_setup, kind):
    desc, src, dst, stream = desc_setup
    assert code(rt.get_memcpy_desc_size, kind) == INVALID_PARAM
    assert code(rt.set_memcpy_desc, desc, kind, src, dst, 16) == INVALID_PARAM
    rt.set_memcpy_desc(desc, INNER_D2D, src, dst, 16)
    assert code(rt.memcpy_async_with_desc, desc, kind, stream) == INVALID_PARAM


@pytest.mark.parametrize("kind", [H2H, H2D, D2H, D2D, DEFAULT, H2BUF2D, INTER_D2D])
def test_desc_kind_other_than_inner_device_to_device(desc_setup, acl_res, kind):
    desc, src, dst, stream = desc_setup
    assert code(rt.get_memcpy_desc_size, kind) == RT_FEATURE_NOT_SUPPORT
    assert code(rt.set_memcpy_desc, desc, kind, src, dst, 16) == RT_FEATURE_NOT_SUPPORT
    rt.set_memcpy_desc(desc, INNER_D2D, src, dst, 16)
    assert code(rt.memcpy_async_with_desc, desc, kind, stream) == RT_FEATURE_NOT_SUPPORT
    rt.synchronize_stream(stream)
    assert (acl_res.download(dst, 256) == 0).all()


def test_get_memcpy_desc_size_null_output():
    assert _acl_lib.func("aclrtGetMemcpyDescSize")(INNER_D2D, None) == INVALID_PARAM


@pytest.mark.parametrize("case", ["desc", "src", "dst", "count0", "config"])
def test_set_memcpy_desc_null_zero_or_config(desc_setup, acl_res, case):
    desc, src, dst, _ = desc_setup
    args = {"desc": desc, "src": src, "dst": dst, "count": 16, "config": None}
    if case == "count0":
        args["count"] = 0
    elif case == "config":
        args["config"] = acl_res.device(64)
    else:
        args[case] = 0
    assert code(rt.set_memcpy_desc, args["desc"], INNER_D2D, args["src"], args["dst"], args["count"],
                config=args["config"]) == INVALID_PARAM


def test_memcpy_async_with_desc_null_desc_or_null_stream(desc_setup, acl_res):
    desc, src, dst, stream = desc_setup
    rt.set_memcpy_desc(desc, INNER_D2D, src, dst, 64)
    assert code(rt.memcpy_async_with_desc, 0, INNER_D2D, stream) == INVALID_PARAM
    assert code(rt.memcpy_async_with_desc, desc, INNER_D2D, None) == INVALID_PARAM  # NULL is not the default stream
    rt.synchronize_stream(stream)
    assert (acl_res.download(dst, 256) == 0).all()


@pytest.mark.parametrize("extra,expected", [(-1, 0), (0, 0), (1, RT_PARAM_INVALID)])
def test_set_memcpy_desc_count_limit_4gib(desc_setup, acl_res, extra, expected):
    """count > 4 GiB is 107000. The n-1 / n cases need 4 GiB of device memory on each side; one
    8 GiB allocation holds both (the host runtime maps it lazily)."""
    desc = desc_setup[0]
    count = 4 * 2**30 + extra
    if expected == 0:
        base = acl_res.device(2 * count)
        src, dst = base, base + count
    else:
        src, dst = desc_setup[1], desc_setup[2]
    assert code(rt.set_memcpy_desc, desc, INNER_D2D, src, dst, count) == expected


@pytest.mark.parametrize("offset,expected", [(0, 0), (32, RT_PARAM_INVALID), (64, 0)])
def test_set_memcpy_desc_alignment(desc_setup, acl_res, offset, expected):
    _, src, dst, _ = desc_setup
    desc = acl_res.device(256)
    assert code(rt.set_memcpy_desc, desc + offset, INNER_D2D, src, dst, 16) == expected


@pytest.mark.parametrize("where", ["pinned", "pageable"])
def test_set_memcpy_desc_not_in_device_memory(desc_setup, acl_res, where):
    _, src, dst, _ = desc_setup
    if where == "pinned":
        desc = acl_res.pinned(256)
        assert desc % 64 == 0
    else:
        buf = np.zeros(256 + 64, np.uint8)
        desc = buf.ctypes.data + (-buf.ctypes.data % 64)
    assert code(rt.set_memcpy_desc, desc, INNER_D2D, src, dst, 16) == RT_PARAM_INVALID


@pytest.mark.parametrize("case", ["src_pinned", "dst_pinned", "src_pageable", "src_other_device",
                                  "dst_other_device"])
def test_set_memcpy_desc_src_dst_must_be_device_memory_of_one_device(desc_setup, acl_res, case):
    desc, src, dst, _ = desc_setup
    host = np.zeros(256, np.uint8)
    other = {"src_pinned": acl_res.pinned(256), "dst_pinned": acl_res.pinned(256), "src_pageable": host,
             "src_other_device": acl_res.device(256, device_id=1),
             "dst_other_device": acl_res.device(256, device_id=1)}[case]
    if case.startswith("src"):
        src = other
    else:
        dst = other
    assert code(rt.set_memcpy_desc, desc, INNER_D2D, src, dst, 16) == RT_PARAM_INVALID


# --- batch copies ----------------------------------------------------------------------------------

def raw_batch(*, dsts, dest_maxs, srcs, sizes, attrs, attrs_indexes, num_batches=None, num_attrs=None,
              sync=False, stream=None, fail_index=SENTINEL, null_fail_index=False):
    """Calls aclrtMemcpyBatch/aclrtMemcpyBatchAsync through ctypes; returns (ret, failIndex after the call).

    None for an array passes NULL; num_batches/num_attrs default to the list lengths.
    """
    if num_batches is None:
        num_batches = len(sizes) if sizes is not None else len(dsts)
    if num_attrs is None:
        num_attrs = len(attrs) if attrs is not None else len(attrs_indexes or ())
    args = cv.batch_arrays(dsts, dest_maxs, srcs, sizes, num_batches, attrs, attrs_indexes, num_attrs)
    fi = ctypes.c_size_t(fail_index)
    fi_arg = None if null_fail_index else ctypes.byref(fi)
    if sync:
        ret = _acl_lib.func("aclrtMemcpyBatch")(*args, fi_arg)
    else:
        ret = _acl_lib.func("aclrtMemcpyBatchAsync")(*args, fi_arg, stream)
    return ret, fi.value


class Batch:
    """n H2D copies of `size` bytes: pinned host sources (random data) -> device destinations."""

    def __init__(self, acl_res, n=4, size=64, seed=0):
        self.res, self.n, self.size = acl_res, n, size
        self.data = [rand_bytes(size, seed + i) for i in range(n)]
        self.srcs = []
        for d in self.data:
            p = acl_res.pinned(size)
            acl_res.view(p, size)[:] = d
            self.srcs.append(p)
        self.dsts = [acl_res.upload(np.zeros(size, np.uint8)) for _ in range(n)]
        self.dest_maxs = [size] * n
        self.sizes = [size] * n
        self.stream = acl_res.stream()

    def kwargs(self, **override):
        kw = dict(dsts=list(self.dsts), dest_maxs=list(self.dest_maxs), srcs=list(self.srcs),
                  sizes=list(self.sizes), attrs=[ATTR_H2D], attrs_indexes=[0], stream=self.stream)
        kw.update(override)
        return kw

    def copied(self):
        """Per item: True when the destination holds the source data, False when it is untouched (zeros)."""
        rt.synchronize_stream(self.stream)
        out = []
        for dst, d in zip(self.dsts, self.data):
            got = self.res.download(dst, self.size)
            assert (got == d).all() or (got == 0).all(), "a destination is partly written"
            out.append(bool((got == d).all()))
        return out


@pytest.fixture(params=["async", "sync"])
def batch_mode(request):
    return request.param


def test_batch_valid_call_writes_fail_index_size_max(acl_res, batch_mode):
    """The runtime entry writes *failIndex = SIZE_MAX first; a valid batch leaves it there."""
    b = Batch(acl_res)
    assert raw_batch(**b.kwargs(), sync=batch_mode == "sync") == (0, SIZE_MAX)
    assert b.copied() == [True] * 4


def test_batch_async_null_stream_is_the_default_stream(acl_res):
    b = Batch(acl_res)
    assert raw_batch(**b.kwargs(stream=None)) == (0, SIZE_MAX)
    rt.synchronize_stream(None)
    assert b.copied() == [True] * 4


def test_batch_null_fail_index_is_checked_first(acl_res, batch_mode):
    b = Batch(acl_res)
    assert raw_batch(**b.kwargs(), sync=batch_mode == "sync", null_fail_index=True)[0] == INVALID_PARAM
    # before the all-zero shortcut, which would return 0
    assert raw_batch(**b.kwargs(sizes=[0] * 4), sync=batch_mode == "sync", null_fail_index=True)[0] == INVALID_PARAM
    assert b.copied() == [False] * 4


def test_batch_null_sizes_or_zero_batches(acl_res, batch_mode):
    b = Batch(acl_res)
    sync = batch_mode == "sync"
    assert raw_batch(**b.kwargs(sizes=None), num_batches=4, sync=sync) == (INVALID_PARAM, SENTINEL)
    assert raw_batch(**b.kwargs(), num_batches=0, sync=sync) == (INVALID_PARAM, SENTINEL)


def test_batch_all_zero_sizes_shortcut_skips_every_other_check(acl_res, batch_mode):
    sync = batch_mode == "sync"
    b = Batch(acl_res)
    assert raw_batch(**b.kwargs(sizes=[0] * 4), sync=sync) == (0, SIZE_MAX)
    # NULL arrays, NULL attrs and numAttrs 0 are not looked at
    assert raw_batch(dsts=None, dest_maxs=None, srcs=None, sizes=[0, 0, 0], attrs=None, attrs_indexes=None,
                     num_attrs=0, sync=sync, stream=b.stream) == (0, SIZE_MAX)
    assert b.copied() == [False] * 4


@pytest.mark.parametrize("null", ["dsts", "dest_maxs", "srcs", "attrs", "attrs_indexes"])
def test_batch_null_arrays(acl_res, batch_mode, null):
    b = Batch(acl_res)
    kw = b.kwargs(**{null: None})
    assert raw_batch(**kw, num_batches=4, num_attrs=1, sync=batch_mode == "sync") == (INVALID_PARAM, SENTINEL)
    assert b.copied() == [False] * 4


@pytest.mark.parametrize("dest_max,expected", [(63, (INVALID_PARAM, SENTINEL)), (64, (0, SIZE_MAX)),
                                               (65, (0, SIZE_MAX))])
def test_batch_dest_max_below_size(acl_res, batch_mode, dest_max, expected):
    b = Batch(acl_res)
    dest_maxs = [64, 64, dest_max, 64]
    assert raw_batch(**b.kwargs(dest_maxs=dest_maxs), sync=batch_mode == "sync") == expected
    assert b.copied() == [expected[0] == 0] * 4


def test_batch_nonzero_rsv(acl_res, batch_mode):
    b = Batch(acl_res)
    bad = dict(ATTR_H2D, rsv=[0] * 15 + [1])
    assert raw_batch(**b.kwargs(attrs=[bad]), sync=batch_mode == "sync") == (INVALID_PARAM, SENTINEL)
    assert b.copied() == [False] * 4


def test_batch_rsv_checked_only_below_num_attrs(acl_res, batch_mode):
    b = Batch(acl_res)
    bad = dict(ATTR_H2D, rsv=b"\x01" * 16)
    assert raw_batch(**b.kwargs(attrs=[ATTR_H2D, bad], attrs_indexes=[0, 2]), num_attrs=1,
                     sync=batch_mode == "sync") == (0, SIZE_MAX)
    assert b.copied() == [True] * 4


def test_batch_dest_max_checked_before_runtime_checks(acl_res, batch_mode):
    """The ACL-layer destMax loop (100000, failIndex unwritten) runs before numAttrs == 0 (107000)."""
    b = Batch(acl_res)
    assert raw_batch(**b.kwargs(dest_maxs=[64, 1, 64, 64]), num_attrs=0, sync=batch_mode == "sync") == \
        (INVALID_PARAM, SENTINEL)


@pytest.mark.parametrize("num_attrs,expected", [(0, (RT_PARAM_INVALID, SIZE_MAX)), (1, (0, SIZE_MAX)),
                                                (3, (0, SIZE_MAX)), (4, (0, SIZE_MAX)),
                                                (5, (RT_PARAM_INVALID, SIZE_MAX))])
def test_batch_num_attrs_zero_or_above_num_batches(acl_res, batch_mode, num_attrs, expected):
    b = Batch(acl_res)
    attrs, indexes = [ATTR_H2D] * 5, [0, 1, 2, 3, 4]
    assert raw_batch(**b.kwargs(attrs=attrs, attrs_indexes=indexes), num_attrs=num_attrs,
                     sync=batch_mode == "sync") == expected
    assert b.copied() == [expected[0] == 0] * 4


@pytest.mark.parametrize("indexes,expected", [
    ([0, 3], (0, SIZE_MAX)),                    # last index numBatches - 1
    ([0, 4], (RT_PARAM_INVALID, SIZE_MAX)),     # index >= numBatches
    ([1], (RT_PARAM_INVALID, SIZE_MAX)),        # attrsIndexes[0] != 0
    ([0, 2, 2], (RT_PARAM_INVALID, SIZE_MAX)),  # not strictly increasing
    ([0, 2, 1], (RT_PARAM_INVALID, SIZE_MAX)),
])
def test_batch_attrs_indexes(acl_res, batch_mode, indexes, expected):
    b = Batch(acl_res)
    assert raw_batch(**b.kwargs(attrs=[ATTR_H2D] * len(indexes), attrs_indexes=indexes),
                     sync=batch_mode == "sync") == expected
    assert b.copied() == [expected[0] == 0] * 4


def test_batch_attrs_indexes_checked_before_items(acl_res, batch_mode):
    b = Batch(acl_res)
    srcs = [0] + b.srcs[1:]
    assert raw_batch(**b.kwargs(srcs=srcs, attrs_indexes=[1]), sync=batch_mode == "sync") == \
        (RT_PARAM_INVALID, SIZE_MAX)


def test_batch_async_stream_checked_before_fail_index_is_set(acl_res):
    b = Batch(acl_res)
    dead = rt.create_stream()
    rt.destroy_stream(dead)
    assert raw_batch(**b.kwargs(stream=dead, attrs_indexes=[1])) == (RT_INVALID_HANDLE, SENTINEL)
    assert b.copied() == [False] * 4


def _tiny_batch(acl_res, n):
    src = acl_res.pinned(8 * n)
    acl_res.view(src, 8 * n)[:] = np.arange(8 * n, dtype=np.uint64).astype(np.uint8)
    dst = acl_res.upload(np.zeros(8 * n, np.uint8))
    kw = dict(dsts=[dst + 8 * i for i in range(n)], dest_maxs=[8] * n, srcs=[src + 8 * i for i in range(n)],
              sizes=[8] * n, attrs=[ATTR_H2D], attrs_indexes=[0])
    return kw, src, dst


@pytest.mark.parametrize("n,expected", [(4095, (0, SIZE_MAX)), (4096, (0, SIZE_MAX)),
                                        (4097, (RT_PARAM_INVALID, SIZE_MAX))])
def test_sync_batch_count_limit(acl_res, n, expected):
    kw, src, dst = _tiny_batch(acl_res, n)
    assert raw_batch(**kw, sync=True) == expected
    got = acl_res.download(dst, 8 * n)
    assert (got == (acl_res.view(src, 8 * n) if expected[0] == 0 else 0)).all()


def test_async_batch_has_no_4096_limit(acl_res):
    kw, src, dst = _tiny_batch(acl_res, 4097)
    stream = acl_res.stream()
    assert raw_batch(**kw, stream=stream) == (0, SIZE_MAX)
    rt.synchronize_stream(stream)
    assert (acl_res.download(dst, 8 * 4097) == acl_res.view(src, 8 * 4097)).all()


@pytest.mark.parametrize("case", ["size_zero", "src_null", "dst_null"])
def test_batch_item_invalid_sets_fail_index(acl_res, batch_mode, case):
    b = Batch(acl_res)
    override = {"size_zero": {"sizes": [64, 64, 0, 64]}, "src_null": {"srcs": b.srcs[:2] + [0] + b.srcs[3:]},
                "dst_null": {"dsts": b.dsts[:2] + [0] + b.dsts[3:]}}[case]
    assert raw_batch(**b.kwargs(**override), sync=batch_mode == "sync") == (RT_PARAM_INVALID, 2)


def _one_attr_per_item(attrs):
    return dict(attrs=attrs, attrs_indexes=list(range(len(attrs))))


@pytest.mark.parametrize("case,expected", [
    ("dst_declared_host", (RT_PARAM_INVALID, 1)),
    ("src_declared_device", (RT_PARAM_INVALID, 1)),
    ("dst_wrong_device_id", (RT_PARAM_INVALID, 1)),
    ("pinned_declared_unregistered", (RT_PARAM_INVALID, 1)),
    ("pinned_declared_host_numa", (0, SIZE_MAX)),
    ("host_id_not_compared", (0, SIZE_MAX)),
])
def test_batch_item_attr_against_real_location(acl_res, batch_mode, case, expected):
    b = Batch(acl_res, n=3)
    bad = {"dst_declared_host": {"dst_loc": {"id": 0, "type": HOST}, "src_loc": {"id": 0, "type": HOST}},
           "src_declared_device": {"dst_loc": {"id": 0, "type": DEVICE}, "src_loc": {"id": 0, "type": DEVICE}},
           "dst_wrong_device_id": {"dst_loc": {"id": 1, "type": DEVICE}, "src_loc": {"id": 0, "type": HOST}},
           "pinned_declared_unregistered": {"dst_loc": {"id": 0, "type": DEVICE},
                                            "src_loc": {"id": 0, "type": UNREGISTERED}},
           "pinned_declared_host_numa": {"dst_loc": {"id": 0, "type": DEVICE},
                                         "src_loc": {"id": 0, "type": HOST_NUMA}},
           "host_id_not_compared": {"dst_loc": {"id": 0, "type": DEVICE}, "src_loc": {"id": 5, "type": HOST}},
           }[case]
    assert raw_batch(**b.kwargs(**_one_attr_per_item([ATTR_H2D, bad, ATTR_H2D])),
                     sync=batch_mode == "sync") == expected


@pytest.mark.parametrize("declared,expected", [(HOST, (0, SIZE_MAX)), (HOST_NUMA, (0, SIZE_MAX)),
                                               (UNREGISTERED, (RT_PARAM_INVALID, 1))])
def test_batch_pageable_host_must_be_declared_host(acl_res, batch_mode, declared, expected):
    b = Batch(acl_res, n=3)
    pageable = b.data[1].copy()
    srcs = [b.srcs[0], pageable, b.srcs[2]]
    attr = {"dst_loc": {"id": 0, "type": DEVICE}, "src_loc": {"id": 0, "type": declared}}
    assert raw_batch(**b.kwargs(srcs=srcs, **_one_attr_per_item([ATTR_H2D, attr, ATTR_H2D])),
                     sync=batch_mode == "sync") == expected


@pytest.mark.parametrize("case", ["h2h", "d2d"])
def test_batch_item_same_location_on_both_sides(acl_res, batch_mode, case):
    b = Batch(acl_res, n=3)
    if case == "h2h":
        dst, attr = acl_res.pinned(64), {"dst_loc": {"id": 0, "type": HOST}, "src_loc": {"id": 0, "type": HOST}}
        src = b.srcs[1]
    else:
        dst, attr = acl_res.device(64), {"dst_loc": {"id": 0, "type": DEVICE}, "src_loc": {"id": 0, "type": DEVICE}}
        src = b.dsts[0]
    kw = b.kwargs(dsts=[b.dsts[0], dst, b.dsts[2]], srcs=[b.srcs[0], src, b.srcs[2]],
                  **_one_attr_per_item([ATTR_H2D, attr, ATTR_H2D]))
    assert raw_batch(**kw, sync=batch_mode == "sync") == (RT_PARAM_INVALID, 1)


def test_raising_layer_reports_fail_index(acl_res):
    b = Batch(acl_res)
    kw = b.kwargs(sizes=[64, 64, 64, 0])
    stream = kw.pop("stream")
    with pytest.raises(AclError) as info:
        rt.memcpy_batch_async(**kw, stream=stream)
    assert (info.value.api, info.value.code, info.value.fail_index) == ("aclrtMemcpyBatchAsync", RT_PARAM_INVALID, 3)
    assert "[fail index 3]" in str(info.value)
    with pytest.raises(AclError) as info:
        rt.memcpy_batch(**dict(kw, attrs_indexes=[2]))
    assert (info.value.api, info.value.code, info.value.fail_index) == ("aclrtMemcpyBatch", RT_PARAM_INVALID, None)


def test_v2_batch_calls_check_like_the_fail_index_calls(acl_res):
    b = Batch(acl_res)
    kw = b.kwargs()
    stream = kw.pop("stream")
    assert code(rt.memcpy_batch_v2, **dict(kw, dest_maxs=[64, 1, 64, 64])) == INVALID_PARAM
    assert code(rt.memcpy_batch_async_v2, **dict(kw, attrs_indexes=[1]), stream=stream) == RT_PARAM_INVALID
    assert code(rt.memcpy_batch_async_v2, **dict(kw, sizes=[64, 0, 64, 64]), stream=stream) == RT_PARAM_INVALID
    assert code(rt.memcpy_batch_v2, **dict(kw, sizes=[0] * 4)) == 0
    assert code(rt.memcpy_batch_async_v2, **kw, stream=stream) == 0
    assert b.copied() == [True] * 4


# --- init, memory, streams -----------------------------------------------------------------------

def test_acl_init_twice(run_python):
    result = run_python("import ms_memcopy.acl as acl\n"
                        "print(acl.init(), acl.init())\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0", str(REPEAT_INITIALIZE)]


def test_acl_finalize_twice(run_python):
    result = run_python("import ms_memcopy.acl as acl\n"
                        "print(acl.init(), acl.finalize(), acl.finalize())\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0", "0", str(REPEAT_FINALIZE)]


@pytest.mark.parametrize("size,expected", [(0, INVALID_PARAM), (1, 0)])
def test_malloc_size_zero(acl_device, size, expected):
    for alloc, free in ((rt.malloc, rt.free), (rt.malloc_host, rt.free_host)):
        try:
            ptr = alloc(size)
        except AclError as e:
            assert e.code == expected
            continue
        assert expected == 0 and ptr != 0
        free(ptr)


@pytest.mark.parametrize("size", [SIZE_MAX, SIZE_MAX - 31, SIZE_MAX - 63])
def test_malloc_size_whose_append_overflows(acl_device, size):
    """CANN appends 64 bytes to every request; a size whose sum overflows is 100000, never a small block."""
    for fn, args in (("aclrtMalloc", (size, 0)), ("aclrtMallocHost", (size,))):
        ptr = ctypes.c_void_p(0xDEAD)
        assert _acl_lib.func(fn)(ctypes.byref(ptr), *args) == INVALID_PARAM, fn
        assert ptr.value == 0xDEAD, f"{fn} wrote an address for a refused size"


@pytest.mark.parametrize("size", [SIZE_MAX - 64, SIZE_MAX - 127, 1 << 62])
def test_malloc_size_too_large_for_memory(acl_device, size):
    """A size that does not overflow but cannot be allocated fails (207001), never returns a block."""
    for fn, args in (("aclrtMalloc", (size, 0)), ("aclrtMallocHost", (size,))):
        ptr = ctypes.c_void_p(0xDEAD)
        assert _acl_lib.func(fn)(ctypes.byref(ptr), *args) == RT_MEMORY_ALLOCATION, fn
        assert ptr.value == 0xDEAD


def test_malloc_null_output(acl_device):
    assert _acl_lib.func("aclrtMalloc")(None, 64, 0) == INVALID_PARAM
    assert _acl_lib.func("aclrtMallocHost")(None, 64) == INVALID_PARAM


def test_null_handles_for_free_and_streams(acl_device):
    assert code(rt.free, 0) == INVALID_PARAM
    assert code(rt.free_host, 0) == INVALID_PARAM
    assert code(rt.destroy_stream, None) == INVALID_PARAM
    assert _acl_lib.func("aclrtCreateStream")(None) == INVALID_PARAM


@pytest.mark.parametrize("timeout,expected", [(-3, RT_PARAM_INVALID), (-2, RT_PARAM_INVALID), (-1, 0),
                                              (0, RT_PARAM_INVALID), (1, 0), (1000, 0)])
def test_synchronize_stream_with_timeout_bounds(acl_res, timeout, expected):
    stream = acl_res.stream()
    assert code(rt.synchronize_stream_with_timeout, stream, timeout) == expected


def test_synchronize_stream_with_timeout_expires(acl_res):
    """A stream held by a host function that waits for a gate: a 1 ms and a 50 ms wait expire (507046)."""
    stream = acl_res.stream()
    gate = threading.Event()
    rt.launch_host_func(stream, lambda: gate.wait(30))
    try:
        assert code(rt.synchronize_stream_with_timeout, stream, 1) == RT_STREAM_SYNC_TIMEOUT
        assert code(rt.synchronize_stream_with_timeout, stream, 50) == RT_STREAM_SYNC_TIMEOUT
        assert code(rt.synchronize_stream_with_timeout, stream, -2) == RT_PARAM_INVALID
    finally:
        gate.set()
    assert code(rt.synchronize_stream_with_timeout, stream, -1) == 0
    assert code(rt.synchronize_stream_with_timeout, stream, 1) == 0
