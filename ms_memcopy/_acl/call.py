"""How the runtime calls (runtime, host_extras) call the ACL library: AclError unless it returns 0."""
import ctypes
from typing import Any, Optional
from . import library as _acl_lib
from ..errors import AclError
from .constants import SIZE_MAX


def call(api: str, *args: Any, fail_index: Optional[ctypes.c_size_t] = None) -> None:
    ret = _acl_lib.func(api)(*args)
    if ret != 0:
        index = None
        if fail_index is not None and fail_index.value != SIZE_MAX:
            index = fail_index.value
        raise AclError(ret, api, index, _acl_lib.new_err_msg())
