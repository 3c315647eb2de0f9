"""SwapBlocks and CopyBlocks: vLLM's swap_blocks / copy_blocks over L paged caches, in place.

A cache is a tensor of shape [num_blocks, *block_shape] (a Parameter in graphs); the caches of one
call share num_blocks, and each has its own block shape and dtype (an MLA latent and rope cache, an
int8 K with a bf16 V). ``block_mapping`` is an int64 [n, 2] tensor of (source block, destination
block) pairs applied to every cache; eager calls also take a numpy array or a list of pairs. Each
call returns an int64 tensor of one value, the bytes moved (n times the sum of the caches' block bytes).
"""
import numbers
from typing import Callable, Dict, Sequence, Union

import numpy as np
import mindspore as ms

from .._framework import recording_gradients
from ..host_buffer import HostBuffer
from ..host_chunks import HostChunks
from ._args import check_host_buffer, check_int, check_open, check_whole_targets
from ._errors import labelled_errors, relabelled
from ._primitive import CopyPrimitive, _all_tensors, _dense
from ._samples import Sample, parameter
from ._variadic import OpCell

_DIRECTIONS = ("d2h", "h2d")
#: SwapBlocks' host layouts, in the order of the kernel's host_layout attribute (configs/ops/blocks.yaml).
HOST_LAYOUTS = ("cache_major", "block_major")


def _host_mapping(mapping):
    """A block_mapping given on the host (a numpy array or a list of pairs) as a numpy int64 array, which
    the kernel takes as host values; its shape and values are the kernel's to check."""
    if isinstance(mapping, np.ndarray):
        if mapping.dtype.kind not in "iu":
            raise TypeError(f"block_mapping must hold integers, got a numpy array of {mapping.dtype}")
        return mapping.astype(np.int64, copy=False)
    if not isinstance(mapping, (list, tuple)):
        raise TypeError(f"block_mapping must be an int64 Tensor, a numpy array or a list of pairs, "
                        f"not {type(mapping).__name__}")
    if any(isinstance(v, bool) or not isinstance(v, numbers.Integral)
           for pair in mapping for v in (pair if isinstance(pair, (list, tuple)) else (pair,))):
        raise TypeError("block_mapping must be a list of (source block, destination block) pairs of ints")
    try:
        return np.array(mapping, dtype=np.int64).reshape(-1, 2) if len(mapping) == 0 else \
            np.array(mapping, dtype=np.int64)
    except (OverflowError, ValueError) as e:
        raise ValueError(f"block_mapping: {e}") from None


__all__ = ["SwapBlocks", "CopyBlocks"]


class _BlockPrimitive(CopyPrimitive):
    """The common part: L caches plus block_mapping in, one int64 out; checks in every mode."""

    def __init__(self, op_name, num_caches, attrs):
        self.num_caches = check_int(num_caches, "num_caches", minimum=1)
        super().__init__(op_name, attrs={**attrs, "num_caches": self.num_caches})

    def __call__(self, caches, block_mapping):
        # An eager call, from the caller to the kernel in this one frame (as CopyPrimitive.__call__): the
        # Python checks are what the kernel cannot see (the caches' objects, a numpy or list mapping's
        # conversion); the mapping's dtype, shape and values are the kernel's (its KernelInstance).
        try:
            self._check_count(len(caches))
            mapping = block_mapping if isinstance(block_mapping, ms.Tensor) else _host_mapping(block_mapping)
            # the fast path: the checks that need Python here, the others in the kernel's try_call
            if _all_tensors(caches) and self._eager_check_passes(caches) and not recording_gradients():
                outputs = self._kernel_instance().try_call(caches, mapping)
                if outputs is not None:
                    return outputs[0]
            self._check_tensors(caches, len(caches) + 1)
            if recording_gradients():  # MindSpore's record reads a Tensor
                return self._recorded_call((caches, mapping if isinstance(mapping, ms.Tensor) else ms.Tensor(mapping)))
            # (caches written in place were checked whole, hence dense: _check_eager)
            return self._kernel_instance()(caches if self._op_def.rw_write else _dense(caches), mapping)[0]
        except (ValueError, TypeError) as error:
            raise relabelled(error, self._label) from None

    def _submit_transfer(self, caches, block_mapping):
        with labelled_errors(self._label):
            self._check_count(len(caches))
            mapping = block_mapping if isinstance(block_mapping, ms.Tensor) else _host_mapping(block_mapping)
            self._check_tensors(caches, len(caches) + 1)
            caches = caches if self._op_def.rw_write else _dense(caches)
            outputs, ticket = self._kernel_instance().submit_transfer(caches, mapping)
            return outputs[0], ticket

    def _check_count(self, caches):
        if caches != self.num_caches:
            raise TypeError(f"built for num_caches={self.num_caches} and takes "
                            f"{self.num_caches} caches plus block_mapping, got {caches + 1} arguments")

    def _check_eager(self, inputs):
        # (the caches' types were checked before: _check_tensors)
        if self._op_def.rw_write:
            check_whole_targets(inputs, "caches")


