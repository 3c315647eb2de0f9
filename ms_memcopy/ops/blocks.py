"""SwapBlocks and CopyBlocks: vLLM's swap_blocks / copy_blocks over L paged caches, in place.

A cache is a tensor of shape [num_blocks, *block_shape] (a Parameter in graphs); all caches of one
call share that shape and dtype. ``block_mapping`` is an int64 [n, 2] tensor of (source block,
destination block) pairs applied to every cache; eager calls also take a numpy array or a list of
pairs. Each call returns an int64 tensor of one value, the bytes moved (L * n * block bytes).
"""
import numbers

import numpy as np
import mindspore as ms

from ..host_buffer import HostBuffer
from ._args import check_host_buffer, check_in_place_target, check_int, num_elements, static_shape
from ._dtypes import check_supported, dtype_name, itemsize
from ._errors import labelled_errors
from ._host_values import reading_host_values_once, remember_host_values
from ._primitive import CopyPrimitive
from ._variadic import OpCell
from ._checks import check_block_mapping

_DIRECTIONS = ("d2h", "h2d")


def _mapping_values(mapping):
    """The pairs of an eager block_mapping (Tensor, numpy array or list of pairs) as numpy int64 [n, 2]."""
    if isinstance(mapping, ms.Tensor):
        if mapping.dtype != ms.int64:
            raise TypeError(f"block_mapping must be an int64 tensor, got {dtype_name(mapping.dtype)}")
        values = mapping.asnumpy()
    elif isinstance(mapping, np.ndarray):
        if mapping.dtype.kind not in "iu":
            raise TypeError(f"block_mapping must hold integers, got a numpy array of {mapping.dtype}")
        values = mapping
    elif isinstance(mapping, (list, tuple)):
        if any(isinstance(v, bool) or not isinstance(v, numbers.Integral)
               for pair in mapping for v in (pair if isinstance(pair, (list, tuple)) else (pair,))):
            raise TypeError("block_mapping must be a list of (source block, destination block) pairs of ints")
        try:
            values = np.array(mapping, dtype=np.int64).reshape(-1, 2) if len(mapping) == 0 else \
                np.array(mapping, dtype=np.int64)
        except (OverflowError, ValueError) as e:
            raise ValueError(f"block_mapping: {e}") from None
    else:
        raise TypeError(f"block_mapping must be an int64 Tensor, a numpy array or a list of pairs, "
                        f"not {type(mapping).__name__}")
    if values.ndim != 2 or values.shape[1] != 2:
        raise ValueError(f"block_mapping must have shape [n, 2], got {list(values.shape)}")
    return values.astype(np.int64, copy=False)


def _block_geometry(shapes_and_dtypes):
    """(num_blocks, block_bytes) of caches given as (shape, dtype) pairs, or None where a shape is
    unknown; TypeError/ValueError naming the cache that differs from caches[0]."""
    (first_shape, first_dtype), *rest = shapes_and_dtypes
    for l, (shape, dtype) in enumerate(rest, start=1):
        if dtype_name(dtype) != dtype_name(first_dtype):
            raise TypeError(f"caches[{l}] has dtype {dtype_name(dtype)} but caches[0] has {dtype_name(first_dtype)}; "
                            f"all caches of one call have the same shape and dtype")
        if static_shape(shape) is not None and static_shape(first_shape) is not None and \
                tuple(shape) != tuple(first_shape):
            raise ValueError(f"caches[{l}] has shape {list(shape)} but caches[0] has {list(first_shape)}; "
                             f"all caches of one call have the same shape and dtype")
    if tuple(first_shape) == (-2,):  # rank unknown until run time: the kernel checks
        return None
    if len(first_shape) < 1:
        raise ValueError("caches[0] must have shape [num_blocks, *block_shape], got a scalar")
    shape = static_shape(first_shape)
    if shape is None:
        return None
    block_bytes = num_elements(shape[1:]) * itemsize(first_dtype)
    if block_bytes == 0:
        raise ValueError(f"caches[0]: a block of shape {list(shape)} holds no bytes")
    return shape[0], block_bytes


