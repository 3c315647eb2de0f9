"""The base of the copy primitives: an ops.Custom(func_type="aot") over a kernel of configs/ops.yaml.

Validation happens in three places, each as early as the values are known:
- ``__infer__`` (GRAPH_MODE compile and PYNATIVE alike): dtypes, ranks and static sizes, whether the
  HostBuffer is open, and the values of constant offset inputs; when compiling a graph, also that
  every input written in place (``rw_write`` in configs/ops.yaml) is a Parameter;
- ``__call__`` (eager execution): the offset values of the actual tensors, and that in-place
  targets are whole tensors, not slices;
- the kernel: everything again at launch, before any byte moves (in GRAPH_MODE this is where
  offsets held in graph inputs are checked; MindSpore reports it as a RuntimeError whose text reads
  "ValueError: <argument>: ...").
"""
import numbers

import numpy as np
import mindspore as ms
from mindspore import ops
from mindspore.ops import signature as sig

from .. import _paths, ascend_route
from ..host_buffer import HostBuffer
from ..op_defs import input_names, op_def, reg_info, supported_dtypes


def dtype_name(dtype):
    """'float32' for ms.float32, a Tensor type, a numpy dtype or a name; TypeError otherwise."""
    if isinstance(dtype, str):
        return dtype
    if hasattr(dtype, "element_type"):
        dtype = dtype.element_type()
    if isinstance(dtype, ms.dtype.Type):
        return str(dtype).lower()
    try:
        return np.dtype(dtype).name
    except TypeError:
        raise TypeError(f"not a dtype: {dtype!r}") from None


def ms_dtype(dtype, argument):
    """The MindSpore dtype for a supported dtype given in any form; TypeError naming argument."""
    name = dtype_name(dtype)
    if name == "bool_":
        name = "bool"
    if name not in supported_dtypes():
        raise TypeError(f"{argument}: dtype {name} is not supported; use one of {list(supported_dtypes())}")
    return getattr(ms, "bool_" if name == "bool" else name)


def static_shape(shape):
    """The shape as a tuple of ints, or None when a dimension (or the rank) is unknown."""
    shape = tuple(int(d) for d in shape)
    return None if any(d < 0 for d in shape) else shape


def num_elements(shape):
    return int(np.prod(shape, dtype=np.int64)) if shape else 1


def itemsize(dtype):
    name = dtype_name(dtype)
    return 2 if name == "bfloat16" else np.dtype("bool" if name == "bool" else name).itemsize


def matrix_view(shape):
    """(rows, cols) of the 2-D view of a tensor: every leading dimension is a row, the last one the columns."""
    if not shape:
        return 1, 1
    return num_elements(shape[:-1]), shape[-1]


OUTPUT_SIGNATURE_ATTR = "output_signature"


def output_signature(shapes, dtypes):
    """A text naming the shapes and dtypes of the outputs a primitive was built for."""
    return ";".join(f"{dtype_name(d)}{list(s)}" for s, d in zip(shapes, dtypes))


INT64_MAX = 2**63 - 1


def check_int(value, argument, minimum=0):
    """An int in [minimum, INT64_MAX] (attributes reach the kernel as int64); TypeError/ValueError naming argument."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{argument} must be an int, not {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{argument} must be >= {minimum}, got {value}")
    if value > INT64_MAX:
        raise ValueError(f"{argument} must be at most {INT64_MAX} (int64), got {value}")
    return int(value)


def check_shape(shape, argument):
    """A shape given as a tuple or list of non-negative ints, as a tuple; TypeError/ValueError naming argument."""
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"{argument} must be a tuple of ints, not {type(shape).__name__}")
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, numbers.Integral):
            raise TypeError(f"{argument} must be a tuple of ints, got {tuple(shape)}")
    if any(d < 0 for d in shape):
        raise ValueError(f"{argument} must hold non-negative ints, got {tuple(shape)}")
    dims = tuple(check_int(d, f"{argument}[{i}]") for i, d in enumerate(shape))
    elements = 1
    for d in dims:
        elements *= d
    if elements > INT64_MAX:
        raise ValueError(f"{argument} {dims} holds more than {INT64_MAX} elements")
    return dims


def check_host_buffer(host_buffer, argument="host_buffer"):
    if not isinstance(host_buffer, HostBuffer):
        raise TypeError(f"{argument} must be an ms_memcopy.HostBuffer, not {type(host_buffer).__name__}")
    if host_buffer.closed:
        raise ValueError(f"{argument}: the HostBuffer is closed")
    host_buffer._attach_primitive()
    return host_buffer


def check_int64_input(arg, argument, length=None):
    """Checks an offset input's dtype and length at infer time; returns its value (numpy) when constant."""
    if dtype_name(arg["dtype"]) != "int64":
        raise TypeError(f"{argument} must be an int64 tensor, got {dtype_name(arg['dtype'])}")
    shape = static_shape(arg["shape"])
    if shape is not None and length is not None and num_elements(shape) != length:
        raise ValueError(f"{argument} must hold {length} value(s), got shape {shape}")
    value = arg.get("value")
    if value is None:
        return None
    return np.asarray(value.asnumpy() if hasattr(value, "asnumpy") else value, dtype=np.int64).reshape(-1)


def check_supported(arg, argument):
    name = dtype_name(arg["dtype"])
    if name not in supported_dtypes():
        raise TypeError(f"{argument}: dtype {name} is not supported; use one of {list(supported_dtypes())}")
    return name


