"""What the op_def route's module is generated from: configs/ops/*.yaml (through :mod:`op_defs`)
and configs/dtypes.yaml (through :mod:`dtypes`).

Three files per build, all written into the build directory (never committed):

- the op_def YAML that ``ops.CustomOpBuilder(op_def=...)`` turns into the ``Custom_<op>``
  primitive registrations (:func:`op_def_yaml`);
- ``route_ops.inc``, the C++ table of every op's arguments and output rules that the module's
  infer functions, kernels and PyNative functions are instantiated from (:func:`route_table`), and
  the name of the module's graph pass (:data:`TUPLE_PASS_NAME`);
- ``dtypes.inc``, the dtype table (:func:`ms_memcopy.dtypes.table_source`).

Each op becomes an op_def whose arguments are, in order: its inputs (``tensor``, or
``tuple[tensor]`` for a variadic one), its attributes (``prim_init``: set when the primitive is
built, so the call takes the inputs only), and for an op whose outputs the caller describes
(``shape: given``) ``given_shape`` and ``given_dtype`` (a TypeId), or ``given_shapes``, ``given_ranks``
and ``given_dtypes`` for a variadic output (``given_`` names: MindSpore reads init arguments as attributes of
the primitive, and the primitives have their own ``shape`` and ``dtype``). Int64 inputs (offsets, rows,
columns) are value-dependent: kernels get their values on the host. ``labels`` and ``args_signature:
rw_write`` are passed on as they are (not ``dtype_group``: ms_memcopy checks it, where MindSpore would convert
dtypes). The length attribute of a variadic input (``num_<input>``) is an int attribute the kernels check the
tensors they got against.
"""
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

import yaml

from .. import dtypes
from ..op_defs import AttrDef, OpDef, OutputDef, TensorDef, all_op_defs, supported_dtypes

OP_DEF_FILE = "ms_memcopy_route_ops.yaml"
TABLE_FILE = "route_ops.inc"
# The graph pass the module provides as a MindSpore pass plugin (route_tuple_pass.cpp): it unfolds the
# tuple input of the ops with a variadic input.
TUPLE_PASS_NAME = "ms_memcopy_unfold_tuple_inputs"

_ATTR_TYPES = {"int": "int", "listInt": "tuple[int]", "str": "str"}
_ATTR_KINDS = {"int": "kInt", "listInt": "kInts", "str": "kStr"}


#: Prefix of every op's op_def name: the primitive Custom_ms_memcopy_<op> and its kernels are then
#: MindSpore-wide names no other extension's op takes (MindSpore's custom kernel factory keeps the
#: first registration of a name).
PRIMITIVE_PREFIX = "ms_memcopy_"


def op_def_name(op: OpDef) -> str:
    """The op's name in the generated op_def: its primitive is ``Custom_<op_def_name>``."""
    return PRIMITIVE_PREFIX + op.name


def primitive_name(op: OpDef) -> str:
    """The name of the op's generated primitive and of its registered kernels."""
    return "Custom_" + op_def_name(op)


def given_args(op: OpDef) -> List[Tuple[str, str, str]]:
    """[(name, op_def dtype, table kind)] of the arguments describing op's outputs (shape: given)."""
    if not op.outputs_given:
        return []
    if op.outputs[0].variadic:
        return [("given_shapes", "tuple[int]", "kGivenShapes"), ("given_ranks", "tuple[int]", "kGivenRanks"),
                ("given_dtypes", "tuple[int]", "kGivenDtypes")]
    return [("given_shape", "tuple[int]", "kGivenShape"), ("given_dtype", "int", "kGivenDtype")]


def arg_names(op: OpDef) -> List[str]:
    """The op_def's argument names, in order."""
    return [*op.input_names, *op.attr_names, *(name for name, _, _ in given_args(op))]


def _attr_kind(op: OpDef, a: AttrDef) -> str:
    return "kLength" if a.name == op.length_attr else _ATTR_KINDS[a.type]


def _input_kind(t: TensorDef) -> str:
    if t.variadic:
        return "kTensors"
    return "kHostValues" if t.host_values else "kTensor"


def op_def_entry(op: OpDef) -> Dict[str, Any]:
    """The op_def of op, as a dict ready for YAML."""
    args: Dict[str, Dict[str, Any]] = {t.name: {"dtype": "tuple[tensor]" if t.variadic else "tensor"}
                                       for t in op.inputs}
    for a in op.attrs:
        args[a.name] = {"dtype": _ATTR_TYPES[a.type], "prim_init": True}
    for name, dtype, _ in given_args(op):
        if name in args:
            raise ValueError(f"{op.name}: argument {name} would be defined twice")
        args[name] = {"dtype": dtype, "prim_init": True}
    entry: Dict[str, Any] = {"args": args}
    if op.rw_write is not None:
        entry["args_signature"] = {"rw_write": op.rw_write}
    if op.side_effect_mem:
        entry["labels"] = {"side_effect_mem": True}
    entry["returns"] = {t.name: {"dtype": "tuple[tensor]" if t.variadic else "tensor"} for t in op.outputs}
    return entry


def op_def_entries(ops: Optional[Mapping[str, OpDef]] = None) -> Dict[str, Dict[str, Any]]:
    """{op_def name: op_def} of every op (the op_def's name is :func:`op_def_name`)."""
    ops = all_op_defs() if ops is None else ops
    return {op_def_name(op): op_def_entry(op) for op in ops.values()}


def op_def_yaml(ops: Optional[Mapping[str, OpDef]] = None) -> str:
    header = "# Generated from configs/ops/*.yaml by ms_memcopy.route_codegen; do not edit.\n"
    return header + yaml.safe_dump(op_def_entries(ops), sort_keys=False, default_flow_style=False)


