"""Bandwidth against size, one panel per group (needs matplotlib: `pip install ms_memcopy[bench]`).

A group measured at one size only (the per-call overhead) is drawn as bars of microseconds per call.
Batch panels show the 64 B and 4 KiB item series only, to stay readable (the table has them all).
"""

_BATCH_ITEMS = (64, 4096)


def available():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _series_key(record):
    p = record["params"]
    if "item_size" in p:
        return f"{p['item_size']} B items"
    if "width" in p:
        return f"{p['width']} B rows"
    return ""


def _bars(ax, group, records):
    """Microseconds per call of every implementation, for a group measured at one size."""
    r = records[0]
    names = list(r["impls"])
    values = [r["impls"][n]["us"] for n in names]
    colors = ["tab:blue" if r["impls"][n]["role"] == "ours" else "tab:gray" for n in names]
    ax.barh(range(len(names)), values, color=colors)
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("us per call (blue: ours)")
    ax.set_title(f"{group}: {r['label']}")
    ax.grid(True, axis="x", alpha=0.3)


def write_png(path, results, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = []
    for r in results:
        if r["group"] not in groups:
            groups.append(r["group"])
    cols = 2
    rows = (len(groups) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(7 * cols, 4.2 * rows), squeeze=False)
    for ax, group in zip(axes.flat, groups):
        records = [r for r in results if r["group"] == group]
        if len({r["nbytes"] for r in records}) == 1:
            _bars(ax, group, records)
            continue
        series = {}
        for r in records:
            if "item_size" in r["params"] and r["params"]["item_size"] not in _BATCH_ITEMS:
                continue
            for name, v in r["impls"].items():
                if v["gbps"] is None or v["role"] == "reference" or "(Python)" in name:
                    continue
                key = (name, _series_key(r), v["role"])
                series.setdefault(key, []).append((r["nbytes"], v["gbps"]))
        for (name, sub, role), points in sorted(series.items()):
            points.sort()
            label = f"{name} ({sub})" if sub else name
            ax.plot([p[0] for p in points], [p[1] for p in points], "-o" if role == "ours" else "--.",
                    label=label, linewidth=2 if role == "ours" else 1, markersize=3)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(group)
        ax.set_xlabel("bytes per call")
        ax.set_ylabel("GB/s")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6, loc="best")
    for ax in list(axes.flat)[len(groups):]:
        ax.axis("off")
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0, 1, 0.98))
    fig.savefig(path, dpi=110)
    plt.close(fig)
