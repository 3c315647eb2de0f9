"""Memcpy2D: pitched sub-matrix copies through aclrtMemcpy2dAsync.

Every tensor is seen as a matrix: its leading dimensions are the rows, its last dimension the
columns (a 1-D tensor is one row, a scalar a 1x1 matrix).
"""
from typing import Callable, Dict, Optional, Sequence

import numpy as np
import mindspore as ms
from mindspore import ops

from ..host_buffer import HostBuffer
from ._args import check_host_buffer, check_in_place_target, check_int, check_open, check_shape, matrix_view
from ._dtypes import DtypeLike, itemsize, ms_dtype
from ._primitive import CopyPrimitive, GradientOp
from ._samples import Sample, int64, matrix, parameter

_MODES = ("extract", "insert", "write", "d2h", "h2d")


__all__ = ["Memcpy2D"]


class Memcpy2D(CopyPrimitive):
    r"""Pitched 2-D copies (aclrtMemcpy2dAsync): sub-matrices of tensors, pitched rows to or from a HostBuffer.

    - ``Memcpy2D("extract", height=h, width=w)``: ``y = op(x, row, col)`` is ``x[row:row+h, col:col+w]``
      of the matrix view of x, as a new (h, w) tensor, in one pitched device-to-device copy.
    - ``Memcpy2D("insert")``: ``y = op(dst, src, row, col)`` is dst with the region at (row, col)
      replaced by src (seen as a matrix).
    - ``Memcpy2D("write")``: ``nbytes = op(dst, src, row, col)`` writes src (seen as a matrix) into
      the region at (row, col) of dst **in place** and returns an int64 tensor of one value, the bytes
      written. Its cost depends on src only, not on the size of dst. In graphs dst must be a
      Parameter (see "In-place writes" in the README for what autodiff, slices and graph outputs see).
    - ``Memcpy2D("d2h", host_buffer=buf, pitch=p)``: ``nbytes = op(x, offset)`` writes row r of x at byte
      ``offset + r * p`` of the HostBuffer (the bytes between rows are left untouched).
    - ``Memcpy2D("h2d", host_buffer=buf, pitch=p, shape=s, dtype=d)``: ``y = op(offset)`` reads row r of
      a new tensor of shape s from byte ``offset + r * p``.

    ``row``, ``col`` and ``offset`` are int64 tensors of one value. Heights above 5,242,880 rows and
    rows wider than 5,000,000 bytes are split into several calls; on a SoC without 2-D
    device-to-device copies, extract and insert use aclrtMemcpyAsync instead, with the same result.
    extract and insert are differentiable and accept inputs with unknown dimensions in GRAPH_MODE.

    Args:
        mode (str): ``"extract"``, ``"insert"``, ``"write"``, ``"d2h"`` or ``"h2d"``.
        height (int): extract only: the rows of the region (>= 0).
        width (int): extract only: the columns of the region (>= 0).
        host_buffer (HostBuffer): d2h and h2d only: the host memory.
        pitch (int): d2h and h2d only: the bytes from one row to the next in the HostBuffer (>= a row).
        shape (tuple[int]): h2d only: the shape of the tensor read.
        dtype (mindspore.dtype): h2d only: the dtype of the tensor read.

    Inputs:
        - **x** (Tensor) - extract and d2h: the tensor read, of any supported dtype.
        - **dst** (Tensor) - insert: the tensor whose region is replaced; write: the Parameter (or
          whole tensor) written in place.
        - **src** (Tensor) - insert and write: the matrix written into dst, of dst's dtype.
        - **row**, **col** (Tensor) - extract, insert, write: int64, one value each: the region's corner.
        - **offset** (Tensor) - d2h and h2d: int64, one value: the byte offset of the first row.

    Outputs:
        extract: a new (height, width) Tensor; insert: a new Tensor like dst; h2d: a new Tensor of
        the given shape and dtype; write and d2h: an int64 Tensor of shape (1,), the bytes written.

    Raises:
        TypeError: a wrong dtype (unsupported, src differing from dst, offsets not int64), a wrong
            argument type, or (write) a dst that is a slice or view, or not a Parameter in graphs.
        ValueError: an unknown mode, missing or unexpected keywords, a region outside the tensor, a
            pitch smaller than a row, rows outside the HostBuffer, a closed HostBuffer (nothing is copied).

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import mindspore as ms
        >>> from ms_memcopy.ops import Memcpy2D
        >>> x = ms.Tensor([[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]], ms.float32)
        >>> row, col = ms.Tensor([1], ms.int64), ms.Tensor([1], ms.int64)
        >>> print(Memcpy2D("extract", height=2, width=2)(x, row, col))
        [[ 5.  6.]
         [ 9. 10.]]
        >>> print(Memcpy2D("insert")(x, ms.ops.zeros((1, 2), ms.float32), row, col))
        [[ 0.  1.  2.  3.]
         [ 4.  0.  0.  7.]
         [ 8.  9. 10. 11.]]
        >>> dst = ms.Parameter(ms.ops.zeros((2, 3), ms.float32), name="dst")
        >>> print(Memcpy2D("write")(dst, ms.ops.ones((1, 2), ms.float32), row, col))
        [8]
        >>> print(dst.asnumpy())
        [[0. 0. 0.]
         [0. 1. 1.]]
        >>> from ms_memcopy import HostBuffer
        >>> with HostBuffer(32) as buf:
        ...     buf.numpy()[:] = 0
        ...     print(Memcpy2D("d2h", host_buffer=buf, pitch=16)(x[:2, :2], ms.Tensor([0], ms.int64)))
        ...     print(buf.numpy("float32"))
        ...     print(Memcpy2D("h2d", host_buffer=buf, pitch=16, shape=(2, 2), dtype=ms.float32)(
        ...         ms.Tensor([0], ms.int64)))
        [16]
        [0. 1. 0. 0. 4. 5. 0. 0.]
        [[0. 1.]
         [4. 5.]]
    """

    _forms = _MODES

    def __init__(self, mode: str, *, height: Optional[int] = None, width: Optional[int] = None,
                 host_buffer: Optional[HostBuffer] = None, pitch: Optional[int] = None,
                 shape: Optional[Sequence[int]] = None, dtype: Optional[DtypeLike] = None):
        if mode not in _MODES:
            raise ValueError(f"mode must be one of {_MODES}, got {mode!r}")
        self.mode = mode
        given = {"height": height, "width": width, "host_buffer": host_buffer, "pitch": pitch, "shape": shape,
                 "dtype": dtype}
        wanted = {"extract": ("height", "width"), "insert": (), "write": (), "d2h": ("host_buffer", "pitch"),
                  "h2d": ("host_buffer", "pitch", "shape", "dtype")}[mode]
        extra = [k for k, v in given.items() if v is not None and k not in wanted]
        missing = [k for k in wanted if given[k] is None]
        if extra or missing:
            raise ValueError(f"takes {list(wanted) or 'no keyword arguments'}; "
                             f"missing {missing}, unexpected {extra}")
        if mode == "extract":
            self.height = check_int(height, "height")
            self.width = check_int(width, "width")
            self._grad_insert = GradientOp("memcpy2d_insert")
            super().__init__("memcpy2d_extract", attrs={"height": self.height, "width": self.width},
                             bprop=self._bprop_extract)
        elif mode == "insert":
            self._grad_insert = GradientOp("memcpy2d_insert")
            self._grad_extract = GradientOp("memcpy2d_extract_like")
            super().__init__("memcpy2d_insert", attrs={}, bprop=self._bprop_insert)
        elif mode == "write":
            super().__init__("memcpy2d_write", attrs={})
        else:
            self.host_buffer = check_host_buffer(host_buffer)
            self.pitch = check_int(pitch, "pitch", minimum=1)
            attrs = {"buffer_id": self.host_buffer.buffer_id, "pitch": self.pitch}
            if mode == "d2h":
                super().__init__("memcpy2d_d2h", attrs=attrs)
            else:
                self.shape = check_shape(shape, "shape")
                self.dtype = ms_dtype(dtype, "dtype")
                rows, cols = matrix_view(self.shape)
                self._check_pitch(cols * itemsize(self.dtype))
                super().__init__("memcpy2d_h2d", attrs=attrs, given=(self.shape, self.dtype))

    # -- gradients ---------------------------------------------------------------------------
    def _bprop_extract(self, x, row, col, out, dout):
        return self._grad_insert(ops.zeros_like(x), dout, row, col), ops.zeros_like(row), ops.zeros_like(col)

    def _bprop_insert(self, dst, src, row, col, out, dout):
        d_dst = self._grad_insert(dout, ops.zeros_like(src), row, col)
        d_src = self._grad_extract(dout, src, row, col)
        return d_dst, d_src, ops.zeros_like(row), ops.zeros_like(col)

    # -- checks ------------------------------------------------------------------------------
    def _check_pitch(self, row_bytes):
        if row_bytes > self.pitch:
            raise ValueError(f"pitch {self.pitch} is smaller than a row ({row_bytes} bytes)")

    def _check_eager(self, inputs):
        if self.mode == "write":
            check_in_place_target(inputs[0], "dst")
        elif self.mode in ("d2h", "h2d"):
            check_open(self.host_buffer)


