"""Transfers inside the compiled graph: the asynchronous forms of the copy ops, and WaitTransfer.

``SwapBlocksAsync``, ``CopyBlocksAsync``, ``MemcpyBatchAsync`` and ``Memcpy2DAsync("write")`` take the
inputs of ``SwapBlocks``, ``CopyBlocks``, ``MemcpyBatch`` (h2d: the tensors written in place) and
``Memcpy2D("write")``, run the same kernel body (the same check, plan, error texts and ACL calls) on
a transfer stream of their lane (swap-out, swap-in, copies within the device: one stream each per
device, created once), after everything the launching stream had queued, and return at once a
token: an int64 tensor of shape (1,) holding the bytes the transfer moves. ``WaitTransfer`` takes the
tensors a transfer guards and its token, makes the launching stream wait for the transfers
(aclrtStreamWaitEvent, no host wait), and declares those tensors written, so the graph orders their
later readers and writers after it.

A token never waited on is completed at the latest by the launch of the same primitive four launches
later (each kernel keeps a ring of four transfers in flight) or by :func:`wait_transfers`, the
end-of-step synchronization: call it before reading a HostBuffer a swap-out wrote without a
WaitTransfer. Reading a destination before its WaitTransfer is a mistake the host runtime's strict
ordering mode (``MS_MEMCOPY_STRICT_ORDER=1``) reports. Eager calls: keep the tensors alive until the
transfer is waited for (the kernel does not hold them).
"""
import ctypes
import dataclasses
import functools
from typing import Callable, Dict, Optional

import numpy as np
import mindspore as ms

from .. import _kernels_lib
from ..errors import AclError
from ..host_buffer import HostBuffer
from ._args import check_host_buffer, check_in_place_target, check_int, check_open, check_whole_targets
from ._primitive import CopyPrimitive
from ._samples import Sample, int64, parameter
from ._variadic import OpCell
from .blocks import SAMPLES as _BLOCK_SAMPLES, _CopyBlocksPrimitive, _SwapBlocksPrimitive
from .memcpy2d import SAMPLES as _MEMCPY2D_SAMPLES

__all__ = ["SwapBlocksAsync", "CopyBlocksAsync", "MemcpyBatchAsync", "Memcpy2DAsync", "WaitTransfer", "wait_transfers",
           "transfer_stream_count"]

#: WaitTransfer's lanes: which transfer streams it waits for (None: every lane).
_LANES = {None: -1, "d2h": 0, "h2d": 1, "copy": 2}


@functools.lru_cache(maxsize=None)
def _library():
    lib = _kernels_lib.library()
    lib.msmc_transfer_synchronize.restype = ctypes.c_int32
    lib.msmc_transfer_synchronize.argtypes = []
    lib.msmc_transfer_stream_count.restype = ctypes.c_int64
    lib.msmc_transfer_stream_count.argtypes = []
    lib.msmc_transfer_lane_stream.restype = ctypes.c_void_p  # tests hold a lane busy through it
    lib.msmc_transfer_lane_stream.argtypes = [ctypes.c_int32, ctypes.c_int64]
    return lib


def wait_transfers() -> None:
    """Waits on the host until every transfer queued so far by the asynchronous forms has run.

    The end-of-step synchronization: call it before reading, outside a graph, memory a transfer wrote
    that no WaitTransfer ordered (a HostBuffer a swap-out filled, say).

    Args:
        None.

    Returns:
        None.

    Raises:
        AclError: the ACL runtime reported a failure of a transfer stream.

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import mindspore as ms
        >>> from ms_memcopy import HostBuffer
        >>> from ms_memcopy.ops import SwapBlocksAsync, wait_transfers
        >>> k = ms.Parameter(ms.Tensor([[0, 1], [2, 3], [4, 5], [6, 7]], ms.float32), name="k")
        >>> buf = HostBuffer(8)
        >>> swap_out = SwapBlocksAsync("d2h", buf, num_caches=1)
        >>> print(swap_out(k, ms.Tensor([[2, 0]], ms.int64)))
        [8]
        >>> wait_transfers()
        >>> print(buf.numpy("float32"))
        [4. 5.]
        >>> buf.close()
    """
    code = _library().msmc_transfer_synchronize()
    if code != 0:
        raise AclError(code, "aclrtSynchronizeEvent", None, "waiting for the transfer streams")


