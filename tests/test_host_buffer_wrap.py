"""HostBuffer.wrap: existing memory (numpy array, memoryview, mmap of a /dev/shm file) pinned by registration,
copied through by the primitives in both modes against numpy, kept alive while open, unregistered on close."""
import gc
import mmap
import os
import weakref

import numpy as np
import pytest

import mindspore as ms

from ms_memcopy import AclError, HostBuffer, runtime
from ms_memcopy.acl_constants import (ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED, ACL_ERROR_HOST_MEMORY_NOT_REGISTERED,
                                      ACL_MEM_LOCATION_TYPE_HOST, ACL_MEM_LOCATION_TYPE_UNREGISTERED)
from ms_memcopy.ops import MemcpyBatch, SwapBlocks

from _ops_support import call, int64
from test_ops_blocks import run

PAGE = 4096


def _numpy_owner(nbytes):
    return np.zeros(nbytes, np.uint8)


def _memoryview_owner(nbytes):
    return memoryview(bytearray(nbytes))


@pytest.fixture
def shm_mmap(tmp_path):
    """An mmap of a file in /dev/shm (tmp_path when there is no /dev/shm), closed and removed afterwards."""
    directory = "/dev/shm" if os.path.isdir("/dev/shm") else str(tmp_path)
    path = os.path.join(directory, f"ms_memcopy_wrap_{os.getpid()}_{id(tmp_path)}")
    made = []

    def make(nbytes):
        with open(path, "w+b") as f:
            f.truncate(nbytes)
            made.append(mmap.mmap(f.fileno(), nbytes))
        return made[-1]

    yield make
    for m in made:
        try:
            m.close()
        except BufferError:  # a buffer a failed test left behind still exports it
            gc.collect()
            m.close()
    if made:
        os.unlink(path)


def _location(ptr):
    return runtime.get_mem_location(ptr).type


@pytest.mark.parametrize("owner", ["numpy", "memoryview", "mmap"])
def test_wrap_is_pinned_registered_memory_of_the_owner(owner, shm_mmap):
    nbytes = 3 * PAGE + 100
    obj = {"numpy": _numpy_owner, "memoryview": _memoryview_owner, "mmap": shm_mmap}[owner](nbytes)
    buf = HostBuffer.wrap(obj)
    assert (buf.nbytes, buf.pinned, buf.registered) == (nbytes, True, True)
    assert _location(buf.ptr) == _location(buf.ptr + nbytes - 1) == ACL_MEM_LOCATION_TYPE_HOST
    buf.numpy()[:] = np.arange(nbytes) % 251
    np.testing.assert_array_equal(np.frombuffer(obj, np.uint8), np.arange(nbytes) % 251)  # the owner's bytes
    buf.close()
    assert _location(np.frombuffer(obj, np.uint8).ctypes.data) == ACL_MEM_LOCATION_TYPE_UNREGISTERED
    buf.close()  # idempotent
    assert not HostBuffer(8).registered


def test_registration_starts_at_the_page_of_the_first_byte():
    raw = np.zeros(4 * PAGE, np.uint8)
    start = (-raw.ctypes.data) % PAGE + 64
    with HostBuffer.wrap(raw[start:start + PAGE]) as buf:
        base = buf.ptr - 64
        assert runtime.get_mem_location(buf.ptr)[2:] == (base, PAGE + 64)
        with pytest.raises(AclError) as info:
            runtime.host_unregister(buf.ptr)  # not the registration's start
        assert info.value.code == ACL_ERROR_HOST_MEMORY_NOT_REGISTERED
        with pytest.raises(AclError) as info:
            HostBuffer.wrap(raw[start + 8:start + 16])  # same page: overlaps
        assert info.value.code == ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED
    with pytest.raises(AclError) as info:
        runtime.host_unregister(base)  # close unregistered it
    assert info.value.code == ACL_ERROR_HOST_MEMORY_NOT_REGISTERED


def test_owner_is_kept_alive_while_open_and_while_a_view_lives(shm_mmap):
    obj = _numpy_owner(PAGE)
    ref = weakref.ref(obj)
    buf = HostBuffer.wrap(obj)
    del obj
    assert ref() is not None
    view = buf.numpy()
    buf.close()
    assert ref() is not None  # the view still reads its memory
    del view  # nothing else holds the owner: reference counting frees it at once
    assert ref() is None

    mapping = shm_mmap(PAGE)
    with HostBuffer.wrap(mapping):
        with pytest.raises(BufferError):
            mapping.close()  # exported while the buffer is open
    mapping.close()  # closed buffer, no view: the export is released


