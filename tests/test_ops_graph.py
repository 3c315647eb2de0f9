"""GRAPH_MODE semantics of the primitives: side-effect ordering and keeping (every writing op, through its
sample call in ms_memcopy/samples.py), gradients, dynamic shapes."""
import numpy as np
import pytest

import mindspore as ms
from mindspore import nn, ops

from ms_memcopy import HostBuffer, op_defs, samples
from ms_memcopy.ops import Memcpy2D, MemcpyBatch, MemcpyWithCondition, MemcpyWithDesc

from _ops_support import FnCell, int64


class WriteReadTwice(nn.Cell):
    """Two writes to the same HostBuffer bytes, each followed by a read, with no data dependency."""

    def __init__(self, buf):
        super().__init__()
        self.write = MemcpyBatch("d2h", buf, num_tensors=1)
        self.read = MemcpyBatch("h2d", buf, shapes=[(4,)], dtypes=[ms.float32])
        self.write2d = Memcpy2D("d2h", host_buffer=buf, pitch=16)
        self.read2d = Memcpy2D("h2d", host_buffer=buf, pitch=16, shape=(1, 4), dtype=ms.float32)

    def construct(self, a, b, off):
        self.write(a, off)
        (first,) = self.read(off)
        self.write2d(b.reshape(1, 4), off)
        second = self.read2d(off)
        return first, second


def test_side_effects_run_in_program_order(ms_mode):
    with HostBuffer(64) as buf:
        buf.numpy()[:] = 0
        a = np.arange(4, dtype=np.float32) + 1
        b = -a
        first, second = WriteReadTwice(buf)(ms.Tensor(a), ms.Tensor(b), int64(16))
        np.testing.assert_array_equal(first.asnumpy(), a)
        np.testing.assert_array_equal(second.asnumpy().reshape(-1), b)
        np.testing.assert_array_equal(buf.numpy(np.float32, (4,), offset=16), b)


class OutputUnused(nn.Cell):
    """op(*inputs) whose output the graph does not use; returns its last input (an int64 tensor) + 1."""

    def __init__(self, op):
        super().__init__()
        self.op = op

    def construct(self, *inputs):
        self.op(*inputs)  # the output is unused: an op with side effects must not be pruned
        return inputs[-1] + 1


def _writing_side_effect_ops():
    """The ops of configs/ops labelled side_effect_mem whose sample call writes (a HostBuffer or a target)."""
    with HostBuffer(samples.HOST_BUFFER_BYTES, pinned=False) as buf:
        return [name for name, d in op_defs.all_op_defs().items()
                if d.side_effect_mem and samples.sample(name, buf).writes]


@pytest.mark.parametrize("name", _writing_side_effect_ops())
def test_a_write_with_unused_output_is_kept(ms_mode, name):
    with HostBuffer(samples.HOST_BUFFER_BYTES) as buf:
        buf.numpy()[:] = 0x5A
        sample = samples.sample(name, buf)
        out = OutputUnused(sample.op)(*sample.inputs)
        np.testing.assert_array_equal(out.asnumpy(), sample.inputs[-1].asnumpy() + 1)
        sample.check_writes()


def test_the_ops_that_write_are_the_side_effect_ones():
    """Every op whose sample call writes (a HostBuffer or an in-place target) is labelled side_effect_mem,
    so the test above covers every op that writes (found from configs/ops, not listed)."""
    with HostBuffer(samples.HOST_BUFFER_BYTES, pinned=False) as buf:
        writing = [name for name in op_defs.all_op_defs() if samples.sample(name, buf).writes]
    assert sorted(_writing_side_effect_ops()) == sorted(writing)
    assert {"memcpy_batch_d2h", "swap_blocks_d2h", "swap_blocks_h2d", "copy_blocks", "memcpy_cond_d2h", "memcpy2d_d2h",
            "memcpy2d_write"} <= set(writing)


# -- gradients: each equals the gradient of the equivalent slicing or identity -------------------
def weighted_sum(y, weights):
    return (y * weights).sum()


def test_grad_extract_equals_slicing(ms_mode):
    x = ms.Tensor(np.random.default_rng(0).standard_normal((5, 7)).astype(np.float32))
    w = ms.Tensor(np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32))
    op = Memcpy2D("extract", height=2, width=3)

    def ours(x, w, r, c):
        return weighted_sum(op(x, r, c), w)

    def reference(x, w):
        return weighted_sum(x[1:3, 4:7], w)

    got = ms.grad(ours)(x, w, int64(1), int64(4))
    expected = ms.grad(reference)(x, w)
    np.testing.assert_allclose(got.asnumpy(), expected.asnumpy(), rtol=0, atol=0)
    assert np.count_nonzero(got.asnumpy()) == 6


