"""The base of the copy primitives: an ops.Custom(func_type="aot") over a kernel of configs/ops.yaml.

Validation happens in three places, each as early as the values are known:
- at compile time: on the aot route ``__infer__`` (GRAPH_MODE compile and PYNATIVE alike): dtypes,
  ranks and static sizes, whether the HostBuffer is open, and the values of constant offset inputs;
  on the op_def route the op's infer function (dtypes, TypeError);
- ``__call__`` (eager execution, both routes): the offset values of the actual tensors, and that
  in-place targets are whole tensors, not slices; on the aot route, when compiling a graph, also
  that every input written in place (``rw_write`` in configs/ops.yaml) is a Parameter;
- the kernel: everything again at launch, before any byte moves (in GRAPH_MODE this is where
  offsets held in graph inputs, and on the op_def route constant ones, are checked). The op_def
  route raises ValueError; the aot route's MindSpore reports a RuntimeError whose text reads
  "ValueError: <argument>: ...".

Every error of these checks reads "ms_memcopy <primitive>(<mode>): <argument> ...", the prefix the
kernels give theirs (the op's label, :func:`labelled_errors`).
"""
import contextlib
import functools
import numbers
from typing import Union

import numpy as np
import mindspore as ms
from mindspore import nn, ops
from mindspore.ops import signature as sig
from mindspore.ops._grad_experimental.grad_base import bprop_getters
from mindspore.ops.primitive import _run_op

from .. import _kernels_lib, _paths, op_def_route, route_codegen
from ..host_buffer import HostBuffer
from ..op_defs import expanded_names, op_def, reg_info, supported_dtypes


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
    """TypeError when the tensors of the op's ``same_dtype`` inputs (configs/ops.yaml) differ in dtype;
    args are the abstract arguments of the op's inputs, a variadic input's one by one."""
    tensors = [(name, dtype_name(arg["dtype"])) for name, arg in zip(flat_input_names(definition, len(args)), args)
               if name.split("[")[0] in definition.same_dtype]
    for name, dtype in tensors[1:]:
        if dtype != tensors[0][1]:
            raise TypeError(f"{name} has dtype {dtype} but {tensors[0][0]} has {tensors[0][1]}")


class CopyPrimitive(ops.Custom):
    """A copy primitive over the op that configs/ops.yaml defines as op_name, on one of two routes
    (chosen when the primitive is built, :func:`ms_memcopy.op_def_route.selected_route`):

    - ``aot``: an ``ops.Custom(func_type="aot")`` over the op's kernel symbol in
      libms_memcopy_kernels.so (CPU only);
    - ``op_def``: the op's ``Custom_<op>`` primitive of the op_def route's CustomOpBuilder module,
      with the attributes as its init arguments; MindSpore runs its registered kernel (a
      NativeCpuKernelMod on CPU, a KernelMod on Ascend) in GRAPH_MODE and eagerly.

    Subclasses give the attribute values, for an op whose outputs the caller describes
    (``shape: given`` in configs/ops.yaml) ``given=(shapes, dtypes)``, the bprop, and two checks: ``_check_infer(args)`` with MindSpore's abstract arguments (aot route; the op_def
    route checks in its infer function and kernel) and ``_check_eager(inputs)`` with the tensors of
    an eager call (both routes). A bprop must depend only on its arguments: the op_def route
    registers the first one built for each op.
    """

    _forms = ()  # the values of a public subclass's first argument (its mode or direction)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__ and not cls.__name__.startswith("_"):
            cls.__init__ = _labelled_init(cls, cls.__dict__["__init__"])

    def __new__(cls, *args, **kwargs):
        if cls._variadic_call(*args, **kwargs) and op_def_route.selected_route() == "op_def":
            primitive = super().__new__(cls)
            primitive.__init__(*args, **kwargs)
            return VariadicCall(primitive)
        return super().__new__(cls)

    @classmethod
    def _variadic_call(cls, *args, **kwargs):
        """True when the primitive built from these arguments has a variadic input (the op_def
        route then packs a call's tensors into the op's tuple argument, see VariadicCall)."""
        return False

    def __init__(self, op_name, *, attrs, given=None, variadic_count=None, bprop=None):
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
        self._eager_calls = 0
        self.route = op_def_route.selected_route()
        if self.route == "op_def":
            self._init_op_def(definition, attrs, given, bprop)
        else:
            out_shape, out_dtype = output_functions(definition, attrs, given)
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
            if given is not None:
                # PYNATIVE caches an op's inferred outputs under its attributes and inputs: two primitives
                # that differ only in the outputs they were built for must not share that entry.
                shapes, dtypes = given if definition.outputs[0].variadic else ([given[0]], [given[1]])
                self.add_prim_attr(OUTPUT_SIGNATURE_ATTR, output_signature(shapes, dtypes))
        if definition.side_effect_mem:
            self.add_prim_attr("side_effect_mem", True)
        self._in_place_inputs, self._in_place_names = (), ()
        if definition.rw_write is not None and self.route == "aot":
            # (the op_def route's primitive has it from its op_def: args_signature rw_write)
            named = [(t, name) for t in definition.inputs for name in expanded_names(t, variadic_count)]
            self._in_place_inputs = tuple(i for i, (t, _) in enumerate(named) if t.name == definition.rw_write)
            # What Primitive.__init__ does with a class's __mindspore_signature__, per instance: the
            # number of inputs of a variadic op is known only now.
            self.set_signatures(self._fill_signature(tuple(
                sig.make_sig(name, sig.sig_rw.RW_WRITE if t.name == definition.rw_write else sig.sig_rw.RW_READ)
                for t, name in named)))
            self._in_place_names = tuple(
                f"{t.name}[{name[len(t.name):]}]" if t.variadic else name
                for i, (t, name) in enumerate(named) if i in self._in_place_inputs)

    def _init_op_def(self, definition, attrs, given, bprop):
        op_def_route.load()  # registers the Custom_<op> primitives and their kernels (built once)
        ops.Primitive.__init__(self, f"Custom_{definition.ascend_function}")
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
        self.bprop = None if bprop is None else _register_op_def_bprop(definition, bprop)

    def __infer__(self, *args):
        _check_jit_level(self._label)
        with labelled_errors(self._label):
            check_same_dtype(self._op_def, args)
            self._check_infer(args)
            if not self._eager_calls:  # compiling a graph (PYNATIVE infers on the calling thread, in __call__)
                for index, name in zip(self._in_place_inputs, self._in_place_names):
                    check_graph_in_place_target(args[index], name)
        return super().__infer__(*args)

    def __call__(self, *args):
        with labelled_errors(self._label):
            return self._checked_call(args)

    def _checked_call(self, args):
        # (VariadicCall passes a variadic input's tensors as one tuple)
        flat = [t for group in args for t in (group if isinstance(group, tuple) else (group,))]
        check_tensors(self._op_def, flat)  # wrong types and dtypes are TypeErrors before any value check
        check_same_dtype(self._op_def, [{"dtype": t.dtype} for t in flat])
        if self.route == "aot":
            self._check_eager(args)
            self._eager_calls += 1
            try:
                return super().__call__(*args)
            finally:
                self._eager_calls -= 1
        self._check_eager(flat)
        # The aot route's compile-time checks run on every call too (in __infer__): the same here, on
        # the tensors' metadata, so that an eager call raises the same errors on both routes.
        self._check_infer([{"shape": tuple(t.shape), "dtype": t.dtype, "value": None} for t in flat])
        return _run_op(self, self.name, (*args, *self._init_values))

    def _check_infer(self, args):
        raise NotImplementedError

    def _check_eager(self, inputs):
        raise NotImplementedError


