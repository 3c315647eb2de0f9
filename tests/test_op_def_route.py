"""The op_def route (ms_memcopy.op_def_route, ms_memcopy.route_codegen, ops_impl/kernels/ms_extension/).

The primitives' results on this route are tested by the primitive tests; this file tests what is
particular to the module: the definitions it is generated from and their validation, the generated
op_def and C++ table, MindSpore's generator accepting them, PYNATIVE ordering against built-in ops,
the eager KernelInstance, the Ascend compile check and the refusal of jit_level O2.
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from ms_memcopy import op_def_route, op_defs, route_build, route_codegen

import _background

ROOT = Path(__file__).resolve().parent.parent
NEW_FAMILY = "configs/ops/rows.yaml"


def table_with(**extra_ops):
    """The tables of configs/ops/*.yaml with a new family's file holding extra_ops."""
    return {**op_defs.read_tables(), NEW_FAMILY: extra_ops}


IN_PLACE_OP = {  # an op that writes an input in place, as a definition would declare it
    "inputs": [{"name": "dst", "dtype": "any"}, {"name": "src", "dtype": "any"},
               {"name": "row", "dtype": "int64"}],
    "outputs": [{"name": "nbytes", "dtype": "int64", "shape": [1]}],
    "labels": {"side_effect_mem": True}, "args_signature": {"rw_write": "dst"},
}


# ---- definitions ------------------------------------------------------------------------------

@pytest.mark.parametrize("change, message", [
    (lambda op: op.update(side_effects=True), r"unknown key\(s\) \['side_effects'\]"),
    (lambda op: op["outputs"][0].pop("shape"), r"outputs\[0\]: missing key\(s\) \['shape'\]"),
    (lambda op: op["outputs"][0].update(shape="like(nothing)"), "shape 'like\\(nothing\\)' must be"),
    (lambda op: op["outputs"][0].update(shape=["width"]), "dimension 'width' must be"),
    (lambda op: op["inputs"][0].update(dtype="int4"), "dtype 'int4' is neither"),
    (lambda op: op["inputs"][0].update(pinned=True), r"inputs\[0\]: unknown key\(s\) \['pinned'\]"),
    (lambda op: op["args_signature"].update(rw_write="nothing"),
     r"args_signature.rw_write: 'nothing' must name an input"),
    (lambda op: op["args_signature"].update(rw_ref="dst"), r"args_signature: unknown key\(s\) \['rw_ref'\]"),
    (lambda op: op["labels"].update(side_effect_mem=False), r"must also set labels: \{side_effect_mem: True\}"),
    (lambda op: op["labels"].update(side_effect_mem="yes"), "labels.side_effect_mem: must be true or false"),
    (lambda op: op["labels"].update(side_effect_io=True), r"labels: unknown key\(s\) \['side_effect_io'\]"),
    (lambda op: op.update(ascend_function="write_rows"), r"unknown key\(s\) \['ascend_function'\]"),
    (lambda op: op["args_signature"].update(dtype_group="(dst, row)"),
     r"args_signature.dtype_group: '\(dst, row\)' must be one group"),
    (lambda op: op["args_signature"].update(dtype_group="(dst)"), "two or more, or one variadic input"),
    (lambda op: op["args_signature"].update(dtype_group="dst, src"), "dtype_group: 'dst, src' must be one group"),
    (lambda op: op["args_signature"].update(dtype_group="(dst, src), (dst, src)"), "must be one group"),
])
def test_a_bad_definition_is_an_error(change, message):
    op = yaml.safe_load(yaml.safe_dump(IN_PLACE_OP))
    change(op)
    with pytest.raises(op_defs.OpDefinitionError, match=message) as error:
        op_defs.parse(table_with(write_rows=op))
    assert str(error.value).startswith(f"{NEW_FAMILY}: op write_rows: "), error.value  # names the file


def test_an_op_defined_twice_or_an_empty_file_is_an_error():
    with pytest.raises(op_defs.OpDefinitionError,
                       match=r"configs/ops/rows.yaml: op copy_blocks is defined in configs/ops/blocks.yaml too"):
        op_defs.parse(table_with(copy_blocks=IN_PLACE_OP))
    with pytest.raises(op_defs.OpDefinitionError, match=r"configs/ops/rows.yaml must map op names"):
        op_defs.parse({**op_defs.read_tables(), NEW_FAMILY: None})


def test_the_definitions_are_one_file_per_family():
    """configs/ops/<family>.yaml, ops_impl/kernels/bodies/<family>.cpp, ms_memcopy/ops/<family>.py and
    tests/test_ops_<family>.py share their stems; nothing lists the families."""
    families = op_defs.families()
    assert sorted(families) == sorted(p.stem for p in (ROOT / "configs" / "ops").glob("*.yaml"))
    assert {"batch", "memcpy2d", "desc", "condition", "blocks"} <= set(families)
    assert families["desc"] == ["memcpy_desc_copy", "memcpy_desc_window"]  # in file order
    for family in families:
        assert (ROOT / "ms_memcopy" / "ops" / f"{family}.py").exists(), family
        assert (ROOT / "tests" / f"test_ops_{family}.py").exists(), family
    assert not (ROOT / "configs" / "ops.yaml").exists()
    _, ops = op_defs.parse(table_with(write_rows=IN_PLACE_OP))
    assert ops["write_rows"].family == "rows"


def test_the_dtype_table_is_one_file():
    """configs/dtypes.yaml: the supported dtypes of the definitions, the TypeIds of the generated tables
    and the kernels' sizes and names (dtypes.inc), all from one file."""
    import mindspore as ms

    from ms_memcopy import dtypes

    assert op_defs.supported_dtypes() == dtypes.supported() == (
        "float16", "bfloat16", "float32", "float64", "int8", "uint8", "int16", "int32", "int64", "bool")
    for d in dtypes.table():
        ms_type = getattr(ms, "bool_" if d.name == "bool" else d.name)
        assert str(ms_type) == d.type_id, d  # MindSpore's name of mindspore::kNumberType<type_id>
        assert d.itemsize == (2 if d.name == "bfloat16" else np.dtype(d.name if d.name != "bool" else "bool").itemsize)
    inc = dtypes.table_source()
    assert "X(bfloat16, BFloat16, 2, true)" in inc and "X(complex128, Complex128, 16, false)" in inc
    assert "mindspore::kNumberTypeBFloat16" in route_codegen.route_table()
    # no other hand-written dtype table in the sources
    for path in [*(ROOT / "ops_impl" / "kernels").rglob("*.cpp"), *(ROOT / "ms_memcopy").rglob("*.py")]:
        text = path.read_text()
        assert text.count('"complex128"') == 0 and text.count("\"BFloat16\"") == 0, path


def test_the_definitions_parse_and_int64_inputs_are_host_values():
    ops = op_defs.all_op_defs()
    assert ops["memcpy2d_extract"].outputs[0].shape == ("height", "width")
    assert ops["memcpy2d_insert"].outputs[0].shape == "like" and ops["memcpy2d_insert"].outputs[0].like == "dst"
    assert ops["memcpy_batch_d2h"].outputs[0].shape == (("len", "tensors"),)
    host = {op.name: [t.name for t in op.inputs if t.host_values] for op in ops.values()}
    assert host["memcpy_batch_d2h"] == ["offsets"] and host["memcpy2d_insert"] == ["row", "col"]
    assert host["memcpy_desc_copy"] == []


# ---- generated op_def and table ----------------------------------------------------------------

def test_op_def_of_every_op():
    entries = route_codegen.op_def_entries()
    ops = op_defs.all_op_defs()
    # every primitive is Custom_ms_memcopy_<op>: a name no other extension's op takes
    assert sorted(entries) == sorted(f"ms_memcopy_{op.name}" for op in ops.values())
    for op in ops.values():
        entry = entries[route_codegen.op_def_name(op)]
        assert list(entry["args"]) == route_codegen.arg_names(op)
        for name, spec in entry["args"].items():
            assert spec.get("prim_init", False) == (name not in op.input_names), (op.name, name)
        assert ("labels" in entry) == op.side_effect_mem, op.name
        if op.side_effect_mem:
            assert entry["labels"] == {"side_effect_mem": True}
        assert entry.get("args_signature") == ({"rw_write": op.rw_write} if op.rw_write else None), op.name
        assert list(entry["returns"]) == [t.name for t in op.outputs]


def test_in_place_op_declares_rw_write_and_side_effect():
    _, ops = op_defs.parse(table_with(write_rows=IN_PLACE_OP))
    entry = route_codegen.op_def_entry(ops["write_rows"])
    assert entry["args_signature"] == {"rw_write": "dst"}
    assert entry["labels"] == {"side_effect_mem": True}
    assert 'ArgKind::kHostValues' in route_codegen.route_table({"write_rows": ops["write_rows"]})


def test_mindspore_generator_accepts_the_op_def(tmp_path):
    """MindSpore's own op_def generator (what CustomOpBuilder runs) registers every op, with the
    in-place argument as RW_WRITE."""
    import mindspore

    _, ops = op_defs.parse(table_with(write_rows=IN_PLACE_OP))
    generator = Path(mindspore.__file__).parent / "ops_generate" / "gen_custom_ops.py"
    (tmp_path / "yaml").mkdir()
    (tmp_path / "yaml" / route_codegen.OP_DEF_FILE).write_text(route_codegen.op_def_yaml(ops))
    out = tmp_path / "out"
    out.mkdir()
    subprocess.run([sys.executable, str(generator), "-i", str(tmp_path / "yaml"), "-o", str(out), "-m", "route",
                    "-d", ""], check=True, capture_output=True, text=True, cwd=generator.parent)
    source = (out / "gen_custom_ops_def.cc").read_text()
    registered = set(re.findall(r"extern OpFuncImpl &gCustom_(\w+)FuncImpl;", source))
    assert registered == set(route_codegen.op_def_entries(ops))
    assert re.search(r'Signature\("dst", SignatureEnumRW::kRWWrite', source)
    init_args = re.findall(r'"height", /\*.arg_dtype_=\*/DT_INT, /\*.as_init_arg_=\*/(\d)', source)
    assert init_args == ["1"]


