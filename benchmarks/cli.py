"""``python -m ms_memcopy bench``: measure ms_memcopy against the baselines a user would pick instead.

Runs the runtime cases (ACL calls timed in C, and through ms_memcopy.runtime) and the primitive
cases (GRAPH_MODE steps), prints a table of microseconds per call, GB/s and the ratio of our time to
each baseline's (below 1 means faster), evaluates the speed goals, and writes results.json,
results.md and bandwidth.png to --out (--markdown: the same Markdown into a document such as
docs/performance.md).
"""
import argparse
import contextlib
import datetime
import os
import platform
import sys
import time
from pathlib import Path

from . import plot, report, targets
from .settings import MODES
from .timing import measure


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m ms_memcopy bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_const", const="quick", dest="mode",
                      help="fewer sizes and shorter samples (under a minute)")
    mode.add_argument("--smoke", action="store_const", const="smoke", dest="mode",
                      help="one or two sizes per case, one sample: checks that everything runs")
    p.add_argument("--out", default="bench_results", help="directory for results.json, results.md, bandwidth.png "
                   "(default: ./bench_results)")
    p.add_argument("--only", choices=("runtime", "ops", "blocks"),
                   help="run only the runtime cases, only the primitive cases, or only the in-place ones over "
                        "paged caches (row write, SwapBlocks, CopyBlocks; also part of 'ops')")
    p.add_argument("--markdown", metavar="FILE",
                   help="also write the run as Markdown (the goals with their verdicts, every table with each "
                        "ratio's spread over the rounds of samples, headed by date, machine, load and command) "
                        "into FILE between its '<!-- bench-results:begin -->' and '<!-- bench-results:end -->' "
                        "markers, the rest of FILE unchanged (docs/performance.md has them); a FILE without "
                        "them is overwritten")
    p.add_argument("--no-plot", action="store_true", help="skip the PNG")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(mode="full")
    return p.parse_args(argv)


def machine():
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    info = {"cpu": cpu, "cores_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
            else os.cpu_count(), "os": platform.platform(), "python": platform.python_version()}
    try:
        with open("/proc/meminfo") as f:
            info["memory_gib"] = round(int(f.readline().split()[1]) / (1 << 20), 1)
    except (OSError, ValueError, IndexError):
        pass
    return info


def versions(with_ms):
    import numpy

    from ms_memcopy import __version__, _paths, _runtime_env

    out = {"ms_memcopy": __version__, "numpy": numpy.__version__,
           "acl": "host runtime" if _paths.uses_host_runtime() else "CANN"}
    if _paths.uses_host_runtime():
        from ms_memcopy import runtime

        out["soc_profile"] = runtime.soc_profile()
    for name in (_runtime_env.COPY_THREADS, _runtime_env.STREAMING_STORES):
        out[name] = os.environ.get(name, "")
    if with_ms:
        import mindspore

        out["mindspore"] = mindspore.__version__
    return out


def copy_strategy():
    """The host runtime's copy strategy (calibrated at its first large copy), or None with CANN."""
    from ms_memcopy import _paths

    if not _paths.uses_host_runtime():
        return None
    from ms_memcopy import runtime

    return runtime.copy_strategy()


