"""Cells built on the primitives, one module per job: ``pool`` (BlockPool and its errors), ``queue``
(TransferQueue) and ``slots`` (BlockSlots, SwapOutBlocks, SwapInBlocks).

BlockPool: a paged cache (vLLM's block manager): L device caches held as Parameters, a host pool in a
HostBuffer, block numbers handed out and taken back, and swap-out / swap-in / fork built on
SwapBlocks and CopyBlocks (in place, one batch call per 4096 block copies).

    pool = BlockPool(num_caches=2, num_blocks=64, num_host_blocks=128, block_shape=(16, 128), dtype=ms.float16)
    k_cache, v_cache = pool.caches          # Parameters [64, 16, 128]: give them to the model
    table = pool.allocate(4)                # device block numbers of a sequence
    host_table = pool.swap_out(table)       # preempt: blocks to the host pool, device blocks freed
    table = pool.swap_in(host_table)        # resume: new device blocks, host blocks freed
    child = pool.fork(table)                # copies of the blocks in new device blocks

The caches may differ in block shape and dtype (an MLA latent and rope cache: ``block_shape=[(16, 512),
(16, 64)]``), and the host pool may span chunks (``host_chunk_bytes``) or the caller's registered
HostBuffers (``host_buffers``); its size is exactly ``num_host_blocks * pool.bytes_per_block``.

TransferQueue: the same moves without waiting for them, on the transfer streams (not the model's);
the pool keeps the blocks of a job in flight from being read or reused until it has finished.

    queue = TransferQueue(pool)
    job = queue.submit("swap_out", table)   # returns at once; the device blocks are free once it finishes
    host_table = queue.destination(job)     # the new block numbers, known at once
    ...                                     # the model decodes meanwhile
    done = queue.finished()                 # the jobs completed since the last call, without waiting
    queue.wait(job)                         # or block until one has finished

BlockSlots / SwapOutBlocks / SwapInBlocks: fixed-size blocks as separate tensors (KV-cache offload,
activation offload) kept in numbered slots of a HostBuffer instead of byte offsets.

    store = BlockSlots(buf, block_shape=(16, 128), dtype=ms.float16)     # slots of one block each
    swap_out = SwapOutBlocks(store, num_blocks=4)
    swap_in = SwapInBlocks(store, num_blocks=4)
    swap_out(b0, b1, b2, b3, slots)      # slots: int64 tensor of 4 slot numbers
    b0, b1, b2, b3 = swap_in(slots)

A slot outside the buffer, or the same slot twice in one swap-out, is MemcpyBatch's bad-offset error
(the byte offset is slot * block bytes).
"""
from .pool import BlockPool, OutOfBlocks, TransferPending
from .queue import TransferQueue
from .slots import BlockSlots, SwapInBlocks, SwapOutBlocks

__all__ = ["BlockPool", "OutOfBlocks", "TransferQueue", "TransferPending", "BlockSlots", "SwapOutBlocks",
           "SwapInBlocks"]
