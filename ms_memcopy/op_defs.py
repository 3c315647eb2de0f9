"""The op definitions of configs/ops.yaml, read once.

This module is the only reader of that file: the primitives take their kernel
symbols, attributes, side effects and dtype lists from here, and so does the
generator of the Ascend route's op_def YAML.
"""
import dataclasses
import functools
from typing import Optional, Tuple

import yaml

from . import _paths


@dataclasses.dataclass(frozen=True)
class TensorDef:
    name: str
    dtype: str  # "any" or a dtype name
    variadic: bool = False


@dataclasses.dataclass(frozen=True)
class AttrDef:
    name: str
    type: str


@dataclasses.dataclass(frozen=True)
class OpDef:
    name: str
    kernel: str
    ascend_function: str
    inputs: Tuple[TensorDef, ...]
    outputs: Tuple[TensorDef, ...]
    attrs: Tuple[AttrDef, ...]
    side_effect_mem: bool
    dynamic_shape: bool
    rw_write: Tuple[str, ...] = ()  # inputs written in place

    @property
    def attr_names(self):
        return tuple(a.name for a in self.attrs)


def _rw_write(name, entry, inputs):
    names = entry.get("rw_write") or ()
    names = (names,) if isinstance(names, str) else tuple(names)
    unknown = [n for n in names if n not in {t.name for t in inputs}]
    if unknown:
        raise ValueError(f"configs/ops.yaml: {name}: rw_write names {unknown}, which are not inputs")
    if names and not entry.get("side_effect_mem"):
        raise ValueError(f"configs/ops.yaml: {name}: an op with rw_write inputs must set side_effect_mem")
    return names


def _tensor(entry):
    return TensorDef(name=entry["name"], dtype=entry["dtype"], variadic=bool(entry.get("variadic", False)))


@functools.lru_cache(maxsize=None)
def _load():
    with open(_paths.configs_dir() / "ops.yaml", encoding="utf-8") as f:
        table = yaml.safe_load(f)
    ops = {}
    for name, entry in table["ops"].items():
        inputs = tuple(_tensor(t) for t in entry["inputs"])
        ops[name] = OpDef(
            name=name,
            kernel=entry["kernel"],
            ascend_function=entry["ascend_function"],
            inputs=inputs,
            outputs=tuple(_tensor(t) for t in entry["outputs"]),
            attrs=tuple(AttrDef(a["name"], a["type"]) for a in entry.get("attrs") or ()),
            side_effect_mem=bool(entry.get("side_effect_mem", False)),
            dynamic_shape=bool(entry.get("dynamic_shape", False)),
            rw_write=_rw_write(name, entry, inputs),
        )
    return tuple(table["dtypes"]), ops


def supported_dtypes():
    """The MindSpore dtype names every primitive supports, in the order of configs/ops.yaml."""
    return _load()[0]


def op_def(name) -> OpDef:
    return _load()[1][name]


def all_op_defs():
    return dict(_load()[1])


def reg_info(op: OpDef, variadic_count: Optional[int] = None):
    """The CustomRegOp registration of op on CPU (needed where a C++ infer hook gives the shape)."""
    from mindspore.ops import CustomRegOp

    reg = CustomRegOp(op.name)
    index = 0
    for t in op.inputs:
        for name in _expand(t, variadic_count):
            reg = reg.input(index, name)
            index += 1
    for i, t in enumerate(op.outputs):
        reg = reg.output(i, t.name)
    for a in op.attrs:
        reg = reg.attr(a.name, "required", a.type)
    for dtype in supported_dtypes():
        row = [(dtype if t.dtype == "any" else t.dtype, "DefaultFormat")
               for t in (*op.inputs, *op.outputs) for _ in _expand(t, variadic_count)]
        reg = reg.dtype_format(*row)
    return reg.target("CPU").get_op_info()


def input_names(op: OpDef, variadic_count: Optional[int] = None):
    """(input definition, argument name) for every tensor the primitive takes, a variadic input once per tensor."""
    return tuple((t, name) for t in op.inputs for name in _expand(t, variadic_count))


def _expand(t: TensorDef, variadic_count):
    if not t.variadic:
        return (t.name,)
    if variadic_count is None:
        raise ValueError(f"{t.name} is variadic: give its length")
    return tuple(f"{t.name}{i}" for i in range(variadic_count))
