"""Cases of the primitives (ms_memcopy.ops) in GRAPH_MODE, each a whole graph step.

Baselines: MindSpore built-ins in a graph (ops.Identity, the strided slice x[:, :w], one Identity per
tensor in one graph), numpy (np.copyto, per-item loops, slice assignment) and std::memcpy loops
(timed in C) over arrays of the same sizes. The empty graph over the same inputs is measured as a
reference: what a graph step costs before any kernel runs.
"""
import numpy as np

from ms_memcopy import HostBuffer, acl_limits

from . import baselines as bl
from . import ms_graphs as g
from .case import BASELINE, OURS, REFERENCE, Case
from .timing import EVERY_CALL

SMALL = 16  # elements of the per-call overhead case


def _ops():
    from ms_memcopy import ops

    return ops


def _int64(*values):
    return g.tensor(np.array(values, dtype=np.int64))


def _host_buffer(stack, nbytes):
    buf = HostBuffer(nbytes)
    stack.callback(buf.close)
    return buf


def overhead_case():
    """Per-call cost of every primitive on a 16-element float32 tensor, against ops.Identity. Every graph
    takes the same inputs (x, its 4x4 view, a zero offset) and uses the ones its op needs, and returns one
    tensor, so the graphs differ only by their kernel (a graph call costs time per input, whether the
    graph uses it or not, and more when it returns a tuple). The
    graphs are called in turns, one step each: their ratios differ by a few percent, less than the drift
    between slices of several steps (measured: 1.04-1.21x over 15 rounds in slices of about 12 steps,
    1.08-1.15x one step each, for MemcpyBatch d2h on the 2-core VM)."""
    def build(stack):
        o = _ops()
        import mindspore as ms
        from mindspore import ops as msops

        data = np.arange(SMALL, dtype=np.float32)
        inputs = (g.tensor(data), g.tensor(data.reshape(4, 4)), _int64(0))
        x, x2, zero = 0, 1, 2
        buf = _host_buffer(stack, 4096)
        ours = {
            "MemcpyWithCondition d2d": (o.MemcpyWithCondition("d2d"), [x]),
            "MemcpyWithCondition d2h": (o.MemcpyWithCondition("d2h", host_buffer=buf), [x, zero]),
            "MemcpyWithCondition h2d": (o.MemcpyWithCondition("h2d", host_buffer=buf, shape=(SMALL,),
                                                              dtype=ms.float32), [zero]),
            "MemcpyWithDesc": (o.MemcpyWithDesc(), [x]),
            "Memcpy2D extract": (o.Memcpy2D("extract", height=4, width=4), [x2, zero, zero]),
            "Memcpy2D d2h": (o.Memcpy2D("d2h", host_buffer=buf, pitch=64), [x2, zero]),
            "Memcpy2D h2d": (o.Memcpy2D("h2d", host_buffer=buf, pitch=64, shape=(4, 4), dtype=ms.float32), [zero]),
            "MemcpyBatch d2h": (o.MemcpyBatch("d2h", buf, num_tensors=1), [x, zero]),
            "MemcpyBatch h2d": (o.MemcpyBatch("h2d", buf, shapes=[(SMALL,)], dtypes=[ms.float32]), [zero]),
        }
        # Every graph returns one tensor: MemcpyBatch h2d's outputs are a tuple, of which it returns the first.
        impls = {name: (OURS, g.graph_loop(g.PickCell(op, picks, first_output=name == "MemcpyBatch h2d"), *inputs))
                 for name, (op, picks) in ours.items()}
        impls["ms Identity"] = (BASELINE, g.graph_loop(g.PickCell(msops.Identity(), [x]), *inputs))
        impls["empty graph"] = (REFERENCE, g.graph_loop(g.EmptyCell(), *inputs))
        return impls
    return Case("ops.overhead", f"one call on {SMALL} float32", SMALL * 4, build=build, samples_scale=3,
                pieces=EVERY_CALL)


