"""The op_def route's graph pass (route_tuple_pass.cpp) and the kernels' refusal of a folded tuple input.

A graph hands an op with a variadic input its tensors as a tuple. On Ascend, MindSpore folds that
tuple into one temporary copy before a Custom_<op> kernel (RealMakeTuple) unless the pass, which
op_def_route.load() registers, unfolds it (docs/ascend_route.md). The CPU backend unfolds these
tuples itself, later than the custom passes run, so on CPU the pass shows in the graph dumped after
the custom passes, and the folding the kernels must refuse is reproduced by a test variant of the
module whose kernel declares the tuple input a TUPLE object, as Ascend's kernel selection does
(tests/route_probes/folded_tuple_cpu_kernel.cpp).

GRAPH_MODE, jit_level O0, CPU, on the op_def route.
"""
import ast
import hashlib
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from ms_memcopy import op_def_route, op_defs, route_codegen, route_load

import _background

ROOT = Path(__file__).resolve().parent.parent
FOLDED_TUPLE_KERNEL = Path(__file__).resolve().parent / "route_probes" / "folded_tuple_cpu_kernel.cpp"


@pytest.fixture
def graph_mode():
    import mindspore as ms

    if ms.get_context("device_target") != "CPU":
        ms.set_device("CPU")
    ms.set_context(mode=ms.GRAPH_MODE, jit_config={"jit_level": "O0"})
    yield ms
    ms.set_context(mode=ms.PYNATIVE_MODE)


# ---- what the pass is built from ----------------------------------------------------------------

def test_every_variadic_input_has_a_length_attribute():
    ops = op_defs.all_op_defs()
    lengths = {op.name: op.length_attr for op in ops.values() if op.length_attr is not None}
    assert lengths == {"memcpy_batch_d2h": "num_tensors", "swap_blocks_d2h": "num_caches",
                       "swap_blocks_h2d": "num_caches", "copy_blocks": "num_caches",
                       "swap_blocks_d2h_async": "num_caches", "swap_blocks_h2d_async": "num_caches",
                       "copy_blocks_async": "num_caches", "memcpy_batch_d2h_async": "num_tensors",
                       "memcpy_batch_h2d_async": "num_tensors", "wait_transfer": "num_tensors"}
    table = route_codegen.route_table()
    assert '{"num_caches", ArgKind::kLength, mindspore::kTypeUnknown, false, false}' in table
    assert f'#define MSMC_TUPLE_PASS_NAME "{route_codegen.TUPLE_PASS_NAME}"' in table
    for op in ops.values():
        if op.length_attr is not None:
            assert route_codegen.op_def_entry(op)["args"][op.length_attr] == {"dtype": "int", "prim_init": True}


def test_a_variadic_input_without_its_length_attribute_is_an_error():
    tables = op_defs.read_tables()
    tables["configs/ops/blocks.yaml"]["copy_blocks"]["attrs"] = []
    with pytest.raises(op_defs.OpDefinitionError,
                       match=r"^configs/ops/blocks.yaml: op copy_blocks: attrs: variadic input 'caches' needs an int "
                             r"attribute 'num_caches'"):
        op_defs.parse(tables)


def test_a_refused_registration_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setattr(route_load, "_registered_pass_devices", set())  # as if not registered yet
    with pytest.raises(RuntimeError, match=r"register_custom_pass refused the op_def route's graph pass "
                                           r"ms_memcopy_unfold_tuple_inputs .* for device 'cpu'.*copy_blocks"):
        op_def_route.register_tuple_pass("CPU", tmp_path / "no_such_plugin.so")


# ---- the pass in a graph ----------------------------------------------------------------------------

_COPY_BLOCKS_GRAPH = """
import numpy as np
import mindspore as ms
from mindspore import nn
from ms_memcopy import route_load
if not REGISTERED:
    route_load.register_tuple_pass = lambda backend, module_path: None
ms.set_context(mode=ms.GRAPH_MODE, jit_config={"jit_level": "O0"})
from ms_memcopy.ops import CopyBlocks

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.op = CopyBlocks(num_caches=2)
        self.k = ms.Parameter(ms.Tensor(np.arange(8, dtype=np.float32).reshape(4, 2)), name="k")
        self.v = ms.Parameter(ms.Tensor(np.arange(8, 16, dtype=np.float32).reshape(4, 2)), name="v")

    def construct(self, mapping):
        return self.op(self.k, self.v, mapping)

net = Net()
print("nbytes", net(ms.Tensor([[1, 2]], ms.int64)).asnumpy().tolist())
print("v", net.v.asnumpy().tolist())
"""


