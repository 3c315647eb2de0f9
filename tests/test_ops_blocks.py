"""In-place primitives: Memcpy2D("write"), SwapBlocks and CopyBlocks against numpy references, in
GRAPH_MODE (Cells holding Parameters, ms.jit) and PYNATIVE_MODE, on every SoC profile; bad input
raises before any byte moves."""
import time

import numpy as np
import pytest

import mindspore as ms
from mindspore import nn, ops

from ms_memcopy import HostBuffer
from ms_memcopy.ops import CopyBlocks, Memcpy2D, SwapBlocks
from ms_memcopy.ops._dtypes import itemsize

from ms_memcopy import _kernels_lib

from _ops_support import (DTYPES, PROFILES_WITH_OTHER_FEATURES, InPlace, as_numpy, check_on_profile, int64, make,
                          raw_bytes, raises_exactly, widen)


def parameters(*tensors):
    return [ms.Parameter(t, name=f"cache{i}") for i, t in enumerate(tensors)]


def run(style, op, params, *args):
    """op(*params, *args) in a Cell holding the Parameters, in ms.jit over them, or eagerly."""
    if style == "cell":
        return InPlace(op, params)(*args)
    if style == "jit":
        @ms.jit
        def call(*inputs):
            return op(*inputs)

        return call(*params, *args)
    return op(*params, *args)


def host_cache(buf, num_caches, block_bytes):
    """The HostBuffer's bytes as [L, H, block_bytes] (the cache-major host layout)."""
    h = buf.nbytes // (num_caches * block_bytes)
    return buf.numpy(np.uint8)[:num_caches * h * block_bytes].reshape(num_caches, h, block_bytes)


def block_bytes_of(dtype, values):
    """numpy [num_blocks, block_bytes] of the bytes MindSpore stores for a cache's values."""
    return np.frombuffer(raw_bytes(dtype, values), np.uint8).reshape(values.shape[0], -1)


# ---- Memcpy2D("write") ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_write_every_dtype_in_place(ms_mode, dtype):
    dst, dv = make(dtype, (5, 9), seed=4)
    src, sv = make(dtype, (2, 3), seed=5)
    (param,) = parameters(dst)
    address = param.data_ptr()
    n = run("cell", Memcpy2D("write"), [param], src, int64(3), int64(6))
    expected = dv.copy()
    expected[3:5, 6:9] = sv
    assert n.dtype == ms.int64 and n.asnumpy().tolist() == [len(raw_bytes(dtype, sv))]
    np.testing.assert_array_equal(as_numpy(param), widen(dtype, expected))
    assert param.data_ptr() == address


@pytest.mark.parametrize("dst_shape,src_shape,r,c", [((2, 3, 8), (1, 2, 5), 4, 1), ((9,), (4,), 0, 5),
                                                      ((4, 6), (4, 6), 0, 0), ((4, 6), (0, 3), 4, 2)])
def test_write_styles_and_ranks(ms_mode, style, dst_shape, src_shape, r, c):
    dst, dv = make("int32", dst_shape, seed=6)
    src, sv = make("int32", src_shape, seed=7)
    (param,) = parameters(dst)
    n = run(style, Memcpy2D("write"), [param], src, int64(r), int64(c))
    expected = dv.reshape(-1, dst_shape[-1]).copy()
    sm = sv.reshape(-1, src_shape[-1])
    expected[r:r + sm.shape[0], c:c + sm.shape[1]] = sm
    assert n.asnumpy().tolist() == [sv.nbytes]
    np.testing.assert_array_equal(param.asnumpy().reshape(expected.shape), expected)


def test_write_pynative_tensor_in_place(route):
    """PYNATIVE writes a plain Tensor in place too; a reshape taken before the write sees it."""
    ms.set_context(mode=ms.PYNATIVE_MODE)
    t = ms.Tensor(np.zeros((4, 6), np.float32))
    flat = t.reshape(24)
    Memcpy2D("write")(t, ms.Tensor(np.full((1, 2), 7, np.float32)), int64(1), int64(3))
    expected = np.zeros((4, 6), np.float32)
    expected[1, 3:5] = 7
    np.testing.assert_array_equal(t.asnumpy(), expected)
    np.testing.assert_array_equal(flat.asnumpy(), expected.reshape(24))


def test_write_then_builtin_in_pynative_sees_every_write(route):
    """A built-in op chained after the in-place write reads the written bytes (no ordering race)."""
    ms.set_context(mode=ms.PYNATIVE_MODE)
    (param,) = parameters(ms.Tensor(np.zeros((64, 256), np.float32)))
    write = Memcpy2D("write")
    expected = np.zeros((64, 256), np.float32)
    for i in range(120):
        row = np.full((1, 256), i + 1, np.float32)
        write(param, ms.Tensor(row), int64(i % 64), int64(0))
        total = ops.reduce_sum(ops.mul(param, 2.0))  # queued right behind the kernel
        expected[i % 64] = row
        assert total.asnumpy() == pytest.approx(2 * expected.sum()), i


def test_write_then_builtin_in_graph_reads_the_new_values(ms_mode):
    class Step(nn.Cell):
        def __init__(self):
            super().__init__()
            self.cache = ms.Parameter(ms.Tensor(np.zeros((8, 4), np.float32)), name="cache")
            self.write = Memcpy2D("write")

        def construct(self, src, r):
            n = self.write(self.cache, src, r, int64(0))
            return n, ops.reduce_sum(self.cache, 1)

    step = Step()
    for i in range(8):
        _, sums = step(ms.Tensor(np.full((1, 4), i + 1, np.float32)), int64(i))
        np.testing.assert_array_equal(sums.asnumpy(), [4 * (k + 1) if k <= i else 0 for k in range(8)])