def test_grad_insert_equals_scatter(ms_mode):
    rng = np.random.default_rng(2)
    dst = ms.Tensor(rng.standard_normal((4, 6)).astype(np.float32))
    src = ms.Tensor(rng.standard_normal((2, 2)).astype(np.float32))
    w = ms.Tensor(rng.standard_normal((4, 6)).astype(np.float32))
    op = Memcpy2D("insert")

    def ours(dst, src, w, r, c):
        return weighted_sum(op(dst, src, r, c), w)

    d_dst, d_src = ms.grad(ours, grad_position=(0, 1))(dst, src, w, int64(2), int64(3))
    mask = np.ones((4, 6), np.float32)
    mask[2:4, 3:5] = 0
    np.testing.assert_array_equal(d_dst.asnumpy(), w.asnumpy() * mask)
    np.testing.assert_array_equal(d_src.asnumpy(), w.asnumpy()[2:4, 3:5])


@pytest.mark.parametrize("make_op", [MemcpyWithDesc, lambda: MemcpyWithCondition("d2d")], ids=["desc", "cond"])
def test_grad_copy_equals_identity(ms_mode, make_op):
    x = ms.Tensor(np.random.default_rng(3).standard_normal((3, 4)).astype(np.float32))
    w = ms.Tensor(np.random.default_rng(4).standard_normal((3, 4)).astype(np.float32))
    op = make_op()

    def ours(x, w):
        return weighted_sum(op(x) * 2, w)

    def reference(x, w):
        return weighted_sum(ops.identity(x) * 2, w)

    np.testing.assert_array_equal(ms.grad(ours)(x, w).asnumpy(), ms.grad(reference)(x, w).asnumpy())


def test_grad_desc_window_equals_flat_slicing(ms_mode):
    x = ms.Tensor(np.random.default_rng(5).standard_normal((3, 5)).astype(np.float32))
    w = ms.Tensor(np.random.default_rng(6).standard_normal((4,)).astype(np.float32))
    op = MemcpyWithDesc(count=4)

    def ours(x, w, s):
        return weighted_sum(op(x, s), w)

    def reference(x, w):
        return weighted_sum(x.reshape(-1)[6:10], w)

    np.testing.assert_array_equal(ms.grad(ours)(x, w, int64(6)).asnumpy(), ms.grad(reference)(x, w).asnumpy())


# -- dynamic shapes: the device-to-device forms accept unknown dimensions in GRAPH_MODE ------------
class Extract(nn.Cell):
    def __init__(self):
        super().__init__()
        self.op = Memcpy2D("extract", height=2, width=2)

    def construct(self, x, r, c):
        return self.op(x, r, c)


class Insert(nn.Cell):
    def __init__(self):
        super().__init__()
        self.op = Memcpy2D("insert")

    def construct(self, dst, src, r, c):
        return self.op(dst, src, r, c)


def test_dynamic_shapes_in_graph_mode(route):
    ms.set_context(mode=ms.GRAPH_MODE)
    index = ms.Tensor(shape=[1], dtype=ms.int64)
    extract = Extract()
    extract.set_inputs(ms.Tensor(shape=[None, None], dtype=ms.float32), index, index)
    insert = Insert()
    insert.set_inputs(ms.Tensor(shape=[None, 6], dtype=ms.float32), ms.Tensor(shape=[None, None], dtype=ms.float32),
                      index, index)
    copies = [FnCell(MemcpyWithDesc()), FnCell(MemcpyWithCondition("d2d"))]
    for net in copies:
        net.set_inputs(ms.Tensor(shape=[None, 3], dtype=ms.float32))
    window = FnCell(MemcpyWithDesc(count=3))
    window.set_inputs(ms.Tensor(shape=[None], dtype=ms.float32), index)
    for rows in (3, 5):
        x = np.arange(rows * 6, dtype=np.float32).reshape(rows, 6)
        np.testing.assert_array_equal(extract(ms.Tensor(x), int64(1), int64(3)).asnumpy(), x[1:3, 3:5])
        src = -np.ones((2, rows - 1), np.float32)
        expected = x.copy()
        expected[rows - 2:rows, 0:rows - 1] = src
        np.testing.assert_array_equal(insert(ms.Tensor(x), ms.Tensor(src), int64(rows - 2), int64(0)).asnumpy(),
                                      expected)
        for net in copies:
            np.testing.assert_array_equal(net(ms.Tensor(x[:, :3])).asnumpy(), x[:, :3])
        np.testing.assert_array_equal(window(ms.Tensor(x.reshape(-1)), int64(rows)).asnumpy(),
                                      x.reshape(-1)[rows:rows + 3])
