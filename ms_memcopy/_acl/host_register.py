"""The registered-host-memory calls of ``ms_memcopy.runtime`` (CANN 9.1's aclrtHostRegister family).

Same conventions as the rest of ``ms_memcopy.runtime``: snake_case names, AclError on a non-zero code,
output parameters returned. The rules each call checks are in docs/host_runtime.md ("Registered host
memory"): 4 KiB aligned start, no overlap with another registration (507910), only a registration's start
unregisters it (507911).
"""
import ctypes

from . import library as _acl_lib
from . import convert as cv
from ..errors import AclError

__all__ = ["host_register", "host_register_v2", "host_get_device_pointer", "host_unregister"]


def _call(api, *args):
    ret = _acl_lib.func(api)(*args)
    if ret != 0:
        raise AclError(ret, api, None, _acl_lib.new_err_msg())


def host_register(ptr: object, size: int, register_type: int) -> int:
    """aclrtHostRegister(ptr, size, type, &devPtr): registers [ptr, ptr+size) (ACL_HOST_REGISTER_MAPPED,
    _IOMEMORY, _READONLY) as device-accessible; returns the device address (the host runtime: ptr itself)."""
    size = cv.size(size, "size")
    out = ctypes.c_void_p()
    _call("aclrtHostRegister", cv.address(ptr, "ptr", need=size), size, cv.int32(register_type, "register_type"),
          ctypes.byref(out))
    return out.value or 0


def host_register_v2(ptr: object, size: int, flag: int) -> None:
    """aclrtHostRegisterV2(ptr, size, flag): registers [ptr, ptr+size) with an OR of ACL_HOST_REG_MAPPED,
    _IOMEMORY, _READONLY and _PINNED (pageable memory made page-locked)."""
    size = cv.size(size, "size")
    _call("aclrtHostRegisterV2", cv.address(ptr, "ptr", need=size), size, cv.uint32(flag, "flag"))


def host_get_device_pointer(ptr: object, flag: int = 0) -> int:
    """aclrtHostGetDevicePointer(pHost, &pDevice, flag): the device address of a mapped registration
    starting at ptr (flag is reserved: 0)."""
    out = ctypes.c_void_p()
    _call("aclrtHostGetDevicePointer", cv.address(ptr, "ptr"), ctypes.byref(out), cv.uint32(flag, "flag"))
    return out.value or 0


def host_unregister(ptr: object) -> None:
    """aclrtHostUnregister(ptr): ends the registration that starts at ptr."""
    _call("aclrtHostUnregister", cv.address(ptr, "ptr"))