def test_write_bad_input_writes_nothing(ms_mode):
    (param,) = parameters(ms.Tensor(np.arange(24, dtype=np.float32).reshape(4, 6)))
    before = param.asnumpy().copy()
    write = Memcpy2D("write")
    src = ms.Tensor(np.ones((2, 3), np.float32))
    prefix = "ms_memcopy Memcpy2D(write): "
    with raises_exactly(ValueError, prefix + "row = 3: the region [3, 3 + 2) leaves the 4 rows of the tensor; nothing "
                                             "was copied"):
        run("eager", write, [param], src, int64(3), int64(0))
    # Shapes and dtypes: while the graph compiles (eagerly: before anything is queued).
    with raises_exactly(ValueError, prefix + "src (5 x 1) does not fit in dst (4 x 6)"):
        run("cell", write, [param], ms.Tensor(np.ones((5, 1), np.float32)), int64(0), int64(0))
    with raises_exactly(TypeError, prefix + "src has dtype int32 but dst has float32"):
        run("cell", write, [param], ms.Tensor(np.ones((1, 1), np.int32)), int64(0), int64(0))
    # A row held in a graph input is checked by the kernel before any byte moves.
    with raises_exactly(ValueError, prefix + "row = 9: the region [9, 9 + 2) leaves the 4 rows of the tensor; nothing "
                                             "was copied"):
        run("cell", write, [param], src, int64(9), int64(0))
    np.testing.assert_array_equal(param.asnumpy(), before)


def test_write_needs_a_whole_parameter_in_graphs(route):
    ms.set_context(mode=ms.GRAPH_MODE)
    src = ms.Tensor(np.ones((1, 2), np.float32))

    class Slice(nn.Cell):
        def __init__(self):
            super().__init__()
            self.cache = ms.Parameter(ms.Tensor(np.zeros((4, 6), np.float32)), name="cache")
            self.write = Memcpy2D("write")

        def construct(self, src):
            return self.write(self.cache[1:3], src, int64(0), int64(0))

    class Input(nn.Cell):
        def __init__(self):
            super().__init__()
            self.write = Memcpy2D("write")

        def construct(self, dst, src):
            return self.write(dst, src, int64(0), int64(0))

    with pytest.raises(TypeError, match=r"dst must be a Parameter in graphs"):
        Slice()(src)
    with pytest.raises(TypeError, match=r"dst must be a Parameter in graphs"):
        Input()(ms.Tensor(np.zeros((4, 6), np.float32)), src)
    ms.set_context(mode=ms.PYNATIVE_MODE)


def test_write_refuses_slices_in_pynative(route):
    ms.set_context(mode=ms.PYNATIVE_MODE)
    t = ms.Tensor(np.zeros((4, 6), np.float32))
    src = ms.Tensor(np.ones((1, 2), np.float32))
    for view in (t[1:3], t[0:2], t[:, 2:5], t[2]):
        with pytest.raises(TypeError, match="dst is a slice or view of a larger tensor"):
            Memcpy2D("write")(view, src, int64(0), int64(0))
    with pytest.raises(TypeError, match="dst must be a Tensor or Parameter"):
        Memcpy2D("write")(np.zeros((4, 6), np.float32), src, int64(0), int64(0))
    assert not t.asnumpy().any()


def test_write_cost_does_not_grow_with_the_destination(route):
    """One row into 1 MiB and into 64 MiB Parameters costs about the same in GRAPH_MODE (a copy of the
    destination would cost 64 times more)."""
    ms.set_context(mode=ms.GRAPH_MODE)

    class Row(nn.Cell):
        def __init__(self, mib):
            super().__init__()
            self.cache = ms.Parameter(ms.Tensor(np.zeros((mib * 256, 1024), np.float32)), name="cache")
            self.write = Memcpy2D("write")

        def construct(self, src, r):
            return self.write(self.cache, src, r, int64(0))

    src = ms.Tensor(np.ones((1, 1024), np.float32))
    medians = []
    for mib in (1, 64):
        net = Row(mib)
        net(src, int64(0)).asnumpy()
        times = []
        for i in range(15):
            start = time.perf_counter()
            net(src, int64(i)).asnumpy()
            times.append(time.perf_counter() - start)
        assert net.cache[:15].asnumpy().sum() == 15 * 1024
        medians.append(float(np.median(times)))
    assert medians[1] < 4 * medians[0] + 0.002, medians
    ms.set_context(mode=ms.PYNATIVE_MODE)


# ---- SwapBlocks / CopyBlocks ---------------------------------------------------------------------

NUM_BLOCKS, BLOCK_SHAPE, HOST_BLOCKS = 6, (3, 5), 4


def make_caches(dtype, num_caches=2, num_blocks=NUM_BLOCKS, block_shape=BLOCK_SHAPE, seed=10):
    pairs = [make(dtype, (num_blocks, *block_shape), seed=seed + l) for l in range(num_caches)]
    return [t for t, _ in pairs], [v for _, v in pairs]


def host_buffer_for(dtype, num_caches=2, host_blocks=HOST_BLOCKS, block_shape=BLOCK_SHAPE, slack=5):
    """A HostBuffer of num_caches x host_blocks blocks plus a few bytes that hold no whole block."""
    bb = int(np.prod(block_shape)) * itemsize(dtype)
    buf = HostBuffer(num_caches * host_blocks * bb + slack)
    buf.numpy(np.uint8)[:] = 0
    return buf, bb


@pytest.mark.parametrize("dtype", DTYPES)
def test_swap_out_swap_in_copy_every_dtype(ms_mode, dtype):
    tensors, values = make_caches(dtype)
    caches = parameters(*tensors)
    addresses = [c.data_ptr() for c in caches]
    buf, bb = host_buffer_for(dtype)
    with buf:
        out_map = np.array([[1, 0], [4, 3], [2, 1]], np.int64)
        n = run("cell", SwapBlocks("d2h", buf, num_caches=2), caches, ms.Tensor(out_map))
        assert n.asnumpy().tolist() == [2 * 3 * bb]
        host = host_cache(buf, 2, bb)
        for l in range(2):
            ref = block_bytes_of(dtype, values[l])
            for dev, hst in out_map:
                np.testing.assert_array_equal(host[l, hst], ref[dev])
            assert not host[l, 2].any()  # an unmapped host block is untouched

        in_map = np.array([[0, 5], [3, 0]], np.int64)
        n = run("cell", SwapBlocks("h2d", buf, num_caches=2), caches, ms.Tensor(in_map))
        assert n.asnumpy().tolist() == [2 * 2 * bb]
        expected = [v.copy() for v in values]
        for l in range(2):
            expected[l][5], expected[l][0] = values[l][1], values[l][4]

        n = run("cell", CopyBlocks(num_caches=2), caches, ms.Tensor(np.array([[2, 3], [5, 1]], np.int64)))
        assert n.asnumpy().tolist() == [2 * 2 * bb]
        for l in range(2):
            expected[l][3], expected[l][1] = expected[l][2].copy(), expected[l][5].copy()
            np.testing.assert_array_equal(as_numpy(caches[l]), widen(dtype, expected[l]))
            assert caches[l].data_ptr() == addresses[l]


