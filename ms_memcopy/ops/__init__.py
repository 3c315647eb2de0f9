"""The copy primitives over the ACL copy kernels: ``Custom_ms_memcopy_<op>`` primitives of the ops of
configs/ops/*.yaml (Memcpy2D, MemcpyWithDesc, MemcpyWithCondition), and nn.Cells holding them for the
classes with a variadic form (MemcpyBatch, SwapBlocks, CopyBlocks; docs/primitives.md).

Each works inside nn.Cell.construct, inside ms.jit and eagerly, in GRAPH_MODE and PYNATIVE_MODE.
Importing this module imports MindSpore.

One route on every device (:mod:`ms_memcopy.op_def_route`): graphs (GRAPH_MODE, ms.jit) run the op's
registered KernelMod (a NativeCpuKernelMod on CPU, a KernelMod in CustomKernelFactory on Ascend);
an eager call runs the op's body through the module's PyboostRunner function with the kernel state
kept per primitive instance (:class:`._primitive.CopyPrimitive`), so no single-op graph is compiled per
value. int64 values given on the host (numpy, lists) are checked at the call; int64 Tensors are read
by the launch, in MindSpore's order, so no eager call waits for MindSpore's queues (a bad value fails
the launch and raises at the next sync). A call recorded for a gradient (PYNATIVE under ms.grad) takes
the same launch, recorded with the op's bprop as a custom-bprop Cell.

Validation has one place per kind of mistake, each error raised before anything runs:
- the kernel's check (ops_impl/kernels/bodies/<family>.cpp, the ``check`` of each op body): values,
  shapes and regions (offsets within the HostBuffer, regions within tensors, the pitch, block
  mappings, overlapping destinations), raising ValueError. The same check runs in the op's infer
  function while a graph compiles (on the shapes and the int64 inputs that are constants: a graph
  with a bad constant fails to compile), in an eager call before anything is queued (on the values
  given on the host), and in the kernel at launch (where it also sees the values a graph holds in its
  inputs, and an eager call's int64 Tensors);
- the op's infer function: dtypes (TypeError), in-place inputs that are not Parameters (TypeError),
  jit_level O2; in an eager call the module's KernelInstance checks an int64 input's dtype (the same
  TypeError) before the body's check;
- Python, in an eager call, for what the kernel cannot see: argument types before conversion, a block
  mapping given as numpy or a list (converted), an in-place target that is a slice or view, a closed
  HostBuffer, the number of inputs. The dtypes of the other tensors, the jit level and whether each
  tensor read is laid out densely are tested by the KernelInstance's ``try_call`` where C++ reads
  them cheaply; where it cannot vouch for them it queues nothing, and the call makes every Python
  check in order (the dtypes, jit_level O2, a dense copy of a strided tensor read), so a mistake
  raises the same error as before and in the same order.

Every error of these checks reads "ms_memcopy <primitive>(<mode>): <argument> ...", the prefix the
kernels give theirs (the op's label, :func:`._errors.labelled_errors`).

The modules, one job each: one per family, with the stem of configs/ops/<family>.yaml (found from
those files: each exports its public classes in ``__all__`` and its sample calls in ``SAMPLES``), and
what they share: ``_errors`` (the error
prefix, jit_level O2), ``_dtypes`` (dtype names, sizes, the supported ones), ``_args`` (argument
checks), ``_primitive`` (CopyPrimitive,
GradientOp), ``_variadic`` (OpCell, the base of the Cells), ``_bprop`` (bprop registration) and ``_samples``
(Sample, the sample calls' helpers).
"""
import importlib as _importlib
from typing import TYPE_CHECKING, Any, List

from .. import op_defs as _op_defs

__all__: List[str] = []
for _family in _op_defs.families():  # one module per configs/ops/<family>.yaml, exporting its __all__
    _module = _importlib.import_module(f"{__name__}.{_family}")
    globals().update((_name, getattr(_module, _name)) for _name in _module.__all__)
    __all__ += _module.__all__
del _family, _module

if TYPE_CHECKING:
    # The classes above are found from configs/ops at import time, which a type checker does not run:
    # to it, every other name imported from this package is one of them (typed Any). Defined for the
    # type checker only, so a name no family exports is still an AttributeError at run time.
    def __getattr__(name: str) -> Any: ...