class _BlockPrimitive(CopyPrimitive):
    """The common part: L caches plus block_mapping in, one int64 out; checks in every mode."""

    def __init__(self, op_name, num_caches, attrs):
        self.num_caches = check_int(num_caches, "num_caches", minimum=1)
        self._eager_mapping = None
        super().__init__(op_name, attrs={**attrs, "num_caches": self.num_caches})

    def __call__(self, caches, block_mapping):
        # The caches arrive as one tuple (the OpCell packs them).
        flat = (*caches, block_mapping)
        with reading_host_values_once():
            with labelled_errors(self._label):
                self._check_count(len(flat))
                values = _mapping_values(flat[-1])
            mapping = flat[-1] if isinstance(flat[-1], ms.Tensor) else ms.Tensor(values)
            remember_host_values(mapping, values)  # checked and launched from these values
            self._eager_mapping = values
            try:
                return super().__call__(caches, mapping)
            finally:
                self._eager_mapping = None

    def _check_count(self, count):
        if count != self.num_caches + 1:
            raise TypeError(f"built for num_caches={self.num_caches} and takes "
                            f"{self.num_caches} caches plus block_mapping, got {count} arguments")

    def _check_infer(self, args):
        self._check_count(len(args))
        for l, cache in enumerate(args[:-1]):
            check_supported(cache, f"caches[{l}]")
        geometry = _block_geometry([(a["shape"], a["dtype"]) for a in args[:-1]])
        mapping = args[-1]
        if dtype_name(mapping["dtype"]) != "int64":
            raise TypeError(f"block_mapping must be an int64 tensor, got {dtype_name(mapping['dtype'])}")
        shape = tuple(mapping["shape"])
        if shape != (-2,) and (len(shape) != 2 or shape[1] not in (2, -1)):  # (-2,): rank unknown
            raise ValueError(f"block_mapping must have shape [n, 2], got {list(shape)}")
        value = mapping.get("value")
        if value is not None and geometry is not None:
            values = np.asarray(value.asnumpy() if hasattr(value, "asnumpy") else value, np.int64).reshape(-1, 2)
            self._check_mapping(geometry, values)

    def _check_eager(self, inputs):
        caches = inputs[:-1]
        for l, cache in enumerate(caches):
            if self._op_def.rw_write:
                check_in_place_target(cache, f"caches[{l}]")
            elif not isinstance(cache, ms.Tensor):
                raise TypeError(f"caches[{l}] must be a Tensor, not {type(cache).__name__}")
        geometry = _block_geometry([(c.shape, c.dtype) for c in caches])
        self._check_mapping(geometry, self._eager_mapping)

    def _check_mapping(self, geometry, values):
        raise NotImplementedError


class SwapBlocks(OpCell):
    r"""Swaps blocks of L device caches out to, or in from, L host caches kept in a HostBuffer.

    ``SwapBlocks("d2h", host_buffer, num_caches=L)``: ``nbytes = op(cache_0, ..., cache_{L-1}, block_mapping)``
    copies, for every pair ``(device_block, host_block)`` and every cache l, block ``device_block`` of
    cache l into host block ``host_block`` of host cache l.

    ``SwapBlocks("h2d", host_buffer, num_caches=L)``: the same call copies, for every pair
    ``(host_block, device_block)``, host block ``host_block`` of host cache l into block
    ``device_block`` of cache l, **in place** (the caches must be Parameters in graphs).

    Host layout: the HostBuffer holds the L host caches one after another; host block h of cache l
    starts at byte ``(l * H + h) * block_bytes`` with ``H = host_buffer.nbytes // (L * block_bytes)``.
    All L x n copies go through one aclrtMemcpyBatchAsync per 4096 items (blocks adjacent on both
    sides merged); on a SoC without the batch call, one aclrtMemcpyAsync per item.
    A block outside either side or a destination block twice raises ValueError before any byte moves.

    Args:
        direction (str): ``"d2h"`` (swap out) or ``"h2d"`` (swap in).
        host_buffer (HostBuffer): the host memory holding the L host caches.
        num_caches (int): L, the caches of each call (>= 1).

    Inputs:
        - **cache_0, ..., cache_{L-1}** (Tensor) - [num_blocks, \*block_shape], one shape and dtype;
          written in place by h2d (Parameters in graphs).
        - **block_mapping** (Tensor) - int64 [n, 2]: (source block, destination block) pairs; eager
          calls also take a numpy array or a list of pairs.

    Outputs:
        An int64 Tensor of shape (1,): the bytes moved.

    Raises:
        TypeError: caches of different or unsupported dtypes, block_mapping not int64, a wrong
            number of caches, an in-place target that is a slice or view (or not a Parameter in graphs).
        ValueError: caches of different shapes, a block out of range, a destination block twice,
            a closed HostBuffer (nothing is copied).

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import numpy as np
        >>> import mindspore as ms
        >>> from ms_memcopy import HostBuffer
        >>> from ms_memcopy.ops import SwapBlocks
        >>> k = ms.Parameter(ms.Tensor(np.arange(8, dtype=np.float32).reshape(4, 2)), name="k")
        >>> v = ms.Parameter(ms.Tensor(np.arange(8, 16, dtype=np.float32).reshape(4, 2)), name="v")
        >>> buf = HostBuffer(2 * 2 * 8)  # 2 caches of 2 host blocks of 8 bytes
        >>> print(SwapBlocks("d2h", buf, num_caches=2)(k, v, ms.Tensor([[3, 0], [1, 1]], ms.int64)))
        [32]
        >>> print(buf.numpy(np.float32).reshape(2, 2, 2))
        [[[ 6.  7.]
          [ 2.  3.]]
        <BLANKLINE>
         [[14. 15.]
          [10. 11.]]]
        >>> print(SwapBlocks("h2d", buf, num_caches=2)(k, v, ms.Tensor([[0, 0]], ms.int64)))
        [16]
        >>> print(k.asnumpy())
        [[6. 7.]
         [2. 3.]
         [4. 5.]
         [6. 7.]]
        >>> buf.close()
    """

    _forms = _DIRECTIONS

    def __init__(self, direction: str, host_buffer: HostBuffer, *, num_caches: int):
        super().__init__()
        self.primitive = _SwapBlocksPrimitive(direction, host_buffer, num_caches=num_caches)
        self.direction = direction
        self.host_buffer = host_buffer
        self.num_caches = self.primitive.num_caches

    def host_blocks(self, block_bytes):
        """H: the blocks of each host cache for blocks of block_bytes bytes."""
        return self.primitive.host_blocks(block_bytes)


