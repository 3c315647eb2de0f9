"""The specs and results of an OffloadingHandler: block numbers in, finished jobs out (vLLM's shapes).

A spec is any object with ``medium()`` and ``block_ids``, so vLLM's own GPULoadStoreSpec and
CPULoadStoreSpec work unchanged; the checks here turn one into validated block numbers.
"""
from dataclasses import dataclass
from typing import Any, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

__all__ = ["TransferResult", "DeviceBlocksSpec", "HostBlocksSpec"]

DEVICE, HOST = "GPU", "CPU"  # vLLM's medium names (vllm-ascend keeps them for the NPU)


@dataclass(frozen=True)
class DeviceBlocksSpec:
    """The device blocks of a transfer, as vLLM's GPULoadStoreSpec holds them.

    Args:
        block_ids (Sequence[int]): device block numbers, ordered by KV cache group.
        group_sizes (Sequence[int], optional): the blocks of each group, adding up to len(block_ids);
            None: one group.
        block_indices (Sequence[int], optional): the logical index of each group's first block (a group
            starting at L skips the first ``L % block_size_factor`` device blocks of its first host
            block); None: every group starts at a host block's first device block.

    Raises:
        None: an OffloadingHandler checks the numbers (ValueError/TypeError naming ``spec[i]``).

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> from ms_memcopy.offload import DeviceBlocksSpec
        >>> spec = DeviceBlocksSpec([4, 5, 9], group_sizes=[2, 1], block_indices=[0, 6])
        >>> print(spec.medium(), list(spec.block_ids), spec.group_sizes)
        GPU [4, 5, 9] [2, 1]
    """

    block_ids: Sequence[int]
    group_sizes: Optional[Sequence[int]] = None
    block_indices: Optional[Sequence[int]] = None

    @staticmethod
    def medium() -> str:
        return DEVICE


@dataclass(frozen=True)
class HostBlocksSpec:
    """The host blocks of a transfer, each of ``block_size_factor`` device blocks (vLLM's CPULoadStoreSpec).

    Args:
        block_ids (Sequence[int]): host block numbers of the handler (host block h is the pool's host
            blocks ``h*N .. h*N + N - 1``, N the handler's block_size_factor).

    Raises:
        None: an OffloadingHandler checks the numbers (ValueError/TypeError naming ``spec[i]``).

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> from ms_memcopy.offload import HostBlocksSpec
        >>> spec = HostBlocksSpec([3, 0])
        >>> print(spec.medium(), list(spec.block_ids))
        CPU [3, 0]
    """

    block_ids: Sequence[int]

    @staticmethod
    def medium() -> str:
        return HOST


class TransferResult(NamedTuple):
    """A finished job of an OffloadingHandler, with the fields of vLLM's TransferResult.

    Args:
        job_id (int): the id given to ``transfer_async``.
        success (bool): whether the copy completed.
        transfer_size (int): the bytes moved, over all caches.
        transfer_time (float): the seconds from ``transfer_async`` until the handler saw the job finished.
        transfer_type (tuple[str, str]): ("GPU", "CPU") for a store, ("CPU", "GPU") for a load.

    Raises:
        None.

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> from ms_memcopy.offload import TransferResult
        >>> result = TransferResult(3, True, 4096, 0.001, ("GPU", "CPU"))
        >>> print(result.job_id, result.success, result.transfer_size, result[:2])
        3 True 4096 (3, True)
    """

    job_id: int
    success: bool
    transfer_size: int
    transfer_time: float
    transfer_type: Tuple[str, str]


def spec_medium(spec: Any, argument: str) -> Any:
    medium = getattr(spec, "medium", None)
    if not callable(medium) or not hasattr(spec, "block_ids"):
        raise TypeError(f"{argument} must be a block spec with medium() and block_ids (DeviceBlocksSpec, "
                        f"HostBlocksSpec or vLLM's GPULoadStoreSpec/CPULoadStoreSpec), not {type(spec).__name__}")
    value = medium()
    if value not in (DEVICE, HOST):
        raise ValueError(f"{argument}.medium() must be {DEVICE!r} or {HOST!r}, got {value!r}")
    return value


def checked_block_ids(spec: Any, argument: str, count: int, side: str) -> np.ndarray:
    """spec.block_ids as a 1-D int64 array of numbers in [0, count)."""
    ids = np.asarray(spec.block_ids)
    if ids.size == 0:
        return np.zeros(0, np.int64)
    if ids.ndim != 1 or ids.dtype == np.bool_ or not np.issubdtype(ids.dtype, np.integer):
        raise TypeError(f"{argument}.block_ids must be a 1-D sequence of ints, got {ids.dtype} of shape {ids.shape}")
    bad = ids[(ids < 0) | (ids >= count)]
    if bad.size:
        raise ValueError(f"{argument}.block_ids: {side} block(s) {bad.tolist()} out of range [0, {count})")
    return ids.astype(np.int64)


def checked_counts(values: Any, argument: str) -> Optional[List[int]]:
    """None, or values as a list of non-negative ints."""
    if values is None:
        return None
    values = np.asarray(values)
    if values.ndim != 1 or (values.size and (values.dtype == np.bool_ or not np.issubdtype(values.dtype, np.integer))):
        raise TypeError(f"{argument} must be a 1-D sequence of ints")
    if (values < 0).any():
        raise ValueError(f"{argument} must hold non-negative ints, got {values.tolist()}")
    return [int(v) for v in values]
