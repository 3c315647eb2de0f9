"""The base of the copy primitives: the ``Custom_<op>`` primitive of an op of configs/ops.yaml.

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
"""
import contextlib
import functools
import numbers
import threading
from typing import Union

import numpy as np
import mindspore as ms
from mindspore import nn, ops
from mindspore.ops._grad_experimental.grad_base import bprop_getters
from mindspore.ops.primitive import _run_op

from .. import _kernels_lib, op_def_route, route_codegen
from .._framework import recording_gradients
from ..host_buffer import HostBuffer
from ..op_defs import op_def, supported_dtypes


ERROR_PREFIX = "ms_memcopy "

#: A dtype as the primitives accept it: a MindSpore dtype (``ms.float32``), a numpy dtype or its name.
DtypeLike = Union[ms.dtype.Type, np.dtype, type, str]


@contextlib.contextmanager
def labelled_errors(label):
    """Re-raises a ValueError or TypeError of the block as the same type with its text prefixed
    "ms_memcopy <label>: ", as the kernels prefix theirs; text already prefixed is left alone."""
    try:
        yield
    except (ValueError, TypeError) as error:
        if type(error) not in (ValueError, TypeError) or str(error).startswith(ERROR_PREFIX):
            raise
        raise type(error)(f"{ERROR_PREFIX}{label}: {error}").with_traceback(error.__traceback__) from None


def _labelled_init(cls, init):
    """cls.__init__ raising labelled errors: "<Class>(<mode>)" when the first argument is one of
    the class's ``_forms``, else "<Class>"."""
    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        form = args[0] if args and isinstance(args[0], str) and args[0] in cls._forms else None
        with labelled_errors(cls.__name__ if form is None else f"{cls.__name__}({form})"):
            init(self, *args, **kwargs)
    return __init__


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


class _HostValuesOfCall(threading.local):
    """The host values of the int64 tensors of the eager call in progress on this thread, read once
    for the checks and the launch ({id(tensor): (tensor, values)})."""

    by_id = None


_host_values_of_call = _HostValuesOfCall()


@contextlib.contextmanager
def reading_host_values_once():
    """Within the block, each int64 tensor of the call is read back to the host (``asnumpy``) at most
    once (:func:`host_values`). Re-entrant: an inner block shares the outer one's values."""
    if _host_values_of_call.by_id is not None:
        yield
        return
    _host_values_of_call.by_id = {}
    try:
        yield
    finally:
        _host_values_of_call.by_id = None


def remember_host_values(tensor, values):
    """Gives the host values of tensor, known without reading it back (a mapping given as numpy)."""
    if _host_values_of_call.by_id is not None:
        _host_values_of_call.by_id[id(tensor)] = (tensor, np.asarray(values, dtype=np.int64))


def host_values(tensor):
    """The values of an int64 tensor on the host (numpy): read once per eager call."""
    memo = _host_values_of_call.by_id
    if memo is not None and id(tensor) in memo:
        return memo[id(tensor)][1]
    values = tensor.asnumpy()
    if memo is not None:
        memo[id(tensor)] = (tensor, values)  # the tensor is kept so that its id stays its own
    return values


def eager_int64(value, argument):
    """The values of an int64 tensor given to an eager call (numpy, flattened)."""
    if not isinstance(value, ms.Tensor):
        raise TypeError(f"{argument} must be an int64 Tensor, not {type(value).__name__}")
    if value.dtype != ms.int64:
        raise TypeError(f"{argument} must be an int64 tensor, got {dtype_name(value.dtype)}")
    return host_values(value).reshape(-1)


def flat_input_names(definition, count):
    """The names of an op's count input tensors, a variadic input's one by one ("caches[1]")."""
    variadic = count - (len(definition.inputs) - 1)
    return [f"{t.name}[{i}]" if t.variadic else t.name
            for t in definition.inputs for i in range(variadic if t.variadic else 1)]


def check_tensors(definition, inputs):
    """TypeError naming the first input of an eager call that is not a Tensor (a list or a numpy
    array would reach the kernel as something else, or not at all)."""
    for name, value in zip(flat_input_names(definition, len(inputs)), inputs):
        if not isinstance(value, ms.Tensor):
            in_place = name.split("[")[0] == definition.rw_write
            what = "a Tensor or Parameter (written in place)" if in_place else "a Tensor"
            raise TypeError(f"{name} must be {what}, not {type(value).__name__}")


def check_same_dtype(definition, args):
    """TypeError when the tensors of the op's ``dtype_group`` inputs (configs/ops/*.yaml) differ in dtype;
    args are the abstract arguments of the op's inputs, a variadic input's one by one."""
    tensors = [(name, dtype_name(arg["dtype"])) for name, arg in zip(flat_input_names(definition, len(args)), args)
               if name.split("[")[0] in definition.dtype_group]
    for name, dtype in tensors[1:]:
        if dtype != tensors[0][1]:
            raise TypeError(f"{name} has dtype {dtype} but {tensors[0][0]} has {tensors[0][1]}")


