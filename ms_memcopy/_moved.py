"""The import paths of modules that moved into the subpackages, kept working.

``import ms_memcopy.runtime`` (or ``from ms_memcopy import route_build``) gives the module at its new
path itself, not a copy: names read, set or patched through either path are the same. ``python -m``
with an old path runs the module at its new path.
"""
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from typing import Dict, Optional, Sequence

#: old name under ms_memcopy -> new name under ms_memcopy
MOVED = {
    "_acl_lib": "_acl.library",
    "acl_constants": "_acl.constants",
    "acl_error_codes": "_acl.error_codes",
    "acl_limits": "_acl.limits",
    "_convert": "_acl.convert",
    "runtime": "_acl.runtime",
    "_kernels_lib": "_extension._kernels_lib",
    "_paths": "_extension._paths",
    "build_recipe": "_extension.build_recipe",
    "info": "tools.info",
    "npu_check": "tools.npu_check",
    "op_def_route": "_extension.op_def_route",
    "route_ascend_check": "_extension.route_ascend_check",
    "route_build": "_extension.route_build",
    "route_call": "_extension.route_call",
    "route_codegen": "_extension.route_codegen",
    "route_load": "_extension.route_load",
}


class _MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, package: str) -> None:
        self._targets = {f"{package}.{old}": f"{package}.{new}" for old, new in MOVED.items()}
        self._own_specs: Dict[str, Optional[importlib.machinery.ModuleSpec]] = {}

    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None,
                  target: Optional[types.ModuleType] = None) -> Optional[importlib.machinery.ModuleSpec]:
        if fullname not in self._targets:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = importlib.import_module(self._targets[spec.name])
        self._own_specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        # The module at its new path has run already; the import system set its __spec__ to the old path's.
        spec = module.__spec__
        assert spec is not None  # the import system set it
        module.__spec__ = self._own_specs.pop(spec.name)

    def get_code(self, fullname: str) -> Optional[types.CodeType]:  # python -m <old path>
        new = self._targets[fullname]
        spec = importlib.util.find_spec(new)
        if spec is None or not isinstance(spec.loader, importlib.abc.InspectLoader):
            raise ImportError(f"cannot read the code of {new}")
        return spec.loader.get_code(new)


def install(package: str) -> None:
    """Makes the old paths under package importable (once)."""
    if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _MovedFinder(package))