def test_block_ops_in_every_style(ms_mode, style):
    tensors, values = make_caches("float32", num_caches=3)
    caches = parameters(*tensors)
    addresses = [c.data_ptr() for c in caches]
    buf, bb = host_buffer_for("float32", num_caches=3)
    with buf:
        run(style, SwapBlocks("d2h", buf, num_caches=3), caches, ms.Tensor(np.array([[5, 3], [0, 0]], np.int64)))
        run(style, SwapBlocks("h2d", buf, num_caches=3), caches, ms.Tensor(np.array([[3, 1], [0, 2]], np.int64)))
        n = run(style, CopyBlocks(num_caches=3), caches, ms.Tensor(np.array([[1, 4]], np.int64)))
        assert n.asnumpy().tolist() == [3 * bb]
        for l in range(3):
            expected = values[l].copy()
            expected[1], expected[2], expected[4] = values[l][5], values[l][0], values[l][5]
            np.testing.assert_array_equal(caches[l].asnumpy(), expected)
            assert caches[l].data_ptr() == addresses[l]


@pytest.mark.parametrize("form", ["tensor", "numpy_int64", "numpy_int32", "list", "tuple_of_tuples"])
def test_eager_mapping_forms(route, form):
    ms.set_context(mode=ms.PYNATIVE_MODE)
    tensors, values = make_caches("float16")
    buf, bb = host_buffer_for("float16")
    pairs = [[3, 2], [0, 1]]
    mapping = {"tensor": ms.Tensor(np.array(pairs, np.int64)), "numpy_int64": np.array(pairs, np.int64),
               "numpy_int32": np.array(pairs, np.int32), "list": pairs,
               "tuple_of_tuples": tuple(tuple(p) for p in pairs)}[form]
    with buf:
        n = SwapBlocks("d2h", buf, num_caches=2)(*tensors, mapping)
        assert n.asnumpy().tolist() == [2 * 2 * bb]
        host = host_cache(buf, 2, bb)
        for l in range(2):
            np.testing.assert_array_equal(host[l, 2], block_bytes_of("float16", values[l])[3])
            np.testing.assert_array_equal(host[l, 1], block_bytes_of("float16", values[l])[0])


def test_pynative_writes_plain_tensors_in_place(route):
    """Eagerly, SwapBlocks("h2d") and CopyBlocks write plain Tensors in place too (their own storage)."""
    ms.set_context(mode=ms.PYNATIVE_MODE)
    tensors, values = make_caches("int32")
    addresses = [t.data_ptr() for t in tensors]
    buf, bb = host_buffer_for("int32")
    with buf:
        host = host_cache(buf, 2, bb)
        host[:, 1] = 9
        SwapBlocks("h2d", buf, num_caches=2)(*tensors, [[1, 4]])
        CopyBlocks(num_caches=2)(*tensors, np.array([[4, 0]]))
        for t, v, address in zip(tensors, values, addresses):
            expected = v.copy()
            expected[4] = expected[0] = np.frombuffer(np.full(bb, 9, np.uint8).tobytes(), np.int32).reshape(3, 5)
            np.testing.assert_array_equal(t.asnumpy(), expected)
            assert t.data_ptr() == address


@pytest.mark.parametrize("empty", [[], np.zeros((0, 2), np.int64), ms.Tensor(np.zeros((0, 2), np.int64))],
                         ids=["list", "numpy", "tensor"])
def test_empty_mapping_moves_nothing(ms_mode, empty):
    tensors, values = make_caches("int8")
    caches = parameters(*tensors)
    buf, _ = host_buffer_for("int8")
    with buf:
        style = "eager" if not isinstance(empty, ms.Tensor) else "cell"
        for op in (SwapBlocks("d2h", buf, num_caches=2), SwapBlocks("h2d", buf, num_caches=2),
                   CopyBlocks(num_caches=2)):
            assert run(style, op, caches, empty).asnumpy().tolist() == [0]
        assert not buf.numpy(np.uint8).any()
        for c, v in zip(caches, values):
            np.testing.assert_array_equal(c.asnumpy(), v)


def test_many_blocks_cross_the_batch_limit(ms_mode):
    """2 caches x 2500 pairs = 5000 items: more than one batch call of 4096; the mapping reverses the
    block order so that no two items merge."""
    num_blocks = 2600
    tensors, values = make_caches("float32", num_blocks=num_blocks, block_shape=(2,))
    caches = parameters(*tensors)
    mapping = np.stack([np.arange(2500)[::-1], np.arange(2500)], axis=1).astype(np.int64)
    buf, bb = host_buffer_for("float32", host_blocks=2500, block_shape=(2,))
    with buf:
        run("cell", SwapBlocks("d2h", buf, num_caches=2), caches, ms.Tensor(mapping))
        host = buf.numpy(np.float32, shape=(2, 2500, 2))
        for l in range(2):
            np.testing.assert_array_equal(host[l], values[l][2499::-1])
        host[:] = -host  # swap back in, negated, onto other blocks
        back = np.stack([np.arange(2500), np.arange(100, 2600)], axis=1).astype(np.int64)
        run("cell", SwapBlocks("h2d", buf, num_caches=2), caches, ms.Tensor(back))
        copy_map = np.stack([np.arange(100, 2600, 2), np.arange(1, 100, 2).tolist() * 25], axis=1)[:50]
        run("cell", CopyBlocks(num_caches=2), caches, ms.Tensor(copy_map.astype(np.int64)))
        for l in range(2):
            expected = values[l].copy()
            expected[100:] = -values[l][2499::-1]
            expected[copy_map[:, 1]] = expected[copy_map[:, 0]]
            np.testing.assert_array_equal(caches[l].asnumpy(), expected)


