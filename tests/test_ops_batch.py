"""MemcpyBatch: device tensors to and from a HostBuffer, checked byte for byte against numpy."""
import numpy as np
import pytest

import mindspore as ms

from ms_memcopy import HostBuffer
from ms_memcopy._framework import sync_launches
from ms_memcopy.ops import MemcpyBatch

from _ops_support import (DTYPES, FnCell, SHAPES, as_numpy, call, dtype_of, int64, make, raw_bytes,
                          raises_exactly, refused_while_compiling)

FILL = 0xAB


def layout(sizes, gap=13):
    """Byte offsets packing items with a gap before each one (so no offset is 64-aligned by accident)."""
    offsets, pos = [], 0
    for size in sizes:
        pos += gap
        offsets.append(pos)
        pos += size
    return offsets, pos + gap


def cases():
    """One tensor per (dtype, shape): every dtype, ranks 1-4, odd sizes, empty tensors."""
    return [(d, s) for i, d in enumerate(DTYPES) for s in (SHAPES[i % len(SHAPES)], SHAPES[(i + 2) % len(SHAPES)])]


@pytest.mark.parametrize("pinned", [True, False], ids=["pinned", "pageable"])
def test_d2h_then_h2d_round_trip(ms_mode, style, pinned):
    specs = cases()
    made = [make(d, s, seed=i) for i, (d, s) in enumerate(specs)]
    expected = [raw_bytes(d, v) for (d, _), (_, v) in zip(specs, made)]
    offsets, total = layout([len(b) for b in expected])
    with HostBuffer(total, pinned=pinned) as buf:
        buf.numpy()[:] = FILL
        d2h = MemcpyBatch("d2h", buf, num_tensors=len(specs))
        nbytes = call(style, d2h, *[t for t, _ in made], int64(*offsets))

        assert nbytes.dtype == ms.int64
        np.testing.assert_array_equal(nbytes.asnumpy(), [len(b) for b in expected])
        reference = np.full(total, FILL, np.uint8)
        for off, b in zip(offsets, expected):
            reference[off:off + len(b)] = np.frombuffer(b, np.uint8)
        np.testing.assert_array_equal(buf.numpy(), reference)  # items in place, every gap untouched

        h2d = MemcpyBatch("h2d", buf, shapes=[s for _, s in specs], dtypes=[dtype_of(d) for d, _ in specs])
        outs = call(style, h2d, int64(*offsets))
        assert len(outs) == len(specs)
        for (d, s), (_, v), out in zip(specs, made, outs):
            assert out.dtype == dtype_of(d) and tuple(out.shape) == s
            np.testing.assert_array_equal(as_numpy(out), v.astype(np.float32) if d == "bfloat16" else v)


def test_single_tensor_h2d_returns_one_tensor(ms_mode):
    with HostBuffer(64) as buf:
        buf.numpy(np.float32)[:] = np.arange(16)
        result = MemcpyBatch("h2d", buf, shapes=[(2, 3)], dtypes=[ms.float32])(int64(8))
        assert isinstance(result, tuple) and len(result) == 1
        np.testing.assert_array_equal(result[0].asnumpy(), np.arange(2, 8, dtype=np.float32).reshape(2, 3))


@pytest.mark.parametrize("count", [1, 3])
def test_h2d_returns_a_tuple_in_every_style(ms_mode, style, count):
    with HostBuffer(64) as buf:
        buf.numpy(np.float32)[:] = np.arange(16)
        op = MemcpyBatch("h2d", buf, shapes=[(2,)] * count, dtypes=[ms.float32] * count)
        result = call(style, op, int64(*range(0, 8 * count, 8)))
        assert isinstance(result, tuple) and len(result) == count
        for i, out in enumerate(result):
            np.testing.assert_array_equal(out.asnumpy(), np.arange(2 * i, 2 * i + 2, dtype=np.float32))


def test_more_items_than_one_acl_call_takes():
    """4097 non-empty items plus zero-size ones: two aclrtMemcpyBatchAsync chunks, all bytes placed."""
    ms.set_context(mode=ms.PYNATIVE_MODE)
    k = 4100
    tensors, values = [], []
    for i in range(k):
        n = 0 if i % 1000 == 7 else (i % 5) + 1
        v = np.arange(i, i + n, dtype=np.int32)
        tensors.append(ms.Tensor(v))
        values.append(v)
    offsets = np.cumsum([0] + [v.nbytes for v in values[:-1]])
    with HostBuffer(int(offsets[-1]) + values[-1].nbytes) as buf:
        nbytes = MemcpyBatch("d2h", buf, num_tensors=k)(*tensors, ms.Tensor(offsets.astype(np.int64)))
        np.testing.assert_array_equal(nbytes.asnumpy(), [v.nbytes for v in values])
        np.testing.assert_array_equal(buf.numpy(np.int32), np.concatenate(values))


def test_adjacent_items_are_copied_correctly(ms_mode):
    """Items contiguous on the host side (the planner may merge them) land exactly."""
    a, b, c = (np.full(5, i + 1, np.int16) for i in range(3))
    with HostBuffer(30) as buf:
        MemcpyBatch("d2h", buf, num_tensors=3)(ms.Tensor(a), ms.Tensor(b), ms.Tensor(c), int64(0, 10, 20))
        np.testing.assert_array_equal(buf.numpy(np.int16), np.concatenate([a, b, c]))