# ---- the sample calls of this family (ms_memcopy.samples gathers them; numpy expectations) ----

def _sample_extract(buf):
    del buf
    x = matrix()
    return Sample("memcpy2d_extract", Memcpy2D("extract", height=2, width=3), (ms.Tensor(x), int64(1), int64(2)),
                  x[1:3, 2:5])


def _sample_extract_like(buf):
    del buf
    x = matrix()
    # In GRADIENT_ONLY: Memcpy2D("insert")'s bprop builds this op (src's gradient).
    return Sample("memcpy2d_extract_like", GradientOp("memcpy2d_extract_like"),
                  (ms.Tensor(x), ms.Tensor(np.zeros((3, 2), np.float32)), int64(2), int64(4)), x[2:5, 4:6])


def _sample_insert(buf):
    del buf
    x, src = matrix(), -np.ones((2, 3), np.float32)
    expected = x.copy()
    expected[3:5, 0:3] = src
    return Sample("memcpy2d_insert", Memcpy2D("insert"), (ms.Tensor(x), ms.Tensor(src), int64(3), int64(0)),
                  expected)


_PITCH = 32  # host bytes per row of the 2-D samples: rows of 24 bytes, 8 bytes of padding each


def _host_rows(buf, offset, rows):
    return buf.numpy(np.uint8, (rows, _PITCH), offset=offset)[:, :24].copy().view(np.float32)


