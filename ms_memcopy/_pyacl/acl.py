"""The top-level calls of acl: init, finalize, get_recent_err_msg, get_soc_name (re-exported by
ms_memcopy.acl)."""
import functools
from typing import Optional

from .._acl import library as _acl_lib
from .args import pyacl_args

__all__ = ["init", "finalize", "get_recent_err_msg", "get_soc_name"]

_acl_args = functools.partial(pyacl_args, "acl")


@_acl_args("|s")
def init(config_path: Optional[bytes], /) -> int:
    """ret = acl.init() or acl.init(config_path): config_path is a str (the JSON configuration file)."""
    return _acl_lib.func("aclInit")(config_path)


@_acl_args(None)
def finalize() -> int:
    """ret = acl.finalize()"""
    return _acl_lib.func("aclFinalize")()


@_acl_args(None)
def get_recent_err_msg() -> Optional[str]:
    """err_msg = acl.get_recent_err_msg(): this thread's error text, newest message first (reading does
    not clear it), or None."""
    return _acl_lib.recent_err_msg()


@_acl_args(None)
def get_soc_name() -> Optional[str]:
    """soc_name = acl.get_soc_name(): the SoC name, or None."""
    raw = _acl_lib.func("aclrtGetSocName")()
    return None if raw is None else raw.decode("utf-8", errors="replace")
