"""The op definitions of configs/ops/<family>.yaml, read and validated once.

Each file of configs/ops/ holds the ops of one family (batch, memcpy2d, desc, condition, blocks), whose
bodies are ops_impl/kernels/bodies/<family>.cpp and whose primitives are ms_memcopy/ops/<family>.py;
the files are found by glob, so a new family is a new file. The dtypes every op accepts are
configs/dtypes.yaml's (:mod:`ms_memcopy.dtypes`).

This module is the only reader of those files: the primitives take their op names, attributes, side
effects and dtype lists from here, and so do the generators of the op_def route (its op_def YAML and
the C++ table of every op's arguments and output rules).

An op's definition (keys named and placed as in MindSpore's op_def YAML where MindSpore has them):

- ``inputs``: name, dtype (``any`` = every supported dtype, or one dtype), variadic (a list of tensors
  whose length is fixed when the primitive is built: the op's int attribute ``num_<name>``). An int64
  input holds host values (offsets, rows, columns): graph kernels get them as value-dependent inputs,
  eager calls as host values.
- ``outputs``: name, dtype, variadic, and ``shape``: ``[dims]`` (each an int, an int attribute or
  ``len(<variadic input>)``), ``like(<input>)``, or ``given`` (the primitive states shapes and dtypes
  when it is built); ``dtype_of: <input>`` for an output of dtype ``any`` whose shape is not given.
- ``attrs``: name and type (int, listInt, str), fixed when the primitive is built (prim_init
  arguments). ``num_<input>`` is the length of a variadic input: the kernels refuse a launch that got
  another number of tensors (a graph that passed the tuple folded into one tensor).
- ``args_signature``: ``rw_write: <input>``, the input the op writes in place (needs side_effect_mem);
  ``dtype_group: "(<input>, ...)"``, inputs of dtype ``any`` whose tensors must all have one dtype
  (every tensor of a variadic input). ms_memcopy checks the group itself (a mismatch is a TypeError
  before the launch) and does not pass it to MindSpore, which would convert dtypes implicitly.
- ``labels``: ``side_effect_mem: True``, the op reads or writes a HostBuffer (or writes an input in
  place), so GRAPH_MODE keeps it and orders it in program order.

What follows from the op's name is not declared: its primitive is ``Custom_ms_memcopy_<op>``
(:func:`ms_memcopy.route_codegen.primitive_name`) and its body is registered under the op's name.

A definition is checked when the file is read: an unknown key, a missing key, a reference to an
input or attribute that does not exist, or a malformed output rule raises
:class:`OpDefinitionError` naming the file, the op and the key.
"""
import dataclasses
import functools
import re
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, NoReturn, Optional, Sequence, Set, Tuple, Union, cast

import yaml

from . import dtypes as _dtypes
from ._extension import _paths

# An input whose dtype is fixed to int64 holds host values (offsets, rows, columns, block ids): the
# op_def route declares it value-dependent, so its kernel gets the values on the host.
HOST_VALUE_DTYPE = "int64"

_OP_KEYS = {"inputs", "outputs", "attrs", "args_signature", "labels"}
_REQUIRED_OP_KEYS = {"inputs", "outputs"}
_SIGNATURE_KEYS = {"rw_write", "dtype_group"}
_LABEL_KEYS = {"side_effect_mem"}
_INPUT_KEYS = {"name", "dtype", "variadic"}
_OUTPUT_KEYS = {"name", "dtype", "variadic", "shape", "dtype_of"}
_ATTR_KEYS = {"name", "type"}
_ATTR_TYPES = ("int", "listInt", "str")
_LEN = re.compile(r"^len\((\w+)\)$")
_LIKE = re.compile(r"^like\((\w+)\)$")
_GROUP = re.compile(r"^\(\s*(\w+(?:\s*,\s*\w+)*)\s*\)$")
#: Where the op definitions are, relative to the configs directory: one file per family.
OPS_DIR = "ops"


class OpDefinitionError(ValueError):
    """A file of configs/ops/ holds a definition this version cannot use."""


@dataclasses.dataclass(frozen=True)
class TensorDef:
    name: str
    dtype: str  # "any" or a dtype name
    variadic: bool = False

    @property
    def host_values(self) -> bool:
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
    family: str  # the stem of its file, configs/ops/<family>.yaml
    inputs: Tuple[TensorDef, ...]
    outputs: Tuple[OutputDef, ...]
    attrs: Tuple[AttrDef, ...]
    side_effect_mem: bool
    rw_write: Optional[str] = None  # the input written in place
    # Inputs of dtype "any" whose tensors must all have one dtype (every tensor of a variadic one):
    # args_signature.dtype_group.
    dtype_group: Tuple[str, ...] = ()

    @property
    def attr_names(self) -> Tuple[str, ...]:
        return tuple(a.name for a in self.attrs)

    @property
    def input_names(self) -> Tuple[str, ...]:
        return tuple(t.name for t in self.inputs)

    @property
    def length_attr(self) -> Optional[str]:
        """The int attribute holding the length of the op's variadic input (num_<input>), or None."""
        return next((length_attr_name(t.name) for t in self.inputs if t.variadic), None)

    @property
    def outputs_given(self) -> bool:
        """True when the caller gives the outputs' shapes and dtypes (no input describes them)."""
        return any(o.shape == "given" for o in self.outputs)