def output_functions(definition, attrs, given):
    """(out_shape, out_dtype) of the aot route's ops.Custom: the output rule of configs/ops.yaml, as
    functions of the input shapes and dtypes (a variadic input's one by one)."""
    out = definition.outputs[0]
    if len(definition.outputs) != 1:
        raise AssertionError(f"{definition.name}: the aot route takes ops with one (possibly variadic) output")
    if given is not None:
        shapes, dtypes = given
        return (lambda *_: shapes), (lambda *_: dtypes)

    def index_of(name, count):
        # The position of input `name` among count flattened inputs, and the variadic input's length.
        variadic = count - (len(definition.inputs) - 1)
        position = 0
        for t in definition.inputs:
            if t.name == name:
                return position, variadic
            position += variadic if t.variadic else 1
        raise AssertionError(name)

    def out_shape(*shapes):
        if out.shape == "like":
            return shapes[index_of(out.like, len(shapes))[0]]
        dims = []
        for d in out.shape:
            if isinstance(d, int):
                dims.append(d)
            elif isinstance(d, tuple):  # ("len", variadic input)
                dims.append(index_of(d[1], len(shapes))[1])
            else:
                dims.append(attrs[d])
        return tuple(dims)

    def out_dtype(*dtypes):
        if out.dtype_of is not None:
            return dtypes[index_of(out.dtype_of, len(dtypes))[0]]
        return ms_dtype(out.dtype, "output")

    return out_shape, out_dtype


def _check_jit_level(label):
    """The aot route's side of the refusal the op_def route's infer function makes: these kernels run
    kernel by kernel, which jit_level O2 (task sink) does not do."""
    if ms.get_context("mode") == ms.GRAPH_MODE and (ms.get_context("jit_config") or {}).get("jit_level") == "O2":
        raise RuntimeError(f"{ERROR_PREFIX}{label}: runs kernel by kernel and cannot be compiled with "
                           "jit_level O2 (task sink); use jit_level O0 or O1")


class VariadicCall(nn.Cell):
    """A primitive with a variadic input on the op_def route: ``op(t0, ..., tk, offsets)`` as on the
    aot route, passing the variadic tensors to the op_def primitive as one tuple.

    The primitive's attributes (``host_buffer``, ``num_tensors``, ...) are readable from this Cell.
    Called from Python (not from a graph being compiled) it runs the primitive directly in every mode,
    as the aot route's primitive does: a Cell called so in GRAPH_MODE would compile its construct,
    which takes tensors only and skips the primitive's eager checks and argument conversions.
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
            if primitive is None or name.startswith("__"):
                raise
            return getattr(primitive, name)


_op_def_bprops = {}


def _register_op_def_bprop(definition, bprop):
    """Registers bprop as the gradient of the op's Custom_<op> primitive (GRAPH_MODE looks it up by
    name, PYNATIVE_MODE through the primitive's get_bprop); returns the registered function. The
    op_def bprop receives the init arguments too, after the inputs; their gradients are zeros."""
    name = f"Custom_{definition.ascend_function}"
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


def check_graph_in_place_target(arg, argument):
    """At graph compile time, an in-place target must be a Parameter (a reference in the graph)."""
    if not isinstance(arg["dtype"], ms.dtype.RefType):
        raise TypeError(f"{argument} must be a Parameter in graphs (GRAPH_MODE, ms.jit): it is written in place, "
                        f"and a graph hands any other tensor (an input, a constant, a slice, a result) to the "
                        f"kernel as a temporary, so the write would be lost")
