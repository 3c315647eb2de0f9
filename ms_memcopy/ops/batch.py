"""MemcpyBatch: many tensors to or from a HostBuffer in one aclrtMemcpyBatchAsync per 4096 items."""
from typing import Any, Callable, Dict, Optional, Sequence, Tuple, Union

import numpy as np

import mindspore as ms

from ..host_buffer import HostBuffer
from .._extension import op_def_route
from ._args import check_host_buffer, check_int, check_open, check_shape, eager_int64
from ._dtypes import DtypeLike, ms_dtype
from ._errors import labelled_errors
from ._primitive import CopyPrimitive
from ._samples import Sample, int64
from ._variadic import OpCell

_DIRECTIONS = ("d2h", "h2d")

# MindSpore's handling of a custom op's outputs costs time quadratic in their number (measured on the
# first call of an aot op with 500/1000 outputs: 0.6/1.7 s, whatever the kernel does), so an h2d read
# of more tensors than this is split into launches of at most this many outputs each.
MAX_OUTPUTS_PER_LAUNCH = 128


def _h2d_outputs(shapes, dtypes):
    """(shapes, MindSpore dtypes) of the tensors an h2d read returns, checked."""
    if not shapes or dtypes is None or len(shapes) != len(dtypes):
        raise ValueError("h2d needs shapes and dtypes: two lists of the same non-zero length")
    shapes = [check_shape(s, f"shapes[{i}]") for i, s in enumerate(shapes)]
    dtypes = [ms_dtype(d, f"dtypes[{i}]") for i, d in enumerate(dtypes)]
    return shapes, dtypes


__all__ = ["MemcpyBatch"]