class _SwapBlocksPrimitive(_BlockPrimitive):
    """The primitive of SwapBlocks (the checks of its calls)."""

    def __init__(self, direction: str, host_buffer: HostBuffer, *, num_caches: int):
        if direction not in _DIRECTIONS:
            raise ValueError(f"direction must be one of {_DIRECTIONS}, got {direction!r}")
        self.direction = direction
        self.host_buffer = check_host_buffer(host_buffer)
        super().__init__(f"swap_blocks_{direction}", num_caches, {"buffer_id": host_buffer.buffer_id})

    def host_blocks(self, block_bytes):
        """H: the blocks of each host cache for blocks of block_bytes bytes."""
        return self.host_buffer.nbytes // (self.num_caches * block_bytes)

    def _check_host_room(self, block_bytes):
        if self.host_blocks(block_bytes) == 0:
            raise ValueError(f"host_buffer: its {self.host_buffer.nbytes} bytes hold no host block: each of the "
                             f"{self.num_caches} host caches needs at least one block of {block_bytes} bytes; "
                             f"give a HostBuffer of at least {self.num_caches * block_bytes} bytes "
                             f"(num_caches x host blocks x block bytes)")

    def _check_infer(self, args):
        check_host_buffer(self.host_buffer)
        super()._check_infer(args)

    def _check_eager(self, inputs):
        check_host_buffer(self.host_buffer)
        super()._check_eager(inputs)

    def _check_mapping(self, geometry, values):
        num_blocks, block_bytes = geometry
        self._check_host_room(block_bytes)
        device, host = ("device", num_blocks), ("host", self.host_blocks(block_bytes))
        source, destination = (device, host) if self.direction == "d2h" else (host, device)
        check_block_mapping(values, source, destination, same_cache=False)


class CopyBlocks(OpCell):
    r"""Copies blocks within each of L device caches, in place (vLLM's copy_blocks: forking a sequence).

    ``nbytes = CopyBlocks(num_caches=L)(cache_0, ..., cache_{L-1}, block_mapping)`` copies, for every
    pair ``(src_block, dst_block)``, block ``src_block`` of each cache onto block ``dst_block`` of the
    same cache. The caches must be Parameters in graphs.

    The batch call refuses device-to-device items, so the copies go through one memory-copy
    descriptor each (aclrtMemcpyAsyncWithDesc) on SoCs that have descriptors, else one
    aclrtMemcpyAsync each (blocks adjacent on both sides merged). A block outside the cache, a
    destination block twice, or a block both read and written in one call raises ValueError before
    any byte moves.

    Args:
        num_caches (int): L, the caches of each call (>= 1).

    Inputs:
        - **cache_0, ..., cache_{L-1}** (Tensor) - [num_blocks, \*block_shape], one shape and dtype,
          written in place (Parameters in graphs).
        - **block_mapping** (Tensor) - int64 [n, 2]: (source block, destination block) pairs; eager
          calls also take a numpy array or a list of pairs.

    Outputs:
        An int64 Tensor of shape (1,): the bytes copied.

    Raises:
        TypeError: caches of different or unsupported dtypes, block_mapping not int64, a wrong
            number of caches, a cache that is a slice or view (or not a Parameter in graphs).
        ValueError: caches of different shapes, a block out of range, a destination block twice, a
            block both read and written (nothing is copied).

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import numpy as np
        >>> import mindspore as ms
        >>> from ms_memcopy.ops import CopyBlocks
        >>> k = ms.Parameter(ms.Tensor(np.arange(8, dtype=np.float32).reshape(4, 2)), name="k")
        >>> v = ms.Parameter(ms.Tensor(np.arange(8, 16, dtype=np.float32).reshape(4, 2)), name="v")
        >>> print(CopyBlocks(num_caches=2)(k, v, ms.Tensor([[1, 2]], ms.int64)))
        [16]
        >>> print(v.asnumpy())
        [[ 8.  9.]
         [10. 11.]
         [10. 11.]
         [14. 15.]]
    """

    def __init__(self, *, num_caches: int):
        super().__init__()
        self.primitive = _CopyBlocksPrimitive(num_caches=num_caches)
        self.num_caches = self.primitive.num_caches


class _CopyBlocksPrimitive(_BlockPrimitive):
    """The primitive of CopyBlocks (the checks of its calls)."""

    def __init__(self, *, num_caches: int):
        super().__init__("copy_blocks", num_caches, {})

    def _check_mapping(self, geometry, values):
        side = ("device", geometry[0])
        check_block_mapping(values, side, side, same_cache=True)
