"""The checks of the device: host waits, offsets made on the device, free memory and the 4 GiB copy,
the TransferQueue, the swap timing."""
from typing import Any, List, Tuple
import threading
import time
import zlib

import numpy as np

from ..._acl import limits as acl_limits
from ._common import (
    ACL_HBM_MEM, _as_numpy, BIG_COPY_BYTES, BIG_COPY_NEEDS, BLOCK_BYTES, BLOCKS, CONTEXT_ERRORS, DISTINCT_CALLS,
    GiB, _int64, _op_cell, _set_mode, _wait_for_device)


def _host_wait_count():
    """The host runtime's count of host waits for the device, or None on CANN (which has none)."""
    from ..._acl import runtime
    from ..._extension import _paths

    return runtime.host_wait_count() if _paths.uses_host_runtime() else None


def _device_offset_cell(op):
    """A Cell calling op(x, *offsets) with each of its offsets (one or two) computed in the graph by a
    built-in op (``ops.add(0, value)``): the kernel's value-dependent inputs come from the device."""
    import mindspore as ms
    from mindspore import nn, ops

    class DeviceOffsets(nn.Cell):
        def __init__(self):
            super().__init__()
            self.op = op
            self.base = ms.Tensor(np.zeros(1, np.int64))

        def construct(self, x, first, second=None):
            if second is None:
                return self.op(x, ops.add(self.base, first))
            return self.op(x, ops.add(self.base, first), ops.add(self.base, second))

    return DeviceOffsets()


def _offset_calls(name, mode, buf, origin):
    """(call, per-call inputs) of DISTINCT_CALLS calls of op `name` whose offsets are produced on the
    device by a built-in op (origin "device") or created on the host (origin "host"). Call i copies the
    same bytes either way."""
    import mindspore as ms
    from mindspore import ops
    from ...ops import Memcpy2D, MemcpyWithCondition

    n = DISTINCT_CALLS
    if name == "MemcpyWithCondition d2h":
        op = MemcpyWithCondition("d2h", host_buffer=buf)
        inputs: List[Tuple[Any, ...]] = [(ms.Tensor(np.full(16, i, np.float32)), _int64(64 * i)) for i in range(n)]
    else:
        op = Memcpy2D("extract", height=2, width=3)
        x = ms.Tensor(np.arange(256 * 64, dtype=np.float32).reshape(256, 64))
        inputs = [(x, _int64(i % 254), _int64(i % 61)) for i in range(n)]
    if origin == "host":
        if mode == "pynative":
            return op, inputs
        cell = _op_cell(op)
    elif mode == "pynative":
        # Offsets computed on the device before the timed calls: what is timed is their use.
        base = _int64(0)
        inputs = [(tensor, *[ops.add(base, v) for v in values]) for tensor, *values in inputs]
        _wait_for_device()
        return op, inputs
    else:
        cell = _device_offset_cell(op)
    cell.set_jit_config(ms.JitConfig(jit_level="O0"))
    return cell, inputs


def check_device_offsets(name: str, mode: str) -> str:
    """DISTINCT_CALLS calls with offsets produced on the device against as many with host-created
    ones: the same bytes copied; the per-call time of each and the host runtime's host waits."""
    from ... import HostBuffer
    from ..._extension import _kernels_lib
    from ..._framework import sync_launches

    _set_mode(mode)
    nbytes = 64 * DISTINCT_CALLS
    with HostBuffer(nbytes) as device_buf, HostBuffer(nbytes) as host_buf:
        results, per_call, waits, reads = {}, {}, {}, {}
        for origin, buf in (("device", device_buf), ("host", host_buf)):
            buf.numpy(np.uint8)[:] = 0
            call, inputs = _offset_calls(name, mode, buf, origin)
            _as_numpy(call(*inputs[0]))  # compiles a graph
            _wait_for_device()
            waits_before, reads_before = _host_wait_count(), _kernels_lib.value_reads()
            start = time.perf_counter()
            outputs = [call(*args) for args in inputs]
            sync_launches()
            waits_after, reads_after = _host_wait_count(), _kernels_lib.value_reads()
            reads[origin] = [(after - before) / len(inputs) for before, after in zip(reads_before, reads_after)]
            buf.wait()
            _as_numpy(outputs[-1])
            per_call[origin] = (time.perf_counter() - start) / len(inputs)
            waits[origin] = None if waits_before is None else (waits_after - waits_before) / len(inputs)
            results[origin] = (buf.numpy(np.uint8).copy(), [_as_numpy(y) for y in outputs])
        device_bytes, device_outputs = results["device"]
        host_bytes, host_outputs = results["host"]
    np.testing.assert_array_equal(device_bytes, host_bytes, err_msg="HostBuffer bytes differ")
    for device_out, host_out in zip(device_outputs, host_outputs):
        np.testing.assert_array_equal(device_out, host_out, err_msg="outputs differ")
    if name == "MemcpyWithCondition d2h":
        expected = np.repeat(np.arange(DISTINCT_CALLS, dtype=np.float32), 16)
        np.testing.assert_array_equal(host_bytes.view(np.float32), expected)
    text = (f"same bytes; device-produced {per_call['device'] * 1e6:.0f} us/call, host-created "
            f"{per_call['host'] * 1e6:.0f} us/call")
    if mode != "pynative":  # what the graph kernel got per call: values held on the host / read from memory
        text += "; graph value reads per call, held/memory: " + ", ".join(
            f"{label} {reads[origin][0]:.0f}/{reads[origin][1]:.0f}"
            for origin, label in (("device", "device-produced"), ("host", "host-created")))
    if waits["device"] is None:
        return text + "; host waits not countable on CANN"
    text += f"; host waits per call: device-produced {waits['device']:.2f}, host-created {waits['host']:.2f}"
    if waits["device"] or waits["host"]:
        raise AssertionError(f"calls with a pinned HostBuffer waited for the device: {text}")
    return text




