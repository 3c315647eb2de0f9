"""The AscendCL constants the memory-copy calls use, with the values of CANN 9.1.

The single Python copy of the enum values in the ACL headers (ops_impl/acl_host/include/acl);
the error codes are read from those headers when this module is imported. Both Python layers import
them from here: ``ms_memcopy.runtime`` (raising) and ``ms_memcopy.acl`` (pyACL conventions).
tests/test_runtime_errors.py parses the C headers and checks every value.
"""
from typing import TYPE_CHECKING

from .._extension import _paths
from . import error_codes as _acl_error_codes

# aclrtMemcpyKind
ACL_MEMCPY_HOST_TO_HOST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
ACL_MEMCPY_DEVICE_TO_DEVICE = 3
ACL_MEMCPY_DEFAULT = 4
ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE = 5
ACL_MEMCPY_INNER_DEVICE_TO_DEVICE = 6
ACL_MEMCPY_INTER_DEVICE_TO_DEVICE = 7

# aclrtMemMallocPolicy
ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEM_MALLOC_HUGE_ONLY = 1
ACL_MEM_MALLOC_NORMAL_ONLY = 2
ACL_MEM_MALLOC_HUGE_FIRST_P2P = 3
ACL_MEM_MALLOC_HUGE_ONLY_P2P = 4
ACL_MEM_MALLOC_NORMAL_ONLY_P2P = 5
ACL_MEM_MALLOC_HUGE1G_ONLY = 6
ACL_MEM_MALLOC_HUGE1G_ONLY_P2P = 7
ACL_MEM_TYPE_LOW_BAND_WIDTH = 0x0100
ACL_MEM_TYPE_HIGH_BAND_WIDTH = 0x1000
ACL_MEM_ACCESS_USER_SPACE_READONLY = 0x100000

# aclrtMemLocationType
ACL_MEM_LOCATION_TYPE_HOST = 0
ACL_MEM_LOCATION_TYPE_DEVICE = 1
ACL_MEM_LOCATION_TYPE_UNREGISTERED = 2
ACL_MEM_LOCATION_TYPE_MANAGED = 3
ACL_MEM_LOCATION_TYPE_HOST_NUMA = 4

# aclrtCreateEventWithFlag flags
ACL_EVENT_SYNC = 0x00000001
ACL_EVENT_CAPTURE_STREAM_PROGRESS = 0x00000002
ACL_EVENT_TIME_LINE = 0x00000008
ACL_EVENT_DEVICE_USE_ONLY = 0x00000010
ACL_EVENT_EXTERNAL = 0x00000020
ACL_EVENT_IPC = 0x00000040

# aclrtEventRecordedStatus
ACL_EVENT_RECORDED_STATUS_NOT_READY = 0
ACL_EVENT_RECORDED_STATUS_COMPLETE = 1

# aclrtRunMode
ACL_DEVICE = 0
ACL_HOST = 1

# aclrtMemAttr (aclrtGetMemInfo)
ACL_DDR_MEM = 0
ACL_HBM_MEM = 1
ACL_DDR_MEM_HUGE = 2
ACL_DDR_MEM_NORMAL = 3
ACL_HBM_MEM_HUGE = 4
ACL_HBM_MEM_NORMAL = 5
ACL_DDR_MEM_P2P_HUGE = 6
ACL_DDR_MEM_P2P_NORMAL = 7
ACL_HBM_MEM_P2P_HUGE = 8
ACL_HBM_MEM_P2P_NORMAL = 9
ACL_HBM_MEM_HUGE1G = 10
ACL_HBM_MEM_P2P_HUGE1G = 11
ACL_MEM_NORMAL = 12
ACL_MEM_HUGE = 13
ACL_MEM_HUGE1G = 14
ACL_MEM_P2P_NORMAL = 15
ACL_MEM_P2P_HUGE = 16
ACL_MEM_P2P_HUGE1G = 17

# aclError: every ACL_SUCCESS / ACL_ERROR_* code, read from the shipped headers (acl_base.h: static
# const int; error_codes/rt_error_codes.h: #define), the one source the kernels' code -> name table is
# generated from too.
globals().update(_acl_error_codes.read_error_codes(_paths.shipped_include()))
if TYPE_CHECKING:
    # The codes are read from the headers at import time, which a type checker does not run: to it,
    # every other name of this module is one of them, an int. Defined for the type checker only.
    def __getattr__(name: str) -> int: ...

# Not an ACL name: the value a batch call's failIndex holds when no single
# copy is at fault (C's SIZE_MAX for the 64-bit size_t of every ACL target).
SIZE_MAX = 2**64 - 1

__all__ = [name for name in dir() if name.startswith("ACL_")] + ["SIZE_MAX"]

# aclrtHostRegisterType (aclrtHostRegister) and the aclrtHostRegisterV2 flags (ACL_HOST_REG_*)
ACL_HOST_REGISTER_MAPPED = 0
ACL_HOST_REGISTER_IOMEMORY = 0x04
ACL_HOST_REGISTER_READONLY = 0x08
ACL_HOST_REG_MAPPED = 0x2
ACL_HOST_REG_IOMEMORY = 0x4
ACL_HOST_REG_READONLY = 0x8
ACL_HOST_REG_PINNED = 0x10000000
__all__ += [name for name in dir() if name.startswith("ACL_HOST_REG")]
