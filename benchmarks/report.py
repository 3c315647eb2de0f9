"""The results table (text and Markdown) and the JSON document.

The Markdown document (:func:`markdown_document`) is what docs/performance.md holds between its
``<!-- bench-results:begin -->`` and ``<!-- bench-results:end -->`` markers: ``python -m ms_memcopy bench
--markdown docs/performance.md`` rewrites that part (:func:`write_markdown`) and leaves the rest of the
page as it is.
"""
import json

OURS = "ours"


def fmt_size(n):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def fmt_us(us):
    return f"{us:.2f}" if us < 10 else f"{us:.1f}" if us < 1000 else f"{us:.0f}"


def summarize(case, measured):
    """One JSON record: the case, each implementation's time and bandwidth, ours/baseline ratios."""
    impls = {}
    for name, (role, stats) in measured.items():
        gbps = case.nbytes / (stats["us"] * 1e-6) / 1e9 if stats["us"] > 0 else None
        impls[name] = {"role": role, **stats, "gbps": gbps}
    ratios = {o: {b: impls[o]["us"] / impls[b]["us"] for b in impls if impls[b]["role"] == "baseline"}
              for o in impls if impls[o]["role"] == OURS}
    return {"group": case.group, "label": case.label, "nbytes": case.nbytes, "count": case.count,
            "params": case.params, "impls": impls, "ratios": ratios}


def ratio_samples(result, ours, baseline):
    """Our time over the baseline's in each round of samples (both ran once per round), or None when
    the record has no per-round samples."""
    a = result["impls"][ours].get("us_samples")
    b = result["impls"][baseline].get("us_samples")
    if not a or not b or len(a) != len(b):
        return None
    return [x / y for x, y in zip(a, b)]


def fmt_ratio(result, ours, baseline, spread=False):
    """'0.57x', or with spread '0.57x (0.55-0.60)': the median ratio and its range over the rounds."""
    text = f"{result['ratios'][ours][baseline]:.2f}x"
    samples = ratio_samples(result, ours, baseline) if spread else None
    if samples and len(samples) > 1:
        text += f" ({min(samples):.2f}-{max(samples):.2f})"
    return text


def _rows(results, spread=False):
    """(group, header, rows) per group: one row per case and our implementation; with spread, each
    ratio carries its range over the rounds of samples."""
    groups = {}
    for r in results:
        groups.setdefault(r["group"], []).append(r)
    for group, records in groups.items():
        baselines, refs = [], []
        for r in records:
            for name, v in r["impls"].items():
                target = baselines if v["role"] == "baseline" else refs if v["role"] != OURS else None
                if target is not None and name not in target:
                    target.append(name)
        header = ["case", "size", "ours", "us", "GB/s"] + [f"x {b}" for b in baselines] + [f"{x} us" for x in refs]
        rows = []
        for r in records:
            for name, v in r["impls"].items():
                if v["role"] != OURS:
                    continue
                row = [r["label"], fmt_size(r["nbytes"]), name, fmt_us(v["us"]),
                       f"{v['gbps']:.2f}" if v["gbps"] is not None else "-"]
                row += [fmt_ratio(r, name, b, spread) if b in r["ratios"][name] else "-" for b in baselines]
                row += [fmt_us(r["impls"][x]["us"]) if x in r["impls"] else "-" for x in refs]
                rows.append(row)
        yield group, header, rows


def text_table(results):
    out = []
    for group, header, rows in _rows(results):
        widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
        out.append(f"== {group}")
        out.append("  ".join(h.ljust(w) for h, w in zip(header, widths)))
        out.extend("  ".join(str(c).ljust(w) for c, w in zip(row, widths)) for row in rows)
        out.append("")
    return "\n".join(out)


def markdown_table(results, spread=False):
    out = []
    for group, header, rows in _rows(results, spread):
        out.append(f"**{group}**\n")
        out.append("| " + " | ".join(header) + " |")
        out.append("|" + "---|" * len(header))
        out.extend("| " + " | ".join(str(c) for c in row) + " |" for row in rows)
        out.append("")
    return "\n".join(out)


MARKDOWN_BEGIN = "<!-- bench-results:begin -->"
MARKDOWN_END = "<!-- bench-results:end -->"


def _verdict(target):
    status = target["status"]
    if "rounds" in target:
        return f"**{status}** ({target['rounds_met']}/{target['rounds']})"
    return f"**{status}**" if status in ("met", "missed", "unsure") else status