def load():
    return [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None


def collect(settings, only):
    cases = []
    if only in (None, "runtime"):
        from . import cases_runtime

        cases += cases_runtime.cases(settings)
    if only in (None, "ops", "blocks"):
        from . import cases_blocks, cases_eager, cases_primitives, ms_graphs

        ms_graphs.use_graph_mode()
        if only != "blocks":
            cases += cases_primitives.cases(settings)
        cases += cases_blocks.cases(settings)
        if only != "blocks":
            # SwapBlocks over mixed caches: with the primitives, not in `--only blocks` (which
            # tests/test_bench_smoke.py runs at the quick sizes, and would take longer).
            from . import cases_mixed

            cases += cases_mixed.cases(settings)
            # Last: after thousands of eager calls in PYNATIVE_MODE, MindSpore's later eager calls on
            # 128 MiB Parameters took 15-30 ms more (CopyBlocks 46-50 ms against 18-31 ms, its graph
            # step unchanged), which would charge the block cases' eager forms for this case.
            cases.append(cases_eager.eager_case())
    return cases


def run(cases, settings, quiet):
    """(results, errors): a case that fails is reported and skipped; the others still run."""
    results, errors = [], []
    start = time.perf_counter()
    for i, case in enumerate(cases, 1):
        t0 = time.perf_counter()
        try:
            with contextlib.ExitStack() as stack:
                impls = case.build(stack)
                if not impls:
                    continue
                stats = measure({name: loop for name, (_, loop) in impls.items()}, settings.sample_s,
                                settings.samples * case.samples_scale, case.pieces)
                measured = {name: (impls[name][0], stats[name]) for name in impls}
        except Exception as e:  # noqa: BLE001  (one broken case must not lose a long run)
            errors.append({"group": case.group, "label": case.label, "nbytes": case.nbytes,
                           "error": f"{type(e).__name__}: {e}"})
            print(f"[{i:3d}/{len(cases)}] {case.group} {case.label}: FAILED: {type(e).__name__}: {e}",
                  file=sys.stderr, flush=True)
            continue
        results.append(report.summarize(case, measured))
        if not quiet:
            print(f"[{i:3d}/{len(cases)}] {case.group:17s} {case.label:45.45s} {report.fmt_size(case.nbytes):>8s} "
                  f"{time.perf_counter() - t0:5.1f} s  (total {time.perf_counter() - start:5.1f} s)",
                  file=sys.stderr, flush=True)
    return results, errors


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    settings = MODES[args.mode]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    command = "python -m ms_memcopy bench" + "".join(f" {a}" for a in (argv if argv is not None else sys.argv[1:]))
    started = datetime.datetime.now(datetime.timezone.utc)
    load_before = load()
    cases = collect(settings, args.only)
    results, errors = run(cases, settings, args.quiet)
    meta = {"command": command, "mode": settings.name, "started": started.isoformat(timespec="seconds"),
            "seconds": round((datetime.datetime.now(datetime.timezone.utc) - started).total_seconds(), 1),
            "machine": machine(), "versions": versions(args.only != "runtime"), "copy_strategy": copy_strategy(),
            "load_average": {"before": load_before, "after": load()},
            "timing": {"sample_s": settings.sample_s, "samples": settings.samples, "statistic": "median"}}
    evaluated = targets.evaluate(results, settings.name)
    print(f"ms_memcopy bench ({settings.name}): {meta['machine']['cpu']}, {meta['machine']['cores_usable']} cores; "
          f"us = median time per call; 'x name' = our time / that baseline's time (below 1: faster)")
    if meta["copy_strategy"]:
        print(f"host runtime copy strategy: {meta['copy_strategy']}")
    print()
    print(report.text_table(results))
    print("Targets:\n" + report.targets_text(evaluated))
    if errors:
        print(f"{len(errors)} case(s) failed: " + "; ".join(f"{e['group']} {e['label']}: {e['error']}"
                                                         for e in errors))
    meta["errors"] = errors
    report.write_json(out / "results.json", meta, results, evaluated)
    document = report.markdown_document(meta, results, evaluated)
    (out / "results.md").write_text(document)
    written = [out / "results.json", out / "results.md"]
    if args.markdown:
        report.write_markdown(Path(args.markdown), document)
        written.append(Path(args.markdown))
    if args.no_plot:
        pass
    elif plot.available():
        plot.write_png(out / "bandwidth.png", results, f"ms_memcopy bench ({settings.name}), {meta['machine']['cpu']}")
        written.append(out / "bandwidth.png")
    else:
        print("matplotlib is not installed: no bandwidth.png (pip install 'ms_memcopy[bench]')", file=sys.stderr)
    print("\nWrote " + ", ".join(str(p) for p in written))
    return 1 if errors else 0
