"""What a BlockPool is made of: each cache's block shape and dtype, and the host side, one HostBuffer or
several chunks (allocated, or the caller's HostBuffers) holding exactly the host blocks asked for."""
from typing import Any, List, Optional, Sequence, Tuple, Union

from ..host_buffer import HostBuffer
from ..host_chunks import HostChunks
from ..ops._args import check_int, check_shape, num_elements
from ..ops._dtypes import itemsize, ms_dtype


def _is_shape_list(block_shape) -> bool:
    """True when block_shape is a list of L block shapes rather than one shape."""
    return isinstance(block_shape, (list, tuple)) and len(block_shape) > 0 and \
        all(isinstance(s, (list, tuple)) for s in block_shape)


def cache_specs(num_caches: int, block_shape: Any, dtype: Any) -> Tuple[tuple, tuple, Tuple[int, ...]]:
    """The block shape, dtype and block bytes of each of the L caches, from one shape or L shapes and
    one dtype or L dtypes."""
    if _is_shape_list(block_shape):
        if len(block_shape) != num_caches:
            raise ValueError(f"block_shape: {len(block_shape)} block shapes for num_caches={num_caches}")
        shapes = tuple(check_shape(s, f"block_shape[{l}]") for l, s in enumerate(block_shape))
    else:
        shapes = (check_shape(block_shape, "block_shape"),) * num_caches
    if isinstance(dtype, (list, tuple)):
        if len(dtype) != num_caches:
            raise ValueError(f"dtype: {len(dtype)} dtypes for num_caches={num_caches}")
        dtypes = tuple(ms_dtype(d, f"dtype[{l}]") for l, d in enumerate(dtype))
    else:
        dtypes = (ms_dtype(dtype, "dtype"),) * num_caches
    block_bytes = tuple(num_elements(s) * itemsize(d) for s, d in zip(shapes, dtypes))
    for l, b in enumerate(block_bytes):
        if b == 0:
            where = f"block_shape[{l}]" if _is_shape_list(block_shape) else "block_shape"
            raise ValueError(f"{where} must hold at least one element")
    return shapes, dtypes, block_bytes


class PoolHost:
    """The host side of a BlockPool: ``chunks`` (HostBuffers, in order), ``host_buffer`` (the one chunk,
    or a HostChunks over several: what SwapBlocks is built on) and ``nbytes`` (the chunks' bytes).
    Chunks it allocated are closed with it; the caller's HostBuffers are left open."""

    def __init__(self, num_host_blocks: int, bytes_per_block: int, *, pinned: bool,
                 host_chunk_bytes: Optional[int], host_buffers: Union[HostBuffer, Sequence[HostBuffer], None]):
        if host_buffers is not None and host_chunk_bytes is not None:
            raise ValueError("give host_buffers or host_chunk_bytes, not both: host_buffers are the chunks")
        if host_buffers is not None:
            self.chunks = _given_chunks(host_buffers, num_host_blocks, bytes_per_block)
            self.owned = False
        else:
            sizes = _chunk_sizes(num_host_blocks, bytes_per_block, host_chunk_bytes)
            self.chunks = _allocate(sizes, pinned)
            self.owned = True
        self.nbytes = sum(c.nbytes for c in self.chunks)
        try:
            self.host_buffer = self.chunks[0] if len(self.chunks) == 1 else HostChunks(list(self.chunks))
        except Exception:
            self._close_owned()
            raise

    def close(self) -> None:
        """Ends the group of chunks (if several), then closes the chunks the pool allocated."""
        try:
            if isinstance(self.host_buffer, HostChunks):
                self.host_buffer.close()
        finally:
            self._close_owned()

    def _close_owned(self):
        if self.owned:
            for chunk in self.chunks:
                chunk.close()


def _chunk_sizes(num_host_blocks: int, bytes_per_block: int, host_chunk_bytes: Optional[int]) -> List[int]:
    """The bytes of each chunk to allocate: whole host blocks, num_host_blocks of them in all."""
    if host_chunk_bytes is None:
        return [max(1, num_host_blocks * bytes_per_block)]
    host_chunk_bytes = check_int(host_chunk_bytes, "host_chunk_bytes", 1)
    per_chunk = host_chunk_bytes // bytes_per_block
    if per_chunk == 0:
        raise ValueError(f"host_chunk_bytes = {host_chunk_bytes} holds no host block of {bytes_per_block} bytes "
                         f"(one block of each cache)")
    full, rest = divmod(num_host_blocks, per_chunk)
    sizes = [per_chunk * bytes_per_block] * full + ([rest * bytes_per_block] if rest else [])
    return sizes or [1]


def _allocate(sizes: List[int], pinned: bool) -> Tuple[HostBuffer, ...]:
    chunks = []
    try:
        for size in sizes:
            chunks.append(HostBuffer(size, pinned=pinned))
    except Exception:
        for chunk in chunks:
            chunk.close()
        raise
    return tuple(chunks)


def _given_chunks(host_buffers, num_host_blocks: int, bytes_per_block: int) -> Tuple[HostBuffer, ...]:
    """The caller's HostBuffers, checked to hold num_host_blocks host blocks together."""
    chunks = [host_buffers] if isinstance(host_buffers, HostBuffer) else host_buffers
    if not isinstance(chunks, (list, tuple)) or not chunks:
        raise TypeError(f"host_buffers must be a HostBuffer or a non-empty list of HostBuffers, "
                        f"not {type(host_buffers).__name__}")
    for k, chunk in enumerate(chunks):
        if not isinstance(chunk, HostBuffer):
            raise TypeError(f"host_buffers[{k}] must be an ms_memcopy.HostBuffer, not {type(chunk).__name__}")
        if chunk.closed:
            raise ValueError(f"host_buffers[{k}]: the HostBuffer is closed")
    held = sum(c.nbytes // bytes_per_block for c in chunks)
    if held < num_host_blocks:
        nbytes = sum(c.nbytes for c in chunks)
        raise ValueError(f"host_buffers: their {nbytes} bytes hold {held} host block(s) of {bytes_per_block} bytes "
                         f"(one block of each cache), fewer than num_host_blocks = {num_host_blocks}")
    return tuple(chunks)