def _sample_2d_d2h(buf):
    x = matrix()
    return Sample("memcpy2d_d2h", Memcpy2D("d2h", host_buffer=buf, pitch=_PITCH), (ms.Tensor(x), int64(128)),
                  np.array([x.nbytes], np.int64), (("host_buffer rows from 128", lambda: _host_rows(buf, 128, 5), x),))


def _sample_2d_h2d(buf):
    x = matrix() * 2
    buf.numpy(np.uint8, (5, _PITCH), offset=128)[:, :24] = x.view(np.uint8)
    return Sample("memcpy2d_h2d", Memcpy2D("h2d", host_buffer=buf, pitch=_PITCH, shape=x.shape, dtype=ms.float32),
                  (int64(128),), x)


def _sample_write(buf):
    del buf
    dst, src = matrix(), -np.arange(4, dtype=np.float32).reshape(1, 4)
    expected = dst.copy()
    expected[2:3, 1:5] = src
    target = parameter(dst)
    return Sample("memcpy2d_write", Memcpy2D("write"), (target, ms.Tensor(src), int64(2), int64(1)),
                  np.array([src.nbytes], np.int64), (("dst", target.asnumpy, expected),))


#: op name -> sample(host_buffer): one per op of configs/ops/memcpy2d.yaml.
SAMPLES: Dict[str, Callable[[HostBuffer], Sample]] = {
    "memcpy2d_extract": _sample_extract,
    "memcpy2d_extract_like": _sample_extract_like,
    "memcpy2d_insert": _sample_insert,
    "memcpy2d_d2h": _sample_2d_d2h,
    "memcpy2d_h2d": _sample_2d_h2d,
    "memcpy2d_write": _sample_write,
}
