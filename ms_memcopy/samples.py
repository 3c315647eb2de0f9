"""One sample call for every op of configs/ops/*.yaml, with the numpy expectation of its results.

``SAMPLES`` maps each op name (:func:`ms_memcopy.op_defs.all_op_defs`) to a function of a HostBuffer
of at least ``HOST_BUFFER_BYTES`` bytes that returns a :class:`Sample`: the op built through its public
class for that form, the inputs of one call (Parameters for in-place targets, so a graph can write
them), the numpy values of its outputs, and what the call writes (HostBuffer bytes or an in-place
target) with the numpy values expected there. A sample that reads the HostBuffer fills it first.

The tests run every sample in GRAPH_MODE and PYNATIVE_MODE and compare it against numpy, and so
does ``python -m ms_memcopy npu-check``; their per-form lists come from here, and a test fails when
an op of configs/ops has no sample. Importing this module imports MindSpore.
"""
import dataclasses
import itertools
from typing import Callable, Dict, Tuple

import numpy as np
import mindspore as ms

from . import _kernels_lib
from .host_buffer import HostBuffer
from .ops import CopyBlocks, Memcpy2D, MemcpyBatch, MemcpyWithCondition, MemcpyWithDesc, SwapBlocks
from .ops._primitive import GradientOp

#: The HostBuffer size every sample fits in.
HOST_BUFFER_BYTES = 1024
#: The ops no public class builds: a bprop's (GradientOp, without Python checks of its own; its eager
#: calls take the bprop's checked inputs).
GRADIENT_ONLY = frozenset({"memcpy2d_extract_like"})

_names = itertools.count()


@dataclasses.dataclass
class Sample:
    """One call of one op: ``op(*inputs)`` returns ``outputs`` (a numpy array, or a tuple of them for
    an op returning a tuple) and leaves each ``read()`` of ``writes`` equal to its expectation."""

    op_name: str
    op: object
    inputs: tuple
    outputs: object
    writes: Tuple[Tuple[str, Callable[[], np.ndarray], np.ndarray], ...] = ()

    @property
    def label(self):
        """The op's label, as its errors name it: "MemcpyBatch(d2h)"."""
        return _kernels_lib.op_label(self.op_name)

    def check(self, outputs):
        """AssertionError unless outputs and the writes equal the numpy expectations."""
        if isinstance(self.outputs, tuple):
            if not isinstance(outputs, tuple) or len(outputs) != len(self.outputs):
                raise AssertionError(f"{self.label}: expected a tuple of {len(self.outputs)} tensors, "
                                     f"got {type(outputs).__name__}")
            pairs = [(f"outputs[{i}]", got, want) for i, (got, want) in enumerate(zip(outputs, self.outputs))]
        else:
            pairs = [("output", outputs, self.outputs)]
        self._compare(pairs)
        self.check_writes()

    def check_writes(self):
        """AssertionError unless what the call writes equals the numpy expectations."""
        self._compare([(name, read(), want) for name, read, want in self.writes])

    def _compare(self, pairs):
        for name, got, want in pairs:
            got = got.asnumpy() if isinstance(got, ms.Tensor) else np.asarray(got)
            np.testing.assert_array_equal(got, want, err_msg=f"{self.label}: {name}")
            if got.dtype != np.asarray(want).dtype:
                raise AssertionError(f"{self.label}: {name} has dtype {got.dtype}, expected {np.asarray(want).dtype}")


def _int64(*values):
    return ms.Tensor(np.array(values, np.int64))


def _parameter(values):
    """A Parameter of values with a name of its own (a graph's inputs need distinct names)."""
    return ms.Parameter(ms.Tensor(values), name=f"ms_memcopy_sample_{next(_names)}")


def _matrix():
    return np.arange(30, dtype=np.float32).reshape(5, 6)


def _batch_tensors():
    return np.arange(6, dtype=np.float32), np.arange(12, dtype=np.int16).reshape(3, 4) - 5


_BATCH_OFFSETS = (0, 64)


def _batch_d2h(buf):
    a, b = _batch_tensors()
    return Sample("memcpy_batch_d2h", MemcpyBatch("d2h", buf, num_tensors=2),
                  (ms.Tensor(a), ms.Tensor(b), _int64(*_BATCH_OFFSETS)), np.array([a.nbytes, b.nbytes], np.int64),
                  (("host_buffer[0:24]", lambda: buf.numpy(np.float32, a.shape, offset=0).copy(), a),
                   ("host_buffer[64:88]", lambda: buf.numpy(np.int16, b.shape, offset=64).copy(), b)))


