"""Loading the op_def route's module (built when missing or out of date) and registering its graph pass."""
import threading
from pathlib import Path
from typing import Any, Dict, Optional, Set, Union

from . import _paths, route_codegen
from ..op_defs import all_op_defs
from .route_build import _check_backend, build, default_backend, default_build_dir, mindspore_plugin_dir

# register_custom_pass's name of each backend's device
PASS_DEVICES = {"CPU": "cpu", "Ascend": "ascend"}

_lock = threading.Lock()
_modules: Dict[str, Any] = {}  # backend -> the loaded extension module
_registered_pass_devices: Set[str] = set()


def _load_cpu_plugin() -> None:
    """Loads the wheel's CPU plugin libraries the module links, from this MindSpore: a module built by
    ``pip install`` in an isolated build environment carries that environment's path, so the loader
    must find them already loaded (by their names) rather than look them up."""
    import ctypes

    for path in (mindspore_plugin_dir().parent / "libmindspore_hardware_abstract.so",
                 mindspore_plugin_dir() / "libmindspore_ops_cpu.so"):
        ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)


def load(backend: Optional[str] = None, build_dir: Union[str, Path, None] = None) -> Any:
    """Builds (when its sources changed) and loads the route for backend; cached per backend.

    Args:
        backend: "Ascend" or "CPU"; by default from MindSpore's device target. "Ascend" needs CANN
            (ASCEND_OPP_PATH set, as CustomOpBuilder requires).
        build_dir: where to build; by default :func:`default_build_dir`. Ignored once the backend's
            module is loaded in this process (a loaded extension cannot be replaced).

    Returns:
        The extension module: one function per op (PYNATIVE_MODE). Loading it registers the
        ``Custom_<op>`` primitives and their kernels for GRAPH_MODE, and the module's graph pass
        (:func:`register_tuple_pass`).

    Raises:
        RuntimeError: MindSpore refused the graph pass; or backend "Ascend" with a build of the host runtime,
            or with no CANN installation set (its headers are what the module compiles against).
    """
    backend = _check_backend(backend or default_backend())
    if backend == "Ascend" and _paths.uses_host_runtime():
        raise RuntimeError("ms_memcopy was built without CANN (its kernels link the host ACL runtime, "
                           f"{_paths.HOST_ACL_LIBRARY}), so it cannot run on an NPU: reinstall it with CANN's "
                           "environment set (source CANN's set_env.sh, which sets ASCEND_HOME_PATH and "
                           "ASCEND_OPP_PATH), e.g. pip install --force-reinstall --no-deps .")
    if backend == "Ascend" and _paths.cann_home() is None:
        raise RuntimeError(_paths.CANN_MISSING)
    with _lock:
        module = _modules.get(backend)
        if module is not None:
            return module
        from mindspore.ops import CustomOpBuilder

        # The kernels library holds the HostBuffer table: load it from its own path first so that
        # the extension binds to this very copy.
        from . import _kernels_lib

        _kernels_lib.library()
        if backend == "CPU":
            _load_cpu_plugin()
        directory = Path(build_dir) if build_dir is not None else default_build_dir(backend)
        path = build(backend, directory)
        # The raw extension, not CustomOpBuilder.load()'s proxy: its generated Python functions do
        # not handle prim_init arguments, and the primitives of ms_memcopy.ops are built here.
        module = CustomOpBuilder._import_module(path)
        register_tuple_pass(backend, path)
        _modules[backend] = module
        return module


def register_tuple_pass(backend: str, module_path: Union[str, Path]) -> None:
    """Registers the module's graph pass (:data:`route_codegen.TUPLE_PASS_NAME`, route_tuple_pass.cpp)
    for backend's device with ``mindspore.graph.register_custom_pass``, once per process (MindSpore
    would run a pass registered twice twice); :func:`load` does.

    The pass gives the kernels of the ops with a variadic input their tensors one by one: without it,
    an Ascend graph folds them into one temporary copy (RealMakeTuple), which the kernels refuse. It
    also unfolds the constant tuple[int] arguments into constants, which MindSpore would otherwise
    turn into one RealTupleGetItem kernel per element, run at every step.
    MindSpore applies it to the graphs compiled after the registration. Raises RuntimeError when
    MindSpore refuses it."""
    from mindspore.graph import register_custom_pass

    device = PASS_DEVICES[_check_backend(backend)]
    if device in _registered_pass_devices:
        return
    if not register_custom_pass(route_codegen.TUPLE_PASS_NAME, str(module_path), device):
        variadic = ", ".join(op.name for op in all_op_defs().values() if op.length_attr is not None)
        raise RuntimeError(f"ms_memcopy: mindspore.graph.register_custom_pass refused the op_def route's graph pass "
                           f"{route_codegen.TUPLE_PASS_NAME} from {module_path} for device {device!r} (MindSpore's "
                           f"log says why); without it a graph on {backend} may hand the ops with a variadic input "
                           f"({variadic}) their tensors folded into one temporary copy")
    _registered_pass_devices.add(device)