def test_route_table_lists_every_op_and_its_rules():
    table = route_codegen.route_table()
    ops = op_defs.all_op_defs()
    listed = re.search(r"#define MSMC_ROUTE_OPS\(X\) (.*)", table).group(1)
    assert re.findall(r"X\((\w+), (\w+)\)", listed) == [(op.name, f"ms_memcopy_{op.name}") for op in ops.values()]
    assert '{"offsets", ArgKind::kHostValues, mindspore::kNumberTypeInt64, false, false}' in table
    # dtype_group: "(dst, src)" of memcpy2d_insert marks both (and not its offsets)
    insert = re.search(r"kArgs_memcpy2d_insert\[\] = \{(.*)\};", table).group(1)
    assert re.findall(r'\{"(\w+)", ArgKind::\w+, [\w:]+, true, \w+\}', insert) == ["dst", "src"]
    # the inputs written in place, whose graph infer wants Parameters (a variadic one: each element)
    # (the block ops' caches form no dtype_group: each cache has its own dtype)
    # swap_blocks_h2d, copy_blocks
    assert '{"caches", ArgKind::kTensors, mindspore::kTypeUnknown, false, true}' in table
    assert '{"caches", ArgKind::kTensors, mindspore::kTypeUnknown, false, false}' in table  # swap_blocks_d2h
    assert '{"dst", ArgKind::kTensor, mindspore::kTypeUnknown, true, true}' in table  # memcpy2d_write
    assert '{"y", ShapeRule::kDims, -1, {{DimKind::kAttr, 3}, {DimKind::kAttr, 4}}, 2' in table  # extract
    assert '{"nbytes", ShapeRule::kDims, -1, {{DimKind::kLen, 0}}, 1, mindspore::kNumberTypeInt64, -1}' in table