# ---- a MemcpyWithDesc copy beyond a descriptor's 32-bit count ------------------------------------------

def _meminfo_available():
    """MemAvailable of /proc/meminfo in bytes, or None."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def free_device_memory() -> Tuple[Any, str]:
    """(free bytes of the device MindSpore uses, a note on how they were read).

    aclrtGetMemInfo reports the calling thread's current device: a main thread without a current
    context gets MindSpore's device set first (aclrtSetDevice). What MindSpore's memory pool holds
    unused counts as free too. On the host runtime the device memory is host memory, so MemAvailable
    bounds it."""
    import mindspore as ms
    from ..._acl import runtime
    from ..._extension import _paths
    from ...errors import AclError

    note = ""
    try:
        free, _ = runtime.get_mem_info(ACL_HBM_MEM)
    except AclError as error:
        if error.code not in CONTEXT_ERRORS:
            raise
        device_id = ms.get_context("device_id")
        runtime.set_device(device_id)
        note = f" (device {device_id} set on {threading.current_thread().name}: it had {error.name})"
        free, _ = runtime.get_mem_info(ACL_HBM_MEM)
    pool_unused = ms.runtime.memory_reserved() - ms.runtime.memory_allocated()
    if pool_unused > 0:
        free += pool_unused
        note += f" (incl. {pool_unused / GiB:.1f} GiB unused in MindSpore's pool)"
    if _paths.uses_host_runtime():
        available = _meminfo_available()
        if available is not None and available < free:
            free, note = available, note + " (host memory available)"
    return free, note


def _checksum(tensor, start, stop):
    values = _as_numpy(tensor[start:stop])
    return zlib.crc32(values.tobytes()), values


def check_big_desc_copy(big_wanted: bool) -> str:
    """MemcpyWithDesc of 4 GiB + 64 bytes (descriptors of 2 GiB, 2 GiB and 64 bytes), compared with
    the source on sampled regions: the start, 1 MiB across 2 GiB, the last MiB before 4 GiB through
    the end."""
    import mindspore as ms
    from mindspore import ops
    from ...ops import MemcpyWithDesc

    if not big_wanted:
        return "skipped: a dry run copies 4 GiB only with --big"
    _set_mode("pynative")
    free, note = free_device_memory()
    if free < BIG_COPY_NEEDS:
        return f"skipped: needs {BIG_COPY_NEEDS / GiB:.1f} GiB, {free / GiB:.1f} GiB free{note}"
    elements = BIG_COPY_BYTES // 4
    source = ops.arange(0, elements, dtype=ms.int32)
    _wait_for_device()
    start = time.perf_counter()
    copy = MemcpyWithDesc()(source)
    _wait_for_device()
    seconds = time.perf_counter() - start
    four_gib = acl_limits.DESC_COUNT_WRAP // 4
    regions = [(0, 1 << 18), (elements // 2 - (1 << 17), elements // 2 + (1 << 17)),
               (four_gib - (1 << 18), elements)]
    for begin, end in regions:
        copied_crc, copied = _checksum(copy, begin, end)
        source_crc, _ = _checksum(source, begin, end)
        if copied_crc != source_crc or not np.array_equal(copied, np.arange(begin, end, dtype=np.int32)):
            wrong = np.flatnonzero(copied != np.arange(begin, end, dtype=np.int32))
            first = begin + int(wrong[0]) if wrong.size else begin
            raise AssertionError(f"elements [{begin}, {end}) differ from the source (crc32 {copied_crc:#x} "
                                 f"against {source_crc:#x}; first wrong byte offset {4 * first})")
    del source, copy
    return (f"{len(regions)} sampled regions equal (crc32): the start, across 2 GiB, 4 GiB - 1 MiB .. 4 GiB + 64; "
            f"{BIG_COPY_BYTES / seconds / 1e9:.1f} GB/s; {free / GiB:.1f} GiB were free{note}")


TRANSFER_BLOCKS, TRANSFER_BLOCK = 8, (16, 64)  # 4 KiB float32 blocks


def check_transfer_queue() -> str:
    """TransferQueue jobs whole and paced (see the module docstring)."""
    import mindspore as ms
    from mindspore import ops
    from ...nn import BlockPool, TransferQueue

    _set_mode("pynative")
    rng = np.random.default_rng(5)
    values = [rng.standard_normal((TRANSFER_BLOCKS, *TRANSFER_BLOCK)).astype(np.float32) for _ in range(2)]
    for part_bytes in (None, 1):
        pool = BlockPool(num_caches=2, num_blocks=TRANSFER_BLOCKS, num_host_blocks=TRANSFER_BLOCKS,
                         block_shape=TRANSFER_BLOCK, dtype=ms.float32)
        try:
            for cache, v in zip(pool.caches, values):
                cache.set_data(ms.Tensor(v))
            queue = TransferQueue(pool, part_bytes=part_bytes)
            table = pool.allocate(4)
            out, fork = queue.submit("swap_out", table[:3]), queue.submit("fork", table[3:])
            host, child = queue.destination(out), queue.destination(fork)
            pending, deadline = {out, fork}, time.monotonic() + 60
            while pending:
                if time.monotonic() > deadline:
                    raise AssertionError(f"jobs {sorted(pending)} not reported by finished() within 60 s")
                pending -= set(queue.finished())
            back = queue.wait(queue.submit("swap_in", host))
            for l, cache in enumerate(pool.caches):
                got = _as_numpy(ops.mul(cache, 1))  # a built-in op on the model's stream after the reports
                np.testing.assert_array_equal(got[back], values[l][table[:3]], err_msg=f"swapped back, cache {l}")
                np.testing.assert_array_equal(got[child], values[l][table[3:]], err_msg=f"forked, cache {l}")
            queue.close()
        finally:
            pool.close()
    return "same bytes, jobs whole and paced (one block per part)"


def time_swap(pinned: bool) -> str:
    """A swap-out of 1024 blocks of 64 KiB over 2 caches: SwapBlocks against one copy per block."""
    import mindspore as ms
    from ... import HostBuffer
    from ...ops import SwapBlocks

    shape = (BLOCKS, BLOCK_BYTES // 4)
    caches = [ms.Parameter(ms.Tensor(np.ones(shape, np.float32)), name=f"npu_check_swap{i}") for i in range(2)]
    mapping = np.stack([np.random.default_rng(1).permutation(BLOCKS), np.arange(BLOCKS)], 1).astype(np.int64)
    with HostBuffer(2 * BLOCKS * BLOCK_BYTES, pinned=pinned) as buf:
        op = SwapBlocks("d2h", buf, num_caches=2)
        op(*caches, mapping)
        buf.wait()
        start = time.perf_counter()
        op(*caches, mapping)
        buf.wait()
        ours = time.perf_counter() - start
        hosts = [ms.Tensor(np.zeros(shape, np.float32)) for _ in range(2)]
        start = time.perf_counter()
        for cache, host in zip(caches, hosts):
            for src, dst in mapping[:256].tolist():
                host[dst] = cache[src]
        hosts[-1].asnumpy()
        per_block = (time.perf_counter() - start) * BLOCKS / 256
    nbytes = 2 * BLOCKS * BLOCK_BYTES
    return (f"SwapBlocks {nbytes / ours / 1e9:.2f} GB/s, one copy per block {nbytes / per_block / 1e9:.2f} GB/s "
            f"(measured on 256 blocks), {per_block / ours:.0f}x")
