"""Bandwidth against size, one panel per group (needs matplotlib: `pip install ms_memcopy[bench]`)."""


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
        series = {}
        for r in (r for r in results if r["group"] == group):
            for name, v in r["impls"].items():
                if v["gbps"] is None or v["role"] == "reference":
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
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