def test_refused_objects():
    with pytest.raises(ValueError, match="read-only"):
        HostBuffer.wrap(b"\0" * PAGE)
    with mmap.mmap(-1, PAGE, prot=mmap.PROT_READ) as readonly_map, pytest.raises(ValueError, match="read-only"):
        HostBuffer.wrap(readonly_map)
    readonly = np.zeros(PAGE, np.uint8)
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        HostBuffer.wrap(readonly)
    with pytest.raises(ValueError, match="C-contiguous"):
        HostBuffer.wrap(np.zeros((64, 128), np.uint8)[:, ::2])
    with pytest.raises(ValueError, match="no bytes"):
        HostBuffer.wrap(np.zeros(0, np.uint8))
    with pytest.raises(TypeError, match="buffer protocol"):
        HostBuffer.wrap([1, 2, 3])


def test_memcpy_batch_round_trip_through_a_wrapped_mmap(ms_mode, shm_mmap):
    a = np.random.default_rng(3).standard_normal((5, 7)).astype(np.float32)
    b = np.arange(24, dtype=np.int16).reshape(2, 3, 4)
    with HostBuffer.wrap(shm_mmap(2 * PAGE)) as buf:
        style = "eager" if ms_mode == "pynative" else "cell"
        nbytes = call(style, MemcpyBatch("d2h", buf, num_tensors=2), ms.Tensor(a), ms.Tensor(b), int64(8, 4096 + 16))
        np.testing.assert_array_equal(nbytes.asnumpy(), [a.nbytes, b.nbytes])
        np.testing.assert_array_equal(buf.numpy(np.float32, a.shape, offset=8), a)
        np.testing.assert_array_equal(buf.numpy(np.int16, b.shape, offset=4096 + 16), b)
        buf.numpy(np.float32, a.shape, offset=8)[:] *= 2
        h2d = MemcpyBatch("h2d", buf, shapes=[a.shape, b.shape], dtypes=[ms.float32, ms.int16])
        a2, b2 = call(style, h2d, int64(8, 4096 + 16))
        np.testing.assert_array_equal(a2.asnumpy(), a * 2)
        np.testing.assert_array_equal(b2.asnumpy(), b)


def test_swap_blocks_through_a_wrapped_numpy_array(ms_mode):
    style = "eager" if ms_mode == "pynative" else "cell"
    k = np.arange(32, dtype=np.float32).reshape(4, 8)
    v = -k
    host = np.zeros((2, 2, 8), np.float32)  # 2 caches of 2 host blocks
    cache_k, cache_v = ms.Parameter(ms.Tensor(k), name="k"), ms.Parameter(ms.Tensor(v), name="v")
    with HostBuffer.wrap(host) as buf:
        out_map = ms.Tensor([[3, 0], [1, 1]], ms.int64)
        out = run(style, SwapBlocks("d2h", buf, num_caches=2), (cache_k, cache_v), out_map)
        assert out.asnumpy().tolist() == [2 * 2 * 32]
        buf.wait()
        np.testing.assert_array_equal(host, np.stack([k[[3, 1]], v[[3, 1]]]))
        host[:, 0] = 7
        run(style, SwapBlocks("h2d", buf, num_caches=2), (cache_k, cache_v), ms.Tensor([[0, 2]], ms.int64))
        expected_k, expected_v = k.copy(), v.copy()
        expected_k[2] = expected_v[2] = 7
        np.testing.assert_array_equal(cache_k.asnumpy(), expected_k)
        np.testing.assert_array_equal(cache_v.asnumpy(), expected_v)


def test_small_arrays_wrap_beside_small_pinned_allocations(acl_res):
    """aclrtMallocHost memory is whole pages of its own (as the driver's pinned memory): small arrays made
    between small pinned allocations share no page with them, so wrapping each (registered from the start
    of its page) succeeds, as it would with CANN. (With 64-byte heap blocks an array could share a page
    with a pinned slot, and its registration failed as overlapping.)"""
    pinned, arrays = [], []
    for _ in range(64):
        pinned.append(acl_res.pinned(8))
        arrays.append(np.zeros(16, np.float32))
    assert all(p % PAGE == 0 for p in pinned)
    assert len({p // PAGE for p in pinned}) == len(pinned)
    for a in arrays:  # one at a time: two wrapped arrays in one page would overlap each other
        with HostBuffer.wrap(a) as buf:
            assert buf.ptr == a.ctypes.data
