"""The op definitions of configs/ops.yaml, read and validated once.

This module is the only reader of that file: the primitives take their op names,
attributes, side effects and dtype lists from here, and so do the generators of the op_def
route (its op_def YAML and the C++ table of every op's arguments and output rules).

A definition is checked when the file is read: an unknown key, a missing key, a reference to an
input or attribute that does not exist, or a malformed output rule raises
:class:`OpDefinitionError` naming the op and the key.
"""
import dataclasses
import functools
import re
from typing import Optional, Tuple, Union

import yaml

from . import _paths

# An input whose dtype is fixed to int64 holds host values (offsets, rows, columns, block ids): the
# op_def route declares it value-dependent, so its kernel gets the values on the host.
HOST_VALUE_DTYPE = "int64"

_OP_KEYS = {"ascend_function", "inputs", "outputs", "attrs", "side_effect_mem", "rw_write", "same_dtype"}
_REQUIRED_OP_KEYS = {"ascend_function", "inputs", "outputs"}
_INPUT_KEYS = {"name", "dtype", "variadic"}
_OUTPUT_KEYS = {"name", "dtype", "variadic", "shape", "dtype_of"}
_ATTR_KEYS = {"name", "type"}
_ATTR_TYPES = ("int", "listInt", "str")
_LEN = re.compile(r"^len\((\w+)\)$")
_LIKE = re.compile(r"^like\((\w+)\)$")


class OpDefinitionError(ValueError):
    """configs/ops.yaml holds a definition this version cannot use."""


@dataclasses.dataclass(frozen=True)
class TensorDef:
    name: str
    dtype: str  # "any" or a dtype name
    variadic: bool = False

    @property
    def host_values(self):
        """True for an int64 input whose values the kernel reads on the host."""
        return self.dtype == HOST_VALUE_DTYPE and not self.variadic


@dataclasses.dataclass(frozen=True)
class OutputDef(TensorDef):
    # How the output's shape is known: "given" (the caller gives shapes and dtypes), "like" (the
    # shape of input `like`), or a tuple of dimensions, each an int, an int attribute's name or
    # ("len", variadic input).
    shape: Union[str, Tuple] = "given"
    like: Optional[str] = None
    dtype_of: Optional[str] = None  # the input whose dtype an "any" output has (None: fixed or given)


@dataclasses.dataclass(frozen=True)
class AttrDef:
    name: str
    type: str


@dataclasses.dataclass(frozen=True)
class OpDef:
    name: str
    ascend_function: str
    inputs: Tuple[TensorDef, ...]
    outputs: Tuple[OutputDef, ...]
    attrs: Tuple[AttrDef, ...]
    side_effect_mem: bool
    rw_write: Optional[str] = None  # the input written in place
    # Inputs of dtype "any" whose tensors must all have one dtype (every tensor of a variadic one).
    same_dtype: Tuple[str, ...] = ()

    @property
    def attr_names(self):
        return tuple(a.name for a in self.attrs)

    @property
    def input_names(self):
        return tuple(t.name for t in self.inputs)

    @property
    def length_attr(self):
        """The int attribute holding the length of the op's variadic input (num_<input>), or None."""
        return next((length_attr_name(t.name) for t in self.inputs if t.variadic), None)

    @property
    def outputs_given(self):
        """True when the caller gives the outputs' shapes and dtypes (no input describes them)."""
        return any(o.shape == "given" for o in self.outputs)


def length_attr_name(input_name):
    """The attribute holding the length of variadic input input_name."""
    return f"num_{input_name}"


def _fail(op, where, message):
    raise OpDefinitionError(f"configs/ops.yaml: op {op}: {where}: {message}")


def _check_keys(op, where, entry, allowed, required):
    if not isinstance(entry, dict):
        _fail(op, where, f"must be a mapping, got {entry!r}")
    unknown = sorted(set(entry) - allowed)
    if unknown:
        _fail(op, where, f"unknown key(s) {unknown}; known: {sorted(allowed)}")
    missing = sorted(required - set(entry))
    if missing:
        _fail(op, where, f"missing key(s) {missing}")


def _flag(op, where, value):
    if not isinstance(value, bool):
        _fail(op, where, f"must be true or false, got {value!r}")
    return value


def _tensor(op, where, entry, dtypes):
    _check_keys(op, where, entry, _INPUT_KEYS, {"name", "dtype"})
    if entry["dtype"] != "any" and entry["dtype"] not in dtypes:
        _fail(op, where, f"dtype {entry['dtype']!r} is neither 'any' nor one of {list(dtypes)}")
    return TensorDef(entry["name"], entry["dtype"], _flag(op, where, entry.get("variadic", False)))


def _output_shape(op, where, rule, inputs, attrs):
    if rule == "given":
        return rule
    if isinstance(rule, str):
        like = _LIKE.match(rule)
        if not like or like.group(1) not in inputs or inputs[like.group(1)].variadic:
            _fail(op, where, f"shape {rule!r} must be 'given', like(<non-variadic input>) or a list of dimensions")
        return "like", like.group(1)
    if not isinstance(rule, list):
        _fail(op, where, f"shape must be 'given', like(<input>) or a list, got {rule!r}")
    dims = []
    for d in rule:
        length = _LEN.match(d) if isinstance(d, str) else None
        if isinstance(d, int) and not isinstance(d, bool) and d >= 0:
            dims.append(d)
        elif length and length.group(1) in inputs and inputs[length.group(1)].variadic:
            dims.append(("len", length.group(1)))
        elif isinstance(d, str) and attrs.get(d) == "int":
            dims.append(d)
        else:
            _fail(op, where, f"dimension {d!r} must be an int >= 0, an int attribute or len(<variadic input>)")
    return tuple(dims)


