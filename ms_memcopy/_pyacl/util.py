"""acl.util: numpy arrays and bytes to raw pointers and back, as pyACL's acl.util (re-exported by
ms_memcopy.acl.util).

As in pyACL: the argument tuple is parsed by each call's format (args.py, a parse failure is a
TypeError); an argument of the wrong kind is a ValueError (numpy_to_ptr and numpy_contiguous_to_ptr
take a numpy.ndarray, bytes_to_ptr bytes, ptr_to_numpy a tuple shape), an element of the shape that is
not an int a TypeError; numpy_to_ptr, numpy_contiguous_to_ptr and ptr_to_numpy warn (category
``Warning``) on every call that pyACL deprecates them, and numpy_to_ptr warns again for an array that
is not C-contiguous.

Where pyACL would build an array over memory nobody can read, ptr_to_numpy refuses with a ValueError
instead: a NULL pointer with a non-empty shape, and NumPy type numbers of non-numeric types (object,
string, void, datetime).
"""
import ctypes
import functools
import math
import warnings
from typing import Any, Dict, Optional, Tuple

import numpy as np

from .args import CALLER_STACKLEVEL, pyacl_args

__all__ = ["numpy_to_ptr", "numpy_contiguous_to_ptr", "ptr_to_numpy", "bytes_to_ptr", "ptr_to_bytes"]

_util_args = functools.partial(pyacl_args, "acl.util")

# A shape element is read with PyLong_AsVoidPtr: [LONG_MIN, ULONG_MAX], then used as a signed npy_intp.
_SHAPE_MIN, _SHAPE_MAX = -(2**63), 2**64 - 1
# Byte counts are Py_ssize_t in CPython: 2**63 and more cannot be a bytes object or an array.
_MAX_BYTES = 2**63 - 1

# The NumPy C type numbers of numeric types (NPY_BOOL 0 ... NPY_CLONGDOUBLE 16, NPY_HALF 23).
_NUMERIC_TYPES: Dict[int, np.dtype] = {}
for _code in "?bhilqpBHILQPefdgFDG":
    _NUMERIC_TYPES.setdefault(np.dtype(_code).num, np.dtype(_code))
del _code


def _require_ndarray(call: str, value: object) -> None:
    if not isinstance(value, np.ndarray):
        raise ValueError(f"acl.util.{call}: expected a numpy.ndarray, got {type(value).__name__}")


def _data_address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


@_util_args("O", deprecated_for="acl.util.bytes_to_ptr")
def numpy_to_ptr(array: Any, /) -> int:
    """ptr = acl.util.numpy_to_ptr(array): the address of the array's data (no copy)."""
    _require_ndarray("numpy_to_ptr", array)
    if not array.flags.c_contiguous:
        warnings.warn("acl.util.numpy_to_ptr: the array is not C-contiguous, so a copy of nbytes from its "
                      "address does not follow its element order; pass np.ascontiguousarray(array) or use "
                      "acl.util.bytes_to_ptr", Warning, stacklevel=CALLER_STACKLEVEL)
    return _data_address(array)


@_util_args("O", deprecated_for="acl.util.bytes_to_ptr")
def numpy_contiguous_to_ptr(array: Any, /) -> Tuple[int, np.ndarray]:
    """ptr, data_out = acl.util.numpy_contiguous_to_ptr(array): the data address of a C-contiguous version of
    array (array itself when it already is one, else a C-order copy, returned as data_out). Keep data_out
    alive while the pointer is used."""
    _require_ndarray("numpy_contiguous_to_ptr", array)
    data_out = array if array.flags.c_contiguous else array.copy(order="C")
    return _data_address(data_out), data_out


def _dimension(index: int, value: object) -> int:
    if not isinstance(value, int):
        raise TypeError(f"acl.util.ptr_to_numpy: shape[{index}] must be an int, not {type(value).__name__}")
    if not _SHAPE_MIN <= value <= _SHAPE_MAX:
        raise ValueError(f"acl.util.ptr_to_numpy: shape[{index}] {value} does not fit a pointer-sized integer")
    return int(value) - 2**64 if value > 2**63 - 1 else int(value)


@_util_args("kOi", deprecated_for="acl.util.ptr_to_bytes")
def ptr_to_numpy(ptr: int, shape: Any, npy_type: int, /) -> np.ndarray:
    """array = acl.util.ptr_to_numpy(ptr, shape, type): a writeable numpy view (no copy) of the memory at ptr.

    shape is a tuple of ints; type a NumPy C type number (e.g. 2 NPY_UBYTE, 5 NPY_INT32, 11 NPY_FLOAT32,
    23 NPY_HALF). The memory must be host memory and stay alive while the array is used.
    """
    if not isinstance(shape, tuple):
        raise ValueError(f"acl.util.ptr_to_numpy: shape must be a tuple, not {type(shape).__name__}")
    dims = tuple(_dimension(i, d) for i, d in enumerate(shape))
    dtype = _NUMERIC_TYPES.get(npy_type)
    if dtype is None:
        raise ValueError(f"acl.util.ptr_to_numpy: type {npy_type} is not the NumPy type number of a numeric "
                         f"type; expected one of {sorted(_NUMERIC_TYPES)}")
    if any(d < 0 for d in dims):
        raise ValueError(f"acl.util.ptr_to_numpy: shape {shape} has a negative dimension")
    nbytes = math.prod(dims) * dtype.itemsize
    if nbytes > _MAX_BYTES:
        raise ValueError(f"acl.util.ptr_to_numpy: shape {shape} of {dtype} is {nbytes} bytes, too large for an array")
    if nbytes and not ptr:
        raise ValueError("acl.util.ptr_to_numpy: ptr is NULL")
    # a ctypes array has the buffer protocol, which numpy's stubs do not list for frombuffer
    buffer: Any = (ctypes.c_char * nbytes).from_address(ptr) if nbytes else bytearray()
    return np.frombuffer(buffer, dtype=dtype, count=math.prod(dims)).reshape(dims)


@_util_args("O")
def bytes_to_ptr(data: Any, /) -> Optional[int]:
    """ptr = acl.util.bytes_to_ptr(data): the address of a bytes object's buffer (no copy).

    Valid while ``data`` is alive; ACL must not write into a bytes object.
    """
    if not isinstance(data, bytes):
        raise ValueError(f"acl.util.bytes_to_ptr: expected bytes, got {type(data).__name__}")
    return ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value


@_util_args("kk")
def ptr_to_bytes(ptr: int, size: int, /) -> bytes:
    """data = acl.util.ptr_to_bytes(ptr, size): a bytes copy of size bytes at ptr (size < 2**63).

    As in pyACL (PyBytes_FromStringAndSize), a NULL ptr gives size bytes whose content is unspecified
    (zeros here); a size the interpreter cannot allocate is a ValueError.
    """
    if size > _MAX_BYTES:
        raise ValueError(f"acl.util.ptr_to_bytes: size {size} is too large; a byte count must be below 2**63")
    try:
        if not ptr:
            return bytes(size)
        return (ctypes.c_char * size).from_address(ptr).raw
    except MemoryError:
        raise ValueError(f"acl.util.ptr_to_bytes: cannot allocate {size} bytes") from None