def batch_case(size, count, max_builtin):
    """MemcpyBatch d2h: `count` tensors of `size` bytes, held by the cell as Parameters, into a HostBuffer in
    one graph step. References: the empty graph (same cell, no kernel) and a do-nothing aot Custom op over
    the same tensors (MindSpore's own cost of a custom op with that many inputs)."""
    stride = (size + 63) // 64 * 64

    def build(stack):
        o = _ops()
        import mindspore as ms

        arrays = [np.full(size // 4, i, dtype=np.float32) for i in range(count)]  # distinct values
        offsets = [i * stride for i in range(count)]
        offs = _int64(*offsets)
        buf = _host_buffer(stack, stride * count)
        op = o.MemcpyBatch("d2h", buf, num_tensors=count)
        null = g.null_aot_op(lambda *shapes: (len(shapes) - 1,), lambda *types: ms.int64)
        impls = {
            "MemcpyBatch d2h": (OURS, g.graph_loop(g.HeldTensorsCell(arrays, op), offs)),
            "empty graph": (REFERENCE, g.graph_loop(g.HeldTensorsCell(arrays), offs)),
            "null aot op": (REFERENCE, g.graph_loop(g.HeldTensorsCell(arrays, null), offs)),
        }
        if count <= max_builtin:
            impls[f"ms Identity x{count} (one graph)"] = (BASELINE, g.graph_loop(g.HeldTensorsCell(arrays, "identity"),
                                                                                    offs))
        host = bl.view(buf.ptr, stride * count)
        dsts = [host[off:off + size] for off in offsets]
        srcs = [a.view(np.uint8) for a in arrays]
        impls["np.copyto per item"] = (BASELINE, bl.numpy_copyto_items(dsts, srcs))
        impls["memcpy loop (C++)"] = (BASELINE, _keep(bl.memcpy_loop(
            [buf.ptr + off for off in offsets], [bl.address(a) for a in arrays], [size] * count), *arrays))
        return impls
    return Case("ops.MemcpyBatch", f"d2h, {count} x {size} B held tensors", size * count, count=count,
                params={"item_size": size}, build=build)


def extract_case(width, region):
    """Memcpy2D extract of the region x[:, :w] (w bytes per row) of a float32 matrix with 2w bytes per row."""
    cols = max(1, width // 4)
    height = max(1, region // (cols * 4))

    def build(stack):
        o = _ops()
        data = np.arange(height * 2 * cols, dtype=np.float32).reshape(height, 2 * cols)
        out = np.empty((height, cols), np.float32)
        x, zero = g.tensor(data), _int64(0)
        return {
            "Memcpy2D extract": (OURS, g.graph_loop(g.OpCell(o.Memcpy2D("extract", height=height, width=cols)),
                                                    x, zero, zero)),
            "ms x[:, :w]": (BASELINE, g.graph_loop(g.SliceCell(cols), x)),
            "numpy slice": (BASELINE, bl.numpy_slice_assign(out, data, cols)),
            "memcpy rows (C++)": (BASELINE, _keep(bl.memcpy_rows(bl.address(out), cols * 4, bl.address(data),
                                                                 2 * cols * 4, cols * 4, height), data, out)),
        }
    return Case("ops.Memcpy2D", f"extract rows of {cols * 4} B from rows of {2 * cols * 4} B", cols * 4 * height,
                count=height, params={"width": cols * 4, "height": height}, build=build)


def copy_case(nbytes):
    """A whole-tensor copy within the device: MemcpyWithDesc and MemcpyWithCondition d2d."""
    def build(stack):
        o = _ops()
        from mindspore import ops as msops

        data = np.arange(max(1, nbytes // 4), dtype=np.float32)
        out = np.empty_like(data)
        x = g.tensor(data)
        return {
            "MemcpyWithDesc": (OURS, g.graph_loop(g.OpCell(o.MemcpyWithDesc()), x)),
            "MemcpyWithCondition d2d": (OURS, g.graph_loop(g.OpCell(o.MemcpyWithCondition("d2d")), x)),
            "ms Identity": (BASELINE, g.graph_loop(g.OpCell(msops.Identity()), x)),
            "np.copyto": (BASELINE, bl.numpy_one_copy(out, data)),
            "memcpy (C++)": (BASELINE, _keep(bl.memcpy_loop([bl.address(out)], [bl.address(data)], [data.nbytes]),
                                             data, out)),
        }
    return Case("ops.copy", "d2d, whole tensor", max(4, nbytes // 4 * 4), build=build)


def d2h_case(nbytes):
    """A tensor into a HostBuffer: MemcpyWithCondition d2h and MemcpyBatch d2h of one tensor."""
    def build(stack):
        o = _ops()
        data = np.arange(max(1, nbytes // 4), dtype=np.float32)
        x, zero = g.tensor(data), _int64(0)
        buf = _host_buffer(stack, data.nbytes)
        host = bl.view(buf.ptr, data.nbytes)
        return {
            "MemcpyWithCondition d2h": (OURS, g.graph_loop(g.OpCell(o.MemcpyWithCondition("d2h", host_buffer=buf)),
                                                           x, zero)),
            "MemcpyBatch d2h (1 tensor)": (OURS, g.graph_loop(g.OpCell(o.MemcpyBatch("d2h", buf, num_tensors=1)),
                                                              x, zero)),
            "np.copyto": (BASELINE, bl.numpy_one_copy(host, data.view(np.uint8))),
            "memcpy (C++)": (BASELINE, _keep(bl.memcpy_loop([buf.ptr], [bl.address(data)], [data.nbytes]), data)),
        }
    return Case("ops.d2h", "tensor -> pinned HostBuffer", max(4, nbytes // 4 * 4), build=build)


def _keep(loop, *arrays):
    loop.arrays = arrays  # the C loop holds raw addresses: keep the arrays alive with it
    return loop


def cases(settings):
    """The primitive cases in GRAPH_MODE (the eager ones are cases_eager's, which cli.collect runs last)."""
    out = [overhead_case()]
    out += [batch_case(size, count, settings.prim_builtin_max_count) for size, count in settings.prim_batch]
    out += [extract_case(w, r) for r in settings.prim_region_sizes for w in settings.prim_row_widths
            if r // w <= acl_limits.MAX_2D_HEIGHT]
    out += [copy_case(n) for n in settings.prim_sizes]
    out += [d2h_case(n) for n in settings.prim_sizes]
    return out
