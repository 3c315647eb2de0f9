"""MemcpyWithDesc: device-to-device copies through a memory-copy descriptor."""
from typing import Callable, Dict, Optional

import mindspore as ms
from mindspore import ops

from ..host_buffer import HostBuffer
from ._args import check_int
from ._primitive import CopyPrimitive, GradientOp
from ._samples import Sample, int64, matrix


__all__ = ["MemcpyWithDesc"]


class MemcpyWithDesc(CopyPrimitive):
    r"""Copies within the device through aclrtSetMemcpyDesc + aclrtMemcpyAsyncWithDesc.

    - ``MemcpyWithDesc()``: ``y = op(x)``, a copy of x.
    - ``MemcpyWithDesc(count=n)``: ``y = op(x, start)`` is the n elements of x (flattened) from element
      ``start`` (an int64 tensor of one value), as a 1-D tensor.

    Each kernel instance allocates its descriptor in device memory once (the size from
    aclrtGetMemcpyDescSize) and sets it before every launch. On a SoC without descriptors the copy
    goes through aclrtMemcpyAsync, with the same result. Differentiable; accepts inputs with unknown
    dimensions in GRAPH_MODE.

    Args:
        count (int, optional): the elements of the window (>= 0); None (default) copies all of x.

    Inputs:
        - **x** (Tensor) - the tensor copied, of any supported dtype.
        - **start** (Tensor) - with count only: int64, one value: the window's first element.

    Outputs:
        A new Tensor: a copy of x, or with count the 1-D window of ``count`` elements.

    Raises:
        TypeError: x of an unsupported dtype, start not int64, count not an int.
        ValueError: count negative or larger than x, a window outside x (nothing is copied).

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import mindspore as ms
        >>> from ms_memcopy.ops import MemcpyWithDesc
        >>> x = ms.Tensor([0, 1, 2, 3, 4, 5], ms.int32)
        >>> print(MemcpyWithDesc()(x))
        [0 1 2 3 4 5]
        >>> print(MemcpyWithDesc(count=3)(x, ms.Tensor([2], ms.int64)))
        [2 3 4]
    """

    def __init__(self, count: Optional[int] = None):
        if count is None:
            self.count = None
            self._grad_copy = GradientOp("memcpy_desc_copy")
            super().__init__("memcpy_desc_copy", attrs={}, bprop=self._bprop_copy)
        else:
            self.count = check_int(count, "count")
            self._grad_insert = GradientOp("memcpy2d_insert")
            super().__init__("memcpy_desc_window", attrs={"count": self.count}, bprop=self._bprop_window)

    def _bprop_copy(self, x, out, dout):
        return (self._grad_copy(dout),)

    def _bprop_window(self, x, start, out, dout):
        flat = ops.zeros_like(x).reshape(1, -1)
        dx = self._grad_insert(flat, dout.reshape(1, -1), ops.zeros_like(start), start)
        return dx.reshape(x.shape), ops.zeros_like(start)


# ---- the sample calls of this family (ms_memcopy.samples gathers them; numpy expectations) ----

def _sample_desc_copy(buf):
    del buf
    x = matrix()
    return Sample("memcpy_desc_copy", MemcpyWithDesc(), (ms.Tensor(x),), x)


def _sample_desc_window(buf):
    del buf
    x = matrix()
    return Sample("memcpy_desc_window", MemcpyWithDesc(count=4), (ms.Tensor(x), int64(7)), x.reshape(-1)[7:11])


#: op name -> sample(host_buffer): one per op of configs/ops/desc.yaml.
SAMPLES: Dict[str, Callable[[HostBuffer], Sample]] = {
    "memcpy_desc_copy": _sample_desc_copy,
    "memcpy_desc_window": _sample_desc_window,
}