def length_attr_name(input_name: str) -> str:
    """The attribute holding the length of variadic input input_name."""
    return f"num_{input_name}"


def _fail(op: str, where: str, message: str) -> NoReturn:
    """op: "<file>: op <name>", as _op builds it."""
    raise OpDefinitionError(f"{op}: {where}: {message}")


def _check_keys(op: str, where: str, entry: Any, allowed: Set[str], required: Set[str]) -> None:
    if not isinstance(entry, dict):
        _fail(op, where, f"must be a mapping, got {entry!r}")
    unknown = sorted(set(entry) - allowed)
    if unknown:
        _fail(op, where, f"unknown key(s) {unknown}; known: {sorted(allowed)}")
    missing = sorted(required - set(entry))
    if missing:
        _fail(op, where, f"missing key(s) {missing}")


def _flag(op: str, where: str, value: Any) -> bool:
    if not isinstance(value, bool):
        _fail(op, where, f"must be true or false, got {value!r}")
    return value


def _tensor(op: str, where: str, entry: Any, dtypes: Sequence[str]) -> TensorDef:
    _check_keys(op, where, entry, _INPUT_KEYS, {"name", "dtype"})
    if entry["dtype"] != "any" and entry["dtype"] not in dtypes:
        _fail(op, where, f"dtype {entry['dtype']!r} is neither 'any' nor one of {list(dtypes)}")
    return TensorDef(entry["name"], entry["dtype"], _flag(op, where, entry.get("variadic", False)))


def _output_shape(op: str, where: str, rule: Any, inputs: Mapping[str, TensorDef],
                  attrs: Mapping[str, str]) -> Union[str, Tuple[str, str], Tuple[Any, ...]]:
    if rule == "given":
        return rule
    if isinstance(rule, str):
        like = _LIKE.match(rule)
        if not like or like.group(1) not in inputs or inputs[like.group(1)].variadic:
            _fail(op, where, f"shape {rule!r} must be 'given', like(<non-variadic input>) or a list of dimensions")
        return "like", like.group(1)
    if not isinstance(rule, list):
        _fail(op, where, f"shape must be 'given', like(<input>) or a list, got {rule!r}")
    dims: List[Union[int, str, Tuple[str, str]]] = []
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


def _output(op: str, where: str, entry: Any, dtypes: Sequence[str], inputs: Mapping[str, TensorDef],
            attrs: Mapping[str, str]) -> OutputDef:
    _check_keys(op, where, entry, _OUTPUT_KEYS, {"name", "dtype", "shape"})
    base = _tensor(op, where, {k: v for k, v in entry.items() if k in _INPUT_KEYS}, dtypes)
    shape = _output_shape(op, where, entry["shape"], inputs, attrs)
    like = None
    if isinstance(entry["shape"], str) and entry["shape"] != "given":
        shape, like = cast(Tuple[str, str], shape)  # ("like", <input>)
    dtype_of = entry.get("dtype_of")
    if dtype_of is not None and (dtype_of not in inputs or base.dtype != "any"):
        _fail(op, where, f"dtype_of {dtype_of!r} must name an input, for an output of dtype 'any'")
    if base.dtype == "any" and dtype_of is None and shape != "given":
        _fail(op, where, "an output of dtype 'any' needs dtype_of (or shape: given)")
    if base.variadic and shape != "given":
        _fail(op, where, "a variadic output needs shape: given")
    return OutputDef(base.name, base.dtype, base.variadic, shape, like, dtype_of)


def _dtype_group(op: str, value: Any, by_name: Mapping[str, TensorDef]) -> Tuple[str, ...]:
    where = "args_signature.dtype_group"
    group = _GROUP.match(value) if isinstance(value, str) else None
    names = [n.strip() for n in group.group(1).split(",")] if group else None
    if (names is None or any(n not in by_name or by_name[n].dtype != "any" for n in names)
            or len(set(names)) != len(names) or (len(names) == 1 and not by_name[names[0]].variadic)):
        _fail(op, where, f"{value!r} must be one group \"(<input>, ...)\" of distinct inputs of dtype 'any' "
                         "(two or more, or one variadic input)")
    return tuple(names)


