"""Helpers shared by the ACL runtime tests (test_runtime_*.py)."""
import numpy as np

from ms_memcopy import AclError
from ms_memcopy.acl_constants import ACL_MEM_LOCATION_TYPE_DEVICE as DEVICE
from ms_memcopy.acl_constants import ACL_MEM_LOCATION_TYPE_HOST as HOST

# Batch attributes of the two directions ACL allows, on device 0.
ATTR_H2D = {"dst_loc": {"id": 0, "type": DEVICE}, "src_loc": {"id": 0, "type": HOST}}
ATTR_D2H = {"dst_loc": {"id": 0, "type": HOST}, "src_loc": {"id": 0, "type": DEVICE}}


def code(fn, *args, **kwargs):
    """0 when the raising-layer call succeeds, else the AclError code."""
    try:
        fn(*args, **kwargs)
    except AclError as e:
        return e.code
    return 0


def rand_bytes(n, seed):
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)
