"""The primitives' argument checks: ints, shapes, HostBuffers, eager tensors and their dtypes, the dtype
group of an op and in-place targets, each raising TypeError or ValueError naming the argument (what the
kernel cannot see; the kernel checks values, shapes and regions itself, see :mod:`ms_memcopy.ops`)."""
from typing import Any, List, Optional, Sequence, Tuple
import numbers

import numpy as np
import mindspore as ms

from ..host_buffer import HostBuffer
from ._dtypes import check_supported, dtype_name


def num_elements(shape: Sequence[int]) -> int:
    return int(np.prod(shape, dtype=np.int64)) if shape else 1


def matrix_view(shape: Sequence[int]) -> Tuple[int, int]:
    """(rows, cols) of the 2-D view of a tensor: every leading dimension is a row, the last one the columns."""
    if not shape:
        return 1, 1
    return num_elements(shape[:-1]), shape[-1]


INT64_MAX = 2**63 - 1


def check_int(value: Any, argument: str, minimum: int = 0) -> int:
    """An int in [minimum, INT64_MAX] (attributes reach the kernel as int64); TypeError/ValueError naming argument."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{argument} must be an int, not {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{argument} must be >= {minimum}, got {value}")
    if value > INT64_MAX:
        raise ValueError(f"{argument} must be at most {INT64_MAX} (int64), got {value}")
    return int(value)


def check_shape(shape: Any, argument: str) -> Tuple[int, ...]:
    """A shape given as a tuple or list of non-negative ints, as a tuple; TypeError/ValueError naming argument."""
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"{argument} must be a tuple of ints, not {type(shape).__name__}")
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, numbers.Integral):
            raise TypeError(f"{argument} must be a tuple of ints, got {tuple(shape)}")
    if any(d < 0 for d in shape):
        raise ValueError(f"{argument} must hold non-negative ints, got {tuple(shape)}")
    dims = tuple(check_int(d, f"{argument}[{i}]") for i, d in enumerate(shape))
    elements = 1
    for d in dims:
        elements *= d
    if elements > INT64_MAX:
        raise ValueError(f"{argument} {dims} holds more than {INT64_MAX} elements")
    return dims


def check_host_buffer(host_buffer: Any, argument: str = "host_buffer", chunks: bool = False) -> Any:
    """An open HostBuffer (or, with chunks, an open HostChunks: SwapBlocks' host side), attached to the
    primitive being built."""
    from ..host_chunks import HostChunks

    if not isinstance(host_buffer, HostBuffer) and not (chunks and isinstance(host_buffer, HostChunks)):
        kinds = "an ms_memcopy.HostBuffer or HostChunks" if chunks else "an ms_memcopy.HostBuffer"
        raise TypeError(f"{argument} must be {kinds}, not {type(host_buffer).__name__}")
    check_open(host_buffer, argument)
    host_buffer._attach_primitive()
    return host_buffer


def check_open(host_buffer: Any, argument: str = "host_buffer") -> None:
    """ValueError naming argument when the HostBuffer or HostChunks a primitive was built on is closed:
    the check of each eager call (its type was checked when the primitive was built)."""
    if host_buffer.closed:
        raise ValueError(f"{argument}: the {type(host_buffer).__name__} is closed")


def eager_int64(value: Any, argument: str) -> Any:
    """An int64 Tensor given to an eager call, flattened (never read here: the launch reads it)."""
    if not isinstance(value, ms.Tensor):
        raise TypeError(f"{argument} must be an int64 Tensor, not {type(value).__name__}")
    if value.dtype != ms.int64:
        raise TypeError(f"{argument} must be an int64 tensor, got {dtype_name(value.dtype)}")
    return value.reshape(-1)


def flat_input_names(definition: Any, count: int) -> List[str]:
    """The names of an op's count input tensors, a variadic input's one by one ("caches[1]")."""
    variadic = count - (len(definition.inputs) - 1)
    return [f"{t.name}[{i}]" if t.variadic else t.name
            for t in definition.inputs for i in range(variadic if t.variadic else 1)]


def check_tensors(definition: Any, inputs: Sequence[Any], count: Optional[int] = None) -> None:
    """TypeError naming the first input of an eager call that is not a Tensor (a list or a numpy
    array would reach the kernel as something else, or not at all). count: the call's number of
    inputs, when inputs are its first ones only (the block ops' caches)."""
    for name, value in zip(flat_input_names(definition, len(inputs) if count is None else count), inputs):
        if not isinstance(value, ms.Tensor):
            in_place = name.split("[")[0] == definition.rw_write
            what = "a Tensor or Parameter (written in place)" if in_place else "a Tensor"
            raise TypeError(f"{name} must be {what}, not {type(value).__name__}")


def check_dtypes(definition: Any, inputs: Sequence[Any], count: Optional[int] = None) -> None:
    """TypeError naming the first tensor of an eager call of a dtype configs/dtypes.yaml does not support
    (count as for :func:`check_tensors`). A graph's infer function checks the same. The int64 inputs
    (offsets, row, block_mapping) are the kernel's to check, as their shapes and values are: the
    module's KernelInstance raises the same TypeError before anything is queued."""
    by_name = {t.name: t for t in definition.inputs}
    for name, tensor in zip(flat_input_names(definition, len(inputs) if count is None else count), inputs):
        if not by_name[name.split("[")[0]].host_values:
            check_supported({"dtype": tensor.dtype}, name)


def check_same_dtype(definition: Any, args: Sequence[Any], count: Optional[int] = None) -> None:
    """TypeError when the tensors of the op's ``dtype_group`` inputs (configs/ops/*.yaml) differ in dtype;
    args are the abstract arguments of the op's inputs, a variadic input's one by one (count as for
    :func:`check_tensors`)."""
    names = flat_input_names(definition, len(args) if count is None else count)
    tensors = [(name, dtype_name(arg["dtype"])) for name, arg in zip(names, args)
               if name.split("[")[0] in definition.dtype_group]
    for name, dtype in tensors[1:]:
        if dtype != tensors[0][1]:
            raise TypeError(f"{name} has dtype {dtype} but {tensors[0][0]} has {tensors[0][1]}")


def is_whole_tensor(tensor: Any) -> bool:
    """True for a Tensor (or Parameter) that is its own whole storage, laid out densely: what an in-place
    write can target (:func:`check_in_place_target` raises the error for the others)."""
    return isinstance(tensor, ms.Tensor) and has_whole_storage(tensor)


def has_whole_storage(tensor: ms.Tensor) -> bool:
    """:func:`is_whole_tensor` for an object known to be a Tensor (its isinstance check, which a Parameter
    makes slow, left out: an eager call's types are checked before its in-place targets)."""
    return (tensor.is_contiguous() and tensor.storage_offset() == 0
            and tensor.untyped_storage().nbytes() == tensor.nbytes)


def check_in_place_target(tensor: Any, argument: str) -> None:
    """An eager in-place target: a whole Tensor or Parameter, whose own storage the kernel writes.

    A slice or view of another tensor reaches the kernel as a temporary copy, so the write would be
    lost: TypeError naming argument.
    """
    if not isinstance(tensor, ms.Tensor):
        raise TypeError(f"{argument} must be a Tensor or Parameter (written in place), not {type(tensor).__name__}")
    if not is_whole_tensor(tensor):
        raise TypeError(f"{argument} is a slice or view of a larger tensor: an in-place write would land in a "
                        f"temporary copy of it and be lost; pass the whole tensor and select the region with "
                        f"the op's own arguments")
    return tensor


def check_whole_targets(tensors: Sequence[Any], argument: str) -> None:
    """:func:`check_in_place_target` for each tensor of an eager call written in place, their types
    checked before (a Tensor each): the cheap test first, the error's argument name (``argument[i]``)
    formatted only for a tensor that fails it."""
    for i, tensor in enumerate(tensors):
        if not has_whole_storage(tensor):
            check_in_place_target(tensor, f"{argument}[{i}]")