def test_offsets_change_without_rebuilding(ms_mode):
    x = ms.Tensor(np.arange(4, dtype=np.float32))
    with HostBuffer(64) as buf:
        buf.numpy()[:] = 0
        net = FnCell(MemcpyBatch("d2h", buf, num_tensors=1))
        net(x, int64(0))
        net(x, int64(32))
        np.testing.assert_array_equal(buf.numpy(np.float32)[[0, 1, 2, 3, 8, 9, 10, 11]], np.tile(np.arange(4), 2))


def _many_reads(count, seed=0):
    """A HostBuffer of `count` int32 items of 1-4 elements, their offsets in shuffled order, and the numpy
    arrays the h2d read must return."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 5, count)
    buf = HostBuffer(int(lengths.sum()) * 4)
    buf.numpy(np.int32)[:] = rng.integers(-2**31, 2**31 - 1, buf.nbytes // 4, dtype=np.int32)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    order = rng.permutation(count)  # tensor i reads item order[i]
    shapes = [(int(lengths[j]),) for j in order]
    expected = [buf.numpy(np.int32)[starts[j]:starts[j] + lengths[j]].copy() for j in order]
    return buf, shapes, ms.Tensor((starts[order] * 4).astype(np.int64)), expected


def test_h2d_of_more_tensors_than_one_launch_takes(ms_mode, style, monkeypatch):
    """Past MAX_OUTPUTS_PER_LAUNCH outputs the read is split over several launches: same call, same tuple."""
    import ms_memcopy.ops.batch as batch

    monkeypatch.setattr(batch, "MAX_OUTPUTS_PER_LAUNCH", 4)
    buf, shapes, offsets, expected = _many_reads(10)
    with buf:
        op = MemcpyBatch("h2d", buf, shapes=shapes, dtypes=[ms.int32] * 10)
        assert type(op) is MemcpyBatch and len(op._parts) == 3 and op.num_tensors == 10
        result = call(style, op, offsets)
        assert isinstance(result, tuple) and len(result) == 10
        for out, want in zip(result, expected):
            np.testing.assert_array_equal(out.asnumpy(), want)
        with raises_exactly(ValueError, "ms_memcopy MemcpyBatch(h2d): offsets must hold 10 value(s), got 9"):
            op(int64(*range(9)))
        # (a Tensor's values are read and checked by each part's launch, raising at the next sync and
        # naming the offset by its index in its part: here the last part's second)
        n, end = shapes[9][0] * 4, buf.nbytes
        bad = ms.Tensor(np.r_[offsets.asnumpy()[:9], end].astype(np.int64))
        with raises_exactly(ValueError, f"ms_memcopy MemcpyBatch(h2d): offsets[1] = {end}: tensor 1 ({n} bytes) would "
                                        f"end at byte {end + n}, past the end of the HostBuffer ({end} bytes); "
                                        "nothing was copied"):
            op(bad)
            sync_launches()


def test_h2d_of_thousands_of_tensors_eager():
    """5000 tensors in one eager call, every one checked against numpy (split launches; was minutes)."""
    ms.set_context(mode=ms.PYNATIVE_MODE)
    buf, shapes, offsets, expected = _many_reads(5000, seed=1)
    with buf:
        result = MemcpyBatch("h2d", buf, shapes=shapes, dtypes=[ms.int32] * 5000)(offsets)
        assert len(result) == 5000
        np.testing.assert_array_equal(np.concatenate([t.asnumpy() for t in result]), np.concatenate(expected))


@pytest.mark.slow
def test_h2d_of_thousands_of_tensors_in_a_graph():
    """2000 tensors (16 launches) in a GRAPH_MODE cell, checked against numpy (the eager test above
    takes 5000)."""
    ms.set_context(mode=ms.GRAPH_MODE)
    buf, shapes, offsets, expected = _many_reads(2000, seed=2)
    with buf:
        result = FnCell(MemcpyBatch("h2d", buf, shapes=shapes, dtypes=[ms.int32] * 2000))(offsets)
        assert len(result) == 2000
        np.testing.assert_array_equal(np.concatenate([t.asnumpy() for t in result]), np.concatenate(expected))


@pytest.mark.parametrize("direction", ["d2h", "h2d"])
def test_constant_offsets_refused_while_compiling(ms_mode, direction):
    """Constant offsets outside the HostBuffer, or d2h destinations that overlap, fail the graph's
    compilation with the kernel's check: no kernel launches and no byte of the HostBuffer changes."""
    with HostBuffer(64) as buf:
        buf.numpy()[:] = FILL
        pair = (ms.Tensor(np.ones(4, np.float32)), ms.Tensor(np.ones(4, np.float32)))
        if direction == "d2h":
            op, inputs = MemcpyBatch("d2h", buf, num_tensors=2), pair
            refused_while_compiling(ms_mode, op, inputs, (int64(8, 20),), ValueError,
                                    "ms_memcopy MemcpyBatch(d2h): offsets: items 0 and 1 write overlapping bytes "
                                    "(copies within a batch run in no order, so the result would be undefined); "
                                    "nothing was copied")
        else:
            op, inputs = MemcpyBatch("h2d", buf, shapes=[(4,), (4,)], dtypes=[ms.float32] * 2), ()
        refused_while_compiling(ms_mode, op, inputs, (int64(0, 50),), ValueError,
                                f"ms_memcopy MemcpyBatch({direction}): offsets[1] = 50: tensor 1 (16 bytes) would end "
                                "at byte 66, past the end of the HostBuffer (64 bytes); nothing was copied")
        np.testing.assert_array_equal(buf.numpy(), np.full(64, FILL, np.uint8))
