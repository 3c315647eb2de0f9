"""acl.util: moving between numpy arrays / bytes and raw pointers, as pyACL's acl.util does."""
import ctypes
import math
import warnings

import numpy as np

from .. import _convert as cv

__all__ = ["numpy_to_ptr", "numpy_contiguous_to_ptr", "ptr_to_numpy", "bytes_to_ptr", "ptr_to_bytes"]

# Sizes are C ssize_t in the binding: 2**63 and more cannot be a byte count.
_MAX_BYTES = 2**63 - 1

# pyACL's ptr_to_numpy takes a NumPy C type number (NPY_INT32 = 5, NPY_FLOAT32 = 11, NPY_HALF = 23, ...).
_NPY_TYPES = {}
for _code in "?bhilqpBHILQPefdgFDG":
    _NPY_TYPES.setdefault(np.dtype(_code).num, np.dtype(_code))
del _code


def _dtype(value):
    if isinstance(value, bool):
        raise TypeError("type must be a NumPy type number (int) or a numpy dtype, not bool")
    if isinstance(value, int):
        try:
            return _NPY_TYPES[value]
        except KeyError:
            raise ValueError(f"type {value} is not a numeric NumPy type number; "
                             f"valid: {sorted(_NPY_TYPES)}") from None
    try:
        dtype = np.dtype(value)
    except TypeError:
        raise TypeError(f"type must be a NumPy type number (int) or a numpy dtype, not {type(value).__name__}") \
            from None
    if dtype.hasobject or dtype.itemsize == 0:
        raise ValueError(f"type {dtype} cannot view raw memory")
    return dtype


def numpy_to_ptr(array, /):
    """ptr = acl.util.numpy_to_ptr(array): the address of the array's data (no copy).

    As in pyACL, a non-C-contiguous array gives a warning (its memory is not
    the logical element order that a copy of nbytes would assume).
    """
    if not isinstance(array, np.ndarray):
        raise TypeError(f"array must be a numpy.ndarray, not {type(array).__name__}")
    if not array.flags.c_contiguous:
        warnings.warn("The input ndarray is discontiguous; copies from its pointer will not follow "
                      "its element order. Pass np.ascontiguousarray(array) instead.", RuntimeWarning, stacklevel=2)
    return array.__array_interface__["data"][0]


def numpy_contiguous_to_ptr(array, /):
    """ptr, data_out = acl.util.numpy_contiguous_to_ptr(array): the data pointer of a C-contiguous version of
    array (array itself when it already is one, else a contiguous copy, returned as data_out). Keep data_out
    alive while the pointer is used."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"array must be a numpy.ndarray, not {type(array).__name__}")
    data_out = array if array.flags.c_contiguous else np.ascontiguousarray(array)
    return data_out.__array_interface__["data"][0], data_out


def ptr_to_numpy(ptr, shape, type, /):  # noqa: A002  (pyACL's parameter name)
    """array = acl.util.ptr_to_numpy(ptr, shape, type): a numpy view (no copy) of the memory at ptr.

    type is pyACL's NumPy type number (e.g. 5 = NPY_INT32, 11 = NPY_FLOAT32,
    23 = NPY_HALF) or any numpy dtype. The memory must stay alive and be host
    accessible while the array is used.
    """
    addr = cv.pyacl_address(ptr, "ptr")
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    shape = tuple(cv.size(d, f"shape[{i}]") for i, d in enumerate(cv.sequence(shape, "shape")))
    dtype = _dtype(type)
    count = math.prod(shape)
    if count and not addr:
        raise ValueError("ptr is NULL")
    buffer = (ctypes.c_char * (count * dtype.itemsize)).from_address(addr) if count else b""
    return np.frombuffer(buffer, dtype=dtype, count=count).reshape(shape)


def bytes_to_ptr(data, /):
    """ptr = acl.util.bytes_to_ptr(data): the address of a bytes/bytearray object's buffer (no copy).

    Valid while ``data`` is alive; ACL must not write into a bytes object.
    """
    if isinstance(data, bytes):
        return ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value or 0
    if isinstance(data, bytearray):
        return ctypes.addressof((ctypes.c_char * len(data)).from_buffer(data)) if data else 0
    raise TypeError(f"data must be bytes or bytearray, not {type(data).__name__}")


def ptr_to_bytes(ptr, size, /):
    """data = acl.util.ptr_to_bytes(ptr, size): a bytes copy of size bytes at ptr (size < 2**63)."""
    addr, size = cv.pyacl_address(ptr, "ptr"), cv.pyacl_size(size, "size")
    if size > _MAX_BYTES:
        raise ValueError(f"size {size} is too large; a byte count must be below 2**63")
    if size and not addr:
        raise ValueError("ptr is NULL")
    return ctypes.string_at(addr, size) if size else b""
