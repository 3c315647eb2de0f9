"""The ACL memory-copy calls in pyACL's conventions: ``import ms_memcopy.acl as acl``.

A pyACL script that uses these calls runs unchanged::

    ACL_MEM_MALLOC_HUGE_FIRST, ACL_MEMCPY_HOST_TO_DEVICE = 0, 1   # pyACL scripts define their constants
    ret = acl.init()
    ret = acl.rt.set_device(0)
    context, ret = acl.rt.create_context(0)
    stream, ret = acl.rt.create_stream()
    dev_ptr, ret = acl.rt.malloc(size, ACL_MEM_MALLOC_HUGE_FIRST)
    ret = acl.rt.memcpy(dev_ptr, size, acl.util.numpy_to_ptr(array), size, ACL_MEMCPY_HOST_TO_DEVICE)

As in pyACL, nothing here raises on an ACL failure: calls return the aclError
``ret`` (0 on success), or ``(value, ret)`` when the C call has an output.
Arguments follow pyACL's binding (see ``acl.rt``): positional only, pointers,
sizes and streams as Python ints; misuse raises TypeError/ValueError before any
C call. As in pyACL, this module defines no ``ACL_*`` constants; they are in
``ms_memcopy.acl_constants``.
"""
from .. import _acl_lib
from . import rt, util

__all__ = ["init", "finalize", "get_recent_err_msg", "get_soc_name", "rt", "util"]


def init(*config_path):
    """ret = acl.init() or acl.init(config_path): config_path is a str (the JSON configuration file)."""
    if len(config_path) > 1:
        raise TypeError(f"init() takes at most 1 argument ({len(config_path)} given)")
    path = None
    if config_path:
        path = config_path[0]
        if not isinstance(path, str):
            raise TypeError(f"config_path must be a str, not {type(path).__name__}")
        if "\0" in path:
            raise ValueError("config_path must not contain NUL characters")
        path = path.encode("utf-8")
    return _acl_lib.func("aclInit")(path)


def finalize():
    """ret = acl.finalize()"""
    return _acl_lib.func("aclFinalize")()


def get_recent_err_msg():
    """err_msg = acl.get_recent_err_msg(): this thread's error text, newest message first (reading does
    not clear it), or None."""
    return _acl_lib.recent_err_msg()


def get_soc_name():
    """soc_name = acl.get_soc_name(): the SoC name, or None."""
    raw = _acl_lib.func("aclrtGetSocName")()
    return None if raw is None else raw.decode("utf-8", errors="replace")