def test_adjacent_blocks_and_single_cache(ms_mode):
    """Runs of adjacent blocks (merged into one copy each) give the same result as single blocks."""
    tensors, values = make_caches("int16", num_caches=1, num_blocks=10)
    caches = parameters(*tensors)
    buf, bb = host_buffer_for("int16", num_caches=1, host_blocks=10)
    with buf:
        run("cell", SwapBlocks("d2h", buf, num_caches=1), caches,
            ms.Tensor(np.array([[2, 5], [3, 6], [4, 7], [9, 0]], np.int64)))
        host = host_cache(buf, 1, bb)[0]
        ref = block_bytes_of("int16", values[0])
        np.testing.assert_array_equal(host[5:8], ref[2:5])
        np.testing.assert_array_equal(host[0], ref[9])
        run("cell", CopyBlocks(num_caches=1), caches, ms.Tensor(np.array([[0, 6], [1, 7], [2, 8]], np.int64)))
        expected = values[0].copy()
        expected[6:9] = values[0][0:3]
        np.testing.assert_array_equal(caches[0].asnumpy(), expected)


def test_one_source_block_to_several_destinations(ms_mode):
    """vLLM's fork: a block copied to several blocks in one call (only destinations must be unique)."""
    tensors, values = make_caches("uint8", num_caches=2)
    caches = parameters(*tensors)
    buf, bb = host_buffer_for("uint8")
    with buf:
        run("cell", CopyBlocks(num_caches=2), caches, ms.Tensor(np.array([[0, 3], [0, 4], [1, 5]], np.int64)))
        run("cell", SwapBlocks("d2h", buf, num_caches=2), caches, ms.Tensor(np.array([[2, 0], [2, 3]], np.int64)))
        host = host_cache(buf, 2, bb)
        for l in range(2):
            expected = values[l].copy()
            expected[3] = expected[4] = values[l][0]
            expected[5] = values[l][1]
            np.testing.assert_array_equal(caches[l].asnumpy(), expected)
            np.testing.assert_array_equal(host[l, [0, 3]], block_bytes_of("uint8", values[l])[[2, 2]])


def test_constant_bad_mapping_fails_before_any_copy(route):
    """The aot route refuses a constant mapping while compiling, the op_def route's kernel at launch."""
    ms.set_context(mode=ms.GRAPH_MODE)

    class Constant(nn.Cell):
        def __init__(self, caches):
            super().__init__()
            self.caches = ms.ParameterTuple(caches)
            self.mapping = ms.Tensor(np.array([[0, 1], [2, 1]], np.int64))
            self.copy = CopyBlocks(num_caches=2)

        def construct(self):
            return self.copy(self.caches[0], self.caches[1], self.mapping)

    tensors, values = make_caches("float32")
    caches = parameters(*tensors)
    with pytest.raises(ValueError, match=r"block_mapping: device block 1 is written twice \(pairs 0 and 1\)"):
        Constant(caches)()
    for c, v in zip(caches, values):
        np.testing.assert_array_equal(c.asnumpy(), v)
    ms.set_context(mode=ms.PYNATIVE_MODE)


def test_block_ops_then_builtin_in_pynative_see_the_new_blocks(route):
    """Built-in ops chained after each in-place swap-in and copy read the written blocks."""
    ms.set_context(mode=ms.PYNATIVE_MODE)
    caches = parameters(ms.Tensor(np.zeros((16, 64, 32), np.float32)), ms.Tensor(np.zeros((16, 64, 32), np.float32)))
    buf, bb = host_buffer_for("float32", host_blocks=16, block_shape=(64, 32))
    with buf:
        host = buf.numpy(np.float32, shape=(2, 16, 64, 32))
        host[:] = np.arange(16, dtype=np.float32)[None, :, None, None] + 1
        swap_in, copy = SwapBlocks("h2d", buf, num_caches=2), CopyBlocks(num_caches=2)
        for i in range(40):
            a, b = i % 16, (i * 7 + 3) % 16
            swap_in(*caches, [[a, b]])
            got = ops.reduce_sum(ops.mul(caches[1], 1.0), (1, 2)).asnumpy()
            assert got[b] == pytest.approx(2048 * (a + 1)), i
            c = (b + 5) % 16
            copy(*caches, [[b, c]])
            got = ops.reduce_sum(ops.add(caches[0], 0.0), (1, 2)).asnumpy()
            assert got[c] == pytest.approx(2048 * (a + 1)), i


def test_swap_out_ordered_with_a_preceding_write_in_graph(ms_mode):
    """In one graph: a row written in place, then the block swapped out, then swapped back elsewhere."""
    class Step(nn.Cell):
        def __init__(self, buf):
            super().__init__()
            self.k = ms.Parameter(ms.Tensor(np.zeros((4, 2, 3), np.float32)), name="k")
            self.write = Memcpy2D("write")
            self.out = SwapBlocks("d2h", buf, num_caches=1)
            self.back = SwapBlocks("h2d", buf, num_caches=1)

        def construct(self, row, r, out_map, in_map):
            self.write(self.k, row, r, int64(0))
            self.out(self.k, out_map)
            return self.back(self.k, in_map)

    buf, _ = host_buffer_for("float32", num_caches=1, host_blocks=2, block_shape=(2, 3))
    with buf:
        step = Step(buf)
        step(ms.Tensor(np.full((1, 3), 5, np.float32)), int64(3), ms.Tensor(np.array([[1, 0]], np.int64)),
             ms.Tensor(np.array([[0, 2]], np.int64)))
        expected = np.zeros((4, 2, 3), np.float32)
        expected[1, 1] = 5
        expected[2, 1] = 5
        np.testing.assert_array_equal(step.k.asnumpy(), expected)


