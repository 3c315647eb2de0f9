"""`python -m ms_memcopy bench --smoke` runs every case once and writes valid results (no speed is
asserted: speed is measured by the bench, never by tests)."""
import json
import subprocess
import sys


def test_bench_smoke_writes_results(tmp_path):
    out = tmp_path / "bench"
    result = subprocess.run([sys.executable, "-m", "ms_memcopy", "bench", "--smoke", "--no-plot", "--quiet",
                             "--out", str(out)], capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Targets:" in result.stdout
    doc = json.loads((out / "results.json").read_text())
    assert doc["meta"]["mode"] == "smoke" and doc["meta"]["machine"]["cores_usable"] >= 1
    groups = {r["group"] for r in doc["results"]}
    assert {"runtime.memcpy", "runtime.batch", "runtime.memcpy2d", "ops.overhead", "ops.MemcpyBatch",
            "ops.Memcpy2D", "ops.write", "ops.SwapBlocks", "ops.CopyBlocks"} <= groups
    swaps = {r["params"]["direction"] for r in doc["results"] if r["group"] == "ops.SwapBlocks"}
    assert swaps == {"d2h", "h2d"}
    assert len({r["params"]["cache_bytes"] for r in doc["results"] if r["group"] == "ops.write"}) == 2
    for record in doc["results"]:
        roles = {v["role"] for v in record["impls"].values()}
        assert "ours" in roles and "baseline" in roles, record["label"]
        for impl in record["impls"].values():
            assert impl["us"] > 0 and impl["samples"] >= 1
        for ours, ratios in record["ratios"].items():
            assert ratios and all(r > 0 for r in ratios.values()), (record["label"], ours)
    assert {t["target"] for t in doc["targets"]} >= {"batch 4096 x 4 KiB", "per-call overhead", "in-place row write",
                                                     "SwapBlocks d2h", "SwapBlocks h2d", "CopyBlocks"}
    assert all(t["status"].startswith("not evaluated") for t in doc["targets"])  # too small to judge
    assert "MISSED" not in result.stdout and "MET" not in result.stdout
    assert (out / "results.md").read_text().count("|") > 10