def test_every_op_has_a_body():
    """Each ops_impl/kernels/bodies/<family>.cpp registers its family's ops at static-init time: the
    kernels library (FindOpBody, through msmc_op_label) finds a body for every op of the definitions,
    and no body for an op that is not defined."""
    from ms_memcopy import _kernels_lib

    lib = _kernels_lib.library()
    for op in op_defs.all_op_defs().values():
        assert lib.msmc_op_label(op.name.encode()), op.name
    assert lib.msmc_op_label(b"no_such_op") is None
    bodies = ROOT / "ops_impl" / "kernels" / "bodies"
    assert sorted(p.stem for p in bodies.glob("*.cpp")) == sorted(op_defs.families())
    for family, names in op_defs.families().items():
        source = (bodies / f"{family}.cpp").read_text()
        assert re.findall(r'^    \{"(\w+)", "', source, re.M) == names, family  # its own ops, in file order
    assert not (ROOT / "ops_impl" / "kernels" / "op_bodies.cpp").read_text().count("kOpBodies")


# ---- one route ----------------------------------------------------------------------------------

def test_one_route_everywhere(monkeypatch):
    """MS_MEMCOPY_ROUTE chose between two CPU routes; the aot route is gone and the variable does nothing."""
    monkeypatch.setenv("MS_MEMCOPY_ROUTE", "aot")
    assert op_def_route.selected_route() == "op_def"
    from ms_memcopy.ops import MemcpyWithDesc

    assert MemcpyWithDesc().name == "Custom_ms_memcopy_memcpy_desc_copy"
    assert not (ROOT / "ops_impl" / "kernels" / "aot_entry.cpp").exists()