def transfer_stream_count() -> int:
    """The number of transfer streams created so far in this process.

    At most one per lane (swap-out, swap-in, copies within the device) and device, however many
    transfers ran: the streams are created once and reused.

    Args:
        None.

    Returns:
        int: the streams.

    Raises:
        None.

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import mindspore as ms
        >>> from ms_memcopy.ops import CopyBlocksAsync, WaitTransfer, transfer_stream_count
        >>> v = ms.Parameter(ms.ops.zeros((2, 2), ms.float32), name="v")
        >>> copy = CopyBlocksAsync(num_caches=1)
        >>> for _ in range(3):
        ...     _ = WaitTransfer(num_tensors=1)(v, copy(v, ms.Tensor([[0, 1]], ms.int64)))
        >>> print(1 <= transfer_stream_count() <= 3)
        True
    """
    return int(_library().msmc_transfer_stream_count())


class _SwapBlocksAsyncPrimitive(_SwapBlocksPrimitive):
    _op_suffix = "_async"


class _CopyBlocksAsyncPrimitive(_CopyBlocksPrimitive):
    _op_suffix = "_async"


class SwapBlocksAsync(OpCell):
    r"""SwapBlocks on the transfer stream of its direction, returning a token at once.

    ``token = SwapBlocksAsync(direction, host_buffer, num_caches=L)(cache_0, ..., cache_{L-1}, block_mapping)``
    queues the copies of ``SwapBlocks(direction, host_buffer, num_caches=L)`` (same inputs, host layout,
    checks and error texts) on the swap-out (d2h) or swap-in (h2d) stream, after everything queued
    before it on the launching stream. The token is an int64 Tensor of shape (1,), the bytes moved;
    pass it to :class:`WaitTransfer` before reading (h2d) or writing (d2h) the caches again.

    Args:
        direction (str): ``"d2h"`` (swap out) or ``"h2d"`` (swap in).
        host_buffer (Union[HostBuffer, HostChunks]): the host memory holding the L host caches (see SwapBlocks).
        num_caches (int): L, the caches of each call (>= 1).
        host_layout (str): as SwapBlocks: ``"cache_major"`` (default) or ``"block_major"``.
        blocks_per_host_block (int): as SwapBlocks: device blocks per host block (default 1).

    Inputs:
        - **cache_0, ..., cache_{L-1}** (Tensor) - as SwapBlocks: [num_blocks, \*block_shape], the same
          number of blocks, each its own block shape and dtype; written in place by h2d (Parameters in
          graphs).
        - **block_mapping** (Tensor) - int64 [n, 2]: (source block, destination block) pairs.

    Outputs:
        The token: an int64 Tensor of shape (1,), the bytes the transfer moves.

    Raises:
        TypeError: as SwapBlocks (dtypes, number of caches, in-place targets).
        ValueError: as SwapBlocks (a block out of range, a destination twice, a closed HostBuffer),
            with the same texts; nothing is copied.

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import mindspore as ms
        >>> from ms_memcopy import HostBuffer
        >>> from ms_memcopy.ops import SwapBlocksAsync, WaitTransfer
        >>> k = ms.Parameter(ms.Tensor([[0, 1], [2, 3], [4, 5], [6, 7]], ms.float32), name="k")
        >>> buf = HostBuffer(2 * 8)  # 1 cache of 2 host blocks of 8 bytes
        >>> token = SwapBlocksAsync("d2h", buf, num_caches=1)(k, ms.Tensor([[3, 0], [1, 1]], ms.int64))
        >>> print(WaitTransfer(num_tensors=1)(k, token))
        [16]
        >>> print(buf.numpy("float32").reshape(2, 2))
        [[6. 7.]
         [2. 3.]]
        >>> buf.close()
    """

    _forms = ("d2h", "h2d")

    def __init__(self, direction: str, host_buffer: HostBuffer, *, num_caches: int, host_layout: str = "cache_major",
                 blocks_per_host_block: int = 1):
        super().__init__()
        self.primitive = _SwapBlocksAsyncPrimitive(direction, host_buffer, num_caches=num_caches,
                                                   host_layout=host_layout,
                                                   blocks_per_host_block=blocks_per_host_block)
        self.direction = direction
        self.host_buffer = host_buffer
        self.num_caches = self.primitive.num_caches