def _type_id(dtype: str) -> str:
    return f"mindspore::kNumberType{dtypes.type_id_suffix(dtype)}" if dtype != "any" else "mindspore::kTypeUnknown"


def _dim(d: Union[int, str, Tuple[str, str]], index: Mapping[str, int]) -> str:
    if isinstance(d, int):
        return f"{{DimKind::kConst, {d}}}"
    if isinstance(d, tuple):  # ("len", input)
        return f"{{DimKind::kLen, {index[d[1]]}}}"
    return f"{{DimKind::kAttr, {index[d]}}}"


def _output(o: OutputDef, index: Mapping[str, int]) -> str:
    dtype = _type_id(o.dtype)
    dtype_of = index[o.dtype_of] if o.dtype_of is not None else -1
    dims: List[Any]
    if o.shape == "given":
        shape, like, dims = "kGiven", -1, []
    elif o.shape == "like":
        assert o.like is not None  # op_defs sets it for a like() shape
        shape, like, dims = "kLike", index[o.like], []
    else:
        shape, like, dims = "kDims", -1, list(o.shape)
    if len(dims) > 4:
        raise ValueError(f"output {o.name}: at most 4 dimensions in a shape rule")
    cells = ", ".join(_dim(d, index) for d in dims) or "{DimKind::kConst, 0}"
    return (f'{{"{o.name}", ShapeRule::{shape}, {like}, {{{cells}}}, {len(dims)}, {dtype}, {dtype_of}}}')


def _check_kernel_layout(op: OpDef) -> None:
    # MindSpore flattens a tuple[tensor] and a tuple[int] argument into the kernel's inputs: the
    # kernel can place them only if tuple[int] ones come last and never with a variadic input.
    kinds = [k for _, _, k in given_args(op)] + ["kInts" for a in op.attrs if a.type == "listInt"]
    if kinds and any(t.variadic for t in op.inputs):
        raise ValueError(f"{op.name}: an op with a variadic input cannot have tuple[int] arguments "
                         "(attributes of type listInt or shape: given)")
    if any(a.type != "int" for a in op.attrs):
        raise ValueError(f"{op.name}: the op bodies read int attributes only")


def route_table(ops: Optional[Mapping[str, OpDef]] = None) -> str:
    """The C++ table (route_ops.inc) of every op's op_def arguments and output rules."""
    op_list = list((all_op_defs() if ops is None else ops).values())
    for op in op_list:
        _check_kernel_layout(op)
    lines = ["// Generated from configs/ops/*.yaml by ms_memcopy.route_codegen; do not edit.",
             "// MSMC_ROUTE_OPS(X) expands X(<op>, <op_def name>) for every op; with MSMC_ROUTE_TABLE_DEFINITIONS",
             "// defined it",
             "// also defines kRouteOps, the table of route_common.h.",
             "#ifndef MSMC_ROUTE_OPS",
             "#define MSMC_ROUTE_OPS(X) " + " ".join(f"X({op.name}, {op_def_name(op)})" for op in op_list),
             f'#define MSMC_TUPLE_PASS_NAME "{TUPLE_PASS_NAME}"',
             "#endif",
             "#if defined(MSMC_ROUTE_TABLE_DEFINITIONS) && !defined(MSMC_ROUTE_TABLE_DEFINED)",
             "#define MSMC_ROUTE_TABLE_DEFINED",
             "namespace msmc {", "namespace route {", "namespace {"]
    for op in op_list:
        fn = op.name
        kinds = ([(t.name, _input_kind(t), _type_id(t.dtype)) for t in op.inputs]
                 + [(a.name, _attr_kind(op, a), _type_id("any")) for a in op.attrs]
                 + [(name, kind, _type_id("any")) for name, _, kind in given_args(op)])
        index = {name: i for i, (name, _, _) in enumerate(kinds)}
        args = ", ".join(f'{{"{name}", ArgKind::{kind}, {dtype}, {"true" if name in op.dtype_group else "false"}, '
                         f'{"true" if name == op.rw_write else "false"}}}'
                         for name, kind, dtype in kinds)
        outs = ", ".join(_output(o, index) for o in op.outputs)
        lines.append(f"const RouteArg kArgs_{fn}[] = {{{args}}};")
        lines.append(f"const RouteOutput kOutputs_{fn}[] = {{{outs}}};")
    supported = ", ".join(_type_id(d) for d in supported_dtypes())
    lines.append(f"const TypeId kSupportedDtypes[] = {{{supported}}};  // configs/dtypes.yaml's supported")
    lines.append("const RouteOp kRouteOps[] = {")
    for op in op_list:
        fn = op.name
        lines.append(f'    {{"{fn}", kArgs_{fn}, {len(arg_names(op))}, kOutputs_{fn}, {len(op.outputs)}, '
                     f'{"true" if op.side_effect_mem else "false"}}},')
    lines += ["};", "}  // namespace", "}  // namespace route", "}  // namespace msmc", "#endif", ""]
    return "\n".join(lines)


def write_if_changed(path: Path, text: str) -> Path:
    """Writes text to path unless it already holds it (keeps ninja from rebuilding); returns path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    return path


def write_sources(directory: Union[str, Path], ops: Optional[Mapping[str, OpDef]] = None) -> Tuple[Path, Path]:
    """Writes the op_def YAML (into directory/op_def/), route_ops.inc and dtypes.inc (into
    directory/include/); returns (yaml path, include directory)."""
    directory = Path(directory)
    yaml_path = write_if_changed(directory / "op_def" / OP_DEF_FILE, op_def_yaml(ops))
    write_if_changed(directory / "include" / TABLE_FILE, route_table(ops))
    write_if_changed(directory / "include" / dtypes.TABLE_FILE, dtypes.table_source())
    return yaml_path, directory / "include"
