"""Helpers shared by the ACL runtime tests (test_runtime_*.py)."""
import pathlib
import threading

import numpy as np

from ms_memcopy import AclError
from ms_memcopy.acl_constants import ACL_MEM_LOCATION_TYPE_DEVICE as DEVICE
from ms_memcopy.acl_constants import ACL_MEM_LOCATION_TYPE_HOST as HOST
# The copy kinds by the short names the runtime tests use
from ms_memcopy.acl_constants import ACL_MEMCPY_DEFAULT as DEFAULT  # noqa: F401
from ms_memcopy.acl_constants import ACL_MEMCPY_DEVICE_TO_DEVICE as D2D  # noqa: F401
from ms_memcopy.acl_constants import ACL_MEMCPY_DEVICE_TO_HOST as D2H  # noqa: F401
from ms_memcopy.acl_constants import ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE as H2BUF2D  # noqa: F401
from ms_memcopy.acl_constants import ACL_MEMCPY_HOST_TO_DEVICE as H2D  # noqa: F401
from ms_memcopy.acl_constants import ACL_MEMCPY_HOST_TO_HOST as H2H  # noqa: F401
from ms_memcopy.acl_constants import ACL_MEMCPY_INNER_DEVICE_TO_DEVICE as INNER_D2D  # noqa: F401
from ms_memcopy.acl_constants import ACL_MEMCPY_INTER_DEVICE_TO_DEVICE as INTER_D2D  # noqa: F401

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


#: The start of a run_python script that calls code(): the raising layer as rt, and this module's code.
CHILD_PRELUDE = f"""import sys
sys.path.insert(0, {str(pathlib.Path(__file__).parent)!r})
from ms_memcopy import runtime as rt
from _acl_support import code
"""


def on_a_new_thread(fn):
    """Runs fn() on a thread of its own (whose runtime state starts empty), waits for it and raises what it
    raised."""
    raised = []

    def run():
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
            raised.append(e)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if raised:
        raise raised[0]


def rand_bytes(n, seed):
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)
