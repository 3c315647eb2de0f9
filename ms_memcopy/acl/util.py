"""acl.util: numpy arrays and bytes to raw pointers and back, in pyACL's conventions.

``bytes_to_ptr(data)`` and ``ptr_to_bytes(ptr, size)`` are pyACL's current calls; ``numpy_to_ptr``,
``numpy_contiguous_to_ptr`` and ``ptr_to_numpy(ptr, shape, type)`` warn on every call (category
``Warning``) that pyACL deprecates them. A non-ndarray or non-bytes argument is a ValueError, as in
pyACL; see ms_memcopy/_pyacl/util.py for the details.
"""
from .._pyacl.util import *  # noqa: F403
from .._pyacl.util import __all__  # noqa: F401
