"""Python values -> C arguments for the ACL calls, shared by ms_memcopy.runtime and ms_memcopy.acl.

Every check here runs before any C call and raises TypeError (wrong type) or
ValueError (wrong value), naming the argument.
"""
import ctypes
import operator
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Optional, Tuple, Type

from .library import aclrtMemcpyBatchAttr
from .constants import SIZE_MAX

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
UINT32_MAX = 2**32 - 1

#: What a pointer argument accepts: None (NULL), an int address, a C-contiguous numpy array, or an
#: object with an integer ``ptr`` attribute (and optionally ``nbytes``); :func:`address` checks it.
Pointer = Any


def _type_name(value: object) -> str:
    return type(value).__name__


def integer(value: Any, name: str) -> int:
    """operator.index(value); bool and non-integers are TypeError."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not bool")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, not {_type_name(value)}") from None


def size(value: Any, name: str) -> int:
    """A size_t argument: an int in [0, SIZE_MAX]."""
    v = integer(value, name)
    if v < 0:
        raise ValueError(f"{name} must be >= 0, got {v}")
    if v > SIZE_MAX:
        raise ValueError(f"{name} must fit in size_t (<= {SIZE_MAX}), got {v}")
    return v


def int32(value: Any, name: str) -> int:
    """An int32_t (or C enum) argument."""
    v = integer(value, name)
    if not INT32_MIN <= v <= INT32_MAX:
        raise ValueError(f"{name} must fit in int32 [{INT32_MIN}, {INT32_MAX}], got {v}")
    return v


def uint32(value: Any, name: str) -> int:
    v = integer(value, name)
    if not 0 <= v <= UINT32_MAX:
        raise ValueError(f"{name} must fit in uint32 [0, {UINT32_MAX}], got {v}")
    return v


def pyacl_int(value: object, name: str) -> int:
    """An element of a pyACL list argument (the batch calls): a Python int.

    numpy integers, numpy arrays, None and every other type are a TypeError (bool too).
    """
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not {_type_name(value)}")
    return int(value)


def pyacl_size(value: object, name: str) -> int:
    """A pyACL size_t argument: a Python int in [0, SIZE_MAX]."""
    v = pyacl_int(value, name)
    if not 0 <= v <= SIZE_MAX:
        raise ValueError(f"{name} must be in [0, {SIZE_MAX}], got {v}")
    return v


def pyacl_address(value: object, name: str) -> int:
    """A pyACL pointer argument: a Python int address (0 is NULL)."""
    v = pyacl_int(value, name)
    if not 0 <= v <= SIZE_MAX:
        raise ValueError(f"{name} must be an address in [0, {SIZE_MAX}], got {v}")
    return v


def pyacl_list(value: object, name: str) -> list:
    """A pyACL list argument: a Python list (its length is the C count)."""
    if not isinstance(value, list):
        raise TypeError(f"{name} must be a list, not {_type_name(value)}")
    return value


def _ndarray_type() -> Optional[Type[Any]]:
    np = sys.modules.get("numpy")  # an ndarray cannot exist unless numpy is imported
    return None if np is None else np.ndarray


def address(obj: Pointer, name: str, *, need: int = 0, write: bool = False) -> int:
    """The address an ACL pointer argument denotes (0 for NULL).

    obj is None (NULL), an int, a C-contiguous numpy array (its data pointer)
    or an object with an integer ``ptr`` attribute (and optionally an integer
    ``nbytes``). When the memory's size is known (arrays, ``nbytes``), ``need``
    bytes from the address must fit in it; ``write`` requires a writeable array.
    """
    if obj is None:
        return 0
    if isinstance(obj, bool):
        raise TypeError(f"{name} must be a pointer (int, numpy array or object with .ptr), not bool")
    capacity = None
    ndarray = _ndarray_type()
    if ndarray is not None and isinstance(obj, ndarray):
        if not obj.flags.c_contiguous:
            raise TypeError(f"{name}: the numpy array must be C-contiguous")
        if write and not obj.flags.writeable:
            raise ValueError(f"{name}: the numpy array is read-only")
        addr = obj.__array_interface__["data"][0]
        capacity = obj.nbytes
    elif hasattr(obj, "ptr") and not isinstance(obj, int):
        addr = integer(obj.ptr, f"{name}.ptr")
        nbytes = getattr(obj, "nbytes", None)
        if nbytes is not None and not isinstance(nbytes, bool):
            capacity = integer(nbytes, f"{name}.nbytes")
    else:
        try:
            addr = integer(obj, name)
        except TypeError:
            raise TypeError(
                f"{name} must be a pointer (int, numpy array or object with .ptr), not {_type_name(obj)}") from None
    if not 0 <= addr <= SIZE_MAX:
        raise ValueError(f"{name} must be an address in [0, {SIZE_MAX}], got {addr}")
    if capacity is not None and need > capacity:
        raise ValueError(f"{name}: the call may access {need} bytes but the buffer holds {capacity}")
    return addr


def stream(value: Any, name: str = "stream") -> Optional[int]:
    """An aclrtStream: None (NULL) or an int handle."""
    if value is None:
        return None
    v = integer(value, name)
    if not 0 <= v <= SIZE_MAX:
        raise ValueError(f"{name} must be a stream handle in [0, {SIZE_MAX}], got {v}")
    return v or None


def sequence(value: Any, name: str) -> Sequence[Any]:
    """A list-like argument (list, tuple, range, 1-D numpy array)."""
    ndarray = _ndarray_type()
    if ndarray is not None and isinstance(value, ndarray):
        if value.ndim != 1:
            raise TypeError(f"{name} must be one-dimensional, got shape {value.shape}")
        return list(value)
    if isinstance(value, (str, bytes, bytearray)) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a list or tuple, not {_type_name(value)}")
    return value


def _location(value: Any, name: str) -> Tuple[int, int]:
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a dict {{'id': int, 'type': int}}, not {_type_name(value)}")
    unknown = set(value) - {"id", "type"}
    if unknown:
        raise ValueError(f"{name} has unknown keys {sorted(map(str, unknown))}; expected 'id' and 'type'")
    for key in ("id", "type"):
        if key not in value:
            raise ValueError(f"{name} lacks {key!r}")
    return uint32(value["id"], f"{name}['id']"), int32(value["type"], f"{name}['type']")


def batch_attr(value: Any, name: str) -> aclrtMemcpyBatchAttr:
    """An aclrtMemcpyBatchAttr from a ctypes struct or a dict
    ``{"dst_loc": {"id": 0, "type": 1}, "src_loc": {"id": 0, "type": 0}}`` (optional "rsv": 16 byte values)."""
    if isinstance(value, aclrtMemcpyBatchAttr):
        return value
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a dict with 'dst_loc' and 'src_loc' or an aclrtMemcpyBatchAttr, "
                        f"not {_type_name(value)}")
    unknown = set(value) - {"dst_loc", "src_loc", "rsv"}
    if unknown:
        raise ValueError(f"{name} has unknown keys {sorted(map(str, unknown))}; expected 'dst_loc', 'src_loc', 'rsv'")
    attr = aclrtMemcpyBatchAttr()
    for key, field in (("dst_loc", attr.dstLoc), ("src_loc", attr.srcLoc)):
        if key not in value:
            raise ValueError(f"{name} lacks {key!r}")
        field.id, field.type = _location(value[key], f"{name}[{key!r}]")
    rsv = value.get("rsv")
    if rsv is not None:
        rsv = bytes(rsv) if isinstance(rsv, (bytes, bytearray)) else sequence(rsv, f"{name}['rsv']")
        if len(rsv) > 16:
            raise ValueError(f"{name}['rsv'] has {len(rsv)} bytes; the field holds 16")
        for j, b in enumerate(rsv):
            b = integer(b, f"{name}['rsv'][{j}]")
            if not 0 <= b <= 255:
                raise ValueError(f"{name}['rsv'][{j}] must be a byte value, got {b}")
            attr.rsv[j] = b
    return attr


def _array(values: Any, count: int, name: str, ctype: Type[Any],
           convert: Callable[[Any, str, int], Any]) -> Any:
    if values is None:
        return None
    values = sequence(values, name)
    if len(values) < count:
        raise ValueError(f"{name} has {len(values)} entries but {count} are passed")
    plain = ctype is ctypes.c_void_p or ctype is ctypes.c_size_t
    if plain and count > 0:
        head = values[:count]
        if set(map(type, head)) == {int} and min(head) >= 0 and max(head) <= SIZE_MAX:
            # Plain ints in range: convert would return each unchanged; copy them in C loops.
            import numpy as np

            return (ctype * count).from_buffer_copy(np.array(head, dtype=np.uint64))
    arr = (ctype * count)()
    for i in range(count):
        v = values[i]
        if plain and type(v) is int and 0 <= v <= SIZE_MAX:
            arr[i] = v  # what convert returns for a plain int, without building the argument's name
        else:
            arr[i] = convert(v, f"{name}[{i}]", i)
    return arr


def batch_arrays(dsts: Any, dest_maxs: Any, srcs: Any, sizes: Any, num_batches: int, attrs: Any,
                 attrs_indexes: Any, num_attrs: int) -> Tuple[Any, ...]:
    """C arrays for an aclrtMemcpyBatch* call; None stays None (a NULL array).

    Lists may be longer than their count (the C call reads only the first
    count entries), never shorter.
    """
    num_batches = size(num_batches, "num_batches")
    num_attrs = size(num_attrs, "num_attrs")
    c_dest_maxs = _array(dest_maxs, num_batches, "dest_maxs", ctypes.c_size_t, lambda v, n, i: size(v, n))
    c_sizes = _array(sizes, num_batches, "sizes", ctypes.c_size_t, lambda v, n, i: size(v, n))

    def dst(v: Pointer, n: str, i: int) -> int:
        return address(v, n, need=c_dest_maxs[i] if c_dest_maxs is not None else 0, write=True)

    def src(v: Pointer, n: str, i: int) -> int:
        return address(v, n, need=c_sizes[i] if c_sizes is not None else 0)

    c_dsts = _array(dsts, num_batches, "dsts", ctypes.c_void_p, dst)
    c_srcs = _array(srcs, num_batches, "srcs", ctypes.c_void_p, src)
    c_attrs = _array(attrs, num_attrs, "attrs", aclrtMemcpyBatchAttr, lambda v, n, i: batch_attr(v, n))
    c_indexes = _array(attrs_indexes, num_attrs, "attrs_indexes", ctypes.c_size_t, lambda v, n, i: size(v, n))
    return c_dsts, c_dest_maxs, c_srcs, c_sizes, num_batches, c_attrs, c_indexes, num_attrs


def span_2d(pitch: int, width: int, height: int) -> int:
    """Bytes a pitched 2D copy touches from its base address."""
    if width == 0 or height == 0:
        return 0
    return (height - 1) * pitch + width


def copy_args(dst: Pointer, dest_max: int, src: Pointer, count: int, kind: int) -> Tuple[int, int, int, int, int]:
    """The C arguments (dst, destMax, src, count, kind) of aclrtMemcpy and its async forms."""
    dest_max, count = size(dest_max, "dest_max"), size(count, "count")
    return (address(dst, "dst", need=dest_max, write=True), dest_max,
            address(src, "src", need=count), count, int32(kind, "kind"))


def copy2d_args(dst: Pointer, dpitch: int, src: Pointer, spitch: int, width: int, height: int,
                kind: int) -> Tuple[int, int, int, int, int, int, int]:
    """The C arguments (dst, dpitch, src, spitch, width, height, kind) of aclrtMemcpy2d(Async)."""
    dpitch, spitch = size(dpitch, "dpitch"), size(spitch, "spitch")
    width, height = size(width, "width"), size(height, "height")
    return (address(dst, "dst", need=span_2d(dpitch, width, height), write=True), dpitch,
            address(src, "src", need=span_2d(spitch, width, height)), spitch,
            width, height, int32(kind, "kind"))


def config_path(value: Any) -> Optional[bytes]:
    """aclInit's configPath: None (NULL), str, bytes or os.PathLike."""
    if value is None:
        return None
    import os

    try:
        path = os.fsencode(value)
    except TypeError:
        raise TypeError(f"config_path must be a str, bytes or os.PathLike, not {_type_name(value)}") from None
    if b"\0" in path:
        raise ValueError("config_path must not contain NUL bytes")
    return path
