"""runtime.set_stream_deferred (aclhostSetStreamDeferred): copies queued on a deferred stream run when a
thread waits for it; the Python layer's argument checks. (tests/cpp/test_copy_engine.cpp covers timed
waits, host functions and turning deferral off.)"""
import numpy as np
import pytest

from ms_memcopy import AclError
from ms_memcopy import runtime as rt
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