def copy_blocks_inputs(ir_text):
    """[(input, the op producing it or the input itself)] of the Custom_ms_memcopy_copy_blocks node in an IR dump."""
    producers = dict(re.findall(r"^\s*(%\w+)\(\S+\) = (?:PrimFunc_)?(\w+)\(", ir_text, re.M))
    node = re.search(r"= (?:PrimFunc_)?Custom_ms_memcopy_copy_blocks\((.*?)\)\s+(?:\{|primitive_attrs)", ir_text)
    assert node is not None, ir_text[-2000:]
    return [(a.strip(), producers.get(a.strip(), a.strip())) for a in node.group(1).split(",")]


@pytest.mark.parametrize("registered", [True, False], ids=["with_pass", "without_pass"])
def test_the_pass_unfolds_the_tuple_before_kernel_selection(run_python, tmp_path, registered):
    """The graph MindSpore dumps after its custom passes: with the pass (registered by load()) the
    Custom_ms_memcopy_copy_blocks node takes the Parameters themselves; without it a MakeTuple of them."""
    ir_dir = tmp_path / "ir"
    env = {"MS_DEV_SAVE_GRAPHS": "1", "MS_DEV_SAVE_GRAPHS_PATH": str(ir_dir)}
    out = run_python(_COPY_BLOCKS_GRAPH.replace("REGISTERED", repr(registered)), env=env, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr[-3000:]
    assert "nbytes [16]" in out.stdout and "v [[8.0, 9.0], [10.0, 11.0], [10.0, 11.0], [14.0, 15.0]]" in out.stdout
    (dump,) = ir_dir.rglob("hwopt_cpu_custom_optimization_after_graph_*.ir")
    ir_text = dump.read_text()
    inputs = copy_blocks_inputs(ir_text)
    if registered:
        assert [re.sub(r"^%para\d+_", "", name) for name, _ in inputs[:2]] == ["k", "v"], inputs
        assert all(producer not in ("MakeTuple", "RealMakeTuple") for _, producer in inputs), inputs
        assert re.search(r"Custom_ms_memcopy_copy_blocks\(.*dyn_input_sizes: \(2, ", ir_text)
    else:
        assert inputs[0][1] == "MakeTuple", inputs



_H2D_GRAPH = """
import numpy as np
import mindspore as ms
from mindspore import nn
from ms_memcopy import HostBuffer, route_load
if not REGISTERED:
    route_load.register_tuple_pass = lambda backend, module_path: None
ms.set_context(mode=ms.GRAPH_MODE, jit_config={"jit_level": "O0"})
from ms_memcopy.ops import MemcpyBatch

class Net(nn.Cell):
    def __init__(self, op):
        super().__init__()
        self.op = op

    def construct(self, offsets):
        return self.op(offsets)

buf = HostBuffer(64)
buf.numpy(np.float32)[:] = np.arange(16, dtype=np.float32)
net = Net(MemcpyBatch("h2d", buf, shapes=[(2, 3), (4,)], dtypes=[ms.float32, ms.int32]))
a, b = net(ms.Tensor([8, 40], ms.int64))
print("a", a.asnumpy().tolist(), "b", b.asnumpy().view(np.float32).tolist())
"""


@pytest.mark.parametrize("registered", [True], ids=["with_pass"])
def test_the_pass_unfolds_constant_tuples_into_constants(run_python, tmp_path, registered):
    """MemcpyBatch("h2d")'s output descriptions (given_shapes, given_ranks, given_dtypes) reach the kernel
    as constants: no RealTupleGetItem kernel per element runs at each step (the actor set MindSpore dumps),
    and the outputs hold the HostBuffer's bytes. (registered=False, left out of the suite for time, shows
    one per element of the three tuples.)"""
    ir_dir = tmp_path / "ir"
    env = {"MS_DEV_SAVE_GRAPHS": "1", "MS_DEV_SAVE_GRAPHS_PATH": str(ir_dir)}
    out = run_python(_H2D_GRAPH.replace("REGISTERED", repr(registered)), env=env, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr[-3000:]
    values = np.arange(16, dtype=np.float32)
    assert f"a {values[2:8].reshape(2, 3).tolist()} b {values[10:14].tolist()}" in out.stdout, out.stdout
    actor_sets = list(ir_dir.rglob("final_actor_set_*.ir"))
    assert actor_sets, sorted(p.name for p in ir_dir.rglob("*"))[:50]
    text = "".join(p.read_text() for p in actor_sets)
    assert "Custom_ms_memcopy_memcpy_batch_h2d" in text, text[-2000:]
    assert ("RealTupleGetItem" in text) != registered, text[-2000:]

def _blocks(num_blocks, seed):
    rng = np.random.default_rng(seed)
    return rng.integers(-100, 100, (num_blocks, 3, 2)).astype(np.float32)


def test_in_place_block_writes_land_in_the_parameters(graph_mode):
    """CopyBlocks and SwapBlocks h2d in one graph write the Parameters' own storage (same data_ptr
    before and after), with the pass registered in this process by load()."""
    ms = graph_mode
    from mindspore import nn

    from ms_memcopy import HostBuffer
    from ms_memcopy.ops import CopyBlocks, SwapBlocks

    k0, v0 = _blocks(6, 0), _blocks(6, 1)
    host = np.stack([_blocks(4, 2), _blocks(4, 3)])  # 2 host caches of 4 blocks
    block_bytes = k0[0].nbytes
    with HostBuffer(host.nbytes) as buf:
        buf.numpy(np.float32)[:] = host.reshape(-1)

        class Net(nn.Cell):
            def __init__(self):
                super().__init__()
                self.copy = CopyBlocks(num_caches=2)
                self.swap_in = SwapBlocks("h2d", buf, num_caches=2)
                self.k = ms.Parameter(ms.Tensor(k0), name="k")
                self.v = ms.Parameter(ms.Tensor(v0), name="v")

            def construct(self, copy_mapping, swap_mapping):
                copied = self.copy(self.k, self.v, copy_mapping)
                swapped = self.swap_in(self.k, self.v, swap_mapping)
                return copied, swapped

        net = Net()
        assert "CPU" in op_def_route._modules and "cpu" in op_def_route._registered_pass_devices
        pointers = (net.k.data_ptr(), net.v.data_ptr())
        copy_mapping, swap_mapping = [[0, 5], [1, 4]], [[3, 0], [2, 1]]
        copied, swapped = net(ms.Tensor(copy_mapping, ms.int64), ms.Tensor(swap_mapping, ms.int64))
        assert (copied.asnumpy().tolist(), swapped.asnumpy().tolist()) == ([4 * block_bytes], [4 * block_bytes])
        expected = [k0.copy(), v0.copy()]
        for l, cache in enumerate(expected):
            for src, dst in copy_mapping:
                cache[dst] = cache[src]
            for src, dst in swap_mapping:
                cache[dst] = host[l][src]
        np.testing.assert_array_equal(net.k.asnumpy(), expected[0])
        np.testing.assert_array_equal(net.v.asnumpy(), expected[1])
        assert (net.k.data_ptr(), net.v.data_ptr()) == pointers


def test_a_tuple_of_another_length_is_refused_when_the_graph_compiles(graph_mode):
    """The infer function checks the tuple's length against the primitive's length attribute."""
    ms = graph_mode
    from mindspore import nn

    from ms_memcopy.ops import CopyBlocks

    primitive = CopyBlocks(num_caches=2).primitive  # the op_def primitive, without the Python checks

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.caches = ms.ParameterTuple(ms.Parameter(ms.Tensor(_blocks(4, i)), name=f"c{i}") for i in range(3))

        def construct(self, mapping):
            return primitive(self.caches, mapping)

    with pytest.raises(ValueError, match=r"ms_memcopy CopyBlocks: caches: holds 3 tensor\(s\) but the "
                                         r"primitive was built for num_caches=2"):
        Net()(ms.Tensor([[0, 1]], ms.int64))


def test_the_module_function_refuses_a_tuple_of_another_length():
    import mindspore as ms

    caches = tuple(ms.Tensor(_blocks(4, i)) for i in range(2))
    with pytest.raises(ValueError, match=r"caches: holds 2 tensor\(s\) but the primitive was built for num_caches=3"):
        op_def_route.load("CPU").copy_blocks(caches, ms.Tensor([[0, 1]], ms.int64), 3)[0].asnumpy()


# ---- a folded input reaches the kernel ----------------------------------------------------------------

def folded_tuple_module():
    """The test variant of the route module: the infer functions and op_defs of every op, and
    tests/route_probes/folded_tuple_cpu_kernel.cpp as the only kernel (no pass); built once per
    change of its sources, next to the route's own build."""
    from mindspore import ops

    directory = op_def_route.default_build_dir("CPU")
    directory = directory.with_name(directory.name + "-folded-tuple-probe")
    op_def_path, include = route_codegen.write_sources(directory / "generated")
    options = op_def_route.build_options("CPU", include)
    kernels = op_def_route.kernels_dir() / "ms_extension"
    sources = [str(kernels / "route_common.cpp"), str(kernels / "route_infer.cpp"), str(FOLDED_TUPLE_KERNEL)]
    if op_def_route.find_ninja() is None:
        pytest.skip("CustomOpBuilder needs ninja")
    builder = ops.CustomOpBuilder("ms_memcopy_folded_tuple_probe", sources, backend="CPU",
                                  include_paths=options["include_paths"], ldflags=options["ldflags"],
                                  op_def=[str(op_def_path)], build_dir=str(directory))
    digest = hashlib.sha256(op_def_route._fingerprint("CPU", builder).encode())
    digest.update(FOLDED_TUPLE_KERNEL.read_bytes())
    stamp, module = directory / op_def_route.FINGERPRINT_FILE, directory / "ms_memcopy_folded_tuple_probe.so"
    if not (module.exists() and stamp.exists() and stamp.read_text() == digest.hexdigest()):
        module = Path(builder.build())
        stamp.write_text(digest.hexdigest())
    return module


_FOLDED_GRAPH = """
import ctypes
import numpy as np
import mindspore as ms
from mindspore import nn, ops
from ms_memcopy import _kernels_lib

ms.set_context(mode=ms.GRAPH_MODE, jit_config={"jit_level": "O0"})
_kernels_lib.library()
ctypes.CDLL(MODULE_PATH)  # registers the Custom_<op> op_defs and the probe kernel; no pass

def copy_blocks(num_caches):
    # what ms_memcopy.ops does for the op_def route
    primitive = ops.Primitive("Custom_ms_memcopy_copy_blocks")
    primitive._set_prim_arg("num_caches", num_caches)
    primitive.init_attrs["num_caches"] = num_caches
    primitive.add_prim_attr("side_effect_mem", True)
    return primitive

class Net(nn.Cell):
    def __init__(self, num_caches):
        super().__init__()
        self.copy = copy_blocks(num_caches)
        self.caches = ms.ParameterTuple(
            ms.Parameter(ms.Tensor(np.arange(8, dtype=np.float32).reshape(4, 2) + 8 * l), name=f"c{l}")
            for l in range(num_caches))

    def construct(self, mapping):
        return self.copy(self.caches, mapping)

for num_caches in (2, 1):
    net = Net(num_caches)
    try:
        print("ran", net(ms.Tensor([[1, 2]], ms.int64)).asnumpy().tolist())
    except RuntimeError as e:
        print("refused:", str(e).splitlines()[0])
    print("caches", [c.asnumpy().tolist() for c in net.caches])
"""


def build_folded_tuple_module(directory):
    """folded_tuple_module() in a child interpreter (started when the tests are collected: the build
    takes about a minute where it is not built yet): (its result, the module's path)."""
    script = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import test_tuple_pass; "
              "print(test_tuple_pass.folded_tuple_module())")
    result = _background.run([sys.executable, "-c", script], cwd=directory)
    return result, result.stdout.strip().splitlines()[-1] if result.returncode == 0 else None


@pytest.mark.background.with_args(build_folded_tuple_module)
def test_a_folded_tuple_input_is_refused(run_python, tmp_path):
    """MindSpore folds the caches into one RealMakeTuple copy before a kernel declaring a TUPLE
    input; the kernel core refuses it whether the count differs (2 caches) or not (1 cache), and the
    Parameters keep their values."""
    if op_def_route.find_ninja() is None:
        pytest.skip("CustomOpBuilder needs ninja")
    built, module = _background.result(build_folded_tuple_module)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-3000:]
    ir_dir = tmp_path / "ir"
    out = run_python(_FOLDED_GRAPH.replace("MODULE_PATH", repr(module)), timeout=300,
                     env={"MS_DEV_SAVE_GRAPHS": "1", "MS_DEV_SAVE_GRAPHS_PATH": str(ir_dir)})
    assert out.returncode == 0, out.stdout + out.stderr[-3000:]
    final_graphs = sorted(ir_dir.rglob("hwopt_common_final_graph_*.ir"))
    assert len(final_graphs) == 2
    for dump in final_graphs:
        assert copy_blocks_inputs(dump.read_text())[0][1] == "RealMakeTuple"
    refusals = re.findall(r"^refused: (.*)$", out.stdout, re.M)
    assert "ran" not in out.stdout and len(refusals) == 2, out.stdout
    pass_hint = (f"ms_memcopy's graph pass {route_codegen.TUPLE_PASS_NAME} unfolds this input: "
                 "op_def_route.load() registers it")
    assert refusals[0].startswith("ms_memcopy CopyBlocks: caches arrived folded: the kernel got 1 input(s), a tuple "
                                  "object among them, where the primitive was built for num_caches=2. The graph "
                                  "passed the tensors as one folded tuple"), refusals[0]
    assert "where the primitive was built for num_caches=1." in refusals[1]
    assert all(pass_hint in r for r in refusals)
    caches = [ast.literal_eval(line[len("caches "):]) for line in out.stdout.splitlines() if line.startswith("caches ")]
    unchanged = [(np.arange(8, dtype=np.float32).reshape(4, 2) + 8 * l).tolist() for l in range(2)]
    assert caches == [unchanged, unchanged[:1]]
