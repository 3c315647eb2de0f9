"""The Ascend route (ms_memcopy.ascend_route, ops_impl/kernels/ms_extension/).

Fast: the generated op_def YAML covers every op of configs/ops.yaml with matching inputs,
attributes and outputs, MindSpore's op_def generator accepts it, and the C++ entry layer defines a
function and an infer function for each op.

Slow: builds the entry layer with CustomOpBuilder(backend="CPU") into a temporary directory and runs
every route function in PYNATIVE_MODE against numpy references. MindSpore 2.10 runs CustomOpBuilder
ops correctly on CPU only with ms.runtime.launch_blocking() on, which cannot be turned off again, so
these checks run in a child interpreter (one build, all checks), and each test below reads one
check's result.
"""
import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from ms_memcopy import ascend_route
from ms_memcopy.op_defs import all_op_defs

ROOT = Path(__file__).resolve().parent.parent
EXTENSION_DIR = ROOT / "ops_impl" / "kernels" / "ms_extension"


# ---- fast: the op_def YAML --------------------------------------------------------------------

def test_op_def_covers_every_op():
    entries = ascend_route.op_def_entries()
    ops = all_op_defs()
    assert sorted(entries) == sorted(op.ascend_function for op in ops.values())
    for op in ops.values():
        entry = entries[op.ascend_function]
        args = list(entry["args"].items())
        n_in, n_attr = len(op.inputs), len(op.attrs)
        assert [name for name, _ in args[:n_in]] == [t.name for t in op.inputs], op.name
        for (name, spec), t in zip(args[:n_in], op.inputs):
            assert spec == {"dtype": "tuple[tensor]" if t.variadic else "tensor"}, (op.name, name)
        assert [name for name, _ in args[n_in:n_in + n_attr]] == list(op.attr_names), op.name
        for (name, spec), a in zip(args[n_in:n_in + n_attr], op.attrs):
            assert spec == {"dtype": {"int": "int", "listInt": "tuple[int]", "str": "str"}[a.type]}, (op.name, name)
        extra = [name for name, _ in args[n_in + n_attr:]]
        assert extra == [name for name, _ in ascend_route.output_spec_args(op)], op.name
        assert list(entry["returns"]) == [t.name for t in op.outputs], op.name
        for t in op.outputs:
            assert entry["returns"][t.name] == {"dtype": "tuple[tensor]" if t.variadic else "tensor"}
        assert ascend_route.function_args(op.name) == [name for name, _ in args]


def test_output_spec_args_only_where_no_input_describes_the_output():
    described = {op.name for op in all_op_defs().values() if ascend_route.output_spec_args(op)}
    assert described == {"memcpy_batch_h2d", "memcpy2d_h2d", "memcpy_cond_h2d"}
    assert [n for n, _ in ascend_route.output_spec_args(all_op_defs()["memcpy_batch_h2d"])] == \
        ["shapes", "ranks", "dtypes"]
    assert [n for n, _ in ascend_route.output_spec_args(all_op_defs()["memcpy2d_h2d"])] == ["shape", "dtype"]


def test_routes_name_every_op_once():
    assert sorted(ascend_route.ROUTES.values()) == sorted(all_op_defs())
    assert ascend_route.functions()[("MemcpyBatch", "d2h")] == "memcpy_batch_d2h"


def test_op_def_yaml_round_trips_and_is_written_once(tmp_path):
    text = ascend_route.op_def_yaml()
    assert yaml.safe_load(text) == ascend_route.op_def_entries()
    path = ascend_route.write_op_def(tmp_path / "d")
    mtime = path.stat().st_mtime_ns
    time.sleep(0.01)
    assert ascend_route.write_op_def(tmp_path / "d") == path and path.stat().st_mtime_ns == mtime


def test_mindspore_generator_accepts_the_op_def(tmp_path):
    """MindSpore's own op_def generator (what CustomOpBuilder runs) parses the YAML and emits the
    registrations the entry layer's infer functions must match."""
    import mindspore

    generator = Path(mindspore.__file__).parent / "ops_generate" / "gen_custom_ops.py"
    ascend_route.write_op_def(tmp_path / "yaml")
    out = tmp_path / "out"
    out.mkdir()
    subprocess.run([sys.executable, str(generator), "-i", str(tmp_path / "yaml"), "-o", str(out), "-m", "route",
                    "-d", ""], check=True, capture_output=True, text=True, cwd=generator.parent)
    registered = set(re.findall(r"extern OpFuncImpl &gCustom_(\w+)FuncImpl;", (out / "gen_custom_ops_def.cc").read_text()))
    assert registered == set(ascend_route.op_def_entries())