class CopyBlocksAsync(OpCell):
    r"""CopyBlocks on the transfer stream of copies within the device, returning a token at once.

    ``token = CopyBlocksAsync(num_caches=L)(cache_0, ..., cache_{L-1}, block_mapping)``: the copies of
    ``CopyBlocks(num_caches=L)`` (same inputs, checks and error texts), in place, queued after
    everything queued before it on the launching stream. Pass the token to :class:`WaitTransfer`
    before the caches are read or written again.

    Args:
        num_caches (int): L, the caches of each call (>= 1).

    Inputs:
        - **cache_0, ..., cache_{L-1}** (Tensor) - as CopyBlocks, written in place (Parameters in graphs).
        - **block_mapping** (Tensor) - int64 [n, 2]: (source block, destination block) pairs.

    Outputs:
        The token: an int64 Tensor of shape (1,), the bytes the transfer copies.

    Raises:
        TypeError: as CopyBlocks.
        ValueError: as CopyBlocks, with the same texts; nothing is copied.

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import mindspore as ms
        >>> from ms_memcopy.ops import CopyBlocksAsync, WaitTransfer
        >>> v = ms.Parameter(ms.Tensor([[0, 1], [2, 3], [4, 5], [6, 7]], ms.float32), name="v")
        >>> token = CopyBlocksAsync(num_caches=1)(v, ms.Tensor([[1, 2]], ms.int64))
        >>> print(WaitTransfer(num_tensors=1, lane="copy")(v, token))
        [8]
        >>> print(v.asnumpy())
        [[0. 1.]
         [2. 3.]
         [2. 3.]
         [6. 7.]]
    """

    def __init__(self, *, num_caches: int):
        super().__init__()
        self.primitive = _CopyBlocksAsyncPrimitive(num_caches=num_caches)
        self.num_caches = self.primitive.num_caches


class MemcpyBatchAsync(OpCell):
    r"""MemcpyBatch on the transfer stream of its direction, returning a token at once.

    ``token = MemcpyBatchAsync(direction, host_buffer, num_tensors=n)(t_0, ..., t_{n-1}, offsets)``: d2h
    queues the copies of ``MemcpyBatch("d2h", host_buffer, num_tensors=n)`` (tensor i to
    ``host_buffer[offsets[i]:]``) on the swap-out stream; h2d reads ``host_buffer[offsets[i]:]`` into
    the tensors themselves, in place, on the swap-in stream (the synchronous h2d returns new tensors
    instead). Same checks and error texts as MemcpyBatch; pass the token to :class:`WaitTransfer`
    (with the tensors) before the tensors are written (d2h) or read (h2d) again.

    Args:
        direction (str): ``"d2h"`` or ``"h2d"``.
        host_buffer (HostBuffer): the host memory.
        num_tensors (int): n, the tensors of each call (>= 1).

    Inputs:
        - **t_0, ..., t_{n-1}** (Tensor) - the tensors copied (d2h) or written in place (h2d:
          Parameters in graphs).
        - **offsets** (Tensor) - int64, n values: each tensor's byte offset in the HostBuffer.

    Outputs:
        The token: an int64 Tensor of shape (1,), the bytes the transfer moves.

    Raises:
        TypeError: offsets not int64, an in-place target that is a slice or view (h2d).
        ValueError: as MemcpyBatch (an offset out of range, overlapping destinations, a closed
            HostBuffer), with the same texts; nothing is copied.

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import mindspore as ms
        >>> from ms_memcopy import HostBuffer
        >>> from ms_memcopy.ops import MemcpyBatchAsync, WaitTransfer
        >>> buf = HostBuffer(64)
        >>> buf.numpy("float32")[:] = range(16)
        >>> a = ms.Parameter(ms.ops.zeros(2, ms.float32), name="a")
        >>> b = ms.Parameter(ms.ops.zeros(3, ms.float32), name="b")
        >>> token = MemcpyBatchAsync("h2d", buf, num_tensors=2)(a, b, ms.Tensor([8, 40], ms.int64))
        >>> print(WaitTransfer(num_tensors=2, lane="h2d")(a, b, token), a.asnumpy(), b.asnumpy())
        [20] [2. 3.] [10. 11. 12.]
        >>> buf.close()
    """

    _forms = ("d2h", "h2d")

    def __init__(self, direction: str, host_buffer: HostBuffer, *, num_tensors: int):
        super().__init__()
        self.primitive = _BatchAsyncPrimitive(direction, host_buffer, num_tensors=num_tensors)
        self.direction = direction
        self.host_buffer = host_buffer
        self.num_tensors = self.primitive.num_tensors


