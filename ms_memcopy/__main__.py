"""Command line: ``python -m ms_memcopy info`` and ``python -m ms_memcopy bench``."""
import argparse
import sys


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m ms_memcopy", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="version, ACL backend, emulated SoC and its calls, MindSpore")
    bench = sub.add_parser("bench", help="run the benchmark suite", add_help=False)
    bench.add_argument("bench_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.command == "info":
        from .info import report

        print(report())
        return 0
    from .benchmarks.cli import main as bench_main

    return bench_main(args.bench_args)


if __name__ == "__main__":
    sys.exit(main())
