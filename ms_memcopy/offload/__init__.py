"""An offloading handler with the shape of vLLM v1's CPU-GPU one, over a BlockPool and a TransferQueue.

vLLM v1's offloading connector hands its worker-side handler jobs of the form
``transfer_async(job_id, (src_spec, dst_spec))``: device blocks to host blocks (a store) or host blocks
to device blocks (a load), the block numbers chosen by vLLM (its KV cache manager on the device side,
its offloading manager on the host side). ``get_finished()`` reports each finished job once, with its
bytes and seconds; ``wait(job_ids)`` blocks until some have finished.

    pool = BlockPool(num_caches=2, num_blocks=64, num_host_blocks=4 * 32, block_shape=(16, 128), dtype=ms.float16)
    handler = OffloadingHandler(pool, block_size_factor=4)    # 32 host blocks of 4 device blocks each
    handler.transfer_async(1, (DeviceBlocksSpec([8, 9, 10, 11]), HostBlocksSpec([5])))   # store
    handler.transfer_async(2, (HostBlocksSpec([5]), DeviceBlocksSpec([20, 21, 22, 23]))) # load (after job 1)
    handler.wait({2})
    for result in handler.get_finished():   # TransferResult(job_id, success, transfer_size, transfer_time, ...)
        ...

Host blocks: with ``block_size_factor`` N, host block h holds N device blocks, the pool's host blocks
``h*N .. h*N + N - 1`` (so the pool has N times as many host blocks as the handler). In the pool's
default host layout (one chunk, cache-major), device block j of host block h of cache l starts at byte
``H * P_l + (h * N + j) * b_l`` (H = ``pool.num_host_blocks``, b_l a block of cache l, P_l the blocks
of the caches before it; ``(l * H + h * N + j) * block_bytes`` for caches of one block size): each
cache's host blocks are one contiguous range, as vLLM's CPU tensor per cache is. Pools of several host
chunks or block-major place them as docs/primitives.md says.

Specs: any object with ``medium()`` ("GPU" for device blocks, "CPU" for host blocks, vLLM's medium
names) and ``block_ids`` works, so vLLM's own GPULoadStoreSpec and CPULoadStoreSpec are taken unchanged;
DeviceBlocksSpec and HostBlocksSpec are the same for code without vLLM. A device spec may carry
``group_sizes`` (the blocks of each KV cache group, in order; None: one group) and ``block_indices``
(the logical block index of each group's first block; None: 0): a group of n device blocks starting at
logical block L uses ``ceil((L % N + n) / N)`` host blocks, the first ``L % N`` device blocks of its
first host block skipped, and each group starts a new host block.

Modules: ``specs`` (the specs, the results and the checks of block numbers), ``handler`` (the handler).
"""
from .handler import OffloadingHandler
from .specs import DeviceBlocksSpec, HostBlocksSpec, TransferResult

__all__ = ["OffloadingHandler", "TransferResult", "DeviceBlocksSpec", "HostBlocksSpec"]
