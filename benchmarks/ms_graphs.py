"""GRAPH_MODE cells for the primitive cases: our primitives, MindSpore built-ins, the empty graph.

Every loop returned here calls a compiled cell and waits for MindSpore to finish it, so one
iteration is one whole graph step as a user sees it.
"""
import mindspore as ms
from mindspore import nn, ops

from .._framework import sync_launches
from .timing import python_loop


def use_graph_mode():
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_device("CPU")


class OpCell(nn.Cell):
    """op(*inputs) as the whole graph."""

    def __init__(self, op):
        super().__init__()
        self.op = op

    def construct(self, *xs):
        return self.op(*xs)


class PickCell(nn.Cell):
    """op applied to some of the inputs (indexes in `picks`): graphs that share one input list, so that
    each pays the same per-input cost of a graph call and they differ only by their kernel. first_output:
    the graph returns the first of the op's outputs, so that an op with a tuple of outputs returns one
    tensor as the others do (MindSpore's step costs more when it returns a tuple: ops.Identity's 2-4%
    more returned as a 1-tuple, docs/performance.md finding 22)."""

    def __init__(self, op, picks, first_output=False):
        super().__init__()
        self.op = op
        self.picks = tuple(picks)
        self.first_output = first_output

    def construct(self, *xs):
        out = self.op(*[xs[i] for i in self.picks])
        if self.first_output:
            return out[0]
        return out


class EmptyCell(nn.Cell):
    """The same inputs and no kernel: returns the last input (the graph step's own cost)."""

    def construct(self, *xs):
        return xs[-1]


class HeldTensorsCell(nn.Cell):
    """Tensors held by the cell as Parameters (as a model holds its weights and state), given to
    ``body(*tensors, offsets)``; the graph's only input is the offsets tensor. body None: the empty graph
    (returns the offsets); "identity": one built-in copy (ops.Identity) per tensor."""

    def __init__(self, arrays, body=None):
        super().__init__()
        self.tensors = ms.ParameterTuple([ms.Parameter(ms.Tensor(a), name=f"t{i}") for i, a in enumerate(arrays)])
        self.body = body
        self.identity = ops.Identity()
        self.mode = "empty" if body is None else "identity" if body == "identity" else "op"

    def construct(self, offsets):
        if self.mode == "op":
            return self.body(*self.tensors, offsets)
        if self.mode == "identity":
            outs = ()
            for t in self.tensors:
                outs = outs + (self.identity(t),)
            return outs
        return offsets


def null_aot_op(out_shape, out_dtype):
    """An aot Custom op whose kernel does nothing (libms_memcopy_bench.so): MindSpore's own launch cost."""
    from . import native

    return ops.Custom(f"{native.LIBRARY}:msmc_bench_null_aot", out_shape=out_shape, out_dtype=out_dtype,
                      func_type="aot")


class SliceCell(nn.Cell):
    """MindSpore's own strided slice x[:, :w] (StridedSlice in the graph)."""

    def __init__(self, width):
        super().__init__()
        self.width = width

    def construct(self, x):
        return x[:, :self.width]


def graph_loop(cell, *inputs):
    """Compiles cell for inputs (first call) and returns a loop of whole graph steps."""
    cell(*inputs)
    sync_launches()

    def step():
        cell(*inputs)
        sync_launches()
    return python_loop(step)


def tensor(array):
    return ms.Tensor(array)
