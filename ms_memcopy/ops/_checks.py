"""Range checks on offset values, shared by the infer-time and eager checks of the primitives.

They mirror the kernels' own launch-time checks (ops_impl/kernels/op_bodies.cpp) so that the same
mistake reads the same in every mode, and raise ValueError naming the argument.
"""


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
