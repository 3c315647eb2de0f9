"""The ACL memory-copy calls in pyACL's conventions: ``import ms_memcopy.acl as acl``.

A pyACL script that uses these calls runs unchanged::

    ret = acl.init()
    ret = acl.rt.set_device(0)
    stream, ret = acl.rt.create_stream()
    dev_ptr, ret = acl.rt.malloc(size, acl.ACL_MEM_MALLOC_HUGE_FIRST)
    ret = acl.rt.memcpy(dev_ptr, size, acl.util.numpy_to_ptr(array), size, acl.ACL_MEMCPY_HOST_TO_DEVICE)

As in pyACL, nothing here raises on an ACL failure: calls return the aclError
``ret`` (0 on success), or ``(value, ret)`` when the C call has an output.
Only Python-level misuse (wrong argument types, values that do not fit the C
type, lists shorter than their count) raises TypeError/ValueError. The ACL_*
constants are module attributes; ``SIZE_MAX`` is the "no copy at fault" value
of a batch call's fail_index.
"""
from .. import _acl_lib
from .. import _convert as _cv
from ..acl_constants import *  # noqa: F401,F403
from ..acl_constants import __all__ as _constant_names
from . import rt, util

__all__ = ["init", "finalize", "get_recent_err_msg", "get_soc_name", "rt", "util", *_constant_names]


def init(config_path=None):
    """ret = acl.init(config_path=None)"""
    return _acl_lib.func("aclInit")(_cv.config_path(config_path))


def finalize():
    """ret = acl.finalize()"""
    return _acl_lib.func("aclFinalize")()


def get_recent_err_msg():
    """err_msg = acl.get_recent_err_msg(): this thread's error text, newest message first (not cleared by reading), or None."""
    return _acl_lib.recent_err_msg()


def get_soc_name():
    """soc_name = acl.get_soc_name(): the SoC name, or None."""
    raw = _acl_lib.func("aclrtGetSocName")()
    return None if raw is None else raw.decode("utf-8", errors="replace")
