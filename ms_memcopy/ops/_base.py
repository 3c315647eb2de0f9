"""The base of the copy primitives: the ``Custom_<op>`` primitive of an op of configs/ops/*.yaml.

One route on every device (:mod:`ms_memcopy.op_def_route`): graphs (GRAPH_MODE, ms.jit) run the op's
registered KernelMod (a NativeCpuKernelMod on CPU, a KernelMod in CustomKernelFactory on Ascend);
an eager call runs the op's body through the module's PyboostRunner function with the int64 values
passed as host values and the kernel state kept per primitive instance (:class:`CopyPrimitive`), so no
single-op graph is compiled per value. Only a call recorded for a gradient (PYNATIVE under ms.grad)
goes through MindSpore's single-op path, which records the op's bprop.

Validation happens in three places, each as early as the values are known:
- at compile time the op's infer function: dtypes (TypeError), in-place inputs that are not
  Parameters (TypeError), jit_level O2;
- ``__call__`` (an eager call): argument types and dtypes, the offset and mapping values, and that
  in-place targets are whole tensors, not slices;
- the kernel: everything again at launch, before any byte moves (in graphs this is where offsets held
  in graph inputs are checked), raising ValueError.

Every error of these checks reads "ms_memcopy <primitive>(<mode>): <argument> ...", the prefix the
kernels give theirs (the op's label, :func:`labelled_errors`).

The base is split by job, and this module re-exports each name from where it lives: :mod:`._errors`
(the error prefix, jit_level O2), :mod:`._dtypes` (dtype names, sizes, the supported ones),
:mod:`._args` (argument checks), :mod:`._host_values` (an eager call's int64 values, read once),
:mod:`._primitive` (CopyPrimitive, GradientOp), :mod:`._variadic` (VariadicCall) and :mod:`._bprop`
(bprop registration).
"""
from ._errors import ERROR_PREFIX, labelled_errors, labelled_init, check_jit_level  # noqa: F401
from ._dtypes import DtypeLike, check_supported, dtype_name, itemsize, ms_dtype  # noqa: F401
from ._host_values import host_values, reading_host_values_once, remember_host_values  # noqa: F401
from ._args import (  # noqa: F401
    INT64_MAX, check_host_buffer, check_in_place_target, check_int, check_int64_input, check_same_dtype, check_shape,
    check_tensors, eager_int64, flat_input_names, matrix_view, num_elements, static_shape)
from ._primitive import CopyPrimitive, GradientOp  # noqa: F401
from ._variadic import VariadicCall  # noqa: F401
from ._bprop import register_op_def_bprop  # noqa: F401
