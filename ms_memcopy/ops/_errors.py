"""The primitives' errors: every error of their checks reads "ms_memcopy <primitive>(<mode>): <argument>
...", the prefix the kernels give theirs (the op's label), and graphs with jit_level O2 are refused."""
import contextlib
import functools
from typing import Any, Callable, Iterator, Type

import mindspore as ms

ERROR_PREFIX = "ms_memcopy "


@contextlib.contextmanager
def labelled_errors(label: str) -> Iterator[None]:
    """Re-raises a ValueError or TypeError of the block as the same type with its text prefixed
    "ms_memcopy <label>: ", as the kernels prefix theirs; text already prefixed is left alone."""
    try:
        yield
    except (ValueError, TypeError) as error:
        raise relabelled(error, label) from None


def labelled(error: Exception, label: str) -> Exception:
    """error prefixed as :func:`labelled_errors` does (a new exception of its type), or error itself
    when it is of a subtype or already prefixed."""
    if type(error) not in (ValueError, TypeError) or str(error).startswith(ERROR_PREFIX):
        return error
    return type(error)(f"{ERROR_PREFIX}{label}: {error}")


def relabelled(error: Exception, label: str) -> Exception:
    """:func:`labelled` keeping error's traceback: what an eager call raises (``from None``) for an error
    it caught."""
    new = labelled(error, label)
    return new if new is error else new.with_traceback(error.__traceback__)


def labelled_init(cls: Type[Any], init: Callable[..., None]) -> Callable[..., None]:
    """cls.__init__ raising labelled errors: "<Class>(<mode>)" when the first argument is one of
    the class's ``_forms``, else "<Class>"."""
    @functools.wraps(init)
    def labelled(self: Any, *args: Any, **kwargs: Any) -> None:
        form = args[0] if args and isinstance(args[0], str) and args[0] in cls._forms else None
        with labelled_errors(cls.__name__ if form is None else f"{cls.__name__}({form})"):
            init(self, *args, **kwargs)
    return labelled


def check_jit_level(label: str) -> None:
    """The refusal the op's infer function makes, for calls that reach no infer function: these
    kernels run kernel by kernel, which jit_level O2 (task sink) does not do."""
    if _execution_mode() == ms.GRAPH_MODE and (ms.get_context("jit_config") or {}).get("jit_level") == "O2":
        raise RuntimeError(f"{ERROR_PREFIX}{label}: runs kernel by kernel and cannot be compiled with "
                           "jit_level O2 (task sink); use jit_level O0 or O1")


def _mode_reader():
    """ms.get_context("mode") without get_context's argument checks (it runs at every eager call)."""
    try:
        from mindspore.context import _get_mode
    except ImportError:  # a MindSpore without it
        return lambda: ms.get_context("mode")
    return _get_mode


_execution_mode = _mode_reader()
