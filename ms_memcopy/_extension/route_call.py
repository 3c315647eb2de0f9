"""Calling the op_def route's module functions directly (PYNATIVE_MODE): :func:`call` runs an op of
configs/ops/*.yaml with its inputs, attributes and, for the ops that need them, output shapes and dtypes."""
from typing import Any, Dict, List, Optional, Sequence
from . import route_codegen
from ..op_defs import op_def
from .route_load import load


def type_id(dtype: Any) -> int:
    """The TypeId int of a MindSpore dtype (what the route's dtype arguments hold)."""
    from mindspore._c_expression import typing

    return int(typing.type_to_type_id(dtype))


def given_values(op_name: str, shapes: Any, dtypes: Any) -> List[Any]:
    """The values of op's output-describing arguments (:func:`route_codegen.given_args`).

    shapes and dtypes are lists, one entry per output tensor (one for a non-variadic output).
    """
    op = op_def(op_name)
    names = [name for name, _, _ in route_codegen.given_args(op)]
    if not names:
        return []
    shapes = [tuple(int(d) for d in s) for s in shapes]
    ids = [type_id(d) for d in dtypes]
    if names[0] == "given_shape":
        if len(shapes) != 1 or len(ids) != 1:
            raise ValueError(f"{op_name} has one output: give one shape and one dtype")
        return [shapes[0], ids[0]]
    return [tuple(d for s in shapes for d in s), tuple(len(s) for s in shapes), tuple(ids)]


def call(op_name: str, inputs: Sequence[Any], attrs: Dict[str, Any], out_shapes: Any = None, out_dtypes: Any = None,
         backend: Optional[str] = None) -> Any:
    """Runs op_name of configs/ops/*.yaml through the route's PyNative function; returns its outputs
    (a tuple for a variadic output, else the tensor).

    Args:
        op_name: an op of configs/ops/*.yaml.
        inputs: its inputs in order; a variadic input is a list or tuple of tensors.
        attrs: {attribute name: value} for every attribute of the op; ``buffer_id`` may be given
            as the HostBuffer itself, whose reads then wait for MindSpore's queued launches.
        out_shapes, out_dtypes: the output shapes and dtypes, for the ops that need them (h2d forms).
        backend: the module to use (default: from the device target).
    """
    op = op_def(op_name)
    if set(attrs) != set(op.attr_names):
        raise ValueError(f"{op_name} takes attributes {list(op.attr_names)}, got {sorted(attrs)}")
    if len(inputs) != len(op.inputs):
        raise ValueError(f"{op_name} takes {len(op.inputs)} inputs, got {len(inputs)}")
    args = [tuple(x) if t.variadic else x for t, x in zip(op.inputs, inputs)]
    args += [_attr_value(attrs[name]) for name in op.attr_names]
    if op.outputs_given:
        if out_shapes is None or out_dtypes is None:
            raise ValueError(f"{op_name} needs out_shapes and out_dtypes")
        args += given_values(op_name, out_shapes, out_dtypes)
    outputs = getattr(load(backend), op.name)(*args)
    return outputs if op.outputs[0].variadic else outputs[0]


def _attr_value(value):
    from ..host_buffer import HostBuffer

    if isinstance(value, HostBuffer):
        value._attach_primitive()  # as the primitives do: its reads wait for queued launches
        return value.buffer_id
    return value