class SwapBlocks(OpCell):
    r"""Swaps blocks of L device caches out to, or in from, L host caches kept in a HostBuffer.

    ``SwapBlocks("d2h", host_buffer, num_caches=L)``: ``nbytes = op(cache_0, ..., cache_{L-1}, block_mapping)``
    copies, for every pair ``(device_block, host_block)`` and every cache l, block ``device_block`` of
    cache l into host block ``host_block`` of host cache l.

    ``SwapBlocks("h2d", host_buffer, num_caches=L)``: the same call copies, for every pair
    ``(host_block, device_block)``, host block ``host_block`` of host cache l into block
    ``device_block`` of cache l, **in place** (the caches must be Parameters in graphs).

    The caches share their number of blocks; each has its own block shape and dtype (b_l bytes a
    block, ``B = b_0 + ... + b_{L-1}``). A host block holds ``F = blocks_per_host_block`` device
    blocks of every cache, ``F * B`` bytes, and the HostBuffer holds ``H = nbytes // (F * B)`` of
    them. The mapping's host column names a slot of one device block, in ``[0, H * F)``: slot s is
    device block ``s % F`` of host block ``s // F``. With ``P_l = b_0 + ... + b_{l-1}``, slot s of
    cache l starts at byte

    - ``host_layout="cache_major"`` (the default): ``H * F * P_l + s * b_l`` (the L host caches one
      after another; for caches of one block shape, ``(l * H * F + s) * b``);
    - ``host_layout="block_major"``: ``(s // F) * F * B + F * P_l + (s % F) * b_l`` (host block h is
      one contiguous range of ``F * B`` bytes holding its F blocks of cache 0, then of cache 1, ...).

    ``host_buffer`` may be a :class:`~ms_memcopy.HostChunks` (several HostBuffers, e.g. a host pool
    larger than one allocation): chunk k holds ``H_k = chunks[k].nbytes // (F * B)`` host blocks,
    numbered after chunk k - 1's, and is laid out alone as above (s counted from its first slot).

    All L x n copies go through one aclrtMemcpyBatchAsync per 4096 items (blocks adjacent on both
    sides merged), whichever chunks they touch; on a SoC without the batch call, one aclrtMemcpyAsync
    per item.
    A block outside either side or a destination block twice raises ValueError before any byte moves.

    Args:
        direction (str): ``"d2h"`` (swap out) or ``"h2d"`` (swap in).
        host_buffer (Union[HostBuffer, HostChunks]): the host memory holding the L host caches.
        num_caches (int): L, the caches of each call (>= 1).
        host_layout (str): ``"cache_major"`` (default) or ``"block_major"``.
        blocks_per_host_block (int): F, the device blocks of each cache in one host block (>= 1,
            default 1; vLLM's ``block_size_factor``).

    Inputs:
        - **cache_0, ..., cache_{L-1}** (Tensor) - [num_blocks, \*block_shape_l], one num_blocks,
          any block shapes and dtypes; written in place by h2d (Parameters in graphs).
        - **block_mapping** (Tensor) - int64 [n, 2]: (source block, destination block) pairs; eager
          calls also take a numpy array or a list of pairs.

    Outputs:
        An int64 Tensor of shape (1,): the bytes moved.

    Raises:
        TypeError: caches of unsupported dtypes, block_mapping not int64, a wrong number of caches,
            an in-place target that is a slice or view (or not a Parameter in graphs).
        ValueError: caches of different numbers of blocks, a block out of range, a destination
            block twice, a HostBuffer holding no host block, a closed HostBuffer (nothing is copied).

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import mindspore as ms
        >>> from ms_memcopy.ops import SwapBlocks
        >>> k = ms.Parameter(ms.Tensor([[0, 1], [2, 3], [4, 5], [6, 7]], ms.float32), name="k")
        >>> v = ms.Parameter(ms.Tensor([[8, 9], [10, 11], [12, 13], [14, 15]], ms.float32), name="v")
        >>> from ms_memcopy import HostBuffer
        >>> buf = HostBuffer(2 * 2 * 8)  # 2 caches of 2 host blocks of 8 bytes
        >>> print(SwapBlocks("d2h", buf, num_caches=2)(k, v, ms.Tensor([[3, 0], [1, 1]], ms.int64)))
        [32]
        >>> print(buf.numpy("float32").reshape(2, 2, 2))
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

    def __init__(self, direction: str, host_buffer: Union[HostBuffer, HostChunks], *, num_caches: int,
                 host_layout: str = "cache_major", blocks_per_host_block: int = 1):
        super().__init__()
        self.primitive = _SwapBlocksPrimitive(direction, host_buffer, num_caches=num_caches, host_layout=host_layout,
                                              blocks_per_host_block=blocks_per_host_block)
        self.direction = direction
        self.host_buffer = host_buffer
        self.num_caches = self.primitive.num_caches
        self.host_layout = host_layout
        self.blocks_per_host_block = self.primitive.blocks_per_host_block

    def host_blocks(self, block_bytes: Union[int, Sequence[int]]) -> int:
        """H: the host blocks of the HostBuffer for caches whose blocks hold block_bytes bytes (one int for
        caches of one block size, else the L caches' block bytes)."""
        return self.primitive.host_blocks(block_bytes)


class _SwapBlocksPrimitive(_BlockPrimitive):
    """The primitive of SwapBlocks (the checks of its calls)."""

    _op_suffix = ""  # "_async": the asynchronous form's op (ms_memcopy/ops/transfer.py)

    def __init__(self, direction: str, host_buffer: Union[HostBuffer, HostChunks], *, num_caches: int,
                 host_layout: str = "cache_major",
                 blocks_per_host_block: int = 1):
        if direction not in _DIRECTIONS:
            raise ValueError(f"direction must be one of {_DIRECTIONS}, got {direction!r}")
        if host_layout not in HOST_LAYOUTS:
            raise ValueError(f"host_layout must be one of {HOST_LAYOUTS}, got {host_layout!r}")
        self.direction = direction
        self.blocks_per_host_block = check_int(blocks_per_host_block, "blocks_per_host_block", minimum=1)
        self.host_buffer = check_host_buffer(host_buffer, chunks=True)
        super().__init__(f"swap_blocks_{direction}{self._op_suffix}", num_caches,
                         {"buffer_id": host_buffer.buffer_id, "host_layout": HOST_LAYOUTS.index(host_layout),
                          "blocks_per_host_block": self.blocks_per_host_block})

    def host_blocks(self, block_bytes):
        """H: the host blocks of the HostBuffer (see SwapBlocks.host_blocks)."""
        if isinstance(block_bytes, numbers.Integral):
            block_bytes = [block_bytes] * self.num_caches
        if len(block_bytes) != self.num_caches:
            raise ValueError(f"block_bytes: {len(block_bytes)} values for num_caches={self.num_caches}")
        host_block_bytes = self.blocks_per_host_block * sum(block_bytes)
        if isinstance(self.host_buffer, HostChunks):
            return self.host_buffer.host_blocks(host_block_bytes)
        return self.host_buffer.nbytes // host_block_bytes

    def _check_eager(self, inputs):
        check_open(self.host_buffer)
        super()._check_eager(inputs)


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
        - **cache_0, ..., cache_{L-1}** (Tensor) - [num_blocks, \*block_shape_l], one num_blocks,
          any block shapes and dtypes; written in place (Parameters in graphs).
        - **block_mapping** (Tensor) - int64 [n, 2]: (source block, destination block) pairs; eager
          calls also take a numpy array or a list of pairs.

    Outputs:
        An int64 Tensor of shape (1,): the bytes copied.

    Raises:
        TypeError: caches of unsupported dtypes, block_mapping not int64, a wrong number of caches,
            a cache that is a slice or view (or not a Parameter in graphs).
        ValueError: caches of different numbers of blocks, a block out of range, a destination block
            twice, a block both read and written (nothing is copied).

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import mindspore as ms
        >>> from ms_memcopy.ops import CopyBlocks
        >>> k = ms.Parameter(ms.Tensor([[0, 1], [2, 3], [4, 5], [6, 7]], ms.float32), name="k")
        >>> v = ms.Parameter(ms.Tensor([[8, 9], [10, 11], [12, 13], [14, 15]], ms.float32), name="v")
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

    _op_suffix = ""  # "_async": the asynchronous form's op (ms_memcopy/ops/transfer.py)

    def __init__(self, *, num_caches: int):
        super().__init__("copy_blocks" + self._op_suffix, num_caches, {})


# ---- the sample calls of this family (ms_memcopy.samples gathers them; numpy expectations) ----

# Blocks: 2 caches of 4 blocks of (2, 4) float32 (32 bytes); host block h of cache l at byte (l * H + h) * 32.
_CACHES, _BLOCK_SHAPE = 2, (2, 4)
_BLOCK_BYTES = int(np.prod(_BLOCK_SHAPE)) * 4


def _cache_values():
    return [np.arange(4 * 8, dtype=np.float32).reshape(4, *_BLOCK_SHAPE) + 100 * l for l in range(_CACHES)]


def _host_blocks(buf):
    per_cache = buf.nbytes // (_CACHES * _BLOCK_BYTES)
    return buf.numpy(np.float32, (_CACHES, per_cache, *_BLOCK_SHAPE))


def _sample_swap_d2h(buf):
    values = _cache_values()
    mapping = np.array([[1, 0], [3, 2]], np.int64)  # (device block, host block)
    expected = [np.stack([v[1], v[3]]) for v in values]
    writes = tuple((f"host cache {l}, blocks 0 and 2", lambda l=l: _host_blocks(buf)[l, [0, 2]].copy(), expected[l])
                   for l in range(_CACHES))
    return Sample("swap_blocks_d2h", SwapBlocks("d2h", buf, num_caches=_CACHES),
                  (*[parameter(v) for v in values], ms.Tensor(mapping)),
                  np.array([_CACHES * len(mapping) * _BLOCK_BYTES], np.int64), writes)


def _sample_swap_h2d(buf):
    values = _cache_values()
    host = _host_blocks(buf)
    host[:] = -np.arange(host.size, dtype=np.float32).reshape(host.shape)
    mapping = np.array([[2, 0], [0, 3]], np.int64)  # (host block, device block)
    expected = [v.copy() for v in values]
    for l in range(_CACHES):
        expected[l][0], expected[l][3] = host[l, 2], host[l, 0]
    caches = [parameter(v) for v in values]
    return Sample("swap_blocks_h2d", SwapBlocks("h2d", buf, num_caches=_CACHES), (*caches, ms.Tensor(mapping)),
                  np.array([_CACHES * len(mapping) * _BLOCK_BYTES], np.int64),
                  tuple((f"caches[{l}]", caches[l].asnumpy, expected[l]) for l in range(_CACHES)))


def _sample_copy_blocks(buf):
    del buf
    values = _cache_values()
    mapping = np.array([[0, 2], [1, 3]], np.int64)  # (source block, destination block)
    expected = [v.copy() for v in values]
    for l in range(_CACHES):
        expected[l][2], expected[l][3] = values[l][0], values[l][1]
    caches = [parameter(v) for v in values]
    return Sample("copy_blocks", CopyBlocks(num_caches=_CACHES), (*caches, ms.Tensor(mapping)),
                  np.array([_CACHES * len(mapping) * _BLOCK_BYTES], np.int64),
                  tuple((f"caches[{l}]", caches[l].asnumpy, expected[l]) for l in range(_CACHES)))


#: op name -> sample(host_buffer): one per op of configs/ops/blocks.yaml.
SAMPLES: Dict[str, Callable[[HostBuffer], Sample]] = {
    "swap_blocks_d2h": _sample_swap_d2h,
    "swap_blocks_h2d": _sample_swap_h2d,
    "copy_blocks": _sample_copy_blocks,
}