def test_a_host_runtime_build_refuses_the_ascend_backend():
    """A build made without CANN links the host ACL runtime: on an NPU it would copy host memory it
    takes for device memory, so loading the module for Ascend is refused with what to do instead."""
    from ms_memcopy import _paths

    assert _paths.uses_host_runtime()
    with pytest.raises(RuntimeError, match=r"built without CANN .* reinstall it with CANN's environment set"):
        op_def_route.load("Ascend")


def test_the_install_built_the_module_and_the_first_call_compiles_nothing(run_python):
    """The install (setup.py) builds the module; a fresh process's first primitive call loads it from
    the installation's build: it calls no build, starts no process that builds (ninja, a compiler) and
    leaves every file of the build directory as it was."""
    assert (op_def_route.packaged_build_dir("CPU") / op_def_route.FINGERPRINT_FILE).exists()
    result = run_python(f"""
import json, subprocess, sys
sys.path.insert(0, {str(ROOT)!r})
import numpy as np
import mindspore as ms
from ms_memcopy import route_build
from ms_memcopy.ops import MemcpyWithDesc

def files(directory):
    return {{str(p.relative_to(directory)): [p.stat().st_size, p.stat().st_mtime_ns]
            for p in directory.rglob("*") if p.is_file()}}

directory = route_build.default_build_dir("CPU")
before = files(directory)
built, started = [], []
original = route_build.builder
def watched(*args, **kwargs):
    b = original(*args, **kwargs)
    real = b.build
    def build():
        built.append(1)
        return real()
    b.build = build
    return b
route_build.builder = watched
popen_init = subprocess.Popen.__init__
def recorded_init(self, args, *rest, **kwargs):
    started.append(args if isinstance(args, str) else " ".join(map(str, args)))
    popen_init(self, args, *rest, **kwargs)
subprocess.Popen.__init__ = recorded_init
y = MemcpyWithDesc()(ms.Tensor(np.arange(4, dtype=np.float32)))
after = files(directory)
changed = sorted(name for name in set(before) | set(after) if before.get(name) != after.get(name))
print(json.dumps({{"values": y.asnumpy().tolist(), "directory": str(directory), "built": len(built),
                  "started": started, "changed": changed}}))
""", timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    run = json.loads(result.stdout.splitlines()[-1])
    assert run["values"] == [0.0, 1.0, 2.0, 3.0]
    assert run["directory"] == str(op_def_route.packaged_build_dir("CPU"))
    assert run["built"] == 0, run
    assert [cmd for cmd in run["started"] if BUILDING_PROCESS.search(cmd)] == [], run
    assert run["changed"] == [], run  # no object file, module or stamp written


# A process that builds: ninja (but its version query) or a C/C++ compiler or linker.
BUILDING_PROCESS = re.compile(r"(^|[/ ])(ninja(?! --version$)|c\+\+|g\+\+|gcc|cc|clang(\+\+)?|ld)( |$)")


def test_newer_acl_calls_are_weak_so_an_older_cann_loads_the_kernels():
    from ms_memcopy import _paths

    symbols = subprocess.run(["nm", "-D", str(_paths.KERNELS_LIBRARY)], capture_output=True, text=True,
                             check=True).stdout
    kinds = {line.split()[-1]: line.split()[-2] for line in symbols.splitlines() if len(line.split()) >= 2}
    for call in ("aclrtMemcpyBatchAsync", "aclrtGetMemcpyDescSize", "aclrtSetMemcpyDesc", "aclrtMemcpyAsyncWithDesc",
                 "aclrtMemcpyAsyncWithCondition"):
        assert kinds.get(call) == "w", (call, kinds.get(call))
    assert kinds.get("aclrtMemcpyAsync") == "U"  # the fallback every CANN has stays a strong reference


def test_info_prints_the_route():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-m", "ms_memcopy", "info"], env=env, capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert re.search(r"^primitive route: op_def \(every device\)", out, re.M), out


# ---- with the module (built once per machine, loaded once per session) ----------------------------

@pytest.fixture
def pynative():
    import mindspore as ms

    ms.set_context(mode=ms.PYNATIVE_MODE)
    if ms.get_context("device_target") != "CPU":
        ms.set_device("CPU")
    return ms


def test_module_functions_run_in_order_with_builtin_ops(pynative):
    """A built-in op right after the route's function reads its output: in asynchronous PYNATIVE the
    kernel must have run before (a direct read would wait for every queue and hide a race)."""
    from mindspore import ops

    ms = pynative
    module = op_def_route.load()
    x = ms.Tensor(np.arange(400, dtype=np.float32).reshape(20, 20))
    row, col = ms.Tensor(np.array([3], np.int64)), ms.Tensor(np.array([4], np.int64))
    expected = (x.asnumpy()[3:11, 4:16] + 1) * 2
    wrong = 0
    for _ in range(300):
        (y,) = module.memcpy2d_extract(ops.add(x, 1), row, col, 8, 12)
        wrong += not np.array_equal(ops.mul(y, 2).asnumpy(), expected)
    assert wrong == 0


def test_primitives_run_in_order_with_builtin_ops(pynative, monkeypatch):
    from mindspore import ops

    from ms_memcopy.ops import MemcpyWithCondition

    ms = pynative
    copy = MemcpyWithCondition("d2d")
    x = ms.Tensor(np.arange(4096, dtype=np.float32))
    wrong = 0
    for i in range(300):
        y = ops.mul(copy(ops.add(x, i)), 2)
        wrong += not np.array_equal(y.asnumpy(), (x.asnumpy() + i) * 2)
    assert wrong == 0


def test_kernel_errors_keep_their_type_and_text_eagerly(pynative, monkeypatch):
    """An error of the kernel's check (here a HostBuffer closed after the Python checks) reaches Python
    as ValueError with the kernel's text, before anything is queued: from the eager KernelInstance's
    call, and from the infer function of MindSpore's single-op path (which gradients take)."""
    from mindspore.ops.primitive import _run_op

    from ms_memcopy import HostBuffer
    from ms_memcopy.ops import MemcpyWithCondition

    from _ops_support import raises_exactly

    ms = pynative
    buf = HostBuffer(64)
    op = MemcpyWithCondition("d2h", host_buffer=buf)
    buf.close()
    offset = ms.Tensor(np.array([0], np.int64))
    closed = "ms_memcopy MemcpyWithCondition(d2h): host_buffer: the HostBuffer is closed"
    with raises_exactly(ValueError, closed):
        _run_op(op, op.name, (ms.Tensor(np.ones(4, np.float32)), offset, *op._init_values)).asnumpy()
    kernel = op_def_route.load().KernelInstance(op._op_def.name, *op._init_values)
    with raises_exactly(ValueError, closed):
        kernel(ms.Tensor(np.ones(4, np.float32)), np.zeros(1, np.int64))
    with raises_exactly(ValueError, closed):
        kernel.check(ms.Tensor(np.ones(4, np.float32)), np.zeros(1, np.int64))


def compile_ascend_kernels(directory):
    """op_def_route.compile_ascend_kernels in a child interpreter: (its result, the library's path)."""
    script = ("import sys; from ms_memcopy import op_def_route; "
              "print(op_def_route.compile_ascend_kernels(sys.argv[1]))")
    result = _background.run([sys.executable, "-c", script, directory])
    return result, Path(result.stdout.strip().splitlines()[-1]) if result.returncode == 0 else None


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("MS_MEMCOPY_LONG_TESTS") != "1",
                    reason="about 130 s of compiling; MS_MEMCOPY_LONG_TESTS=1 runs it (.ci/run does)")
