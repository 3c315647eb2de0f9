"""Bad input: exactly one exception type and one text per mistake, naming the argument, raised before
any byte is copied, in GRAPH_MODE and PYNATIVE_MODE alike.

Values, shapes and regions are the kernel's check (ops_impl/kernels/bodies/<family>.cpp): a graph runs
it while compiling on its constants and at launch on the values of its inputs, an eager call before it
queues anything. Dtypes are the infer function's (TypeError) in a graph and Python's eagerly, in the
same words.
"""
import numpy as np
import pytest

import mindspore as ms
from mindspore import nn

from ms_memcopy import HostBuffer
from ms_memcopy.ops import Memcpy2D, MemcpyBatch, MemcpyWithCondition, MemcpyWithDesc

from _ops_support import FnCell, int64, raises_exactly

FILL = 0x5A
PAST_END = "past the end of the HostBuffer (64 bytes); nothing was copied"
NOTHING = "; nothing was copied"


@pytest.fixture
def buf():
    with HostBuffer(64) as b:
        b.numpy()[:] = FILL
        yield b


def untouched(buf):
    return (buf.numpy() == FILL).all()


class ConstOffsets(nn.Cell):
    def __init__(self, op, offsets):
        super().__init__()
        self.op = op
        self.offsets = ms.Tensor(np.array(offsets, np.int64))

    def construct(self, x, y):
        return self.op(x, y, self.offsets)


def pair():
    return ms.Tensor(np.ones(4, np.float32)), ms.Tensor(np.ones(4, np.float32))


# -- MemcpyBatch ---------------------------------------------------------------------------------
BATCH_D2H = "ms_memcopy MemcpyBatch(d2h): "


def test_offset_past_the_end_eager(ms_mode, buf):
    op = MemcpyBatch("d2h", buf, num_tensors=2)
    with raises_exactly(ValueError, BATCH_D2H + "offsets[1] = 50: tensor 1 (16 bytes) would end at byte 66, " +
                        PAST_END):
        op(*pair(), int64(0, 50))
    assert untouched(buf)


def test_offset_past_the_end_constant_in_graph(ms_mode, buf):
    net = ConstOffsets(MemcpyBatch("d2h", buf, num_tensors=2), [0, 49])
    with raises_exactly(ValueError, BATCH_D2H + "offsets[1] = 49: tensor 1 (16 bytes) would end at byte 65, " +
                        PAST_END):
        net(*pair())
    assert untouched(buf)


def test_offset_past_the_end_as_graph_input(ms_mode, buf):
    net = FnCell(MemcpyBatch("d2h", buf, num_tensors=2))
    with raises_exactly(ValueError, BATCH_D2H + "offsets[1] = 60: tensor 1 (16 bytes) would end at byte 76, " +
                        PAST_END):
        net(*pair(), int64(0, 60))
    assert untouched(buf)


def test_negative_offset(ms_mode, buf):
    with raises_exactly(ValueError, BATCH_D2H + "offsets[0] is negative (-1)"):
        FnCell(MemcpyBatch("d2h", buf, num_tensors=2))(*pair(), int64(-1, 16))
    assert untouched(buf)


def test_overlapping_destinations(ms_mode, buf):
    overlap = BATCH_D2H + ("offsets: items 0 and 1 write overlapping bytes (copies within a batch run in no order, so "
                           "the result would be undefined); nothing was copied")
    with raises_exactly(ValueError, overlap):
        MemcpyBatch("d2h", buf, num_tensors=2)(*pair(), int64(8, 20))
    with raises_exactly(ValueError, overlap):
        FnCell(MemcpyBatch("d2h", buf, num_tensors=2))(*pair(), int64(20, 8))
    assert untouched(buf)


def test_offsets_wrong_dtype_and_length(ms_mode, buf):
    op = FnCell(MemcpyBatch("d2h", buf, num_tensors=2))
    with raises_exactly(TypeError, BATCH_D2H + "offsets must be an int64 tensor, got int32"):
        op(*pair(), ms.Tensor(np.array([0, 16], np.int32)))
    with raises_exactly(ValueError, BATCH_D2H + "tensors: got 2 tensor(s) for 3 offsets: MemcpyBatch(d2h) takes one "
                                                "tensor per offset"):
        FnCell(MemcpyBatch("d2h", buf, num_tensors=2))(*pair(), int64(0, 16, 32))
    assert untouched(buf)


def test_h2d_offset_past_the_end(ms_mode, buf):
    op = MemcpyBatch("h2d", buf, shapes=[(4,), (3,)], dtypes=[ms.float32, ms.int64])
    with raises_exactly(ValueError, "ms_memcopy MemcpyBatch(h2d): offsets[1] = 48: tensor 1 (24 bytes) would end at "
                                    "byte 72, " + PAST_END):
        op(int64(0, 48))