def eager_int64(value, argument):
    """The values of an int64 tensor given to an eager call (numpy, flattened)."""
    if not isinstance(value, ms.Tensor):
        raise TypeError(f"{argument} must be an int64 Tensor, not {type(value).__name__}")
    if value.dtype != ms.int64:
        raise TypeError(f"{argument} must be an int64 tensor, got {dtype_name(value.dtype)}")
    return value.asnumpy().reshape(-1)


class CopyPrimitive(ops.Custom):
    """An aot Custom op over the kernel that configs/ops.yaml names for op_name.

    Subclasses give the output shape and dtype functions, the attribute values, the bprop, and
    two checks: ``_check_infer(args)`` with MindSpore's abstract arguments and
    ``_check_eager(inputs)`` with the tensors of an eager call.
    """

    def __init__(self, op_name, *, attrs, out_shape, out_dtype, variadic_count=None, bprop=None, outputs=None):
        definition = op_def(op_name)
        if set(attrs) != set(definition.attr_names):
            raise AssertionError(f"{op_name}: attributes {sorted(attrs)} differ from configs/ops.yaml "
                                 f"{sorted(definition.attr_names)}")
        self._op_def = definition
        if "buffer_id" in attrs:
            # Keeps the buffer's id from naming another buffer for as long as this primitive may launch.
            self._buffer_id_lease = self.host_buffer._attach_primitive()
        self._inputs = input_names(definition, variadic_count) if definition.rw_write else ()
        self._eager_calls = 0
        super().__init__(
            f"{_paths.KERNELS_LIBRARY}:{definition.kernel}",
            out_shape=None if definition.dynamic_shape else out_shape,
            out_dtype=out_dtype,
            func_type="aot",
            bprop=bprop,
            reg_info=reg_info(definition, variadic_count) if definition.dynamic_shape else None,
        )
        for name, value in attrs.items():
            self.add_prim_attr(name, value)
        if definition.side_effect_mem:
            self.add_prim_attr("side_effect_mem", True)
        if outputs is not None:
            # PYNATIVE caches an op's inferred outputs under its attributes and inputs: two primitives
            # that differ only in the outputs they were built for must not share that entry.
            self.add_prim_attr(OUTPUT_SIGNATURE_ATTR, output_signature(*outputs))
        if definition.rw_write:
            # What Primitive.__init__ does with a class's __mindspore_signature__, per instance: the
            # number of inputs of a variadic op is known only now.
            self.set_signatures(self._fill_signature(tuple(
                sig.make_sig(name, sig.sig_rw.RW_WRITE if t.name in definition.rw_write else sig.sig_rw.RW_READ)
                for t, name in self._inputs)))
        # On Ascend, ops.Custom aot means Ascend C kernels: eager calls take the CustomOpBuilder
        # route instead, and graph compilation is refused with a pointer to the route's functions
        # (ms_memcopy/ascend_route.py, docs/ascend_route.md).
        self._ascend_route = ascend_route.route_for(op_name, attrs, out_shape, out_dtype)

    def __infer__(self, *args):
        compiling = not self._eager_calls  # PYNATIVE infers on the calling thread, inside __call__
        if compiling:
            ascend_route.check_graph_use(self._op_def.name)
        self._check_infer(args)
        if compiling:
            self._check_graph_targets(args)
        return super().__infer__(*args)

    def __call__(self, *args):
        self._check_eager(args)
        if ascend_route.on_ascend():
            return self._ascend_route(args)
        self._eager_calls += 1
        try:
            return super().__call__(*args)
        finally:
            self._eager_calls -= 1

    def _check_graph_targets(self, args):
        for (t, name), arg in zip(self._inputs, args):
            if t.name in self._op_def.rw_write:
                check_graph_in_place_target(arg, f"{t.name}[{name[len(t.name):]}]" if t.variadic else name)

    def _check_infer(self, args):
        raise NotImplementedError

    def _check_eager(self, inputs):
        raise NotImplementedError


class GradientOp(CopyPrimitive):
    """A device-to-device kernel without checks or gradient of its own, for use inside bprops.

    Only for ops without attributes whose output shape comes from the C++ infer hook.
    """

    def __init__(self, op_name):
        super().__init__(op_name, attrs={}, out_shape=None, out_dtype=lambda first, *rest: first)

    def _check_infer(self, args):
        pass

    def _check_eager(self, inputs):
        pass


def check_in_place_target(tensor, argument):
    """An eager in-place target: a whole Tensor or Parameter, whose own storage the kernel writes.

    A slice or view of another tensor reaches the kernel as a temporary copy, so the write would be
    lost: TypeError naming argument.
    """
    if not isinstance(tensor, ms.Tensor):
        raise TypeError(f"{argument} must be a Tensor or Parameter (written in place), not {type(tensor).__name__}")
    if (not tensor.is_contiguous() or tensor.storage_offset() != 0
            or tensor.untyped_storage().nbytes() != tensor.nbytes):
        raise TypeError(f"{argument} is a slice or view of a larger tensor: an in-place write would land in a "
                        f"temporary copy of it and be lost; pass the whole tensor and select the region with "
                        f"the op's own arguments")
    return tensor


def check_graph_in_place_target(arg, argument):
    """At graph compile time, an in-place target must be a Parameter (a reference in the graph)."""
    if not isinstance(arg["dtype"], ms.dtype.RefType):
        raise TypeError(f"{argument} must be a Parameter in graphs (GRAPH_MODE, ms.jit): it is written in place, "
                        f"and a graph hands any other tensor (an input, a constant, a slice, a result) to the "
                        f"kernel as a temporary, so the write would be lost")
