"""Cases of the raw runtime calls (ms_memcopy.runtime / the ACL C API).

"Ours" is each ACL call timed in a C loop (what a C++ caller pays), and the Python
``ms_memcopy.runtime`` call for the same copy (what a Python caller pays). Copies go from pinned
host memory (aclrtMallocHost) to device memory (aclrtMalloc); descriptor copies within the device.
"""
import numpy as np

from ms_memcopy import _acl_lib, acl_limits, runtime
from ms_memcopy.acl_constants import (ACL_MEM_LOCATION_TYPE_DEVICE, ACL_MEM_LOCATION_TYPE_HOST,
                                      ACL_MEMCPY_DEVICE_TO_DEVICE, ACL_MEMCPY_DEVICE_TO_HOST,
                                      ACL_MEMCPY_HOST_TO_DEVICE, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE)
from ms_memcopy.errors import AclError

from . import baselines as bl
from . import native
from .case import BASELINE, OURS, Case
from .timing import python_loop

H2D = ACL_MEMCPY_HOST_TO_DEVICE
MAX_2D_HEIGHT = acl_limits.MAX_2D_HEIGHT  # rows per aclrtMemcpy2d call
_state = {}


def _stream():
    if "stream" not in _state:
        runtime.set_device(0)
        _state["stream"] = runtime.create_stream()
    return _state["stream"]


def _device(stack, nbytes):
    ptr = runtime.malloc(max(nbytes, 1))
    stack.callback(runtime.free, ptr)
    return ptr


def _pinned(stack, nbytes, fill=None):
    ptr = runtime.malloc_host(max(nbytes, 1))
    stack.callback(runtime.free_host, ptr)
    if fill is not None:
        bl.view(ptr, nbytes)[:] = fill
    return ptr


def _host_to_device_attr():
    """The batch attributes of copies from host memory to device 0."""
    attr = _acl_lib.aclrtMemcpyBatchAttr()
    attr.dstLoc.id, attr.dstLoc.type = 0, ACL_MEM_LOCATION_TYPE_DEVICE
    attr.srcLoc.id, attr.srcLoc.type = 0, ACL_MEM_LOCATION_TYPE_HOST
    return attr


def _split_threads(nbytes):
    cores = bl.usable_cores()
    return cores if cores > 1 and nbytes >= (1 << 20) else None


def memcpy_case(nbytes, full):
    def build(stack):
        stream = _stream()
        src, dst = _pinned(stack, nbytes, 7), _device(stack, nbytes)
        impls = {
            "aclrtMemcpy": (OURS, native.acl_memcpy(dst, nbytes, src, nbytes, H2D)),
            "aclrtMemcpyAsync+sync": (OURS, native.acl_memcpy_async(dst, nbytes, src, nbytes, H2D, stream)),
            "runtime.memcpy (Python)": (OURS, python_loop(lambda: runtime.memcpy(dst, nbytes, src, nbytes, H2D))),
            "memcpy (C++)": (BASELINE, bl.memcpy_loop([dst], [src], [nbytes])),
            "np.copyto": (BASELINE, bl.numpy_one_copy(bl.view(dst, nbytes), bl.view(src, nbytes))),
        }
        if full:
            impls["aclrtMemcpyAsyncWithCondition+sync"] = (OURS, native.acl_memcpy_async(
                dst, nbytes, src, nbytes, H2D, stream, api="aclrtMemcpyAsyncWithCondition"))
        threads = _split_threads(nbytes)
        if threads:
            impls[f"memcpy x{threads} threads (C++)"] = (BASELINE, bl.memcpy_split(dst, src, nbytes, threads))
        return impls
    return Case("runtime.memcpy", "H2D pinned->device", nbytes, build=build)