def test_closed_host_buffer(ms_mode):
    buf = HostBuffer(64)
    op = MemcpyBatch("d2h", buf, num_tensors=1)
    buf.close()
    x = ms.Tensor(np.ones(4, np.float32))
    with raises_exactly(ValueError, BATCH_D2H + "host_buffer: the HostBuffer is closed"):
        op(x, int64(0))
    with raises_exactly(ValueError, BATCH_D2H + "host_buffer: the HostBuffer is closed"):
        FnCell(op)(x, int64(0))
    with raises_exactly(ValueError, BATCH_D2H + "host_buffer: the HostBuffer is closed"):
        MemcpyBatch("d2h", buf, num_tensors=1)


def test_closed_after_graph_compiled(buf, route):
    """A compiled graph outliving its HostBuffer fails in the kernel instead of touching freed memory."""
    ms.set_context(mode=ms.GRAPH_MODE)
    other = HostBuffer(16)
    net = FnCell(MemcpyWithCondition("d2h", host_buffer=other))
    x = ms.Tensor(np.ones(2, np.float32))
    net(x, int64(0))
    other.close()
    with raises_exactly(ValueError, "ms_memcopy MemcpyWithCondition(d2h): host_buffer: the HostBuffer is closed"):
        net(x, int64(0))


def test_construction_errors(buf):
    with pytest.raises(ValueError, match="direction"):
        MemcpyBatch("d2d", buf, num_tensors=1)
    with pytest.raises(ValueError, match="num_tensors"):
        MemcpyBatch("d2h", buf)
    with pytest.raises(TypeError, match="host_buffer must be an ms_memcopy.HostBuffer"):
        MemcpyBatch("d2h", np.zeros(4), num_tensors=1)
    with pytest.raises(TypeError, match=r"dtypes\[0\]: dtype complex64 is not supported"):
        MemcpyBatch("h2d", buf, shapes=[(2,)], dtypes=[ms.complex64])
    with pytest.raises(ValueError, match=r"shapes\[0\] must hold non-negative ints"):
        MemcpyBatch("h2d", buf, shapes=[(-1,)], dtypes=[ms.float32])



def test_d2h_called_with_the_wrong_number_of_tensors(ms_mode, buf):
    op = MemcpyBatch("d2h", buf, num_tensors=2)
    one = ms.Tensor(np.ones(2, np.float32))
    # The op's length check (num_tensors is an init argument of its primitive): in the infer function
    # while a graph compiles, before the launch in an eager call.
    for count, args in ((1, (one, int64(0, 16))), (3, (one, one, one, int64(0, 16)))):
        with raises_exactly(ValueError, BATCH_D2H + f"tensors: holds {count} tensor(s) but the primitive was built "
                                                    "for num_tensors=2"):
            FnCell(op)(*args) if ms_mode == "graph" else op(*args)
    assert untouched(buf)


@pytest.mark.parametrize("build,argument", [
    (lambda buf: Memcpy2D("d2h", host_buffer=buf, pitch=2**63), "pitch"),
    (lambda buf: Memcpy2D("extract", height=2**64, width=1), "height"),
    (lambda buf: Memcpy2D("extract", height=1, width=2**63), "width"),
    (lambda buf: MemcpyWithDesc(count=2**63), "count"),
    (lambda buf: Memcpy2D("h2d", host_buffer=buf, pitch=8, shape=(2**63, 1), dtype=ms.int8), "shape"),
    (lambda buf: MemcpyWithCondition("h2d", host_buffer=buf, shape=(2**62, 4), dtype=ms.int8), "shape"),
    (lambda buf: MemcpyBatch("h2d", buf, shapes=[(1,), (2**63,)], dtypes=[ms.int8] * 2), r"shapes\[1\]"),
])
def test_attribute_values_beyond_int64(buf, build, argument):
    with pytest.raises(ValueError, match=argument):
        build(buf)


@pytest.mark.parametrize("build,argument", [
    (lambda buf: Memcpy2D("h2d", host_buffer=buf, pitch=8, shape=4, dtype=ms.int8), "shape"),
    (lambda buf: MemcpyWithCondition("h2d", host_buffer=buf, shape=4, dtype=ms.int8), "shape"),
    (lambda buf: MemcpyWithCondition("h2d", host_buffer=buf, shape=(2, 2.0), dtype=ms.int8), "shape"),
    (lambda buf: MemcpyBatch("h2d", buf, shapes=[4], dtypes=[ms.int8]), r"shapes\[0\]"),
    (lambda buf: Memcpy2D("d2h", host_buffer=buf, pitch=8.0), "pitch"),
])
def test_wrong_attribute_types_name_the_argument(buf, build, argument):
    with pytest.raises(TypeError, match=argument):
        build(buf)