def _batch_h2d(buf):
    a, b = _batch_tensors()
    buf.numpy(np.float32, a.shape, offset=0)[:] = a
    buf.numpy(np.int16, b.shape, offset=64)[:] = b
    return Sample("memcpy_batch_h2d", MemcpyBatch("h2d", buf, shapes=[a.shape, b.shape], dtypes=[ms.float32, ms.int16]),
                  (_int64(*_BATCH_OFFSETS),), (a, b))


# Blocks: 2 caches of 4 blocks of (2, 4) float32 (32 bytes); host block h of cache l at byte (l * H + h) * 32.
_CACHES, _BLOCK_SHAPE = 2, (2, 4)
_BLOCK_BYTES = int(np.prod(_BLOCK_SHAPE)) * 4


def _cache_values():
    return [np.arange(4 * 8, dtype=np.float32).reshape(4, *_BLOCK_SHAPE) + 100 * l for l in range(_CACHES)]


def _host_blocks(buf):
    per_cache = buf.nbytes // (_CACHES * _BLOCK_BYTES)
    return buf.numpy(np.float32, (_CACHES, per_cache, *_BLOCK_SHAPE))


def _swap_d2h(buf):
    values = _cache_values()
    mapping = np.array([[1, 0], [3, 2]], np.int64)  # (device block, host block)
    expected = [np.stack([v[1], v[3]]) for v in values]
    return Sample("swap_blocks_d2h", SwapBlocks("d2h", buf, num_caches=_CACHES),
                  (*[_parameter(v) for v in values], ms.Tensor(mapping)),
                  np.array([_CACHES * len(mapping) * _BLOCK_BYTES], np.int64),
                  tuple((f"host cache {l}, blocks 0 and 2", lambda l=l: _host_blocks(buf)[l, [0, 2]].copy(),
                         expected[l]) for l in range(_CACHES)))


def _swap_h2d(buf):
    values = _cache_values()
    host = _host_blocks(buf)
    host[:] = -np.arange(host.size, dtype=np.float32).reshape(host.shape)
    mapping = np.array([[2, 0], [0, 3]], np.int64)  # (host block, device block)
    expected = [v.copy() for v in values]
    for l in range(_CACHES):
        expected[l][0], expected[l][3] = host[l, 2], host[l, 0]
    caches = [_parameter(v) for v in values]
    return Sample("swap_blocks_h2d", SwapBlocks("h2d", buf, num_caches=_CACHES), (*caches, ms.Tensor(mapping)),
                  np.array([_CACHES * len(mapping) * _BLOCK_BYTES], np.int64),
                  tuple((f"caches[{l}]", caches[l].asnumpy, expected[l]) for l in range(_CACHES)))


def _copy_blocks(buf):
    del buf
    values = _cache_values()
    mapping = np.array([[0, 2], [1, 3]], np.int64)  # (source block, destination block)
    expected = [v.copy() for v in values]
    for l in range(_CACHES):
        expected[l][2], expected[l][3] = values[l][0], values[l][1]
    caches = [_parameter(v) for v in values]
    return Sample("copy_blocks", CopyBlocks(num_caches=_CACHES), (*caches, ms.Tensor(mapping)),
                  np.array([_CACHES * len(mapping) * _BLOCK_BYTES], np.int64),
                  tuple((f"caches[{l}]", caches[l].asnumpy, expected[l]) for l in range(_CACHES)))


def _cond_d2d(buf):
    del buf
    x = _matrix()
    return Sample("memcpy_cond_d2d", MemcpyWithCondition("d2d"), (ms.Tensor(x),), x)


def _cond_d2h(buf):
    x = _matrix()
    return Sample("memcpy_cond_d2h", MemcpyWithCondition("d2h", host_buffer=buf), (ms.Tensor(x), _int64(256)),
                  np.array([x.nbytes], np.int64),
                  (("host_buffer[256:376]", lambda: buf.numpy(np.float32, x.shape, offset=256).copy(), x),))


def _cond_h2d(buf):
    x = _matrix() - 7
    buf.numpy(np.float32, x.shape, offset=256)[:] = x
    return Sample("memcpy_cond_h2d", MemcpyWithCondition("h2d", host_buffer=buf, shape=x.shape, dtype=ms.float32),
                  (_int64(256),), x)


