"""Range checks on offset values, shared by the infer-time and eager checks of the primitives.

They mirror the kernels' own launch-time checks (ops_impl/kernels/bodies/<family>.cpp) so that the same
mistake reads the same in every mode, and raise ValueError naming the argument.
"""
import numpy as np


def check_host_range(offset, span, capacity, argument, what):
    offset = int(offset)
    if offset < 0:
        raise ValueError(f"{argument} is negative ({offset})")
    if offset + span > capacity:
        raise ValueError(f"{argument} = {offset}: {what} ({span} bytes) would end at byte {offset + span}, "
                         f"past the end of the HostBuffer ({capacity} bytes); nothing was copied")


def check_batch_ranges(offsets, sizes, capacity, check_overlap, argument="offsets"):
    if len(offsets) != len(sizes):
        raise ValueError(f"{argument} must hold {len(sizes)} value(s), got {len(offsets)}")
    for i, (offset, size) in enumerate(zip(offsets, sizes)):
        check_host_range(offset, size, capacity, f"{argument}[{i}]", f"tensor {i}")
    if check_overlap:
        spans = sorted((int(o), int(o) + s, i) for i, (o, s) in enumerate(zip(offsets, sizes)) if s > 0)
        for (_, end_a, a), (begin_b, _, b) in zip(spans, spans[1:]):
            if begin_b < end_a:
                a, b = min(a, b), max(a, b)
                raise ValueError(f"{argument}: items {a} and {b} write overlapping bytes (copies within a batch "
                                 f"run in no order, so the result would be undefined); nothing was copied")


def check_region(start, extent, limit, argument, dimension):
    start = int(start)
    if start < 0 or start + extent > limit:
        raise ValueError(f"{argument} = {start}: the region [{start}, {start} + {extent}) leaves the {limit} "
                         f"{dimension} of the tensor; nothing was copied")


def pitched_span(rows, row_bytes, pitch):
    """Bytes from the first to the last byte of `rows` rows of row_bytes laid out every pitch bytes."""
    return 0 if rows == 0 else (rows - 1) * pitch + row_bytes


def check_block_mapping(mapping, source, destination, same_cache):
    """Checks a block mapping (numpy int64 [n, 2] of (source block, destination block) pairs).

    source and destination are (side name, number of blocks). Every block must lie within its side,
    no destination block may appear twice, and when blocks are copied within one cache
    (same_cache), no block may be both read and written (the copies run in no order).
    """
    n = len(mapping)
    if n == 0:
        return
    src, dst = mapping[:, 0], mapping[:, 1]
    bad = (src < 0) | (src >= source[1]) | (dst < 0) | (dst >= destination[1])
    if bad.any():
        i = int(np.argmax(bad))
        column, (side, limit) = (0, source) if not 0 <= src[i] < source[1] else (1, destination)
        raise ValueError(f"block_mapping[{i}][{column}] = {int(mapping[i, column])}: {side} block out of range "
                         f"[0, {limit}); nothing was copied")
    order = np.lexsort((np.arange(n), dst))
    repeated = np.nonzero(dst[order][1:] == dst[order][:-1])[0]
    if repeated.size:
        a, b = order[repeated[0]], order[repeated[0] + 1]
        raise ValueError(f"block_mapping: {destination[0]} block {int(dst[a])} is written twice (pairs {a} and {b}); "
                         f"nothing was copied")
    if same_cache:
        read_and_written = np.isin(src, dst)
        if read_and_written.any():
            i = int(np.argmax(read_and_written))
            j = int(np.argmax(dst == src[i]))
            raise ValueError(f"block_mapping: block {int(src[i])} is read by pair {i} and written by pair {j} "
                             f"(copies run in no order); nothing was copied")