def memcpy2d_case(width, region, full):
    height = max(1, region // width)
    spitch, dpitch = 2 * width, width  # the region x[:, :w] of a matrix with 2w bytes per row, to a dense one

    def build(stack):
        stream = _stream()
        src_bytes, dst_bytes = (height - 1) * spitch + width, height * dpitch
        src, dst = _pinned(stack, src_bytes, 3), _device(stack, dst_bytes)
        impls = {
            "aclrtMemcpy2d": (OURS, native.acl_memcpy2d(dst, dpitch, src, spitch, width, height, H2D)),
            "aclrtMemcpy2dAsync+sync": (OURS, native.acl_memcpy2d_async(dst, dpitch, src, spitch, width, height, H2D,
                                                                        stream)),
            "memcpy rows (C++)": (BASELINE, bl.memcpy_rows(dst, dpitch, src, spitch, width, height)),
        }
        if full:
            impls["runtime.memcpy2d (Python)"] = (OURS, python_loop(
                lambda: runtime.memcpy2d(dst, dpitch, src, spitch, width, height, H2D)))
        src2d = _as_rows(bl.view(src, src_bytes), height, spitch, width)
        dst2d = bl.view(dst, dst_bytes).reshape(height, dpitch)
        impls["numpy slice"] = (BASELINE, bl.numpy_slice_assign(dst2d, src2d, width))
        return impls
    return Case("runtime.memcpy2d", f"H2D rows of {width} B, pitch {spitch} -> {dpitch}", width * height,
                count=height, params={"width": width, "height": height, "spitch": spitch, "dpitch": dpitch},
                build=build)


def _as_rows(flat, height, pitch, width):
    """A (height, width) strided view whose rows start every `pitch` bytes of flat."""
    return np.lib.stride_tricks.as_strided(flat, shape=(height, width), strides=(pitch, 1))


def batch_case(size, count, full):
    stride = (size + 63) // 64 * 64 + 64  # separate items: no two are adjacent

    def build(stack):
        stream = _stream()
        total = stride * count
        src, dst = _pinned(stack, total, 5), _device(stack, total)
        srcs = [src + i * stride for i in range(count)]
        dsts = [dst + i * stride for i in range(count)]
        sizes = [size] * count
        attr = _host_to_device_attr()
        src_view, dst_view = bl.view(src, total), bl.view(dst, total)
        impls = {
            "aclrtMemcpyBatch": (OURS, native.acl_batch(dsts, srcs, sizes, attr)),
            "aclrtMemcpyBatchAsync+sync": (OURS, native.acl_batch_async(dsts, srcs, sizes, attr, stream)),
            "memcpy loop (C++)": (BASELINE, bl.memcpy_loop(dsts, srcs, sizes)),
            "np.copyto per item": (BASELINE, bl.numpy_copyto_items(
                [dst_view[i * stride:i * stride + size] for i in range(count)],
                [src_view[i * stride:i * stride + size] for i in range(count)])),
            "np.copyto one copy": (BASELINE, bl.numpy_one_copy(dst_view[:size * count], src_view[:size * count])),
        }
        if full or count <= 256:
            attrs = [{"dst_loc": {"id": 0, "type": ACL_MEM_LOCATION_TYPE_DEVICE},
                      "src_loc": {"id": 0, "type": ACL_MEM_LOCATION_TYPE_HOST}}]
            impls["runtime.memcpy_batch (Python)"] = (OURS, python_loop(
                lambda: runtime.memcpy_batch(dsts, sizes, srcs, sizes, attrs, [0])))
        return impls
    return Case("runtime.batch", f"H2D pinned->device, {count} x {size} B", size * count, count=count,
                params={"item_size": size, "stride": stride}, build=build)


def aliasing_batch_case(size=64 * 1024, count=256, ahead=16):
    """A batch whose destinations each start `ahead` bytes past their source modulo 4 KiB, where a
    forward copy's loads wait on its own stores on some CPUs (4 KiB aliasing, docs/performance.md,
    finding 18), against the C++ memcpy loop over the same items (which has that stall where the CPU
    does) and over the same items placed clear of it. The whole (16 MiB) stays below the last-level
    cache of most machines, so the copy takes ordinary stores whatever the copy strategy."""
    page = 4096
    stride = size + page

    def build(stack):
        stream = _stream()
        total = stride * count + 2 * page
        src, dst = _pinned(stack, total, 6), _device(stack, total)
        shift = (ahead - (dst - src)) % page  # dst + shift is `ahead` past src modulo a page
        srcs = [src + i * stride for i in range(count)]
        dsts = [dst + shift + i * stride for i in range(count)]
        clear = [d + page // 2 for d in dsts]  # half a page further: no load meets a recent store
        sizes = [size] * count
        attr = _host_to_device_attr()
        return {
            "aclrtMemcpyBatch": (OURS, native.acl_batch(dsts, srcs, sizes, attr)),
            "aclrtMemcpyBatchAsync+sync": (OURS, native.acl_batch_async(dsts, srcs, sizes, attr, stream)),
            "memcpy loop (C++)": (BASELINE, bl.memcpy_loop(dsts, srcs, sizes)),
            "memcpy loop (C++), clear of it": (BASELINE, bl.memcpy_loop(clear, srcs, sizes)),
        }
    return Case("runtime.aliasing", f"H2D {count} x {size // 1024} KiB, each {ahead} B past its source mod 4 KiB",
                size * count, count=count, params={"item_size": size, "ahead": ahead}, build=build)


def desc_case(nbytes):
    def build(stack):
        stream = _stream()
        try:
            desc_size = runtime.get_memcpy_desc_size(ACL_MEMCPY_INNER_DEVICE_TO_DEVICE)
        except AclError:
            return {}  # no descriptors on this SoC profile
        desc = _device(stack, desc_size)
        src, dst = _device(stack, nbytes), _device(stack, nbytes)
        bl.view(src, nbytes)[:] = 1
        return {
            "aclrtSetMemcpyDesc+MemcpyAsyncWithDesc+sync": (OURS, native.acl_desc(
                desc, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, src, dst, nbytes, stream)),
            "aclrtMemcpyAsync+sync (D2D)": (OURS, native.acl_memcpy_async(
                dst, nbytes, src, nbytes, ACL_MEMCPY_DEVICE_TO_DEVICE, stream)),
            "memcpy (C++)": (BASELINE, bl.memcpy_loop([dst], [src], [nbytes])),
            "np.copyto": (BASELINE, bl.numpy_one_copy(bl.view(dst, nbytes), bl.view(src, nbytes))),
        }
    return Case("runtime.desc", "D2D within the device", nbytes, build=build)


def registered_d2h_case(nbytes):
    """D2H into host memory pinned by registration (HostBuffer.wrap of a numpy array: aclrtHostRegisterV2)
    against memory from aclrtMallocHost and against pageable memory (the copy's synchronous path)."""
    def build(stack):
        from ms_memcopy import HostBuffer

        stream = _stream()
        src = _device(stack, nbytes)
        bl.view(src, nbytes)[:] = 9
        owner = np.ones(nbytes + 4096, np.uint8)  # pages touched, as the other destinations' are
        registered = HostBuffer.wrap(owner[-owner.ctypes.data % 4096:][:nbytes])  # its own pages
        stack.callback(registered.close)
        allocated, pageable = _pinned(stack, nbytes, 0), np.ones(nbytes, np.uint8)
        d2h = ACL_MEMCPY_DEVICE_TO_HOST

        def copy_into(dst):
            return native.acl_memcpy_async(dst, nbytes, src, nbytes, d2h, stream)
        pageable_loop = copy_into(pageable.ctypes.data)
        pageable_loop.arrays = (pageable,)
        return {
            "aclrtMemcpyAsync+sync into registered": (OURS, copy_into(registered.ptr)),
            "aclrtMemcpyAsync+sync into aclrtMallocHost": (BASELINE, copy_into(allocated)),
            "aclrtMemcpyAsync+sync into pageable": (BASELINE, pageable_loop),
        }
    return Case("runtime.registered", "D2H device->registered host memory", nbytes, build=build)


def cases(settings):
    full = settings.name == "full"
    out = [memcpy_case(n, full) for n in settings.copy_sizes]
    out += [registered_d2h_case(n) for n in settings.copy_sizes if n >= 64 * 1024]
    out += [batch_case(size, count, full) for size, count in settings.batch_items]
    out.append(aliasing_batch_case())
    out += [memcpy2d_case(w, r, full) for r in settings.region_sizes for w in settings.row_widths
            if w <= r and r // w <= MAX_2D_HEIGHT]
    out += [desc_case(n) for n in settings.copy_sizes if n <= 4 * 1024 * 1024 or full]
    return out