def test_block_ops_cost_does_not_grow_with_the_caches(route):
    """Moving 4 blocks of 4 KiB in place costs about the same in 1 MiB and in 64 MiB caches in GRAPH_MODE
    (a copy of the caches would cost 64 times more), and the caches keep their storage."""
    ms.set_context(mode=ms.GRAPH_MODE)

    class Step(nn.Cell):
        def __init__(self, mib, buf):
            super().__init__()
            self.k = ms.Parameter(ms.Tensor(np.zeros((mib * 256, 1024), np.float32)), name="k")
            self.v = ms.Parameter(ms.Tensor(np.zeros((mib * 256, 1024), np.float32)), name="v")
            self.swap_in = SwapBlocks("h2d", buf, num_caches=2)
            self.copy = CopyBlocks(num_caches=2)

        def construct(self, in_map, copy_map):
            self.swap_in(self.k, self.v, in_map)
            return self.copy(self.k, self.v, copy_map)

    buf, _ = host_buffer_for("float32", host_blocks=4, block_shape=(1024,))
    with buf:
        buf.numpy(np.float32)[:8 * 1024] = 1
        medians = []
        for mib in (1, 64):
            net = Step(mib, buf)
            addresses = (net.k.data_ptr(), net.v.data_ptr())
            times = []
            for i in range(12):
                in_map = ms.Tensor(np.array([[b, 8 * i + b] for b in range(4)], np.int64))
                copy_map = ms.Tensor(np.array([[8 * i + b, 8 * i + 4 + b] for b in range(4)], np.int64))
                start = time.perf_counter()
                net(in_map, copy_map).asnumpy()
                times.append(time.perf_counter() - start)
            assert net.k[:96].asnumpy().sum() == net.v[:96].asnumpy().sum() == 96 * 1024
            assert (net.k.data_ptr(), net.v.data_ptr()) == addresses
            medians.append(float(np.median(times[2:])))
    assert medians[1] < 4 * medians[0] + 0.002, medians
    ms.set_context(mode=ms.PYNATIVE_MODE)


# ---- bad input: ValueError / TypeError naming the argument, nothing written -----------------------

NOTHING = "; nothing was copied"
# (kind, mapping, error, the message after "ms_memcopy <label>: ")
BAD_MAPPINGS = [
    ("d2h", [[0, 0], [6, 1]], ValueError, "block_mapping[1][0] = 6: device block out of range [0, 6)" + NOTHING),
    ("d2h", [[0, 4]], ValueError, "block_mapping[0][1] = 4: host block out of range [0, 4)" + NOTHING),
    ("d2h", [[-1, 0]], ValueError, "block_mapping[0][0] = -1: device block out of range [0, 6)" + NOTHING),
    ("d2h", [[0, 1], [2, 3], [4, 1]], ValueError,
     "block_mapping: host block 1 is written twice (pairs 0 and 2)" + NOTHING),
    ("h2d", [[4, 0]], ValueError, "block_mapping[0][0] = 4: host block out of range [0, 4)" + NOTHING),
    ("h2d", [[0, 2], [1, 2]], ValueError, "block_mapping: device block 2 is written twice (pairs 0 and 1)" + NOTHING),
    ("copy", [[0, 6]], ValueError, "block_mapping[0][1] = 6: device block out of range [0, 6)" + NOTHING),
    ("copy", [[0, 1], [2, 1]], ValueError, "block_mapping: device block 1 is written twice (pairs 0 and 1)" + NOTHING),
    ("copy", [[0, 1], [1, 2]], ValueError,
     "block_mapping: block 1 is read by pair 1 and written by pair 0 (copies run in no order)" + NOTHING),
    ("copy", [[3, 3]], ValueError,
     "block_mapping: block 3 is read by pair 0 and written by pair 0 (copies run in no order)" + NOTHING),
    ("d2h", [[0, 1, 2]], ValueError, "block_mapping must have shape [n, 2], got [1, 3]"),
    ("d2h", [0, 1], ValueError, "block_mapping must have shape [n, 2], got [2]"),
    ("d2h", [[0, 1.5]], TypeError, "block_mapping must be a list of (source block, destination block) pairs of ints"),
    ("d2h", np.array([0, 1], np.int64), ValueError, "block_mapping must have shape [n, 2], got [2]"),
    ("d2h", np.array([[0.0, 1.0]]), TypeError, "block_mapping must hold integers, got a numpy array of float64"),
    ("d2h", ms.Tensor(np.array([[0, 1]], np.int32)), TypeError, "block_mapping must be an int64 tensor, got int32"),
    ("h2d", "0,1", TypeError, "block_mapping must be an int64 Tensor, a numpy array or a list of pairs, not str"),
]

LABELS = {"d2h": "SwapBlocks(d2h)", "h2d": "SwapBlocks(h2d)", "copy": "CopyBlocks"}


def block_op(kind, buf, num_caches=2):
    return CopyBlocks(num_caches=num_caches) if kind == "copy" else SwapBlocks(kind, buf, num_caches=num_caches)


def refused_with_nothing_written(kind, call, error, message):
    """call(op, caches) raises exactly error and "ms_memcopy <label>: <message>", and neither the caches
    nor the HostBuffer change."""
    tensors, values = make_caches("float32")
    caches = parameters(*tensors)
    buf, _ = host_buffer_for("float32")
    with buf:
        buf.numpy(np.uint8)[:] = 7
        with raises_exactly(error, f"ms_memcopy {LABELS[kind]}: {message}"):
            call(block_op(kind, buf), caches)
        assert (buf.numpy(np.uint8) == 7).all()
        for c, v in zip(caches, values):
            np.testing.assert_array_equal(c.asnumpy(), v)


@pytest.mark.parametrize("kind,mapping,error,message", BAD_MAPPINGS)
def test_bad_mapping_eager_writes_nothing(route, kind, mapping, error, message):
    ms.set_context(mode=ms.PYNATIVE_MODE)
    refused_with_nothing_written(kind, lambda op, caches: op(*caches, mapping), error, message)


