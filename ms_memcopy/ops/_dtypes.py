"""Dtypes as the primitives take them: names, MindSpore dtypes, sizes, and the supported ones
(configs/dtypes.yaml, through :mod:`ms_memcopy.dtypes`)."""
from typing import Any, Mapping, Set, Union

import numpy as np
import mindspore as ms

from .. import dtypes
from ..op_defs import supported_dtypes

#: A dtype as the primitives accept it: a MindSpore dtype (``ms.float32``), a numpy dtype or its name.
DtypeLike = Union[ms.dtype.Type, np.dtype, type, str]


def dtype_name(dtype: Any) -> str:
    """'float32' for ms.float32, a Tensor type, a numpy dtype or a name; TypeError otherwise."""
    if isinstance(dtype, str):
        return dtype
    if hasattr(dtype, "element_type"):
        dtype = dtype.element_type()
    if isinstance(dtype, ms.dtype.Type):
        return str(dtype).lower()
    try:
        return np.dtype(dtype).name
    except TypeError:
        raise TypeError(f"not a dtype: {dtype!r}") from None


def ms_dtype(dtype: DtypeLike, argument: str) -> ms.dtype.Type:
    """The MindSpore dtype for a supported dtype given in any form; TypeError naming argument."""
    name = dtype_name(dtype)
    if name == "bool_":
        name = "bool"
    if name not in supported_dtypes():
        raise TypeError(f"{argument}: dtype {name} is not supported; use one of {list(supported_dtypes())}")
    return getattr(ms, "bool_" if name == "bool" else name)


def itemsize(dtype: DtypeLike) -> int:
    """Bytes per element of a dtype given in any form (configs/dtypes.yaml for the dtypes it lists)."""
    name = dtype_name(dtype)
    if name in _dtype_names():
        return dtypes.itemsize(name)
    return np.dtype(name).itemsize


def _dtype_names() -> Set[str]:
    return {d.name for d in dtypes.table()}


def check_supported(arg: Mapping[str, Any], argument: str) -> str:
    name = dtype_name(arg["dtype"])
    if name not in supported_dtypes():
        raise TypeError(f"{argument}: dtype {name} is not supported; use one of {list(supported_dtypes())}")
    return name