class MemcpyBatch(OpCell):
    r"""Batched copies between device tensors and a HostBuffer, in one aclrtMemcpyBatchAsync per 4096 items.

    ``MemcpyBatch("d2h", host_buffer, num_tensors=k)``: ``nbytes = op(t0, ..., t{k-1}, offsets)`` writes
    tensor i at byte ``offsets[i]`` of the HostBuffer and returns an int64 tensor of the bytes written
    per tensor. Destination ranges must not overlap (the copies run in no order).

    ``MemcpyBatch("h2d", host_buffer, shapes=[...], dtypes=[...])``: ``(t0, ..., t{k-1}) = op(offsets)``
    reads new tensors of the given shapes and dtypes from byte ``offsets[i]`` of the HostBuffer, returned
    as a tuple in GRAPH_MODE and PYNATIVE_MODE alike (a 1-tuple for one tensor: ``(t0,) = op(offsets)``).

    ``offsets`` is an int64 tensor of k values (a tensor, so it can change without recompiling).
    Zero-size tensors are skipped; k may exceed ACL's 4096 items per call; on a SoC without the
    batch call the copies go one by one through aclrtMemcpyAsync, with the same result.
    Both forms read or write the HostBuffer, so GRAPH_MODE keeps them and runs them in program order.
    An ``nn.Cell`` holding its primitive(s): an h2d read of more than ``MAX_OUTPUTS_PER_LAUNCH`` tensors
    runs one primitive per part of at most that many tensors (same call, same results).

    Args:
        direction (str): ``"d2h"`` (tensors into the HostBuffer) or ``"h2d"`` (new tensors from it).
        host_buffer (HostBuffer): the host memory copied into or out of.
        num_tensors (int): d2h only: k, the number of tensors of each call (>= 1).
        shapes (list[tuple[int]]): h2d only: the shape of each tensor read.
        dtypes (list[mindspore.dtype]): h2d only: the dtype of each tensor read (one per shape).

    Inputs:
        - **t0, ..., t{k-1}** (Tensor) - d2h only: the tensors to write, of any supported dtype.
        - **offsets** (Tensor) - int64, k values: the byte offset in the HostBuffer of each tensor.

    Outputs:
        d2h: an int64 Tensor of shape (k,), the bytes written per tensor. h2d: a tuple of k new
        Tensors of the given shapes and dtypes.

    Raises:
        TypeError: a tensor of an unsupported dtype, offsets not int64, host_buffer not a HostBuffer.
        ValueError: an unknown direction, a wrong number of tensors or offsets, an offset outside
            the HostBuffer, overlapping d2h destinations, or a closed HostBuffer (nothing is copied).

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import mindspore as ms
        >>> from ms_memcopy.ops import MemcpyBatch
        >>> a = ms.Tensor([0, 1, 2, 3], ms.float32)
        >>> b = ms.Tensor([7, 8], ms.int64)
        >>> from ms_memcopy import HostBuffer
        >>> buf = HostBuffer(64)
        >>> write = MemcpyBatch("d2h", buf, num_tensors=2)
        >>> print(write(a, b, ms.Tensor([0, 16], ms.int64)))
        [16 16]
        >>> read = MemcpyBatch("h2d", buf, shapes=[(4,), (2,)], dtypes=[ms.float32, ms.int64])
        >>> x, y = read(ms.Tensor([0, 16], ms.int64))
        >>> print(x, y)
        [0. 1. 2. 3.] [7 8]
        >>> buf.close()
    """

    _forms = _DIRECTIONS

    def __init__(self, direction: str, host_buffer: HostBuffer, *, num_tensors: Optional[int] = None,
                 shapes: Optional[Sequence[Sequence[int]]] = None, dtypes: Optional[Sequence[DtypeLike]] = None):
        super().__init__()
        if direction == "h2d" and num_tensors is None and isinstance(shapes, (list, tuple)) and dtypes is not None \
                and len(shapes) > MAX_OUTPUTS_PER_LAUNCH:
            check_host_buffer(host_buffer)
            shapes, dtypes = _h2d_outputs(shapes, dtypes)
            self._bounds = tuple((start, min(start + MAX_OUTPUTS_PER_LAUNCH, len(shapes)))
                                 for start in range(0, len(shapes), MAX_OUTPUTS_PER_LAUNCH))
            self._parts = tuple(_BatchPrimitive("h2d", host_buffer, shapes=shapes[a:b], dtypes=dtypes[a:b])
                                for a, b in self._bounds)
        else:
            self._bounds = ()
            self._parts = (_BatchPrimitive(direction, host_buffer, num_tensors=num_tensors, shapes=shapes,
                                           dtypes=dtypes),)
        self.primitive = self._parts[0]
        self.direction = direction
        self.host_buffer = self.primitive.host_buffer
        if direction == "h2d":
            self.shapes = [s for part in self._parts for s in part.shapes]
            self.dtypes = [d for part in self._parts for d in part.dtypes]
            self.num_tensors = len(self.shapes)
        else:
            self.num_tensors = self.primitive.num_tensors

    def construct(self, *args: ms.Tensor) -> Union[ms.Tensor, Tuple[ms.Tensor, ...]]:
        if self.direction == "d2h":
            return self.primitive(args[:-1], args[-1])
        if not self._bounds:
            return self.primitive(*args)
        offsets = args[0]
        if offsets.shape != (self.num_tensors,):
            raise ValueError(f"ms_memcopy MemcpyBatch(h2d): offsets must hold {self.num_tensors} value(s)")
        outs = ()
        for part, (start, stop) in zip(self._parts, self._bounds):
            outs = outs + part(offsets[start:stop])
        return outs

    def __call__(self, *args: Any) -> Union[ms.Tensor, Tuple[ms.Tensor, ...]]:
        """An eager call (a graph compiles construct instead). A split read checks the offsets once (their
        values too when the call has them on the host), then runs one launch per part over its slice of
        them; a Tensor's values are read and checked by each part's launch (ms_memcopy.ops)."""
        if not self._bounds:  # (construct's call of the primitive, inlined)
            return self.primitive(args[:-1], args[-1]) if self.direction == "d2h" else self.primitive(*args)
        with labelled_errors(self.primitive._label):
            check_open(self.host_buffer)
            if len(args) != 1:
                raise ValueError(f"takes one input (offsets), got {len(args)}")
            offsets = eager_int64(args[0], "offsets")
            self._check_whole_read(offsets)
        outs = ()
        for part, (start, stop) in zip(self._parts, self._bounds):
            part_offsets = offsets[start:stop]
            outs = outs + part(part_offsets if isinstance(part_offsets, ms.Tensor) else ms.Tensor(part_offsets))
        return outs

    def _check_whole_read(self, offsets):
        """The kernel's check of the whole split read (every offset named by its index in the whole),
        through a kernel instance of all k outputs that checks and never launches."""
        if self.__dict__.get("_whole_read") is None:
            self.__dict__["_whole_read"] = op_def_route.load().KernelInstance(
                "memcpy_batch_h2d", self.host_buffer.buffer_id,
                *op_def_route.given_values("memcpy_batch_h2d", self.shapes, self.dtypes))
        self._whole_read.check(offsets)