# -- Memcpy2D ------------------------------------------------------------------------------------
def test_extract_region_outside(ms_mode):
    x = ms.Tensor(np.zeros((4, 5), np.float32))
    prefix = "ms_memcopy Memcpy2D(extract): "
    with raises_exactly(ValueError, prefix + "height 5 exceeds the 4 rows of x"):
        FnCell(Memcpy2D("extract", height=5, width=1))(x, int64(0), int64(0))
    with raises_exactly(ValueError, prefix + "width 6 exceeds the 5 columns of x"):  # whatever the corner
        FnCell(Memcpy2D("extract", height=1, width=6))(x, int64(0), int64(0))
    with raises_exactly(ValueError, prefix + "col = 3: the region [3, 3 + 3) leaves the 5 columns of the tensor" +
                        NOTHING):
        Memcpy2D("extract", height=1, width=3)(x, int64(0), int64(3))
    with raises_exactly(ValueError, prefix + "row = 3: the region [3, 3 + 2) leaves the 4 rows of the tensor" +
                        NOTHING):
        FnCell(Memcpy2D("extract", height=2, width=1))(x, int64(3), int64(0))


def test_insert_mismatches(ms_mode):
    dst = ms.Tensor(np.zeros((3, 3), np.float32))
    prefix = "ms_memcopy Memcpy2D(insert): "
    with raises_exactly(TypeError, prefix + "src has dtype float16 but dst has float32"):
        FnCell(Memcpy2D("insert"))(dst, ms.Tensor(np.zeros((1, 1), np.float16)), int64(0), int64(0))
    with raises_exactly(ValueError, prefix + "src (4 x 1) does not fit in dst (3 x 3)"):
        FnCell(Memcpy2D("insert"))(dst, ms.Tensor(np.zeros((4, 1), np.float32)), int64(0), int64(0))
    with raises_exactly(ValueError, prefix + "col = -1: the region [-1, -1 + 1) leaves the 3 columns of the tensor" +
                        NOTHING):
        Memcpy2D("insert")(dst, ms.Tensor(np.zeros((1, 1), np.float32)), int64(0), int64(-1))
    np.testing.assert_array_equal(dst.asnumpy(), 0)


def test_pitched_host_copies_out_of_range(ms_mode, buf):
    x = ms.Tensor(np.ones((3, 4), np.float32))
    with raises_exactly(ValueError, "ms_memcopy Memcpy2D(d2h): pitch 8 is smaller than a row (16 bytes)"):
        FnCell(Memcpy2D("d2h", host_buffer=buf, pitch=8))(x, int64(0))
    with raises_exactly(ValueError, "ms_memcopy Memcpy2D(d2h): offset = 20: the pitched rows of x (48 bytes) would "
                                    "end at byte 68, " + PAST_END):
        Memcpy2D("d2h", host_buffer=buf, pitch=16)(x, int64(20))
    with raises_exactly(ValueError, "ms_memcopy Memcpy2D(h2d): offset = 1: the pitched rows of the output (76 bytes) "
                                    "would end at byte 77, " + PAST_END):
        Memcpy2D("h2d", host_buffer=buf, pitch=20, shape=(4, 2), dtype=ms.float64)(int64(1))
    with pytest.raises(ValueError, match=r"takes \['height', 'width'\]; missing \['width'\]"):
        Memcpy2D("extract", height=1)
    assert untouched(buf)


# -- MemcpyWithDesc / MemcpyWithCondition --------------------------------------------------------
def test_desc_window_outside(ms_mode):
    x = ms.Tensor(np.arange(10, dtype=np.int32))
    prefix = "ms_memcopy MemcpyWithDesc(window): "
    with raises_exactly(ValueError, prefix + "count 11 exceeds the 10 elements of x"):
        FnCell(MemcpyWithDesc(count=11))(x, int64(0))
    with raises_exactly(ValueError, prefix + "start = 8: the region [8, 8 + 3) leaves the 10 elements of the tensor" +
                        NOTHING):
        MemcpyWithDesc(count=3)(x, int64(8))
    with raises_exactly(TypeError, prefix + "start must be an int64 tensor, got float32"):
        FnCell(MemcpyWithDesc(count=3))(x, ms.Tensor(np.zeros(1, np.float32)))


def test_condition_out_of_range(ms_mode, buf):
    x = ms.Tensor(np.ones(10, np.float32))
    with raises_exactly(ValueError, "ms_memcopy MemcpyWithCondition(d2h): offset = 30: x (40 bytes) would end at byte "
                                    "70, " + PAST_END):
        MemcpyWithCondition("d2h", host_buffer=buf)(x, int64(30))
    with raises_exactly(ValueError, "ms_memcopy MemcpyWithCondition(h2d): offset = 25: the output (40 bytes) would end "
                                    "at byte 65, " + PAST_END):
        FnCell(MemcpyWithCondition("h2d", host_buffer=buf, shape=(10,), dtype=ms.float32))(int64(25))
    with pytest.raises(ValueError, match="takes no host_buffer"):
        MemcpyWithCondition("d2d", host_buffer=buf)
    assert untouched(buf)
