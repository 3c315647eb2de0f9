"""What ms_memcopy needs from MindSpore outside the primitives, in one place."""
import re
import sys
from typing import Any, Callable, Sequence

from ._extension import _paths


def _pynative_executor() -> Any:
    global _executor
    if _executor is not None:
        return _executor
    try:
        from mindspore.graph.api import _pynative_executor as executor
    except ImportError:  # MindSpore before 2.9 kept it in mindspore.common.api
        from mindspore.common.api import _pynative_executor as executor
    _executor = executor
    return executor


_executor: Any = None  # MindSpore's PYNATIVE executor, once looked up


def recording_gradients() -> bool:
    """True while PYNATIVE_MODE records ops for a gradient (inside ms.grad, value_and_grad, ...)."""
    return bool(_pynative_executor().requires_grad())


def record_custom_bprop(cell: Any, launch: Callable[[], Any], args: Sequence[Any]) -> Any:
    """Runs launch() without recording it, then records its outputs for the gradient being recorded as
    the outputs of cell called with args, whose ``bprop`` MindSpore calls in the backward pass (its
    custom-bprop record, what a Cell with a bprop gets in PYNATIVE): no single-op graph is compiled."""
    try:
        from mindspore.graph.api import _no_grad
    except ImportError:  # MindSpore before 2.9 kept it in mindspore.common.api
        from mindspore.common.api import _no_grad
    with _no_grad():
        outputs = launch()
    return _pynative_executor().call_custom_bprop(cell, outputs, *args)


def sync_launches() -> None:
    """Waits for the MindSpore launches queued so far (PYNATIVE_MODE runs ops asynchronously on its own
    thread). Does nothing when MindSpore has not been imported: then nothing can be queued."""
    if "mindspore" not in sys.modules:
        return
    _pynative_executor().sync()


def _process_environment(name: str) -> str:
    """The variable as the process's C environment holds it, where the kernels read it: MindSpore's
    init() sets DEVICE_ID there (to the local rank), which os.environ does not see."""
    import ctypes

    getenv = ctypes.CDLL(None).getenv
    getenv.restype = ctypes.c_char_p
    value = getenv(name.encode())
    return "" if value is None else value.decode()


def acl_device() -> int:
    """The ACL device of MindSpore's device. With the host ACL runtime (the CPU target) it is DEVICE_ID
    from the environment, default 0, the device the copy kernels set (HostTargetDevice in
    ops_impl/kernels/launch_context.cpp). With CANN it is MindSpore's current device once MindSpore has
    been imported, else DEVICE_ID too. A DEVICE_ID that is not a non-negative int32 is a ValueError."""
    ms = sys.modules.get("mindspore")
    if ms is not None and not _paths.uses_host_runtime():
        return int(ms.get_current_device().device_id)
    text = _process_environment("DEVICE_ID")
    if text == "":
        return 0
    # what HostTargetDevice accepts: strtol's base-10 syntax, the whole text, a value in [0, INT32_MAX]
    if re.fullmatch(r"[ \t\n\v\f\r]*[+-]?[0-9]+", text) is None or not 0 <= int(text) <= 2**31 - 1:
        raise ValueError(f'DEVICE_ID is not a device id: "{text}"')
    return int(text)