def _output(op, where, entry, dtypes, inputs, attrs):
    _check_keys(op, where, entry, _OUTPUT_KEYS, {"name", "dtype", "shape"})
    base = _tensor(op, where, {k: v for k, v in entry.items() if k in _INPUT_KEYS}, dtypes)
    shape = _output_shape(op, where, entry["shape"], inputs, attrs)
    like = None
    if isinstance(entry["shape"], str) and entry["shape"] != "given":
        shape, like = shape
    dtype_of = entry.get("dtype_of")
    if dtype_of is not None and (dtype_of not in inputs or base.dtype != "any"):
        _fail(op, where, f"dtype_of {dtype_of!r} must name an input, for an output of dtype 'any'")
    if base.dtype == "any" and dtype_of is None and shape != "given":
        _fail(op, where, "an output of dtype 'any' needs dtype_of (or shape: given)")
    if base.variadic and shape != "given":
        _fail(op, where, "a variadic output needs shape: given")
    return OutputDef(base.name, base.dtype, base.variadic, shape, like, dtype_of)


def _op(name, entry, dtypes):
    _check_keys(name, "definition", entry, _OP_KEYS, _REQUIRED_OP_KEYS)
    ins = [_tensor(name, f"inputs[{i}]", t, dtypes) for i, t in enumerate(entry["inputs"] or ())]
    attrs = []
    for i, a in enumerate(entry.get("attrs") or ()):
        _check_keys(name, f"attrs[{i}]", a, _ATTR_KEYS, _ATTR_KEYS)
        if a["type"] not in _ATTR_TYPES:
            _fail(name, f"attrs[{i}]", f"type {a['type']!r} is not one of {_ATTR_TYPES}")
        attrs.append(AttrDef(a["name"], a["type"]))
    by_name = {t.name: t for t in ins}
    attr_types = {a.name: a.type for a in attrs}
    names = [t.name for t in ins] + [a.name for a in attrs]
    if len(set(names)) != len(names):
        _fail(name, "inputs/attrs", f"a name is used twice in {names}")
    if sum(t.variadic for t in ins) > 1:
        _fail(name, "inputs", "at most one input may be variadic")
    for t in ins:
        if t.variadic and attr_types.get(length_attr_name(t.name)) != "int":
            _fail(name, "attrs", f"variadic input {t.name!r} needs an int attribute {length_attr_name(t.name)!r} "
                                 f"(its length)")
    outs = [_output(name, f"outputs[{i}]", o, dtypes, by_name, attr_types) for i, o in enumerate(entry["outputs"])]
    if any(o.shape == "given" for o in outs) and len(outs) != 1:
        _fail(name, "outputs", "shape: given is for an op with a single (possibly variadic) output")
    rw_write = entry.get("rw_write")
    if rw_write is not None and rw_write not in by_name:
        _fail(name, "rw_write", f"{rw_write!r} must name an input")
    same_dtype = entry.get("same_dtype", [])
    if (not isinstance(same_dtype, list) or any(n not in by_name or by_name[n].dtype != "any" for n in same_dtype)
            or len(set(same_dtype)) != len(same_dtype)
            or (len(same_dtype) == 1 and not by_name[same_dtype[0]].variadic)):
        _fail(name, "same_dtype", f"{same_dtype!r} must list distinct inputs of dtype 'any' (two or more, "
                                  "or one variadic input)")
    side_effect_mem = _flag(name, "side_effect_mem", entry.get("side_effect_mem", False))
    if rw_write is not None and not side_effect_mem:
        _fail(name, "rw_write", "an op that writes an input in place must also set side_effect_mem: true")
    return OpDef(
        name=name,
        ascend_function=entry["ascend_function"],
        inputs=tuple(ins),
        outputs=tuple(outs),
        attrs=tuple(attrs),
        side_effect_mem=side_effect_mem,
        rw_write=rw_write,
        same_dtype=tuple(same_dtype),
    )


def parse(table):
    """(dtypes, {op name: OpDef}) of a parsed configs/ops.yaml; raises OpDefinitionError."""
    if not isinstance(table, dict) or set(table) != {"dtypes", "ops"}:
        raise OpDefinitionError(f"configs/ops.yaml must hold exactly the keys dtypes and ops, got "
                                f"{sorted(table) if isinstance(table, dict) else table!r}")
    dtypes = tuple(table["dtypes"])
    ops = {name: _op(name, entry, dtypes) for name, entry in table["ops"].items()}
    functions = [op.ascend_function for op in ops.values()]
    if len(set(functions)) != len(functions):
        raise OpDefinitionError(f"configs/ops.yaml: two ops share an ascend_function: {functions}")
    return dtypes, ops


@functools.lru_cache(maxsize=None)
def _load():
    with open(_paths.configs_dir() / "ops.yaml", encoding="utf-8") as f:
        return parse(yaml.safe_load(f))


def supported_dtypes():
    """The MindSpore dtype names every primitive supports, in the order of configs/ops.yaml."""
    return _load()[0]


def op_def(name) -> OpDef:
    return _load()[1][name]


def all_op_defs():
    return dict(_load()[1])
