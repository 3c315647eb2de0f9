"""pyACL's argument parsing: each call's PyArg_ParseTuple format, run by CPython's own parser.

pyACL's C wrappers are METH_VARARGS functions. A wrapper either parses its argument tuple with
``PyArg_ParseTuple(args, format, ...)`` or never looks at it (then any positional arguments are
accepted and ignored). The format letters its wrappers use for the calls here:

=====  ==================  =========================================================================
``k``  pointer, size,      an int (bool included; on Python 3.11 not numpy integers), masked to
       stream handle       unsigned long: ``-1`` is ``2**64 - 1``, ``2**64 + 5`` is ``5``
``K``  uint64              as ``k``, masked to unsigned long long
``i``  id, kind, enum      an int or an ``__index__`` object that fits a C int, else OverflowError
``I``  flags               as ``i``, masked to unsigned int (no overflow check)
``O``  any object          checked by the call itself
``s``  str                 a str without NUL characters, passed as UTF-8
``|``                      the letters after it are optional
=====  ==================  =========================================================================

Running the format through CPython's PyArg_ParseTuple (rather than a copy of its rules) keeps every
case identical to pyACL on the running interpreter. pyACL reports a parse failure through its
CHECK_NULL macro, which replaces the parser's exception (TypeError, OverflowError, ValueError,
UnicodeEncodeError) with a TypeError; so does :func:`pyacl_args`.
"""
import ctypes
import functools
import inspect
import warnings
from typing import Any, Callable, List, Optional, Tuple, TypeVar

from .._acl import library as _acl_lib

__all__ = ["pyacl_args", "CALLER_STACKLEVEL"]

_parse_tuple = ctypes.pythonapi.PyArg_ParseTuple
_parse_tuple.restype = ctypes.c_int

# The C variable each format letter writes through its pointer argument.
_OUTPUT_TYPES = {
    "k": ctypes.c_ulong,
    "K": ctypes.c_ulonglong,
    "i": ctypes.c_int,
    "I": ctypes.c_uint,
    "O": ctypes.c_void_p,
    "s": ctypes.c_char_p,
}

#: ``warnings.warn(..., stacklevel=CALLER_STACKLEVEL)`` inside a function decorated by pyacl_args names
#: the line that called the public function (the function, the decorator's wrapper, the caller).
CALLER_STACKLEVEL = 3

_T = TypeVar("_T")


def _parse(call: str, format_string: str, args: Tuple[Any, ...]) -> List[Any]:
    """The values PyArg_ParseTuple(args, format_string) produces, one per letter (None for an omitted
    optional one; ``O`` gives the object itself, ``s`` its UTF-8 bytes)."""
    letters = format_string.replace("|", "")
    outputs: List[Any] = [_OUTPUT_TYPES[letter]() for letter in letters]
    try:
        _parse_tuple(ctypes.py_object(args), format_string.encode("ascii"), *map(ctypes.byref, outputs))
    except Exception as error:  # noqa: BLE001  (pyACL turns every parse failure into a TypeError)
        raise TypeError(f"{call}: {error}") from None
    values: List[Any] = []
    for index, (letter, output) in enumerate(zip(letters, outputs)):
        if index >= len(args):
            values.append(None)
        elif letter == "O":
            values.append(args[index])
        else:
            values.append(output.value)
    return values


def _mark_failure_text_seen(result: object) -> None:
    """After a pyACL call that failed: records the thread's error text as read, so that the message of
    a later failure raised as AclError (ms_memcopy.runtime) is that failure's alone. The text itself is
    left as it is for the caller's acl.get_recent_err_msg()."""
    ret = result[-1] if isinstance(result, tuple) and result else result
    if type(ret) is int and ret != 0:
        _acl_lib.recent_err_msg()


def pyacl_args(module: str, format_string: Optional[str], *,
               deprecated_for: Optional[str] = None) -> Callable[[Callable[..., _T]], Callable[..., _T]]:
    """Decorator: the function takes its positional arguments as pyACL's wrapper of the same call.

    Args:
        module (str): pyACL's module of the call ("acl", "acl.rt", "acl.util"), for messages.
        format_string (str): the wrapper's PyArg_ParseTuple format, or None when the wrapper parses
            no arguments (whatever is passed is then ignored).
        deprecated_for (str): for the calls pyACL deprecates, the call it names instead; each call then
            warns (category ``Warning``, as pyACL's PyErr_WarnEx) before it parses its arguments.

    The decorated function receives one converted value per format letter. Keyword arguments are a
    TypeError, as for any METH_VARARGS function. The wrapper belongs to ``ms_memcopy.<module>``, the
    module that re-exports it.
    """
    def decorate(function: Callable[..., _T]) -> Callable[..., _T]:
        call = f"{module}.{function.__name__}"
        expected = 0 if format_string is None else len(format_string.replace("|", ""))
        if len(inspect.signature(function).parameters) != expected:
            raise TypeError(f"{call}: the format {format_string!r} does not match the function's parameters")

        @functools.wraps(function)
        def wrapper(*args: Any) -> _T:
            if deprecated_for is not None:
                warnings.warn(f"{call} is deprecated by pyACL; use {deprecated_for}", Warning, stacklevel=2)
            result = function() if format_string is None else function(*_parse(call, format_string, args))
            _mark_failure_text_seen(result)
            return result

        wrapper.__module__ = f"ms_memcopy.{module}"
        return wrapper

    return decorate
