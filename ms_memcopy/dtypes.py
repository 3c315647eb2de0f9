"""The dtype table of configs/dtypes.yaml, the one source of the dtypes ms_memcopy knows.

Python reads it here (:func:`supported`, :func:`itemsize`, :func:`type_id_suffix`); the C++ code gets
it as ``dtypes.inc`` (:func:`table_source`), which setup.py writes for the kernels library (their
``ItemSize``) and :mod:`ms_memcopy.route_codegen` for the module (its TypeId -> name table).

Only the standard library and PyYAML are used: setup.py imports this module before anything is built.
"""
import dataclasses
import functools
from typing import Tuple

import yaml

from ._extension import _paths

#: The C++ table, generated into the kernels' and the module's build directories.
TABLE_FILE = "dtypes.inc"
_KEYS = {"name", "type_id", "itemsize"}


class DtypeTableError(ValueError):
    """configs/dtypes.yaml holds a table this version cannot use."""


@dataclasses.dataclass(frozen=True)
class Dtype:
    name: str  # MindSpore's dtype name
    type_id: str  # the suffix of mindspore::kNumberType<type_id>
    itemsize: int  # bytes per element
    supported: bool  # every op accepts it (an input of dtype "any")


def parse(table: object, where: str = "configs/dtypes.yaml") -> Tuple[Dtype, ...]:
    """The Dtype entries of a parsed configs/dtypes.yaml, supported ones first; raises DtypeTableError."""
    if not isinstance(table, dict) or set(table) != {"supported", "named"}:
        raise DtypeTableError(f"{where} must hold exactly the keys supported and named, got "
                              f"{sorted(table) if isinstance(table, dict) else table!r}")
    entries = []
    for key in ("supported", "named"):
        for i, entry in enumerate(table[key] or ()):
            if not isinstance(entry, dict) or set(entry) != _KEYS:
                raise DtypeTableError(f"{where}: {key}[{i}]: must be a mapping with keys {sorted(_KEYS)}, "
                                      f"got {entry!r}")
            if not isinstance(entry["itemsize"], int) or entry["itemsize"] <= 0:
                raise DtypeTableError(f"{where}: {key}[{i}]: itemsize must be a positive int")
            entries.append(Dtype(str(entry["name"]), str(entry["type_id"]), entry["itemsize"], key == "supported"))
    names = [d.name for d in entries]
    if len(set(names)) != len(names):
        raise DtypeTableError(f"{where}: a dtype is listed twice in {names}")
    return tuple(entries)


@functools.lru_cache(maxsize=None)
def table() -> Tuple[Dtype, ...]:
    """Every Dtype of configs/dtypes.yaml, supported ones first, each list in the file's order."""
    with open(_paths.configs_dir() / "dtypes.yaml", encoding="utf-8") as f:
        return parse(yaml.safe_load(f))


def supported() -> Tuple[str, ...]:
    """The names of the dtypes every op accepts, in the file's order."""
    return tuple(d.name for d in table() if d.supported)


def _entry(name: str) -> Dtype:
    for d in table():
        if d.name == name:
            return d
    raise KeyError(f"dtype {name!r} is not in configs/dtypes.yaml")


def itemsize(name: str) -> int:
    """Bytes per element of dtype name."""
    return _entry(name).itemsize


def type_id_suffix(name: str) -> str:
    """The suffix of dtype name's TypeId (``mindspore::kNumberType<suffix>``)."""
    return _entry(name).type_id


def table_source() -> str:
    """``dtypes.inc``: ``MSMC_DTYPES(X)`` expands ``X(name, TypeId suffix, itemsize, supported)`` for
    every dtype of configs/dtypes.yaml (the kernels' ItemSize and the module's TypeId names)."""
    cells = " ".join(f"X({d.name}, {d.type_id}, {d.itemsize}, {'true' if d.supported else 'false'})"
                     for d in table())
    return ("// Generated from configs/dtypes.yaml by ms_memcopy.dtypes; do not edit.\n"
            "// MSMC_DTYPES(X) expands X(name, TypeId suffix, itemsize, supported) for every dtype.\n"
            "#ifndef MSMC_DTYPES\n"
            f"#define MSMC_DTYPES(X) {cells}\n"
            "#endif\n")