def _desc_copy(buf):
    del buf
    x = _matrix()
    return Sample("memcpy_desc_copy", MemcpyWithDesc(), (ms.Tensor(x),), x)


def _desc_window(buf):
    del buf
    x = _matrix()
    return Sample("memcpy_desc_window", MemcpyWithDesc(count=4), (ms.Tensor(x), _int64(7)), x.reshape(-1)[7:11])


def _extract(buf):
    del buf
    x = _matrix()
    return Sample("memcpy2d_extract", Memcpy2D("extract", height=2, width=3), (ms.Tensor(x), _int64(1), _int64(2)),
                  x[1:3, 2:5])


def _extract_like(buf):
    del buf
    x = _matrix()
    # In GRADIENT_ONLY: Memcpy2D("insert")'s bprop builds this op (src's gradient).
    return Sample("memcpy2d_extract_like", GradientOp("memcpy2d_extract_like"),
                  (ms.Tensor(x), ms.Tensor(np.zeros((3, 2), np.float32)), _int64(2), _int64(4)), x[2:5, 4:6])


def _insert(buf):
    del buf
    x, src = _matrix(), -np.ones((2, 3), np.float32)
    expected = x.copy()
    expected[3:5, 0:3] = src
    return Sample("memcpy2d_insert", Memcpy2D("insert"), (ms.Tensor(x), ms.Tensor(src), _int64(3), _int64(0)),
                  expected)


_PITCH = 32  # host bytes per row of the 2-D samples: rows of 24 bytes, 8 bytes of padding each


def _host_rows(buf, offset, rows):
    return buf.numpy(np.uint8, (rows, _PITCH), offset=offset)[:, :24].copy().view(np.float32)


def _2d_d2h(buf):
    x = _matrix()
    return Sample("memcpy2d_d2h", Memcpy2D("d2h", host_buffer=buf, pitch=_PITCH), (ms.Tensor(x), _int64(128)),
                  np.array([x.nbytes], np.int64), (("host_buffer rows from 128", lambda: _host_rows(buf, 128, 5), x),))


def _2d_h2d(buf):
    x = _matrix() * 2
    buf.numpy(np.uint8, (5, _PITCH), offset=128)[:, :24] = x.view(np.uint8)
    return Sample("memcpy2d_h2d", Memcpy2D("h2d", host_buffer=buf, pitch=_PITCH, shape=x.shape, dtype=ms.float32),
                  (_int64(128),), x)


def _write(buf):
    del buf
    dst, src = _matrix(), -np.arange(4, dtype=np.float32).reshape(1, 4)
    expected = dst.copy()
    expected[2:3, 1:5] = src
    target = _parameter(dst)
    return Sample("memcpy2d_write", Memcpy2D("write"), (target, ms.Tensor(src), _int64(2), _int64(1)),
                  np.array([src.nbytes], np.int64), (("dst", target.asnumpy, expected),))


#: op name -> sample(host_buffer): one per op of configs/ops/*.yaml.
SAMPLES: Dict[str, Callable[[HostBuffer], Sample]] = {
    "memcpy_batch_d2h": _batch_d2h,
    "memcpy_batch_h2d": _batch_h2d,
    "swap_blocks_d2h": _swap_d2h,
    "swap_blocks_h2d": _swap_h2d,
    "copy_blocks": _copy_blocks,
    "memcpy_cond_d2d": _cond_d2d,
    "memcpy_cond_d2h": _cond_d2h,
    "memcpy_cond_h2d": _cond_h2d,
    "memcpy_desc_copy": _desc_copy,
    "memcpy_desc_window": _desc_window,
    "memcpy2d_extract": _extract,
    "memcpy2d_extract_like": _extract_like,
    "memcpy2d_insert": _insert,
    "memcpy2d_d2h": _2d_d2h,
    "memcpy2d_h2d": _2d_h2d,
    "memcpy2d_write": _write,
}


def sample(op_name, host_buffer):
    """The sample call of op_name on host_buffer (KeyError naming the op when it has none)."""
    try:
        make = SAMPLES[op_name]
    except KeyError:
        raise KeyError(f"configs/ops defines {op_name!r} but ms_memcopy/samples.py has no sample call for it; "
                       f"add one to SAMPLES") from None
    return make(host_buffer)