class CopyPrimitive(ops.Custom):
    """A copy primitive over the op that configs/ops.yaml defines as op_name: the op's ``Custom_<op>``
    primitive of the op_def route's CustomOpBuilder module, with the attributes as its init arguments.

    In graphs MindSpore runs the op's registered kernel. An eager call runs the op's body through the
    module's :class:`KernelInstance` of this primitive (created at the first eager call, released with
    the primitive): int64 inputs go in as host values and the kernel state (result and descriptor
    rings, events, pinned slots) is reused across calls.

    Subclasses give the attribute values, for an op whose outputs the caller describes
    (``shape: given`` in configs/ops.yaml) ``given=(shapes, dtypes)``, the bprop, and two checks:
    ``_check_infer(args)`` on the abstract arguments (shapes, dtypes, constant values) and
    ``_check_eager(inputs)`` on the tensors of an eager call; an eager call runs both. A bprop must
    depend only on its arguments: the first one built for each op is registered.
    """

    _forms = ()  # the values of a public subclass's first argument (its mode or direction)

    #: Kept for code that read it: the primitives have one route, on every device.
    route = "op_def"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__ and not cls.__name__.startswith("_"):
            cls.__init__ = _labelled_init(cls, cls.__dict__["__init__"])

    def __new__(cls, *args, **kwargs):
        if cls._variadic_call(*args, **kwargs):
            primitive = super().__new__(cls)
            primitive.__init__(*args, **kwargs)
            return VariadicCall(primitive)
        return super().__new__(cls)

    @classmethod
    def _variadic_call(cls, *args, **kwargs):
        """True when the primitive built from these arguments has a variadic input (a call's tensors
        are then packed into the op's tuple argument, see VariadicCall)."""
        return False

    def __init__(self, op_name, *, attrs, given=None, variadic_count=None, bprop=None):
        del variadic_count  # the op_def's tuple input takes any count; subclasses check theirs
        definition = op_def(op_name)
        if set(attrs) != set(definition.attr_names):
            raise AssertionError(f"{op_name}: attributes {sorted(attrs)} differ from configs/ops.yaml "
                                 f"{sorted(definition.attr_names)}")
        if (given is not None) != definition.outputs_given:
            raise AssertionError(f"{op_name}: given=(shapes, dtypes) is for the ops whose outputs have shape: given")
        self._op_def = definition
        self._label = _kernels_lib.op_label(definition.name)
        if "buffer_id" in attrs:
            # Keeps the buffer's id from naming another buffer for as long as this primitive may launch.
            self._buffer_id_lease = self.host_buffer._attach_primitive()
        op_def_route.load()  # registers the Custom_<op> primitives and their kernels
        ops.Primitive.__init__(self, route_codegen.primitive_name(definition))
        values = [attrs[name] for name in definition.attr_names]
        if given is not None:
            shapes, dtypes = given
            if not definition.outputs[0].variadic:
                shapes, dtypes = [shapes], [dtypes]
            values += op_def_route.given_values(definition.name, shapes, dtypes)
        names = route_codegen.arg_names(definition)[len(definition.inputs):]
        for name, value in zip(names, values):  # as prim_arg_register does for init arguments
            self._set_prim_arg(name, value)
            self.init_attrs[name] = value
        self._init_values = tuple(values)
        self._kernel = None  # the eager calls' KernelInstance
        self.bprop = None if bprop is None else _register_op_def_bprop(definition, bprop)
        if definition.side_effect_mem:
            self.add_prim_attr("side_effect_mem", True)

    def __infer__(self, *args):
        _check_jit_level(self._label)
        with labelled_errors(self._label):
            check_same_dtype(self._op_def, args)
            self._check_infer(args)
        return super().__infer__(*args)

    def __call__(self, *args):
        with labelled_errors(self._label), reading_host_values_once():
            return self._checked_call(args)

    def _checked_call(self, args):
        # (VariadicCall passes a variadic input's tensors as one tuple)
        flat = [t for group in args for t in (group if isinstance(group, tuple) else (group,))]
        check_tensors(self._op_def, flat)  # wrong types and dtypes are TypeErrors before any value check
        check_same_dtype(self._op_def, [{"dtype": t.dtype} for t in flat])
        _check_jit_level(self._label)
        self._check_eager(flat)
        self._check_infer([{"shape": tuple(t.shape), "dtype": t.dtype, "value": None} for t in flat])
        if recording_gradients():
            # MindSpore records the op for autograd only on its own single-op path (a graph per value).
            return _run_op(self, self.name, (*args, *self._init_values))
        return self._launch_eagerly(args)

    def _launch_eagerly(self, args):
        if self._kernel is None:
            self._kernel = op_def_route.load().KernelInstance(self._op_def.name, *self._init_values)
        values = [np.ascontiguousarray(host_values(x), dtype=np.int64) if t.host_values else _dense(x)
                  for t, x in zip(self._op_def.inputs, args)]
        outputs = self._kernel(*values)
        return tuple(outputs) if self._op_def.outputs[0].variadic else outputs[0]

    def _check_infer(self, args):
        raise NotImplementedError

    def _check_eager(self, inputs):
        raise NotImplementedError