def test_entry_layer_defines_every_function_and_infer():
    pynative = (EXTENSION_DIR / "route_pynative.cpp").read_text()
    graph = (EXTENSION_DIR / "route_graph.cpp").read_text()
    for name in ascend_route.op_def_entries():
        assert re.search(rf'"{name}"', pynative), name
        assert f"OpFuncImpl &gCustom_{name}FuncImpl =" in graph, name


def test_build_dir_defaults_outside_the_tree(monkeypatch, tmp_path):
    monkeypatch.delenv("MS_MEMCOPY_ROUTE_BUILD_DIR", raising=False)
    monkeypatch.delenv("MS_COMPILER_CACHE_PATH", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert str(ascend_route.default_build_dir("CPU")).startswith(str(tmp_path / "xdg" / "ms_memcopy" / "route"))
    monkeypatch.setenv("MS_COMPILER_CACHE_PATH", str(tmp_path / "msc"))
    assert ascend_route.default_build_dir("Ascend").parent == tmp_path / "msc" / "ms_memcopy_route"
    monkeypatch.setenv("MS_MEMCOPY_ROUTE_BUILD_DIR", str(tmp_path / "own"))
    assert ascend_route.default_build_dir("CPU").parent == tmp_path / "own"
    with pytest.raises(ValueError, match="backend"):
        ascend_route.default_build_dir("GPU")


def test_call_checks_its_arguments():
    with pytest.raises(ValueError, match="attributes"):
        ascend_route.call("memcpy2d_extract", (None, None, None), {"height": 1})
    with pytest.raises(ValueError, match="inputs"):
        ascend_route.call("memcpy_desc_copy", (), {})
    with pytest.raises(ValueError, match="out_shapes"):
        ascend_route.call("memcpy2d_h2d", (None,), {"buffer_id": 1, "pitch": 8})


# ---- slow: every function, built with CustomOpBuilder(backend="CPU") --------------------------

CHECKS_SCRIPT = textwrap.dedent(r'''
    import json, sys, time, traceback
    import numpy as np
    import mindspore as ms

    ms.set_device("CPU")
    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.runtime.launch_blocking()
    from ms_memcopy import ascend_route
    from ms_memcopy.host_buffer import HostBuffer

    results = {}
    start = time.time()
    route = ascend_route.load("CPU", build_dir=sys.argv[1])
    results["_build_seconds"] = time.time() - start
    T = ms.Tensor

    def i64(*v):
        return T(np.array(v, dtype=np.int64))

    def check(fn):
        try:
            fn()
            results[fn.__name__] = "ok"
        except Exception:
            results[fn.__name__] = traceback.format_exc()
        return fn

    rng = np.random.default_rng(7)
    arrays = [rng.standard_normal((3, 5)).astype(np.float32), np.arange(7, dtype=np.int8),
              rng.standard_normal((2, 3)).astype(np.float16), np.array([True, False, True, True]),
              np.arange(6, dtype=np.int64).reshape(2, 3) - 3, np.zeros((0, 4), np.float64)]
    offsets = [0, 64, 80, 96, 104, 160]

    @check
    def batch_d2h():
        with HostBuffer(256, pinned=True) as buf:
            buf.numpy()[:] = 0xAB
            nbytes = route.memcpy_batch_d2h(tuple(T(a) for a in arrays), i64(*offsets), buf.buffer_id)
            assert nbytes.dtype == ms.int64
            assert nbytes.asnumpy().tolist() == [a.nbytes for a in arrays]
            for a, off in zip(arrays, offsets):
                got = buf.numpy(a.dtype, a.shape, off)
                assert np.array_equal(got, a), (a.dtype, got, a)
            assert (buf.numpy()[60:64] == 0xAB).all()  # untouched between items

    @check
    def batch_h2d():
        with HostBuffer(256, pinned=True) as buf:
            for a, off in zip(arrays, offsets):
                buf.numpy(a.dtype, a.shape, off)[...] = a
            outs = ascend_route.call("memcpy_batch_h2d", (i64(*offsets),), {"buffer_id": buf},
                                     out_shapes=[a.shape for a in arrays],
                                     out_dtypes=[ms.float32, ms.int8, ms.float16, ms.bool_, ms.int64, ms.float64])
            assert isinstance(outs, tuple) and len(outs) == len(arrays)
            for a, t in zip(arrays, outs):
                assert t.shape == a.shape and np.array_equal(t.asnumpy(), a), (a, t)

    x57 = rng.standard_normal((5, 7)).astype(np.float32)
    x235 = np.arange(30, dtype=np.int16).reshape(2, 3, 5)

    @check
    def extract():
        y = route.memcpy2d_extract(T(x57), i64(1), i64(2), 3, 4)
        assert y.shape == (3, 4) and np.array_equal(y.asnumpy(), x57[1:4, 2:6])
        y = ascend_route.call("memcpy2d_extract", (T(x235), i64(2), i64(0)), {"height": 4, "width": 5})
        assert np.array_equal(y.asnumpy(), x235.reshape(6, 5)[2:6])

    @check
    def extract_like():
        like = np.zeros((2, 3), np.float32)
        y = route.memcpy2d_extract_like(T(x57), T(like), i64(3), i64(4))
        assert y.shape == (2, 3) and np.array_equal(y.asnumpy(), x57[3:5, 4:7])

    @check
    def insert():
        src = np.full((2, 3), -1.5, np.float32)
        y = route.memcpy2d_insert(T(x57), T(src), i64(2), i64(1))
        expect = x57.copy()
        expect[2:4, 1:4] = src
        assert np.array_equal(y.asnumpy(), expect)

    @check
    def d2h_2d():
        x = np.arange(12, dtype=np.float32).reshape(3, 4)
        with HostBuffer(128, pinned=True) as buf:
            buf.numpy()[:] = 0
            n = route.memcpy2d_d2h(T(x), i64(16), buf.buffer_id, 32)
            assert n.asnumpy().tolist() == [48]
            for r in range(3):
                assert np.array_equal(buf.numpy(np.float32, 4, 16 + 32 * r), x[r])
            assert (buf.numpy()[32:48] == 0).all()  # the gap after a row is left alone

    @check
    def h2d_2d():
        x = np.arange(6, dtype=np.int32).reshape(2, 3) * 7
        with HostBuffer(128, pinned=False) as buf:
            for r in range(2):
                buf.numpy(np.int32, 3, 8 + 40 * r)[...] = x[r]
            y = ascend_route.call("memcpy2d_h2d", (i64(8),), {"buffer_id": buf, "pitch": 40},
                                  out_shapes=[(2, 3)], out_dtypes=[ms.int32])
            assert y.dtype == ms.int32 and np.array_equal(y.asnumpy(), x)

    @check
    def desc_copy():
        for a in (x57, x235, np.zeros((0,), np.float32)):
            y = route.memcpy_desc_copy(T(a))
            assert y.shape == a.shape and np.array_equal(y.asnumpy(), a)

    @check
    def desc_window():
        y = route.memcpy_desc_window(T(x235), i64(7), 11)
        assert y.shape == (11,) and np.array_equal(y.asnumpy(), x235.reshape(-1)[7:18])

    @check
    def cond_d2d():
        y = route.memcpy_cond_d2d(T(x57))
        assert np.array_equal(y.asnumpy(), x57)

    @check
    def cond_d2h():
        for pinned in (True, False):
            with HostBuffer(200, pinned=pinned) as buf:
                n = route.memcpy_cond_d2h(T(x57), i64(24), buf.buffer_id)
                assert n.asnumpy().tolist() == [x57.nbytes]
                assert np.array_equal(buf.numpy(np.float32, (5, 7), 24), x57)

    @check
    def cond_h2d():
        with HostBuffer(64, pinned=True) as buf:
            buf.numpy(np.float16, (2, 4), 16)[...] = np.arange(8).reshape(2, 4)
            y = ascend_route.call("memcpy_cond_h2d", (i64(16),), {"buffer_id": buf},
                                  out_shapes=[(2, 4)], out_dtypes=[ms.float16])
            assert np.array_equal(y.asnumpy(), np.arange(8, dtype=np.float16).reshape(2, 4))

    @check
    def bad_offsets():
        with HostBuffer(64, pinned=True) as buf:
            buf.numpy()[:] = 7
            try:
                route.memcpy_batch_d2h((T(arrays[0]), T(arrays[1])), i64(0, 60), buf.buffer_id)
            except ValueError as e:
                text = str(e)
            else:
                raise AssertionError("no error for an offset past the end of the HostBuffer")
            assert text.startswith("ms_memcopy MemcpyBatch(d2h): ValueError: offsets[1]"), text
            assert "past the end of the HostBuffer (64 bytes)" in text and "nothing was copied" in text, text
            assert (buf.numpy() == 7).all()  # nothing was written
        # The route keeps working after the error.
        assert np.array_equal(route.memcpy_cond_d2d(T(x57)).asnumpy(), x57)

    @check
    def bad_region():
        try:
            route.memcpy2d_extract(T(x57), i64(4), i64(0), 3, 2)
        except ValueError as e:
            assert str(e).startswith("ms_memcopy Memcpy2D(extract): ValueError: row"), str(e)
        else:
            raise AssertionError("no error for a region leaving the rows of x")

    @check
    def bad_output_dtype():
        try:
            route.memcpy2d_h2d(i64(0), 1, 8, (2,), ascend_route.type_id(ms.complex64))
        except ValueError as e:
            assert str(e).startswith("ms_memcopy Memcpy2D(h2d): ValueError: dtype: complex64"), str(e)
        else:
            raise AssertionError("no error for an unsupported output dtype")

    @check
    def primitive_dispatch():
        # The primitives' Ascend wiring (ms_memcopy/ops/_base.py), with the device target faked:
        # eager calls go through the route (here its CPU build), graph compilation is refused.
        from ms_memcopy import ops as mops

        real = ascend_route.on_ascend
        ascend_route.on_ascend = lambda: True
        try:
            extract = mops.Memcpy2D("extract", height=3, width=4)
            assert np.array_equal(extract(T(x57), i64(1), i64(2)).asnumpy(), x57[1:4, 2:6])
            with HostBuffer(256, pinned=True) as buf:
                for a, off in zip(arrays[:3], offsets[:3]):
                    buf.numpy(a.dtype, a.shape, off)[...] = a
                h2d = mops.MemcpyBatch("h2d", buf, shapes=[a.shape for a in arrays[:3]],
                                       dtypes=[ms.float32, ms.int8, ms.float16])
                outs = h2d(i64(*offsets[:3]))
                for a, t in zip(arrays[:3], outs):
                    assert np.array_equal(t.asnumpy(), a)
                d2h = mops.MemcpyBatch("d2h", buf, num_tensors=2)
                n = d2h(T(arrays[4]), T(arrays[0]), i64(200, 128))
                assert n.asnumpy().tolist() == [arrays[4].nbytes, arrays[0].nbytes]
                assert np.array_equal(buf.numpy(np.int64, (2, 3), 200), arrays[4])
            cond = mops.MemcpyWithCondition("d2d")
            assert np.array_equal(cond(T(x235)).asnumpy(), x235)

            @ms.jit
            def compiled(a, r, c):
                return extract(a, r, c)

            try:
                compiled(T(x57), i64(1), i64(2))
            except Exception as e:
                assert "Ascend route" in str(e) and "memcpy2d_extract" in str(e), str(e)
            else:
                raise AssertionError("a primitive compiled into a graph on Ascend should be refused")
        finally:
            ascend_route.on_ascend = real

    print("ROUTE-RESULTS " + json.dumps(results))
''')

SLOW_CHECKS = ["batch_d2h", "batch_h2d", "extract", "extract_like", "insert", "d2h_2d", "h2d_2d", "desc_copy",
               "desc_window", "cond_d2d", "cond_d2h", "cond_h2d", "bad_offsets", "bad_region", "bad_output_dtype", "primitive_dispatch"]


@pytest.fixture(scope="module")
def route_results(tmp_path_factory):
    if not ascend_route._paths.KERNELS_LIBRARY.exists():
        pytest.skip("the kernels library is not built")
    if ascend_route.find_ninja() is None:
        pytest.skip("CustomOpBuilder needs ninja (pip install ninja; it is in the test extra)")
    work = tmp_path_factory.mktemp("ascend_route")
    script = work / "checks.py"
    script.write_text(CHECKS_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in ("MS_MEMCOPY_SOC", "MS_MEMCOPY_DEVICE_COUNT")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    start = time.time()
    proc = subprocess.run([sys.executable, str(script), str(work / "build")], capture_output=True, text=True,
                          env=env, timeout=900, cwd=work)
    elapsed = time.time() - start
    line = next((l for l in proc.stdout.splitlines() if l.startswith("ROUTE-RESULTS ")), None)
    if line is None:
        build_log = work / "build" / ".build_log.txt"
        log = build_log.read_text()[-4000:] if build_log.exists() else ""
        pytest.fail(f"route checks did not finish (exit {proc.returncode}):\n{proc.stdout[-4000:]}\n"
                    f"{proc.stderr[-4000:]}\n{log}")
    results = json.loads(line[len("ROUTE-RESULTS "):])
    sys.stderr.write(f"\nascend route: build {results['_build_seconds']:.0f} s, checks in total {elapsed:.0f} s\n")
    return results


@pytest.mark.slow
@pytest.mark.parametrize("name", SLOW_CHECKS)
def test_route_function_on_cpu(route_results, name):
    assert route_results.get(name) == "ok", route_results.get(name, "not run")
