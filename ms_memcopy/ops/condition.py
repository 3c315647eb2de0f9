"""MemcpyWithCondition: copies through aclrtMemcpyAsyncWithCondition."""
from typing import Callable, Dict, Optional, Sequence

import numpy as np
import mindspore as ms

from ..host_buffer import HostBuffer
from ._args import check_host_buffer, check_open, check_shape
from ._dtypes import DtypeLike, ms_dtype
from ._primitive import CopyPrimitive, GradientOp
from ._samples import Sample, int64, matrix

_DIRECTIONS = ("d2d", "d2h", "h2d")


__all__ = ["MemcpyWithCondition"]


class MemcpyWithCondition(CopyPrimitive):
    r"""Copies through aclrtMemcpyAsyncWithCondition (aclrtMemcpyAsync where the runtime lacks it).

    - ``MemcpyWithCondition("d2d")``: ``y = op(x)``, a copy of x (differentiable).
    - ``MemcpyWithCondition("d2h", host_buffer=buf)``: ``nbytes = op(x, offset)`` writes x at byte offset.
    - ``MemcpyWithCondition("h2d", host_buffer=buf, shape=s, dtype=d)``: ``y = op(offset)`` reads a new
      tensor from byte offset.

    The ACL call is synchronous when the HostBuffer is pageable and asynchronous when it is pinned;
    a later read of the HostBuffer (``HostBuffer.numpy()``) waits for the copy either way.

    Args:
        direction (str): ``"d2d"``, ``"d2h"`` or ``"h2d"``.
        host_buffer (HostBuffer): d2h and h2d only: the host memory.
        shape (tuple[int]): h2d only: the shape of the tensor read.
        dtype (mindspore.dtype): h2d only: the dtype of the tensor read.

    Inputs:
        - **x** (Tensor) - d2d and d2h: the tensor copied, of any supported dtype.
        - **offset** (Tensor) - d2h and h2d: int64, one value: the byte offset in the HostBuffer.

    Outputs:
        d2d: a new Tensor, a copy of x; d2h: an int64 Tensor of shape (1,), the bytes written; h2d: a
        new Tensor of the given shape and dtype.

    Raises:
        TypeError: a wrong dtype (unsupported, offset not int64) or argument type.
        ValueError: an unknown direction, missing or unexpected keywords, bytes outside the
            HostBuffer, a closed HostBuffer (nothing is copied).

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import mindspore as ms
        >>> from ms_memcopy.ops import MemcpyWithCondition
        >>> x = ms.Tensor([0, 1, 2, 3, 4, 5], ms.int32)
        >>> print(MemcpyWithCondition("d2d")(x))
        [0 1 2 3 4 5]
        >>> from ms_memcopy import HostBuffer
        >>> with HostBuffer(32, pinned=False) as buf:
        ...     print(MemcpyWithCondition("d2h", host_buffer=buf)(x, ms.Tensor([8], ms.int64)))
        ...     print(MemcpyWithCondition("h2d", host_buffer=buf, shape=(2, 3), dtype=ms.int32)(
        ...         ms.Tensor([8], ms.int64)))
        [24]
        [[0 1 2]
         [3 4 5]]
    """

    _forms = _DIRECTIONS

    def __init__(self, direction: str, *, host_buffer: Optional[HostBuffer] = None,
                 shape: Optional[Sequence[int]] = None, dtype: Optional[DtypeLike] = None):
        if direction not in _DIRECTIONS:
            raise ValueError(f"direction must be one of {_DIRECTIONS}, got {direction!r}")
        self.direction = direction
        if direction == "d2d":
            if host_buffer is not None or shape is not None or dtype is not None:
                raise ValueError("takes no host_buffer, shape or dtype")
            self._grad_copy = GradientOp("memcpy_cond_d2d")
            super().__init__("memcpy_cond_d2d", attrs={}, bprop=self._bprop_copy)
            return
        self.host_buffer = check_host_buffer(host_buffer)
        attrs = {"buffer_id": self.host_buffer.buffer_id}
        if direction == "d2h":
            if shape is not None or dtype is not None:
                raise ValueError("takes no shape or dtype")
            super().__init__("memcpy_cond_d2h", attrs=attrs)
        else:
            if shape is None or dtype is None:
                raise ValueError("needs shape and dtype")
            self.shape = check_shape(shape, "shape")
            self.dtype = ms_dtype(dtype, "dtype")
            super().__init__("memcpy_cond_h2d", attrs=attrs, given=(self.shape, self.dtype))

    def _bprop_copy(self, x, out, dout):
        return (self._grad_copy(dout),)

    def _check_eager(self, inputs):
        if self.direction != "d2d":
            check_open(self.host_buffer)


# ---- the sample calls of this family (ms_memcopy.samples gathers them; numpy expectations) ----

def _sample_cond_d2d(buf):
    del buf
    x = matrix()
    return Sample("memcpy_cond_d2d", MemcpyWithCondition("d2d"), (ms.Tensor(x),), x)


def _sample_cond_d2h(buf):
    x = matrix()
    return Sample("memcpy_cond_d2h", MemcpyWithCondition("d2h", host_buffer=buf), (ms.Tensor(x), int64(256)),
                  np.array([x.nbytes], np.int64),
                  (("host_buffer[256:376]", lambda: buf.numpy(np.float32, x.shape, offset=256).copy(), x),))


def _sample_cond_h2d(buf):
    x = matrix() - 7
    buf.numpy(np.float32, x.shape, offset=256)[:] = x
    return Sample("memcpy_cond_h2d", MemcpyWithCondition("h2d", host_buffer=buf, shape=x.shape, dtype=ms.float32),
                  (int64(256),), x)


#: op name -> sample(host_buffer): one per op of configs/ops/condition.yaml.
SAMPLES: Dict[str, Callable[[HostBuffer], Sample]] = {
    "memcpy_cond_d2d": _sample_cond_d2d,
    "memcpy_cond_d2h": _sample_cond_d2h,
    "memcpy_cond_h2d": _sample_cond_h2d,
}