def _first_graph_case_per_kind():
    # The kernel's checks are the body the eager test runs for every bad mapping; in a graph what is
    # tested is the path (a graph input reaching the kernel, its error surfacing, nothing written), once
    # per op: a failing graph launch costs MindSpore about 3 s.
    cases, kinds = [], set()
    for b in BAD_MAPPINGS:
        if b[2] is ValueError and isinstance(b[1], list) and np.shape(b[1])[1:] == (2,) and b[0] not in kinds:
            kinds.add(b[0])
            cases.append(b)
    return cases


@pytest.mark.parametrize("kind,mapping,error,message", _first_graph_case_per_kind())
def test_bad_mapping_in_a_graph_is_caught_by_the_kernel(route, kind, mapping, error, message):
    """A mapping held in a graph input reaches the kernel, which checks it whole before any copy and
    raises the same error as an eager call."""
    ms.set_context(mode=ms.GRAPH_MODE)
    refused_with_nothing_written(kind, lambda op, caches: InPlace(op, caches)(ms.Tensor(np.array(mapping, np.int64))),
                                 error, message)
    ms.set_context(mode=ms.PYNATIVE_MODE)


class InPlaceConstant(nn.Cell):
    """op(*params, mapping) with the mapping a constant of the graph."""

    def __init__(self, op, params, mapping):
        super().__init__()
        self.op = op
        self.params = ms.ParameterTuple(params)
        self.mapping = mapping

    def construct(self):
        return self.op(*self.params, self.mapping)


@pytest.mark.parametrize("kind,mapping,error,message", _first_graph_case_per_kind())
def test_constant_bad_mapping_refused_while_compiling(route, ms_mode, kind, mapping, error, message):
    """A constant bad mapping fails the graph's compilation (GRAPH_MODE, ms.jit) with the kernel's check:
    no kernel launches, nothing is written."""
    def compile_and_run(op, caches):
        net = InPlaceConstant(op, caches, ms.Tensor(np.array(mapping, np.int64)))
        before = _kernels_lib.launch_counts()
        try:
            return net() if ms_mode == "graph" else ms.jit(net.construct)()
        finally:
            assert _kernels_lib.launch_counts() == before

    refused_with_nothing_written(kind, compile_and_run, error, message)


@pytest.mark.parametrize("kind", ["d2h", "h2d", "copy"])
def test_caches_must_match(route, ms_mode, kind):
    """Caches of another number of blocks: the kernel's check (ValueError, naming the shapes)."""
    buf, _ = host_buffer_for("float32")
    mapping = ms.Tensor(np.array([[0, 1]], np.int64))
    a = ms.Tensor(np.zeros((6, 3, 5), np.float32))
    style = "cell" if ms_mode == "graph" else "eager"
    prefix = f"ms_memcopy {LABELS[kind]}: "
    with buf:
        with raises_exactly(ValueError, prefix + "caches[1] has shape [5, 3, 5] but caches[0] has [6, 3, 5]; all "
                                                 "caches of one call have the same number of blocks (first "
                                                 "dimension)"):
            run(style, block_op(kind, buf), parameters(a, ms.Tensor(np.zeros((5, 3, 5), np.float16))), mapping)
        with raises_exactly(TypeError, prefix + "built for num_caches=2 and takes 2 caches plus block_mapping, got 2 "
                                                "arguments"):
            block_op(kind, buf)(a, mapping)
        with raises_exactly(ValueError, prefix + "caches[0]: a block of shape [6, 0] holds no bytes"):
            run(style, block_op(kind, buf, num_caches=1), parameters(ms.Tensor(np.zeros((6, 0), np.float32))),
                mapping)
        assert not buf.numpy(np.uint8).any()


def test_constructor_arguments(route):
    with HostBuffer(64) as buf:
        with pytest.raises(ValueError, match="direction must be one of"):
            SwapBlocks("d2d", buf, num_caches=1)
        with pytest.raises(TypeError, match="num_caches must be an int"):
            SwapBlocks("d2h", buf, num_caches=1.0)
        with pytest.raises(ValueError, match="num_caches must be >= 1"):
            CopyBlocks(num_caches=0)
        with pytest.raises(ValueError, match="host_layout must be one of"):
            SwapBlocks("d2h", buf, num_caches=1, host_layout="layer_major")
        with pytest.raises(ValueError, match="blocks_per_host_block must be >= 1"):
            SwapBlocks("d2h", buf, num_caches=1, blocks_per_host_block=0)
        with pytest.raises(TypeError, match="host_buffer must be an ms_memcopy.HostBuffer"):
            SwapBlocks("h2d", bytearray(64), num_caches=1)
    with pytest.raises(ValueError, match="the HostBuffer is closed"):
        SwapBlocks("h2d", buf, num_caches=1)


def test_swap_in_needs_parameters_in_graphs_and_swap_out_does_not(route):
    ms.set_context(mode=ms.GRAPH_MODE)
    tensors, values = make_caches("float32")
    buf, bb = host_buffer_for("float32")
    mapping = ms.Tensor(np.array([[1, 2]], np.int64))

    class Plain(nn.Cell):
        def __init__(self, op):
            super().__init__()
            self.op = op

        def construct(self, a, b, m):
            return self.op(a, b, m)

    with buf:
        with pytest.raises(TypeError, match=r"caches\[0\] must be a Parameter in graphs"):
            Plain(SwapBlocks("h2d", buf, num_caches=2))(*tensors, mapping)
        with pytest.raises(TypeError, match=r"caches\[0\] must be a Parameter in graphs"):
            Plain(CopyBlocks(num_caches=2))(*tensors, mapping)
        assert Plain(SwapBlocks("d2h", buf, num_caches=2))(*tensors, mapping).asnumpy().tolist() == [2 * bb]
        np.testing.assert_array_equal(host_cache(buf, 2, bb)[1, 2], block_bytes_of("float32", values[1])[1])
    ms.set_context(mode=ms.PYNATIVE_MODE)


# ---- caches of several block shapes and dtypes; host layouts --------------------------------------

# (dtype, shape) of each cache: one number of blocks (6), any block shape and dtype.
MIXED_CASES = {
    "mla_latent_rope": [("bfloat16", (6, 2, 512)), ("bfloat16", (6, 2, 64))],
    "int8_k_bf16_v": [("int8", (6, 2, 1, 512)), ("bfloat16", (6, 2, 1, 64))],
    # vLLM's own K and V: [num_blocks, block_size, num_kv_heads, head_size]
    "vllm_kv": [("float16", (6, 4, 2, 8)), ("float16", (6, 4, 2, 8))],
}