def markdown_document(meta, results, targets):
    """One run as Markdown: how and where it ran, the goals with their verdicts, every group's table
    with each ratio's spread over the rounds of samples."""
    m, v, load = meta["machine"], meta["versions"], meta["load_average"]
    samples = sorted({impl["samples"] for r in results for impl in r["impls"].values()})
    lines = [
        "Generated by `python -m ms_memcopy bench --markdown FILE` from one run; do not edit by hand "
        "between the markers.",
        "",
        f"- command: `{meta['command']}`",
        f"- date: {meta['started']} ({meta['seconds']} s)",
        f"- machine: {m['cpu']}, {m['cores_usable']} usable cores, {m.get('memory_gib', '?')} GiB, {m['os']}",
        f"- load average (1, 5, 15 min): {load['before']} before, {load['after']} after the run. The machine "
        "is shared with other jobs (other sessions' builds and tests), so absolute times move with their "
        "load; ratios within one run, whose implementations are sampled in turns, move much less",
        "- software: " + ", ".join(f"{k} {val}" for k, val in v.items() if val != ""),
        *([f"- host runtime copy strategy (chosen at the first large copy): {meta['copy_strategy']}"]
          if meta.get("copy_strategy") else []),
        f"- timing: each implementation of a case is calibrated to samples of at least "
        f"{meta['timing']['sample_s']} s, then sampled {', '.join(map(str, samples))} times in rounds (one sample "
        "of every implementation per round; in the cases of close calls, each sample in slices taken in turns); "
        "`us` is the median time per call; `x name` is our time / that baseline's time (below 1: faster), the "
        "median over the rounds with its range in brackets",
        "",
        "**Goals** (verdict: met when the goal holds in every round of samples, missed when in none, unsure "
        "otherwise; in brackets the rounds it held in; the numbers are medians)",
        "",
        "| goal | verdict | numbers |",
        "|---|---|---|",
    ]
    for t in targets:
        if t["status"] == "not measured":
            continue
        detail = t["detail"].replace("|", "/")
        lines.append(f"| {t['goal']} | {_verdict(t)} | {detail} |")
    skipped = [t["target"] for t in targets if t["status"] == "not measured"]
    if skipped:
        lines += ["", f"Not measured in this run: {', '.join(skipped)}."]
    if meta.get("errors"):
        lines += ["", "Failed cases: " + "; ".join(f"{e['group']} {e['label']}: {e['error']}" for e in meta["errors"])]
    lines += ["", markdown_table(results, spread=True)]
    return "\n".join(lines).rstrip() + "\n"


def write_markdown(path, document):
    """Writes document into path between its bench-results markers, each a line of its own (the rest of
    the file unchanged; the markers quoted inside a line do not count), or as the whole file, with the
    markers, when it does not exist or has no marker lines."""
    try:
        lines = path.read_text().splitlines(keepends=True)
    except FileNotFoundError:
        lines = []
    marks = [i for i, line in enumerate(lines) if line.strip() in (MARKDOWN_BEGIN, MARKDOWN_END)]
    begin = next((i for i in marks if lines[i].strip() == MARKDOWN_BEGIN), None)
    end = next((i for i in marks if lines[i].strip() == MARKDOWN_END and begin is not None and i > begin), None)
    block = f"{MARKDOWN_BEGIN}\n{document}{MARKDOWN_END}\n"
    if begin is None or end is None:
        path.write_text(block)
    else:
        path.write_text("".join(lines[:begin]) + block + "".join(lines[end + 1:]))


def targets_text(targets):
    """One entry per goal this run measured, and one line naming the goals it did not measure (a run
    limited with --only or --quick leaves out the cases they need)."""
    measured = [t for t in targets if t["status"] != "not measured"]
    lines = [f"- {t['target']}: {t['status'].upper()}"
             + (f" in {t['rounds_met']} of {t['rounds']} repetitions" if "rounds" in t else "")
             + f": {t['detail']}\n  (goal: {t['goal']})" for t in measured]
    skipped = [t["target"] for t in targets if t["status"] == "not measured"]
    if skipped:
        lines.append(f"- not measured in this run: {', '.join(skipped)}")
    return "\n".join(lines)


def write_json(path, meta, results, targets):
    with open(path, "w") as f:
        json.dump({"meta": meta, "results": results, "targets": targets}, f, indent=1)
