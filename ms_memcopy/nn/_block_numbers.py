"""The block numbers of a BlockPool: one side's free and allocated numbers, and OutOfBlocks."""
import numpy as np

from ..ops._args import check_int

__all__ = ["OutOfBlocks"]


class OutOfBlocks(RuntimeError):
    """A BlockPool has fewer free blocks than asked for (nothing was allocated).

    Args:
        message (str): what was asked for and what is free.

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import mindspore as ms
        >>> from ms_memcopy.nn import BlockPool, OutOfBlocks
        >>> pool = BlockPool(num_caches=1, num_blocks=2, num_host_blocks=0, block_shape=(4,), dtype=ms.int8)
        >>> try:
        ...     pool.allocate(3)
        ... except OutOfBlocks as error:
        ...     print(error)
        3 device block(s) asked for, 2 of 2 free
        >>> pool.close()
    """


class _BlockNumbers:
    """The free and allocated block numbers of one side of a pool; lowest numbers are handed out first."""

    def __init__(self, count, side):
        self.count = count
        self.side = side
        self._free = list(range(count - 1, -1, -1))
        self._allocated = set()

    @property
    def num_free(self):
        return len(self._free)

    def allocate(self, n):
        n = check_int(n, "n")
        if n > len(self._free):
            raise OutOfBlocks(f"{n} {self.side} block(s) asked for, {len(self._free)} of {self.count} free")
        blocks = [self._free.pop() for _ in range(n)]
        self._allocated.update(blocks)
        return blocks

    def check_allocated(self, blocks, argument):
        blocks = [check_int(b, argument) for b in blocks]
        if len(set(blocks)) != len(blocks):
            raise ValueError(f"{argument}: a {self.side} block appears twice in {blocks}")
        stray = [b for b in blocks if b not in self._allocated]
        if stray:
            raise ValueError(f"{argument}: {self.side} block(s) {stray} are not allocated")
        return blocks

    def free(self, blocks, argument="blocks"):
        blocks = self.check_allocated(blocks, argument)
        self._allocated.difference_update(blocks)
        self._free_now(blocks)

    def _free_now(self, blocks):
        self._free.extend(blocks)
        self._free.sort(reverse=True)

    # A job in flight gives blocks up: they leave the allocated set at once, and join the free list when
    # the job has finished (or go back to the allocated set when it failed).
    def give_up(self, blocks):
        self._allocated.difference_update(blocks)

    def given_up(self, blocks, moved):
        if moved:
            self._free_now(blocks)
        else:
            self._allocated.update(blocks)


def _as_list(blocks, argument):
    """blocks as a list (TypeError naming argument for something that is not a sequence of block numbers)."""
    if isinstance(blocks, (str, bytes)) or not hasattr(blocks, "__iter__"):
        raise TypeError(f"{argument} must be a sequence of block numbers, not {type(blocks).__name__}")
    return [int(b) if isinstance(b, np.integer) else b for b in blocks]