class _BatchAsyncPrimitive(CopyPrimitive):
    """The primitive of MemcpyBatchAsync."""

    def __init__(self, direction: str, host_buffer: HostBuffer, *, num_tensors: int):
        if direction not in MemcpyBatchAsync._forms:
            raise ValueError(f"direction must be one of {MemcpyBatchAsync._forms}, got {direction!r}")
        self.host_buffer = check_host_buffer(host_buffer)
        self.direction = direction
        self.num_tensors = check_int(num_tensors, "num_tensors", minimum=1)
        super().__init__(f"memcpy_batch_{direction}_async",
                         attrs={"buffer_id": host_buffer.buffer_id, "num_tensors": self.num_tensors})

    def _check_eager(self, inputs):
        check_open(self.host_buffer)
        if self.direction == "h2d":
            check_whole_targets(inputs[:-1], "tensors")


class Memcpy2DAsync(CopyPrimitive):
    r"""Memcpy2D("write") on the transfer stream of copies within the device, returning a token at once.

    ``token = Memcpy2DAsync("write")(dst, src, row, col)`` queues the copy of ``Memcpy2D("write")``
    (src into the region of dst's 2-D view at (row, col), in place; same checks and error texts) after
    everything queued before it on the launching stream. The copy reads src after the launch returns:
    keep src alive and unchanged until the wait, by passing it to :class:`WaitTransfer` among the
    guarded tensors (in graphs a Parameter), as dst.

    Args:
        mode (str): ``"write"`` (the only asynchronous mode).

    Inputs:
        - **dst** (Tensor) - written in place (a Parameter in graphs).
        - **src** (Tensor) - the region's contents, dst's dtype.
        - **row** (Tensor) - int64, 1 value: the region's first row.
        - **col** (Tensor) - int64, 1 value: the region's first column.

    Outputs:
        The token: an int64 Tensor of shape (1,), the bytes written.

    Raises:
        TypeError: as Memcpy2D("write").
        ValueError: a mode other than "write"; as Memcpy2D("write"), with the same texts; nothing is
            written.

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import mindspore as ms
        >>> from ms_memcopy.ops import Memcpy2DAsync, WaitTransfer
        >>> dst = ms.Parameter(ms.ops.zeros((3, 4), ms.float32), name="dst")
        >>> src = ms.Parameter(ms.ops.ones((1, 2), ms.float32), name="src")
        >>> token = Memcpy2DAsync("write")(dst, src, ms.Tensor([1], ms.int64), ms.Tensor([2], ms.int64))
        >>> print(WaitTransfer(num_tensors=2, lane="copy")(dst, src, token), dst.asnumpy()[1])
        [8] [0. 0. 1. 1.]
    """

    _forms = ("write",)

    def __init__(self, mode: str = "write"):
        if mode not in self._forms:
            raise ValueError(f"mode must be one of {self._forms}, got {mode!r}")
        self.mode = mode
        super().__init__("memcpy2d_write_async", attrs={})

    def _check_eager(self, inputs):
        check_in_place_target(inputs[0], "dst")


class WaitTransfer(OpCell):
    r"""Makes the launching stream wait for the transfers of the asynchronous forms.

    ``nbytes = WaitTransfer(num_tensors=k, lane=None)(t_0, ..., t_{k-1}, token)``: the launching stream
    waits (aclrtStreamWaitEvent; the host does not wait) for every transfer queued so far on the lane
    (``"d2h"``, ``"h2d"``, ``"copy"``, or every lane for None), the token's included. The tensors
    ``t_i`` (Parameters in graphs) are declared written in place, so the graph runs their later
    readers and writers after the wait; the token makes the wait follow its transfer. Returns the
    token's value (int64, shape (1,)).

    Args:
        num_tensors (int): k, the tensors the transfer guards (>= 1): a swap-in's or a copy's caches,
            a swap-out's source caches.
        lane (str, optional): the lane waited for; None waits for every lane.

    Inputs:
        - **t_0, ..., t_{k-1}** (Tensor) - the tensors the transfer guards (Parameters in graphs).
        - **token** (Tensor) - int64 [1], the output of an asynchronous form.

    Outputs:
        An int64 Tensor of shape (1,): the token's value.

    Raises:
        TypeError: a wrong number of tensors, a tensor that is a slice or view (or not a Parameter
            in graphs).
        ValueError: an unknown lane, a token that is not int64 of shape (1,).

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import mindspore as ms
        >>> from ms_memcopy.ops import WaitTransfer
        >>> k = ms.Parameter(ms.ops.zeros((4, 2), ms.float32), name="k")
        >>> print(WaitTransfer(num_tensors=1)(k, ms.Tensor([16], ms.int64)))
        [16]
    """

    def __init__(self, *, num_tensors: int, lane: Optional[str] = None):
        super().__init__()
        self.primitive = _WaitTransferPrimitive(num_tensors=num_tensors, lane=lane)
        self.num_tensors = self.primitive.num_tensors
        self.lane = lane


