"""The ACL memory-copy calls in pyACL's conventions: ``import ms_memcopy.acl as acl``.

A pyACL script that uses these calls runs unchanged::

    ACL_MEM_MALLOC_HUGE_FIRST, ACL_MEMCPY_HOST_TO_DEVICE = 0, 1   # pyACL scripts define their constants
    ret = acl.init()
    ret = acl.rt.set_device(0)
    context, ret = acl.rt.create_context(0)
    stream, ret = acl.rt.create_stream()
    dev_ptr, ret = acl.rt.malloc(size, ACL_MEM_MALLOC_HUGE_FIRST)
    ret = acl.rt.memcpy(dev_ptr, size, acl.util.bytes_to_ptr(data), size, ACL_MEMCPY_HOST_TO_DEVICE)

As in pyACL, nothing here raises on an ACL failure: calls return the aclError ``ret`` (0 on success),
or ``(value, ret)`` when the C call has an output. Arguments are parsed as pyACL's C wrappers parse
them (see ``acl.rt``): positional only, a call that takes none ignores what it is given, and a parse
failure is a TypeError before any C call. As in pyACL, this module and its submodules hold the calls
and nothing else (no ``ACL_*`` constants; they are in ``ms_memcopy.acl_constants``).
"""
from .._pyacl.acl import *
from . import rt, util

__all__ = ["init", "finalize", "get_recent_err_msg", "get_soc_name", "rt", "util"]
