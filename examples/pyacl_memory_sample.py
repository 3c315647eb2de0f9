"""A pyACL memory program written as the Ascend memory samples are, running on ms_memcopy.

Only the import differs from a script for real pyACL (``import acl``). It initializes, binds a device and a
context, allocates host and device memory, copies data there and back, sets device memory, queries the
device memory, synchronizes and releases everything, checking each result against numpy.

    python examples/pyacl_memory_sample.py
"""
import numpy as np

import ms_memcopy.acl as acl

# pyACL scripts define the constants they use.
ACL_SUCCESS = 0
ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
ACL_MEMCPY_DEVICE_TO_DEVICE = 3
ACL_HBM_MEM = 1
NPY_BYTE = 1
DEVICE_ID = 0
SIZE = 1024 * 1024


def check_ret(message, ret):
    if ret != ACL_SUCCESS:
        raise Exception(f"{message} failed ret={ret}")


def main():
    check_ret("acl.init", acl.init())
    check_ret("acl.rt.set_device", acl.rt.set_device(DEVICE_ID))
    context, ret = acl.rt.create_context(DEVICE_ID)
    check_ret("acl.rt.create_context", ret)
    run_mode, ret = acl.rt.get_run_mode()
    check_ret("acl.rt.get_run_mode", ret)
    stream, ret = acl.rt.create_stream()
    check_ret("acl.rt.create_stream", ret)

    free_before, total, ret = acl.rt.get_mem_info(ACL_HBM_MEM)
    check_ret("acl.rt.get_mem_info", ret)
    host_ptr, ret = acl.rt.malloc_host(SIZE)
    check_ret("acl.rt.malloc_host", ret)
    dev_ptr, ret = acl.rt.malloc(SIZE, ACL_MEM_MALLOC_HUGE_FIRST)
    check_ret("acl.rt.malloc", ret)
    dev_copy, ret = acl.rt.malloc(SIZE, ACL_MEM_MALLOC_HUGE_FIRST)
    check_ret("acl.rt.malloc", ret)
    free_after, _, ret = acl.rt.get_mem_info(ACL_HBM_MEM)
    check_ret("acl.rt.get_mem_info", ret)

    # Fill the host buffer, copy it to the device and back through a second device buffer.
    data = np.random.default_rng(0).integers(0, 256, SIZE, dtype=np.uint8)
    host_view = acl.util.ptr_to_numpy(host_ptr, (SIZE,), NPY_BYTE)
    host_view[:] = data.view(np.int8)
    check_ret("acl.rt.memcpy", acl.rt.memcpy(dev_ptr, SIZE, host_ptr, SIZE, ACL_MEMCPY_HOST_TO_DEVICE))
    check_ret("acl.rt.memcpy_async",
              acl.rt.memcpy_async(dev_copy, SIZE, dev_ptr, SIZE, ACL_MEMCPY_DEVICE_TO_DEVICE, stream))
    check_ret("acl.rt.synchronize_stream", acl.rt.synchronize_stream(stream))
    out = np.zeros(SIZE, dtype=np.uint8)
    out_ptr, out = acl.util.numpy_contiguous_to_ptr(out)
    check_ret("acl.rt.memcpy", acl.rt.memcpy(out_ptr, SIZE, dev_copy, SIZE, ACL_MEMCPY_DEVICE_TO_HOST))
    assert np.array_equal(out, data), "round trip differs"

    # Set the first half of the device buffer synchronously, the second half on the stream.
    check_ret("acl.rt.memset", acl.rt.memset(dev_ptr, SIZE, 0x5A, SIZE // 2))
    half = dev_ptr + SIZE // 2
    check_ret("acl.rt.memset_async", acl.rt.memset_async(half, SIZE // 2, 0xA5, SIZE // 2, stream))
    check_ret("acl.rt.synchronize_device", acl.rt.synchronize_device())
    check_ret("acl.rt.memcpy", acl.rt.memcpy(out_ptr, SIZE, dev_ptr, SIZE, ACL_MEMCPY_DEVICE_TO_HOST))
    expected = np.concatenate([np.full(SIZE // 2, 0x5A, np.uint8), np.full(SIZE // 2, 0xA5, np.uint8)])
    assert np.array_equal(out, expected), "memset result differs"

    check_ret("acl.rt.free", acl.rt.free(dev_copy))
    check_ret("acl.rt.free", acl.rt.free(dev_ptr))
    check_ret("acl.rt.free_host", acl.rt.free_host(host_ptr))
    check_ret("acl.rt.destroy_stream", acl.rt.destroy_stream(stream))
    check_ret("acl.rt.destroy_context", acl.rt.destroy_context(context))
    check_ret("acl.rt.reset_device", acl.rt.reset_device(DEVICE_ID))
    check_ret("acl.finalize", acl.finalize())
    print(f"run mode {run_mode}; device memory total {total} bytes, free {free_before} -> {free_after} "
          f"after two {SIZE}-byte allocations")
    print("pyacl memory sample: PASS")


if __name__ == "__main__":
    main()
