"""The base of the copy primitives: the ``Custom_<op>`` primitive of an op of configs/ops/*.yaml.

One route on every device (:mod:`ms_memcopy.op_def_route`): graphs (GRAPH_MODE, ms.jit) run the op's
registered KernelMod (a NativeCpuKernelMod on CPU, a KernelMod in CustomKernelFactory on Ascend);
an eager call runs the op's body through the module's PyboostRunner function with the int64 values
passed as host values and the kernel state kept per primitive instance (:class:`CopyPrimitive`), so no
single-op graph is compiled per value. Only a call recorded for a gradient (PYNATIVE under ms.grad)
goes through MindSpore's single-op path, which records the op's bprop.

Validation has one place per kind of mistake, each error raised before anything runs:
- the kernel's check (ops_impl/kernels/bodies/<family>.cpp, the ``check`` of each op body): values,
  shapes and regions (offsets within the HostBuffer, regions within tensors, the pitch, block
  mappings, overlapping destinations), raising ValueError. The same check runs in the op's infer
  function while a graph compiles (on the shapes and the int64 inputs that are constants: a graph
  with a bad constant fails to compile), in an eager call before anything is queued, and in the
  kernel at launch (where it also sees the values a graph holds in its inputs);
- the op's infer function: dtypes (TypeError), in-place inputs that are not Parameters (TypeError),
  jit_level O2;
- Python, in an eager call, for what the kernel cannot see: argument types before conversion (and
  dtypes, before the int64 values are converted), a block mapping given as numpy or a list, an
  in-place target that is a slice or view, a closed HostBuffer, the number of inputs.

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
from ._args import INT64_MAX, check_dtypes, check_host_buffer, check_in_place_target, check_int, check_same_dtype, check_shape, check_tensors, eager_int64, flat_input_names, matrix_view, num_elements  # noqa: F401
from ._primitive import CopyPrimitive, GradientOp  # noqa: F401
from ._variadic import VariadicCall  # noqa: F401
from ._bprop import register_op_def_bprop  # noqa: F401