@pytest.mark.background.with_args(compile_ascend_kernels)
def test_ascend_kernels_compile_and_link():
    """Every unit of the module with the project's Ascend branches on (the Ascend KernelMods with
    -DCUSTOM_ASCEND_OP, the PyNative entries with MSMC_ASCEND_BRANCHES) against the wheel's headers and
    this project's ACL headers; linked with --allow-shlib-undefined, since CANN's libraries are not here.
    About 70 s of compiling on 2 cores: it starts in the background when the session's tests are collected."""
    result, library = _background.result(compile_ascend_kernels)
    assert result.returncode == 0, result.stderr[-4000:]
    symbols = subprocess.run(["nm", "-C", str(library)], capture_output=True, text=True, check=True).stdout
    assert "RouteAscendKernel" in symbols and "CustomKernelFactory::Register" in symbols
    assert "KernelInstance" in symbols and "RouteRunner" in symbols  # the PyNative entries are in it
    for op in op_defs.all_op_defs().values():
        assert f"gCustom_{route_codegen.op_def_name(op)}FuncImpl" in symbols


def test_variadic_primitive_keeps_its_attributes(monkeypatch):
    """MemcpyBatch d2h is a Cell packing its tensors into its primitive's tuple input; it is an instance
    of its class and has the documented attributes."""
    from mindspore import nn

    from ms_memcopy import HostBuffer
    from ms_memcopy.ops import MemcpyBatch

    with HostBuffer(64) as buf:
        op = MemcpyBatch("d2h", buf, num_tensors=3)
        assert type(op) is MemcpyBatch and isinstance(op, nn.Cell)
        assert (op.direction, op.num_tensors, op.host_buffer, op.route) == ("d2h", 3, buf, "op_def")
        assert op.primitive.name == "Custom_ms_memcopy_memcpy_batch_d2h"
        with pytest.raises(AttributeError):
            op.no_such_attribute  # noqa: B018


