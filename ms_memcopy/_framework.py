"""What ms_memcopy needs from MindSpore outside the primitives, in one place."""
import sys


def _pynative_executor():
    try:
        from mindspore.graph.api import _pynative_executor as executor
    except ImportError:  # MindSpore before 2.9 kept it in mindspore.common.api
        from mindspore.common.api import _pynative_executor as executor
    return executor


def recording_gradients():
    """True while PYNATIVE_MODE records ops for a gradient (inside ms.grad, value_and_grad, ...)."""
    return bool(_pynative_executor().requires_grad())


def sync_launches():
    """Waits for the MindSpore launches queued so far (PYNATIVE_MODE runs ops asynchronously on its own
    thread). Does nothing when MindSpore has not been imported: then nothing can be queued."""
    if "mindspore" not in sys.modules:
        return
    _pynative_executor().sync()
