"""ms_memcopy: MindSpore data movement over the AscendCL memory-copy calls.

Importing the package loads nothing heavy: ``runtime`` (ACL calls, raising
AclError), ``acl`` (the same calls in pyACL conventions) and ``HostBuffer``
load on first attribute access, and none of them imports MindSpore; ``ops``
(the copy primitives), ``nn`` (Cells built on them) and ``offload`` (a vLLM-shaped
offloading handler over them) import MindSpore when first used.
"""
import importlib
from typing import Any, List

from . import _moved
from ._extension._paths import get_acl_library, get_include
from .errors import AclError

_moved.install(__name__)  # the modules' paths before they moved into subpackages keep working

__version__ = "0.1.0"

_LAZY_SUBMODULES = ("runtime", "acl", "ops", "nn", "offload")
_LAZY_ATTRIBUTES = {"HostBuffer": "host_buffer", "HostChunks": "host_chunks"}  # name -> submodule defining it

__all__ = ["AclError", "HostBuffer", "HostChunks", "get_include", "get_acl_library", "__version__", *_LAZY_SUBMODULES]


def __getattr__(name: str) -> Any:
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _LAZY_ATTRIBUTES:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY_ATTRIBUTES[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(_LAZY_SUBMODULES) | set(_LAZY_ATTRIBUTES))
