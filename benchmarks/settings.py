"""Sizes, batch counts and timing budgets of the three modes."""
from dataclasses import dataclass, field
from typing import Tuple

KiB = 1024
MiB = 1024 * KiB


@dataclass(frozen=True)
class Settings:
    name: str
    # Timing: each implementation runs `samples` samples of at least `sample_s` seconds (after
    # calibration), interleaved with the other implementations of the same case.
    sample_s: float
    samples: int
    # Raw runtime calls.
    copy_sizes: Tuple[int, ...]             # single copies (1D, descriptor)
    batch_items: Tuple[Tuple[int, int], ...]  # (item size, count) pairs of batch copies
    row_widths: Tuple[int, ...]             # 2D copies: bytes per row
    region_sizes: Tuple[int, ...]           # 2D copies: bytes of the copied region
    # Primitives (GRAPH_MODE).
    prim_sizes: Tuple[int, ...]
    prim_batch: Tuple[Tuple[int, int], ...]  # (tensor size, count) of MemcpyBatch
    prim_builtin_max_count: int              # largest graph of per-tensor built-in copies (compile time)
    prim_row_widths: Tuple[int, ...]
    prim_region_sizes: Tuple[int, ...]
    # In-place primitives over paged caches (GRAPH_MODE and eager).
    write_cache_sizes: Tuple[int, ...]       # caches that one 4 KiB row is written into
    swap_blocks: Tuple[int, int, int]        # (block bytes, blocks per call, caches) of SwapBlocks and CopyBlocks
    threads: Tuple[int, ...] = field(default=())  # thread counts of the memcpy floor (filled at run time)


SMOKE = Settings(
    name="smoke", sample_s=0.002, samples=1,
    copy_sizes=(64, 64 * KiB), batch_items=((4 * KiB, 16),), row_widths=(4, 64), region_sizes=(64 * KiB,),
    prim_sizes=(64,), prim_batch=((64, 4),), prim_builtin_max_count=4, prim_row_widths=(64,),
    prim_region_sizes=(64 * KiB,), write_cache_sizes=(64 * KiB, MiB), swap_blocks=(4 * KiB, 16, 2),
)

QUICK = Settings(
    name="quick", sample_s=0.01, samples=3,
    copy_sizes=(64, 4 * KiB, 256 * KiB, 16 * MiB, 64 * MiB),
    batch_items=((64, 1), (4 * KiB, 1), (64, 256), (4 * KiB, 256), (64, 4096), (4 * KiB, 4096)),
    row_widths=(4, 64, KiB), region_sizes=(64 * KiB, 16 * MiB),
    prim_sizes=(64, 64 * KiB, 16 * MiB), prim_batch=((64, 1), (64, 16), (64, 64), (64, 256)),
    prim_builtin_max_count=64,
    prim_row_widths=(4, 64, KiB), prim_region_sizes=(16 * MiB,),
    write_cache_sizes=(16 * MiB, 256 * MiB), swap_blocks=(64 * KiB, 1024, 2),
)

FULL = Settings(
    name="full", sample_s=0.05, samples=5,
    copy_sizes=(64, KiB, 16 * KiB, 256 * KiB, MiB, 4 * MiB, 16 * MiB, 64 * MiB),
    batch_items=tuple((s, n) for n in (1, 16, 256, 4096) for s in (64, 4 * KiB, 64 * KiB) if s * n <= 64 * MiB)
    + ((16 * MiB, 4), (MiB, 64)),
    row_widths=(4, 64, KiB, 16 * KiB), region_sizes=(64 * KiB, MiB, 16 * MiB, 64 * MiB),
    prim_sizes=(64, KiB, 64 * KiB, MiB, 16 * MiB, 64 * MiB),
    prim_batch=((64, 1), (64, 16), (4 * KiB, 16), (64, 256), (4 * KiB, 256), (64, 1024)),
    prim_builtin_max_count=256,
    prim_row_widths=(4, 64, KiB), prim_region_sizes=(64 * KiB, 16 * MiB),
    write_cache_sizes=(16 * MiB, 1024 * MiB), swap_blocks=(64 * KiB, 1024, 2),
)

MODES = {"smoke": SMOKE, "quick": QUICK, "full": FULL}
