"""The results table (text and Markdown) and the JSON document."""
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


def _rows(results):
    """(group, header, rows) per group: one row per case and our implementation."""
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
                row += [f"{r['ratios'][name][b]:.2f}x" if b in r["ratios"][name] else "-" for b in baselines]
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


def markdown_header(meta):
    m, v = meta["machine"], meta["versions"]
    lines = [f"- command: `{meta['command']}` ({meta['seconds']} s, {meta['started']})",
             f"- machine: {m['cpu']}, {m['cores_usable']} usable cores, {m.get('memory_gib', '?')} GiB, {m['os']}",
             "- software: " + ", ".join(f"{k} {val}" for k, val in v.items() if val != ""),
             f"- load average (1, 5, 15 min) before: {meta['load_average']['before']}, "
             f"after: {meta['load_average']['after']}",
             f"- timing: median of {meta['timing']['samples']} samples of at least {meta['timing']['sample_s']} s per "
             "implementation, interleaved; 'x name' = our time / that baseline's time (below 1: faster)"]
    return "\n".join(lines) + "\n"


def markdown_table(results):
    out = []
    for group, header, rows in _rows(results):
        out.append(f"**{group}**\n")
        out.append("| " + " | ".join(header) + " |")
        out.append("|" + "---|" * len(header))
        out.extend("| " + " | ".join(str(c) for c in row) + " |" for row in rows)
        out.append("")
    return "\n".join(out)


def targets_text(targets):
    """One entry per goal this run measured, and one line naming the goals it did not measure (a run
    limited with --only or --quick leaves out the cases they need)."""
    measured = [t for t in targets if t["status"] != "not measured"]
    lines = [f"- {t['target']}: {t['status'].upper()}: {t['detail']}\n  (goal: {t['goal']})" for t in measured]
    skipped = [t["target"] for t in targets if t["status"] == "not measured"]
    if skipped:
        lines.append(f"- not measured in this run: {', '.join(skipped)}")
    return "\n".join(lines)


def write_json(path, meta, results, targets):
    with open(path, "w") as f:
        json.dump({"meta": meta, "results": results, "targets": targets}, f, indent=1)