class _WaitTransferPrimitive(CopyPrimitive):
    """The primitive of WaitTransfer."""

    def __init__(self, *, num_tensors: int, lane: Optional[str]):
        if lane not in _LANES:
            raise ValueError(f"lane must be one of {tuple(_LANES)}, got {lane!r}")
        self.num_tensors = check_int(num_tensors, "num_tensors", minimum=1)
        super().__init__("wait_transfer", attrs={"lane": _LANES[lane], "num_tensors": self.num_tensors})

    def __call__(self, tensors, token):
        if len(tensors) != self.num_tensors:
            raise TypeError(f"{self._label} built for num_tensors={self.num_tensors} takes "
                            f"{self.num_tensors} tensor(s) and a token, got {len(tensors)} tensor(s)")
        return super().__call__(tuple(tensors), token)

    def _check_eager(self, inputs):
        # (the types, the token's too, were checked before: _check_tensors)
        check_whole_targets(inputs[:-1], "tensors")


# ---- the sample calls of this family (ms_memcopy.samples gathers them; numpy expectations) ----

def _after_wait(read):
    def waited():
        wait_transfers()
        return read()
    return waited


def _async_sample(op_name, build):
    """The synchronous op's sample run by its asynchronous form (the same inputs and expectations),
    its writes read after wait_transfers()."""
    def sample(buf):
        sync_name = op_name.replace("_async", "")
        sync = {**_BLOCK_SAMPLES, **_MEMCPY2D_SAMPLES}[sync_name](buf)
        return dataclasses.replace(sync, op_name=op_name, op=build(sync.op),
                                   writes=tuple((name, _after_wait(read), want) for name, read, want in sync.writes))
    return sample


def _sample_batch_d2h_async(buf):
    a, b = np.arange(6, dtype=np.float32), np.arange(12, dtype=np.int16).reshape(3, 4) - 5
    return Sample("memcpy_batch_d2h_async", MemcpyBatchAsync("d2h", buf, num_tensors=2),
                  (ms.Tensor(a), ms.Tensor(b), int64(0, 64)), np.array([a.nbytes + b.nbytes], np.int64),
                  (("host_buffer[0:24]", _after_wait(lambda: buf.numpy(np.float32, a.shape, offset=0).copy()), a),
                   ("host_buffer[64:88]", _after_wait(lambda: buf.numpy(np.int16, b.shape, offset=64).copy()), b)))


def _sample_batch_h2d_async(buf):
    a, b = np.arange(6, dtype=np.float32), np.arange(12, dtype=np.int16).reshape(3, 4) - 5
    buf.numpy(np.float32, a.shape, offset=0)[:] = a
    buf.numpy(np.int16, b.shape, offset=64)[:] = b
    ta, tb = parameter(np.zeros_like(a)), parameter(np.zeros_like(b))
    return Sample("memcpy_batch_h2d_async", MemcpyBatchAsync("h2d", buf, num_tensors=2), (ta, tb, int64(0, 64)),
                  np.array([a.nbytes + b.nbytes], np.int64),
                  (("tensors[0]", _after_wait(ta.asnumpy), a), ("tensors[1]", _after_wait(tb.asnumpy), b)))


def _sample_wait(buf):
    del buf
    values = np.arange(8, dtype=np.float32).reshape(4, 2)
    token = ms.Tensor(np.array([32], np.int64))
    return Sample("wait_transfer", WaitTransfer(num_tensors=1), (parameter(values), token), np.array([32], np.int64))


#: op name -> sample(host_buffer): one per op of configs/ops/transfer.yaml.
SAMPLES: Dict[str, Callable[[HostBuffer], Sample]] = {
    "swap_blocks_d2h_async": _async_sample(
        "swap_blocks_d2h_async", lambda op: SwapBlocksAsync("d2h", op.host_buffer, num_caches=op.num_caches)),
    "swap_blocks_h2d_async": _async_sample(
        "swap_blocks_h2d_async", lambda op: SwapBlocksAsync("h2d", op.host_buffer, num_caches=op.num_caches)),
    "copy_blocks_async": _async_sample("copy_blocks_async", lambda op: CopyBlocksAsync(num_caches=op.num_caches)),
    "memcpy_batch_d2h_async": _sample_batch_d2h_async,
    "memcpy_batch_h2d_async": _sample_batch_h2d_async,
    "memcpy2d_write_async": _async_sample("memcpy2d_write_async", lambda op: Memcpy2DAsync("write")),
    "wait_transfer": _sample_wait,
}
