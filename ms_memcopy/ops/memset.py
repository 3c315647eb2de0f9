"""MemsetAsync: a byte range of a device tensor set in place through aclrtMemsetAsync."""
from typing import Callable, Dict

import numpy as np

from ..host_buffer import HostBuffer
from ._args import check_in_place_target, check_int
from ._primitive import CopyPrimitive
from ._samples import Sample, int64, parameter

__all__ = ["MemsetAsync"]


class MemsetAsync(CopyPrimitive):
    r"""Sets a byte range of a tensor in place through aclrtMemsetAsync.

    ``nbytes = MemsetAsync(value)(dst, offset, count)`` sets the bytes ``[offset, offset + count)`` of dst
    (its bytes in memory order) to ``value``, on the stream, and returns count as an int64 Tensor of
    shape (1,). dst is written in place: in graphs it must be a Parameter; in PYNATIVE_MODE a Tensor or
    Parameter (see "In-place writes" in the README for what autodiff, slices and graph outputs see).
    Not differentiable.

    Args:
        value (int): the byte every position of the range is set to, in [0, 255]. Default: ``0``.

    Inputs:
        - **dst** (Parameter) - the tensor written in place, of any supported dtype.
        - **offset** (Tensor) - int64, one value: the first byte set.
        - **count** (Tensor) - int64, one value: the number of bytes set.

    Outputs:
        An int64 Tensor of shape (1,): the bytes set.

    Raises:
        TypeError: value not an int, dst of an unsupported dtype, offset or count not int64, a dst that
            is a slice or view, or not a Parameter in graphs.
        ValueError: value outside [0, 255], count negative, a range outside dst (nothing is written).

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import mindspore as ms
        >>> from ms_memcopy.ops import MemsetAsync
        >>> dst = ms.Parameter(ms.ops.zeros(6, ms.uint8), name="dst")
        >>> print(MemsetAsync(7)(dst, ms.Tensor([1], ms.int64), ms.Tensor([3], ms.int64)))
        [3]
        >>> print(dst.asnumpy())
        [0 7 7 7 0 0]
    """

    def __init__(self, value: int = 0):
        self.value = check_int(value, "value")
        super().__init__("memset_async", attrs={"value": self.value})

    def _check_eager(self, inputs):
        check_in_place_target(inputs[0], "dst")


# ---- the sample calls of this family (ms_memcopy.samples gathers them; numpy expectations) ----

def _sample_memset(buf):
    del buf
    values = np.arange(12, dtype=np.int16).reshape(3, 4)
    expected = values.copy()
    expected.view(np.uint8).reshape(-1)[5:19] = 0xAB
    target = parameter(values)
    return Sample("memset_async", MemsetAsync(0xAB), (target, int64(5), int64(14)), np.array([14], np.int64),
                  (("dst", target.asnumpy, expected),))


#: op name -> sample(host_buffer): one per op of configs/ops/memset.yaml.
SAMPLES: Dict[str, Callable[[HostBuffer], Sample]] = {
    "memset_async": _sample_memset,
}
