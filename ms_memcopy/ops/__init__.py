"""The copy primitives over the ACL copy kernels: ``Custom_ms_memcopy_<op>`` primitives of the ops of
configs/ops/*.yaml (Memcpy2D, MemcpyWithDesc, MemcpyWithCondition), and nn.Cells holding them for the
classes with a variadic form (MemcpyBatch, SwapBlocks, CopyBlocks; docs/primitives.md).

Each works inside nn.Cell.construct, inside ms.jit and eagerly, in GRAPH_MODE and PYNATIVE_MODE.
Importing this module imports MindSpore.

One route on every device (:mod:`ms_memcopy.op_def_route`): graphs (GRAPH_MODE, ms.jit) run the op's
registered KernelMod (a NativeCpuKernelMod on CPU, a KernelMod in CustomKernelFactory on Ascend);
an eager call runs the op's body through the module's PyboostRunner function with the int64 values
passed as host values and the kernel state kept per primitive instance (:class:`._primitive.CopyPrimitive`),
so no single-op graph is compiled per value. Only a call recorded for a gradient (PYNATIVE under
ms.grad) goes through MindSpore's single-op path, which records the op's bprop.

Validation happens in three places, each as early as the values are known:
- at compile time the op's infer function: dtypes (TypeError), in-place inputs that are not
  Parameters (TypeError), jit_level O2;
- ``__call__`` (an eager call): argument types and dtypes, the offset and mapping values, and that
  in-place targets are whole tensors, not slices;
- the kernel: everything again at launch, before any byte moves (in graphs this is where offsets held
  in graph inputs are checked), raising ValueError.

Every error of these checks reads "ms_memcopy <primitive>(<mode>): <argument> ...", the prefix the
kernels give theirs (the op's label, :func:`._errors.labelled_errors`).

The modules, one job each: one per family (``batch``, ``blocks``, ``condition``, ``desc``,
``memcpy2d``, with the stem of configs/ops/<family>.yaml), and what they share: ``_errors`` (the error
prefix, jit_level O2), ``_dtypes`` (dtype names, sizes, the supported ones), ``_args`` (argument
checks), ``_host_values`` (an eager call's int64 values, read once), ``_primitive`` (CopyPrimitive,
GradientOp), ``_variadic`` (OpCell, the base of the Cells) and ``_bprop`` (bprop registration).
"""
from .batch import MemcpyBatch
from .blocks import CopyBlocks, SwapBlocks
from .condition import MemcpyWithCondition
from .desc import MemcpyWithDesc
from .memcpy2d import Memcpy2D

__all__ = ["MemcpyBatch", "Memcpy2D", "MemcpyWithDesc", "MemcpyWithCondition", "SwapBlocks", "CopyBlocks"]