def _op(file: str, name: str, entry: Any, dtypes: Sequence[str]) -> OpDef:
    label = f"{file}: op {name}"
    _check_keys(label, "definition", entry, _OP_KEYS, _REQUIRED_OP_KEYS)
    ins = [_tensor(label, f"inputs[{i}]", t, dtypes) for i, t in enumerate(entry["inputs"] or ())]
    attrs = []
    for i, a in enumerate(entry.get("attrs") or ()):
        _check_keys(label, f"attrs[{i}]", a, _ATTR_KEYS, _ATTR_KEYS)
        if a["type"] not in _ATTR_TYPES:
            _fail(label, f"attrs[{i}]", f"type {a['type']!r} is not one of {_ATTR_TYPES}")
        attrs.append(AttrDef(a["name"], a["type"]))
    by_name = {t.name: t for t in ins}
    attr_types = {a.name: a.type for a in attrs}
    names = [t.name for t in ins] + [a.name for a in attrs]
    if len(set(names)) != len(names):
        _fail(label, "inputs/attrs", f"a name is used twice in {names}")
    if sum(t.variadic for t in ins) > 1:
        _fail(label, "inputs", "at most one input may be variadic")
    for t in ins:
        if t.variadic and attr_types.get(length_attr_name(t.name)) != "int":
            _fail(label, "attrs", f"variadic input {t.name!r} needs an int attribute {length_attr_name(t.name)!r} "
                                  f"(its length)")
    outs = [_output(label, f"outputs[{i}]", o, dtypes, by_name, attr_types) for i, o in enumerate(entry["outputs"])]
    if any(o.shape == "given" for o in outs) and len(outs) != 1:
        _fail(label, "outputs", "shape: given is for an op with a single (possibly variadic) output")
    signature = entry.get("args_signature", {})
    _check_keys(label, "args_signature", signature, _SIGNATURE_KEYS, set())
    rw_write = signature.get("rw_write")
    if rw_write is not None and rw_write not in by_name:
        _fail(label, "args_signature.rw_write", f"{rw_write!r} must name an input")
    dtype_group = _dtype_group(label, signature["dtype_group"], by_name) if "dtype_group" in signature else ()
    labels = entry.get("labels", {})
    _check_keys(label, "labels", labels, _LABEL_KEYS, set())
    side_effect_mem = _flag(label, "labels.side_effect_mem", labels.get("side_effect_mem", False))
    if rw_write is not None and not side_effect_mem:
        _fail(label, "args_signature.rw_write",
              "an op that writes an input in place must also set labels: {side_effect_mem: True}")
    return OpDef(
        name=name,
        family=Path(file).stem,
        inputs=tuple(ins),
        outputs=tuple(outs),
        attrs=tuple(attrs),
        side_effect_mem=side_effect_mem,
        rw_write=rw_write,
        dtype_group=dtype_group,
    )


def parse(tables: Mapping[str, Any],
          dtypes: Optional[Iterable[str]] = None) -> Tuple[Tuple[str, ...], Dict[str, OpDef]]:
    """(dtypes, {op name: OpDef}) of parsed op definition files; raises OpDefinitionError.

    tables: {file: its parsed YAML ({op name: definition})}, the file as messages name it
    ("configs/ops/<family>.yaml", the family being its stem); dtypes: the names an input may have
    besides "any", by default configs/dtypes.yaml's supported ones.
    """
    dtypes = tuple(_dtypes.supported() if dtypes is None else dtypes)
    ops: Dict[str, OpDef] = {}
    files: Dict[str, str] = {}
    for file, table in tables.items():
        if not isinstance(table, dict) or not table:
            raise OpDefinitionError(f"{file} must map op names to their definitions, got {table!r}")
        for name, entry in table.items():
            if name in ops:
                raise OpDefinitionError(f"{file}: op {name} is defined in {files[name]} too")
            ops[name] = _op(file, name, entry, dtypes)
            files[name] = file
    return dtypes, ops


def read_tables() -> Dict[str, Any]:
    """{"configs/ops/<family>.yaml": its parsed YAML} of every file of configs/ops/, in name order."""
    tables: Dict[str, Any] = {}
    for path in sorted((_paths.configs_dir() / OPS_DIR).glob("*.yaml")):
        with open(path, encoding="utf-8") as f:
            tables[f"configs/{OPS_DIR}/{path.name}"] = yaml.safe_load(f)
    if not tables:
        raise OpDefinitionError(f"no op definitions in {_paths.configs_dir() / OPS_DIR}")
    return tables


@functools.lru_cache(maxsize=None)
def _load() -> Tuple[Tuple[str, ...], Dict[str, OpDef]]:
    return parse(read_tables())


def supported_dtypes() -> Tuple[str, ...]:
    """The MindSpore dtype names every primitive supports, in the order of configs/dtypes.yaml."""
    return _load()[0]


def op_def(name: str) -> OpDef:
    return _load()[1][name]


def all_op_defs() -> Dict[str, OpDef]:
    return dict(_load()[1])


def families() -> Dict[str, List[str]]:
    """{family: [op names]} in file order: the stems shared by configs/ops/<family>.yaml,
    ops_impl/kernels/bodies/<family>.cpp and ms_memcopy/ops/<family>.py."""
    result: Dict[str, List[str]] = {}
    for op in _load()[1].values():
        result.setdefault(op.family, []).append(op.name)
    return result
