"""Registering a primitive's bprop as the gradient of its op_def primitive ``Custom_ms_memcopy_<op>``."""
from typing import Any, Callable, Dict, Tuple

from mindspore.ops._grad_experimental.grad_base import bprop_getters

from .._extension import route_codegen
from ..op_defs import OpDef


_op_def_bprops: Dict[str, Callable[..., Any]] = {}  # primitive name -> its registered bprop


def register_op_def_bprop(definition: OpDef, bprop: Callable[..., Tuple[Any, ...]]) -> Callable[..., Any]:
    """Registers bprop as the gradient of the op's Custom_<op> primitive (GRAPH_MODE looks it up by
    name, PYNATIVE_MODE through the primitive's get_bprop); returns the registered function. The
    op_def bprop receives the init arguments too, after the inputs; their gradients are zeros."""
    name = route_codegen.primitive_name(definition)
    if name in _op_def_bprops:
        return _op_def_bprops[name]
    n_inputs = len(definition.inputs)
    zeros = (0,) * (len(route_codegen.arg_names(definition)) - n_inputs)

    def with_init_args(args, out, dout):
        return bprop(*args[:n_inputs], out, dout) + zeros

    op_def_bprop = _fixed_arity(len(route_codegen.arg_names(definition)), with_init_args)
    _op_def_bprops[name] = op_def_bprop
    bprop_getters.register(name)(lambda _prim: op_def_bprop)
    return op_def_bprop


def _fixed_arity(n: int, fn: Callable[[Tuple[Any, ...], Any, Any], Any]) -> Callable[..., Any]:
    """fn(args, out, dout) as a function of n named arguments plus out and dout: GRAPH_MODE parses
    a bprop and needs them named."""
    if n == 1:
        def bprop_1(a0, out, dout):
            return fn((a0,), out, dout)
        return bprop_1
    if n == 2:
        def bprop_2(a0, a1, out, dout):
            return fn((a0, a1), out, dout)
        return bprop_2
    if n == 3:
        def bprop_3(a0, a1, a2, out, dout):
            return fn((a0, a1, a2), out, dout)
        return bprop_3
    if n == 4:
        def bprop_4(a0, a1, a2, a3, out, dout):
            return fn((a0, a1, a2, a3), out, dout)
        return bprop_4
    if n == 5:
        def bprop_5(a0, a1, a2, a3, a4, out, dout):
            return fn((a0, a1, a2, a3, a4), out, dout)
        return bprop_5
    raise ValueError(f"a differentiable op with {n} op_def arguments needs a bprop wrapper here")
