"""CANN's limits on the ACL calls ms_memcopy makes, read from the one header that the host ACL runtime and
the kernels compile (ops_impl/kernels/acl_limits.h; ``kernels_src/acl_limits.h`` inside a wheel).

Each ``constexpr <type> k<Name> = <value>;`` of the header is read (:func:`read_limits`) under its name in
upper snake case (``kMaxBatchItems`` -> ``MAX_BATCH_ITEMS``, ``kMax2DHeight`` -> ``MAX_2D_HEIGHT``); the
module's constants below take their values from there. Only the standard library is used.
"""
import re
from pathlib import Path
from typing import Dict, Optional

from .._extension import _paths

#: The header, relative to the kernels' source directory.
HEADER_FILE = "acl_limits.h"

_CONSTANT = re.compile(r"^constexpr\s+\w+\s+k(\w+)\s*=\s*([^;]+);", re.M)
# A value: integer literals, `type{n}`, `<<` and `*`.
_VALUE = re.compile(r"^(?:\s*(?:\w+\{\d+\}|\d+)\s*(?:<<|\*)?)+$")


def header_path() -> Path:
    """The header's path: ops_impl/kernels of a checkout, or the kernel sources a wheel carries."""
    found = _paths._first_existing(_paths.PACKAGE_DIR / "kernels_src" / HEADER_FILE,
                                   _paths.SOURCE_ROOT / "ops_impl" / "kernels" / HEADER_FILE)
    if found is None:
        raise FileNotFoundError(f"ms_memcopy's {HEADER_FILE} was not found (a source checkout or a wheel ships it)")
    return found


def _python_name(camel: str) -> str:
    return re.sub(r"(?<=[a-z])(?=[A-Z0-9])|(?<=[A-Z0-9])(?=[A-Z][a-z])", "_", camel).upper()


def _evaluate(text: str, name: str) -> int:
    if not _VALUE.match(text):
        raise ValueError(f"{HEADER_FILE}: k{name} = {text!r} is not an integer expression of literals, << and *")
    return int(eval(re.sub(r"\w+\{(\d+)\}", r"\1", text), {"__builtins__": {}}))  # digits and operators only


def read_limits(path: Optional[Path] = None) -> Dict[str, int]:
    """{PYTHON_NAME: value} of every constant of the header."""
    text = (path or header_path()).read_text(encoding="utf-8")
    return {_python_name(m[1]): _evaluate(m[2].strip(), m[1]) for m in _CONSTANT.finditer(text)}


_LIMITS = read_limits()
MAX_BATCH_ITEMS = _LIMITS["MAX_BATCH_ITEMS"]  #: items of one aclrtMemcpyBatch(Async) call
MAX_2D_HEIGHT = _LIMITS["MAX_2D_HEIGHT"]  #: rows of one aclrtMemcpy2d(Async) call
MAX_2D_WIDTH = _LIMITS["MAX_2D_WIDTH"]  #: bytes per row of one aclrtMemcpy2d(Async) call
MAX_DESC_COUNT = _LIMITS["MAX_DESC_COUNT"]  #: largest count aclrtSetMemcpyDesc accepts (inclusive)
DESC_COUNT_WRAP = _LIMITS["DESC_COUNT_WRAP"]  #: a descriptor's count is stored modulo this (32 bits)
DESC_ALIGNMENT = _LIMITS["DESC_ALIGNMENT"]  #: alignment of a descriptor's address
MAX_RUNTIME_DEVICES = _LIMITS["MAX_RUNTIME_DEVICES"]  #: device ids the peer-access calls accept
DESC_CHUNK_BYTES = _LIMITS["DESC_CHUNK_BYTES"]  #: bytes per descriptor copy of the kernels