def mixed_caches(case, seed=30):
    specs = MIXED_CASES[case]
    made = [make(dtype, shape, seed=seed + l) for l, (dtype, shape) in enumerate(specs)]
    refs = [block_bytes_of(dtype, v) for (dtype, _), (_, v) in zip(specs, made)]
    return parameters(*[t for t, _ in made]), refs, [d for d, _ in specs]


def cache_bytes(dtype, cache):
    """numpy [num_blocks, block_bytes] of a cache's bytes as MindSpore stores them."""
    return block_bytes_of(dtype, as_numpy(cache))


def host_slots(buf, block_bytes, layout, per_host_block):
    """Per cache, numpy [H * F, b_l] views of the HostBuffer: row s is slot s (docs/primitives.md)."""
    f, total = per_host_block, sum(block_bytes)
    h = buf.nbytes // (f * total)
    used = buf.numpy(np.uint8)[:h * f * total]
    edges = np.cumsum([0, *block_bytes])
    if layout == "cache_major":
        return [used[h * f * a:h * f * b].reshape(h * f, b - a) for a, b in zip(edges, edges[1:])]
    blocks = used.reshape(h, f * total)
    return [blocks[:, f * a:f * b].reshape(h * f, b - a) for a, b in zip(edges, edges[1:])]


def swap_round_trip(ms_mode, case, layout="cache_major", per_host_block=1, host_blocks=3):
    """d2h, h2d and CopyBlocks over the caches of case: every cache's blocks against numpy."""
    caches, refs, dtypes = mixed_caches(case)
    bb = [r.shape[1] for r in refs]
    # one device block of every cache more than the host blocks hold: F matters in either layout
    buf = HostBuffer(host_blocks * per_host_block * sum(bb) + sum(bb) + 7)
    style = "cell" if ms_mode == "graph" else "eager"
    kwargs = {"num_caches": 2, "host_layout": layout, "blocks_per_host_block": per_host_block}
    with buf:
        buf.numpy(np.uint8)[:] = 0
        last = host_blocks * per_host_block - 1
        out_map = np.array([[4, 0], [1, last], [5, 1]], np.int64)  # (device block, host slot)
        n = run(style, SwapBlocks("d2h", buf, **kwargs), caches, ms.Tensor(out_map))
        assert n.asnumpy().tolist() == [3 * sum(bb)]
        slots = host_slots(buf, bb, layout, per_host_block)
        for l in range(2):
            expected = np.zeros_like(slots[l])
            expected[out_map[:, 1]] = refs[l][out_map[:, 0]]
            np.testing.assert_array_equal(slots[l], expected)
        assert not buf.numpy(np.uint8)[-7:].any()

        in_map = np.array([[last, 0], [0, 2]], np.int64)  # (host slot, device block)
        n = run(style, SwapBlocks("h2d", buf, **kwargs), caches, ms.Tensor(in_map))
        assert n.asnumpy().tolist() == [2 * sum(bb)]
        n = run(style, CopyBlocks(num_caches=2), caches, ms.Tensor(np.array([[2, 3]], np.int64)))
        assert n.asnumpy().tolist() == [sum(bb)]
        for l in range(2):
            expected = refs[l].copy()
            expected[0], expected[2], expected[3] = refs[l][1], refs[l][4], refs[l][4]
            np.testing.assert_array_equal(cache_bytes(dtypes[l], caches[l]), expected)


@pytest.mark.parametrize("case", list(MIXED_CASES))
def test_caches_of_several_block_shapes_and_dtypes(ms_mode, case):
    swap_round_trip(ms_mode, case)


@pytest.mark.parametrize("layout,per_host_block", [("block_major", 1), ("block_major", 2), ("cache_major", 2)])
def test_host_layouts(ms_mode, layout, per_host_block):
    swap_round_trip(ms_mode, "int8_k_bf16_v", layout, per_host_block)


def test_block_major_host_block_is_one_range(route):
    """Host block h of the block-major layout is bytes [h * F * B, (h + 1) * F * B): cache 0's F blocks,
    then cache 1's, each F blocks in slot order."""
    ms.set_context(mode=ms.PYNATIVE_MODE)
    caches, refs, _ = mixed_caches("int8_k_bf16_v")
    bb = [r.shape[1] for r in refs]
    with HostBuffer(2 * 2 * sum(bb)) as buf:
        op = SwapBlocks("d2h", buf, num_caches=2, host_layout="block_major", blocks_per_host_block=2)
        assert op.host_blocks(bb) == 2
        op(*caches, np.array([[3, 2], [5, 3]], np.int64))  # host block 1 <- device blocks 3 and 5
        expected = np.concatenate([refs[0][3], refs[0][5], refs[1][3], refs[1][5]])
        np.testing.assert_array_equal(buf.numpy(np.uint8)[2 * sum(bb):], expected)


