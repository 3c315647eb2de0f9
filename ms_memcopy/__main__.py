"""Command line: ``python -m ms_memcopy info``, ``python -m ms_memcopy bench`` and
``python -m ms_memcopy npu-check``."""
import argparse
import sys
from typing import List, Optional


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ms_memcopy", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="version, ACL backend, emulated SoC and its calls, MindSpore")
    bench = sub.add_parser("bench", help="run the benchmark suite", add_help=False)
    bench.add_argument("bench_args", nargs=argparse.REMAINDER)
    npu = sub.add_parser("npu-check", help="check every primitive on an Ascend NPU (--dry-run: on the CPU target)")
    npu.add_argument("--dry-run", action="store_true", help="no NPU: the same checks on the CPU target")
    npu.add_argument("--big", action="store_true", help="in a dry run, also the 4 GiB MemcpyWithDesc copy")
    # REMAINDER does not take arguments that start with "-" (python -m ms_memcopy bench --quick): the
    # bench command gets whatever the top-level parser does not know.
    args, rest = parser.parse_known_args(argv)
    if rest and args.command != "bench":
        parser.error("unrecognized arguments: " + " ".join(rest))
    if args.command == "info":
        from .tools.info import report

        print(report())
        return 0
    if args.command == "npu-check":
        from .tools.npu_check import main as npu_check_main

        return npu_check_main((["--dry-run"] if args.dry_run else []) + (["--big"] if args.big else []))
    from .benchmarks.cli import main as bench_main

    return bench_main(rest + args.bench_args)


if __name__ == "__main__":
    sys.exit(main())