class _BatchPrimitive(CopyPrimitive):
    """The primitive of one MemcpyBatch form (the checks of its calls)."""

    def __init__(self, direction: str, host_buffer: HostBuffer, *, num_tensors: Optional[int] = None,
                 shapes: Optional[Sequence[Sequence[int]]] = None, dtypes: Optional[Sequence[DtypeLike]] = None):
        if direction not in _DIRECTIONS:
            raise ValueError(f"direction must be one of {_DIRECTIONS}, got {direction!r}")
        self.host_buffer = check_host_buffer(host_buffer)
        self.direction = direction
        attrs = {"buffer_id": host_buffer.buffer_id}
        if direction == "d2h":
            if shapes is not None or dtypes is not None:
                raise ValueError("shapes and dtypes are for direction 'h2d'; 'd2h' takes num_tensors")
            if num_tensors is None:
                raise ValueError("direction 'd2h' needs num_tensors")
            self.num_tensors = check_int(num_tensors, "num_tensors", minimum=1)
            attrs["num_tensors"] = self.num_tensors
            super().__init__("memcpy_batch_d2h", attrs=attrs)
        else:
            if num_tensors is not None:
                raise ValueError("num_tensors is for direction 'd2h'; 'h2d' takes shapes and dtypes")
            self.shapes, self.dtypes = _h2d_outputs(shapes, dtypes)
            self.num_tensors = len(self.shapes)
            super().__init__("memcpy_batch_h2d", attrs=attrs, given=(tuple(self.shapes), tuple(self.dtypes)))

    def _check_input_count(self, count):
        # (d2h: the op's length check, "tensors: holds ... but the primitive was built for num_tensors=k")
        if self.direction == "h2d" and count != 1:
            raise ValueError(f"takes one input (offsets), got {count}")

    def _check_eager(self, inputs):
        check_open(self.host_buffer)
        self._check_input_count(len(inputs))


# ---- the sample calls of this family (ms_memcopy.samples gathers them; numpy expectations) ----

def _batch_tensors():
    return np.arange(6, dtype=np.float32), np.arange(12, dtype=np.int16).reshape(3, 4) - 5


_BATCH_OFFSETS = (0, 64)


def _sample_batch_d2h(buf):
    a, b = _batch_tensors()
    return Sample("memcpy_batch_d2h", MemcpyBatch("d2h", buf, num_tensors=2),
                  (ms.Tensor(a), ms.Tensor(b), int64(*_BATCH_OFFSETS)), np.array([a.nbytes, b.nbytes], np.int64),
                  (("host_buffer[0:24]", lambda: buf.numpy(np.float32, a.shape, offset=0).copy(), a),
                   ("host_buffer[64:88]", lambda: buf.numpy(np.int16, b.shape, offset=64).copy(), b)))


def _sample_batch_h2d(buf):
    a, b = _batch_tensors()
    buf.numpy(np.float32, a.shape, offset=0)[:] = a
    buf.numpy(np.int16, b.shape, offset=64)[:] = b
    return Sample("memcpy_batch_h2d", MemcpyBatch("h2d", buf, shapes=[a.shape, b.shape], dtypes=[ms.float32, ms.int16]),
                  (int64(*_BATCH_OFFSETS),), (a, b))


#: op name -> sample(host_buffer): one per op of configs/ops/batch.yaml.
SAMPLES: Dict[str, Callable[[HostBuffer], Sample]] = {
    "memcpy_batch_d2h": _sample_batch_d2h,
    "memcpy_batch_h2d": _sample_batch_h2d,
}