def _dense(tensors):
    """A tensor (or tuple of tensors) whose memory is laid out densely, as the kernels read it: a strided
    view (a transposed or column slice) is copied first. In-place targets were checked to be whole
    tensors already, so this copies only inputs that are read."""
    if isinstance(tensors, tuple):
        return tuple(_dense(t) for t in tensors)
    return tensors if tensors.is_contiguous() else tensors.contiguous()


def _check_jit_level(label):
    """The refusal the op's infer function makes, for calls that reach no infer function: these
    kernels run kernel by kernel, which jit_level O2 (task sink) does not do."""
    if ms.get_context("mode") == ms.GRAPH_MODE and (ms.get_context("jit_config") or {}).get("jit_level") == "O2":
        raise RuntimeError(f"{ERROR_PREFIX}{label}: runs kernel by kernel and cannot be compiled with "
                           "jit_level O2 (task sink); use jit_level O0 or O1")


_CELL_HOOKS = frozenset({"bprop"})


class VariadicCall(nn.Cell):
    """A primitive with a variadic input: ``op(t0, ..., tk, offsets)``, passing the variadic tensors to
    the op_def primitive as one tuple.

    The primitive's attributes (``host_buffer``, ``num_tensors``, ...) are readable from this Cell.
    Called from Python (not from a graph being compiled) it runs the primitive directly in every mode:
    a Cell called so in GRAPH_MODE would compile its construct, which takes tensors only and skips the
    primitive's eager checks and argument conversions.
    """

    def __init__(self, primitive):
        super().__init__()
        inputs = primitive._op_def.inputs
        index = next(i for i, t in enumerate(inputs) if t.variadic)
        self.primitive = primitive
        self.before = index
        self.after = len(inputs) - index - 1

    def construct(self, *args):
        end = len(args) - self.after
        return self.primitive(*args[:self.before], args[self.before:end], *args[end:])

    def __call__(self, *args):
        return self.construct(*args)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            primitive = self.__dict__.get("primitive") or self._primitives.get("primitive")
            # MindSpore asks a Cell for hooks such as bprop: the primitive's own must not answer for it
            # (a forwarded bprop made every graph parse it and log "Parse resolve function error").
            if primitive is None or name.startswith("_") or name in _CELL_HOOKS:
                raise
            return getattr(primitive, name)


_op_def_bprops = {}


def _register_op_def_bprop(definition, bprop):
    """Registers bprop as the gradient of the op's Custom_<op> primitive (GRAPH_MODE looks it up by
    name, PYNATIVE_MODE through the primitive's get_bprop); returns the registered function. The
    op_def bprop receives the init arguments too, after the inputs; their gradients are zeros."""
    name = route_codegen.primitive_name(definition)
    if name in _op_def_bprops:
        return _op_def_bprops[name]
    n_inputs = len(definition.inputs)
    zeros = (0,) * (len(route_codegen.arg_names(definition)) - n_inputs)

    def with_init_args(args, out, dout):
        return bprop(*args[:n_inputs], out, dout) + zeros

    op_def_bprop = _fixed_arity(len(route_codegen.arg_names(definition)), with_init_args)
    _op_def_bprops[name] = op_def_bprop
    bprop_getters.register(name)(lambda _prim: op_def_bprop)
    return op_def_bprop


def _fixed_arity(n, fn):
    """fn(args, out, dout) as a function of n named arguments plus out and dout: GRAPH_MODE parses
    a bprop and needs them named."""
    if n == 1:
        def bprop_1(a0, out, dout):
            return fn((a0,), out, dout)
        return bprop_1
    if n == 2:
        def bprop_2(a0, a1, out, dout):
            return fn((a0, a1), out, dout)
        return bprop_2
    if n == 3:
        def bprop_3(a0, a1, a2, out, dout):
            return fn((a0, a1, a2), out, dout)
        return bprop_3
    if n == 4:
        def bprop_4(a0, a1, a2, a3, out, dout):
            return fn((a0, a1, a2, a3), out, dout)
        return bprop_4
    if n == 5:
        def bprop_5(a0, a1, a2, a3, a4, out, dout):
            return fn((a0, a1, a2, a3, a4), out, dout)
        return bprop_5
    raise ValueError(f"a differentiable op with {n} op_def arguments needs a bprop wrapper here")


class GradientOp(CopyPrimitive):
    """A device-to-device kernel without checks or gradient of its own, for use inside bprops.

    Only for ops without attributes whose output shape comes from the C++ infer hook.
    """

    def __init__(self, op_name):
        super().__init__(op_name, attrs={})

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