def test_call_runs_an_op(pynative):
    ms = pynative
    x = ms.Tensor(np.arange(30, dtype=np.int16).reshape(5, 6))
    i64 = lambda v: ms.Tensor(np.array([v], np.int64))
    y = op_def_route.call("memcpy2d_extract", (x, i64(1), i64(2)), {"height": 2, "width": 3})
    np.testing.assert_array_equal(y.asnumpy(), x.asnumpy()[1:3, 2:5])
    with pytest.raises(ValueError, match="attributes"):
        op_def_route.call("memcpy2d_extract", (x, i64(1), i64(2)), {"height": 1})
    with pytest.raises(ValueError, match="out_shapes"):
        op_def_route.call("memcpy2d_h2d", (i64(0),), {"buffer_id": 1, "pitch": 8})


def test_jit_level_o2_is_refused(run_python):
    """The sample call of every op (ms_memcopy/samples.py) in a GRAPH_MODE graph with jit_level O2 is
    refused with the op's label, and runs with O1. In a child interpreter: jit_config cannot be reset
    to its default once set."""
    result = run_python(f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
sys.path.insert(0, {str(ROOT / "tests")!r})
import mindspore as ms
ms.set_device("CPU")
from ms_memcopy import HostBuffer, op_defs, samples
from _ops_support import FnCell
ms.set_context(mode=ms.GRAPH_MODE)


for level in ("O2", "O1"):
    ms.set_context(jit_config={{"jit_level": level}})
    for name in op_defs.all_op_defs():
        with HostBuffer(samples.HOST_BUFFER_BYTES) as buf:
            sample = samples.sample(name, buf)
            try:
                sample.check(FnCell(sample.op)(*sample.inputs))
                print(level, "ran:", sample.label)
            except RuntimeError as e:
                print(level, "refused:", sample.label, "|", str(e).splitlines()[0])
""", timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    labels = [line.split("ran: ")[1] for line in lines if line.startswith("O1 ran: ")]
    assert len(labels) == len(op_defs.all_op_defs()), result.stdout
    for label in labels:
        assert f"O2 refused: {label} | ms_memcopy {label}: runs kernel by kernel and cannot be compiled with " \
               f"jit_level O2 (task sink); use jit_level O0 or O1" in lines, (label, result.stdout)


def test_jit_level_o2_is_refused_for_jit_in_pynative(run_python):
    """ms.jit inside PYNATIVE_MODE compiles a graph too: with jit_level O2 in the context it is refused
    with the project's message, while eager calls in the same process still run."""
    result = run_python(f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
import numpy as np
import mindspore as ms
ms.set_device("CPU")
from ms_memcopy.ops import MemcpyWithDesc
ms.set_context(mode=ms.PYNATIVE_MODE, jit_config={{"jit_level": "O2"}})
op = MemcpyWithDesc()
x = ms.Tensor(np.arange(4, dtype=np.float32))

@ms.jit
def run(x):
    return op(x) * 2

try:
    run(x)
except RuntimeError as e:
    print("refused:", e)
print("eager:", op(x).asnumpy().tolist())
""", timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert re.search(r"refused: ms_memcopy MemcpyWithDesc: .*cannot be compiled with jit_level O2", result.stdout), \
        result.stdout
    assert "eager: [0.0, 1.0, 2.0, 3.0]" in result.stdout


def test_graphs_of_every_op_log_no_parser_error(run_python):
    """The sample call of every op in a graph logs no error. MindSpore's parser asks every Cell (the
    variadic ops are Cells holding their primitive) for a bprop; a primitive's bprop answering for the
    Cell logged "Parse resolve function error"."""
    result = run_python(f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
import mindspore as ms
ms.set_device("CPU")
ms.set_context(mode=ms.GRAPH_MODE)
from ms_memcopy import HostBuffer, op_defs, samples
from ms_memcopy.benchmarks.ms_graphs import OpCell


for name in op_defs.all_op_defs():
    with HostBuffer(samples.HOST_BUFFER_BYTES) as buf:
        sample = samples.sample(name, buf)
        sample.check(OpCell(sample.op)(*sample.inputs))
        print("ok:", name)
""", timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.count("ok: ") == len(op_defs.all_op_defs()), result.stdout
    assert "Parse resolve function error" not in result.stderr, result.stderr[-2000:]
    assert "[ERROR]" not in result.stderr, result.stderr[-2000:]


def test_build_dir_order(monkeypatch, tmp_path):
    """An explicit directory, then the installation's build, then MindSpore's cache, then the user's."""
    monkeypatch.setattr(route_build, "packaged_build_dir", lambda backend: tmp_path / "pkg" / backend)
    monkeypatch.delenv("MS_MEMCOPY_ROUTE_BUILD_DIR", raising=False)
    monkeypatch.delenv("MS_COMPILER_CACHE_PATH", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert str(op_def_route.default_build_dir("CPU")).startswith(str(tmp_path / "xdg" / "ms_memcopy" / "route"))
    # one build per installation in a shared cache: the module finds its kernels library by absolute path
    here = op_def_route.default_build_dir("CPU")
    monkeypatch.setattr(op_def_route._paths, "LIB_DIR", tmp_path / "another_checkout" / "_lib")
    assert op_def_route.default_build_dir("CPU") != here
    monkeypatch.undo()
    monkeypatch.setattr(route_build, "packaged_build_dir", lambda backend: tmp_path / "pkg" / backend)
    monkeypatch.delenv("MS_MEMCOPY_ROUTE_BUILD_DIR", raising=False)
    monkeypatch.delenv("MS_COMPILER_CACHE_PATH", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert op_def_route.default_build_dir("CPU") == here
    monkeypatch.setenv("MS_COMPILER_CACHE_PATH", str(tmp_path / "msc"))
    assert op_def_route.default_build_dir("Ascend").parent == tmp_path / "msc" / "ms_memcopy_route"
    (tmp_path / "pkg" / "CPU").mkdir(parents=True)
    (tmp_path / "pkg" / "CPU" / op_def_route.FINGERPRINT_FILE).write_text("x")
    assert op_def_route.default_build_dir("CPU") == tmp_path / "pkg" / "CPU"
    monkeypatch.setenv("MS_MEMCOPY_ROUTE_BUILD_DIR", str(tmp_path / "own"))
    assert op_def_route.default_build_dir("CPU").parent == tmp_path / "own"
    with pytest.raises(ValueError, match="backend"):
        op_def_route.default_build_dir("GPU")


def test_an_up_to_date_build_is_not_rebuilt():
    import time

    start = time.perf_counter()
    path = op_def_route.build("CPU")
    assert Path(path).exists() and time.perf_counter() - start < 10
