"""A benchmark case: one operation at one size, measured as "ours" and as baselines."""
from dataclasses import dataclass, field
from typing import Callable, Dict, Tuple

OURS = "ours"
BASELINE = "baseline"
REFERENCE = "reference"  # measured for context (e.g. an empty graph step), not a ratio column


@dataclass
class Case:
    group: str       # e.g. "runtime.memcpy", "ops.MemcpyBatch"
    label: str       # what is copied, e.g. "H2D pinned->device"
    nbytes: int      # payload bytes per call (bandwidth = nbytes / time)
    count: int = 1   # items per call (batch) or rows (2D)
    params: Dict[str, object] = field(default_factory=dict)
    # build(stack) -> {impl name: (role, loop)}; allocations are registered on the ExitStack.
    build: Callable = None
    samples_scale: int = 1  # more samples for cases whose ratios are close calls (per-call overheads)
    # slices of each sample, taken in turns with the other implementations' (close calls; timing.EVERY_CALL:
    # one call each)
    pieces: int = 1


def impl(role, loop) -> Tuple[str, Callable]:
    return role, loop