def test_mixed_caches_refused_with_nothing_written(route, ms_mode):
    """Another number of blocks, a host slot out of range, a HostBuffer holding no host block: the
    kernel's check, the same text in both modes; nothing written."""
    style = "cell" if ms_mode == "graph" else "eager"
    caches, refs, dtypes = mixed_caches("int8_k_bf16_v")
    bb = [r.shape[1] for r in refs]
    fewer = parameters(ms.Tensor(np.zeros((6, 2, 1, 512), np.int8)), ms.Tensor(np.zeros((5, 2, 1, 64), np.float16)))
    with HostBuffer(3 * sum(bb) + 5) as buf, HostBuffer(sum(bb) - 1) as small:
        buf.numpy(np.uint8)[:] = 7
        small.numpy(np.uint8)[:] = 7
        prefix = "ms_memcopy SwapBlocks(d2h): "
        with raises_exactly(ValueError, prefix + "caches[1] has shape [5, 2, 1, 64] but caches[0] has [6, 2, 1, 512]; "
                                                 "all caches of one call have the same number of blocks (first "
                                                 "dimension)"):
            run(style, SwapBlocks("d2h", buf, num_caches=2), fewer, ms.Tensor(np.array([[0, 0]], np.int64)))
        with raises_exactly(ValueError, "ms_memcopy SwapBlocks(h2d): block_mapping[1][0] = 2: host block out of range "
                                        "[0, 2); nothing was copied"):  # one host block of 2 slots
            run(style, SwapBlocks("h2d", buf, num_caches=2, blocks_per_host_block=2), caches,
                ms.Tensor(np.array([[1, 0], [2, 1]], np.int64)))
        with raises_exactly(ValueError, prefix + f"host_buffer: its {sum(bb) - 1} bytes hold no host block: a host "
                                                 f"block holds 1 block(s) of each of the 2 caches; give a HostBuffer "
                                                 f"of at least {sum(bb)} bytes (host blocks x blocks_per_host_block x "
                                                 "the caches' block bytes)"):
            run(style, SwapBlocks("d2h", small, num_caches=2, host_layout="block_major"), caches,
                ms.Tensor(np.array([[0, 0]], np.int64)))
        assert (buf.numpy(np.uint8) == 7).all() and (small.numpy(np.uint8) == 7).all()
        for l in range(2):
            np.testing.assert_array_equal(cache_bytes(dtypes[l], caches[l]), refs[l])


# ---- every SoC profile ---------------------------------------------------------------------------

PROFILE_SCRIPT = r'''
import numpy as np, mindspore as ms
from mindspore import nn
from ms_memcopy import HostBuffer, runtime
from ms_memcopy.ops import CopyBlocks, Memcpy2D, SwapBlocks
from ms_memcopy.ops._dtypes import itemsize

assert runtime.soc_profile() == "{profile}", runtime.soc_profile()
rng = np.random.default_rng(0)
k0 = rng.standard_normal((6, 4, 8)).astype(np.float32)
k1 = rng.integers(-9, 9, (6, 4, 8)).astype(np.float32)
row = np.full((2, 8), 3, np.float32)
i64 = lambda *v: ms.Tensor(np.array(v, np.int64))
pairs = lambda *v: ms.Tensor(np.array(v, np.int64).reshape(-1, 2))

class Step(nn.Cell):
    def __init__(self, buf):
        super().__init__()
        self.k0 = ms.Parameter(ms.Tensor(k0), name="k0")
        self.k1 = ms.Parameter(ms.Tensor(k1), name="k1")
        self.write = Memcpy2D("write")
        self.out = SwapBlocks("d2h", buf, num_caches=2)
        self.back = SwapBlocks("h2d", buf, num_caches=2)
        self.copy = CopyBlocks(num_caches=2)

    def construct(self, row, out_map, in_map, copy_map):
        self.write(self.k1, row, i64(5), i64(0))
        self.out(self.k0, self.k1, out_map)
        self.back(self.k0, self.k1, in_map)
        return self.copy(self.k0, self.k1, copy_map)

for mode in (ms.GRAPH_MODE, ms.PYNATIVE_MODE):
    ms.set_context(mode=mode)
    with HostBuffer(2 * 3 * 128) as buf:
        step = Step(buf)
        n = step(ms.Tensor(row), pairs(1, 0, 2, 2), pairs(0, 4, 2, 5), pairs(3, 0)).asnumpy()
        assert n.tolist() == [2 * 128], n
        expected = [k0.copy(), k1.copy()]
        expected[1].reshape(24, 8)[5:7] = row
        host = buf.numpy(np.float32, shape=(2, 3, 4, 8))
        for l in range(2):
            np.testing.assert_array_equal(host[l, 0], expected[l][1])
            np.testing.assert_array_equal(host[l, 2], expected[l][2])
            expected[l][4], expected[l][5] = expected[l][1], expected[l][2]
            expected[l][0] = expected[l][3]
        np.testing.assert_array_equal(step.k0.asnumpy(), expected[0])
        np.testing.assert_array_equal(step.k1.asnumpy(), expected[1])
print("OK")
'''


@pytest.mark.parametrize("profile", PROFILES_WITH_OTHER_FEATURES)
def test_in_place_ops_on_every_profile(run_python, route, profile):
    """The same results whichever calls the chip has (batch, descriptors, 2-D device-to-device copies): each
    profile whose features differ from the default one's, which the tests above run in-process."""
    check_on_profile(run_python, PROFILE_SCRIPT, profile)


def test_an_eager_swap_out_of_strided_views_copies_their_values(route):
    """Caches that are strided views (a column slice, a transpose) are read as their values, as numpy
    sees them: the eager call makes each dense first, the others (whole, dense) pass as they are."""
    ms.set_context(mode=ms.PYNATIVE_MODE)
    base = np.arange(4 * 6, dtype=np.float32).reshape(4, 6)
    square = np.arange(100, 116, dtype=np.float32).reshape(4, 4)
    columns, transposed, whole = ms.Tensor(base)[:, ::2], ms.Tensor(square).T, ms.Tensor(base[:, :3].copy())
    assert not columns.is_contiguous() and not transposed.is_contiguous()
    buf = HostBuffer(3 * 4 * 64)
    try:
        nbytes = SwapBlocks("d2h", buf, num_caches=3)(columns, transposed, whole, [[2, 0], [0, 3]])
        buf.wait()
        host = buf.numpy()
        expected = (base[:, ::2], square.T, base[:, :3])
        widths = [v.shape[1] * 4 for v in expected]  # b_l, the bytes of a block of cache l
        host_blocks = buf.nbytes // sum(widths)  # H; cache_major: cache l from byte H * (b_0 + ... + b_{l-1})
        for l, (values, width) in enumerate(zip(expected, widths)):
            first = host_blocks * sum(widths[:l])
            got = host[first:first + 4 * width].view(np.float32).reshape(4, width // 4)
            np.testing.assert_array_equal(got[0], values[2])
            np.testing.assert_array_equal(got[3], values[0])
        assert int(nbytes.asnumpy().sum()) == 2 * sum(widths)
    finally:
        buf.close()
