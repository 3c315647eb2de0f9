"""CopyPrimitive, the ``Custom_ms_memcopy_<op>`` primitive of an op of configs/ops/*.yaml that every copy
primitive of ms_memcopy.ops is or holds (how it is run and checked: :mod:`ms_memcopy.ops`)."""
import operator
from typing import Any, Dict, Set, Tuple
import mindspore as ms
from mindspore import nn, ops
from mindspore.ops.primitive import _run_op

from .._extension import _kernels_lib, op_def_route, route_codegen
from .._framework import record_custom_bprop, recording_gradients
from ..op_defs import op_def
from ._args import check_dtypes, check_same_dtype, check_tensors
from ._bprop import register_op_def_bprop
from ._errors import check_jit_level, labelled_errors, labelled_init, relabelled


class CopyPrimitive(ops.Custom):
    """A copy primitive over the op that configs/ops/<family>.yaml defines as op_name: the op's ``Custom_<op>``
    primitive of the op_def route's CustomOpBuilder module, with the attributes as its init arguments.

    In graphs MindSpore runs the op's registered kernel. An eager call runs the op's body through the
    module's :class:`KernelInstance` of this primitive (created at the first eager call, released with
    the primitive): int64 inputs go in as host values and the kernel state (result and descriptor
    rings, events, pinned slots) is reused across calls. In PYNATIVE_MODE a call whose inputs are
    Tensors that pass ``_check_eager`` goes to the KernelInstance's ``try_call``, which tests in C++
    what the other Python checks would (dtypes, dense reads) and queues nothing where one might fail;
    the call then makes every check in order (:mod:`ms_memcopy.ops`).

    Subclasses give the attribute values, for an op whose outputs the caller describes
    (``shape: given`` in configs/ops/<family>.yaml) ``given=(shapes, dtypes)``, the bprop, and may
    override ``_check_eager(inputs)``, the check of what the kernel cannot see in an eager call (a
    closed HostBuffer, the number of inputs, an in-place target that is a slice or view). Values,
    shapes and regions are the kernel's check, in graphs too (:mod:`ms_memcopy.ops`). A bprop must
    depend only on its arguments: the first one built for each op is registered.
    """

    _forms: Tuple[str, ...] = ()  # the values of a public subclass's first argument (its mode or direction)

    #: Kept for code that read it: the primitives have one route, on every device.
    route = "op_def"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__ and not cls.__name__.startswith("_"):
            cls.__init__ = labelled_init(cls, cls.__dict__["__init__"])  # type: ignore[method-assign]

    def __init__(self, op_name: str, *, attrs: Dict[str, Any], given: Any = None, bprop: Any = None) -> None:
        definition = op_def(op_name)
        if set(attrs) != set(definition.attr_names):
            raise AssertionError(f"{op_name}: attributes {sorted(attrs)} differ from configs/ops/<family>.yaml "
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
        self._kernel: Any = None  # the eager calls' KernelInstance
        self._has_variadic = any(t.variadic for t in definition.inputs)
        self._input_names = definition.input_names
        # the inputs an eager call passes on as given: host values, and the input written in place (which
        # _check_eager has checked to be a whole tensor, hence dense); the others go through _dense
        self._as_is_inputs = tuple(t.host_values or t.name == definition.rw_write for t in definition.inputs)
        self._variadic_output = definition.outputs[0].variadic
        # the (types, dtypes) of the inputs of calls that passed the checks, and the last one of them
        self._checked_dtypes: Set[Tuple[Any, ...]] = set()
        self._last_checked: Any = ()  # (a key is a pair of tuples, never ())
        self.bprop = None if bprop is None else register_op_def_bprop(definition, bprop)
        self._gradient = None if bprop is None else _EagerGradient(bprop)
        if definition.side_effect_mem:
            self.add_prim_attr("side_effect_mem", True)

    def __call__(self, *args: Any) -> Any:
        # An eager call, from the caller to the module's KernelInstance in this one frame (labelled_errors'
        # relabelling and the launch inlined: this runs at every eager call).
        try:
            if len(args) == len(self._input_names):
                # the fast path: the checks that need Python here, the others in the kernel's try_call
                flat = _flat_inputs(args) if self._has_variadic else args
                if _all_tensors(flat) and self._eager_check_passes(flat) and not recording_gradients():
                    outputs = self._kernel_instance().try_call(*args)
                    if outputs is not None:
                        return tuple(outputs) if self._variadic_output else outputs[0]
            self._check_call(args)
            if recording_gradients():
                return self._recorded_call(args)
            kernel = self._kernel_instance()
            outputs = kernel(*[x if as_is else _dense(x) for as_is, x in zip(self._as_is_inputs, args)])
            return tuple(outputs) if self._variadic_output else outputs[0]
        except (ValueError, TypeError) as error:
            raise relabelled(error, self._label) from None

    def _submit_transfer(self, *args):
        """An eager call of an asynchronous form (configs/ops/transfer.yaml) with the Python checks of a
        call, returning (outputs, TransferTicket): the ticket follows the launch's transfer (done() polls,
        wait() waits for it alone) without calling into MindSpore (ms_memcopy.nn.TransferQueue)."""
        with labelled_errors(self._label):
            self._check_call(args)
            return self._launch_eagerly(args, submit=True)

    def _check_call(self, args):
        if self._has_variadic:
            self._check_tensors(_flat_inputs(args))
            return
        if len(args) < len(self._input_names):
            self._check_arity(args)
        self._check_tensors(args)

    def _check_tensors(self, flat, count=None):
        """The Python checks of an eager call's inputs flat (the first ones of its count inputs, all of
        them by default): their types and dtypes, the jit level, and what the kernel cannot see."""
        self._check_inputs(flat, len(flat) if count is None else count)
        check_jit_level(self._label)
        self._check_eager(flat)

    def _recorded_call(self, args):
        """An eager call made while MindSpore records a gradient (its inputs checked)."""
        if self._gradient is not None:
            # the same launch, recorded with the primitive's bprop (no single-op graph per value)
            return record_custom_bprop(self._gradient, lambda: self._launch_eagerly(args), args)
        # No bprop (a copy to or from the host): MindSpore's own record raises "bprop not defined"
        # where a gradient flows through the op, as a graph does, and not where none does.
        return _run_op(self, self.name, (*args, *self._init_values))

    def _check_inputs(self, flat, count):
        """Wrong types and dtypes are TypeErrors before any value check; the types and dtypes of a call
        that passed are remembered, so a call with the same ones is not checked again."""
        try:
            key = (tuple(map(type, flat)), tuple(map(_dtype, flat)))
        except AttributeError:  # an input without a dtype: not a Tensor, which the checks below refuse
            key = None
        # (the last call's key first: comparing finds its types and dtypes by identity, where the set's
        # lookup hashes every dtype)
        if key == self._last_checked or key in self._checked_dtypes:
            self._last_checked = key
            return
        check_tensors(self._op_def, flat, count)
        check_dtypes(self._op_def, flat, count)
        check_same_dtype(self._op_def, [{"dtype": t.dtype} for t in flat], count)
        if key is None:
            return
        if len(self._checked_dtypes) >= _CHECKED_DTYPES_KEPT:
            self._checked_dtypes.clear()
        self._checked_dtypes.add(key)
        self._last_checked = key

    def _check_arity(self, args):
        """TypeError naming the missing inputs of an op without a variadic input (extra inputs are
        each form's own count check, a ValueError)."""
        names = self._input_names
        if self._has_variadic or len(args) >= len(names):
            return
        missing = ", ".join(names[len(args):])
        raise TypeError(f"missing input {missing}: call it as op({', '.join(names)}), got {len(args)} input(s)")

    def _kernel_instance(self):
        """The module's KernelInstance of this primitive, created at the first eager call."""
        if self._kernel is None:
            self._kernel = op_def_route.load().KernelInstance(self._op_def.name, *self._init_values)
        return self._kernel

    def _launch_eagerly(self, args, submit=False):
        """The launch of a checked eager call (``__call__`` inlines it); submit: _submit_transfer's."""
        values = [x if as_is else _dense(x) for as_is, x in zip(self._as_is_inputs, args)]
        if submit:
            outputs, ticket = self._kernel_instance().submit_transfer(*values)
            return outputs[0], ticket
        outputs = self._kernel_instance()(*values)
        return tuple(outputs) if self._variadic_output else outputs[0]

    def _check_eager(self, inputs):
        """What the kernel cannot see, on the objects of an eager call (nothing by default)."""

    def _eager_check_passes(self, inputs):
        """Whether ``_check_eager(inputs)`` passes (the fast path's test: on a failure the call makes
        every check in order, so that the first one that fails raises)."""
        try:
            self._check_eager(inputs)
        except (ValueError, TypeError):
            return False
        return True


def _flat_inputs(args):
    """An eager call's tensors one by one (OpCell passes a variadic input's tensors as one tuple)."""
    return [t for group in args for t in (group if isinstance(group, tuple) else (group,))]


#: The classes of the Tensors eager calls have been given (Tensor and its subclasses, Parameter's among them).
_TENSOR_CLASSES: Set[type] = {ms.Tensor, ms.Parameter}


def _all_tensors(inputs):
    """Whether every input is a Tensor, without isinstance (which Parameter's class makes slow)."""
    if _TENSOR_CLASSES.issuperset(map(type, inputs)):
        return True
    classes = set(map(type, inputs))
    if not all(issubclass(c, ms.Tensor) for c in classes):
        return False
    _TENSOR_CLASSES.update(classes)
    return True


#: How many type and dtype combinations a primitive remembers as checked (a variadic input can make many).
_CHECKED_DTYPES_KEPT = 64

_dtype = operator.attrgetter("dtype")


class _EagerGradient(nn.Cell):
    """An eager call's record for a gradient (PYNATIVE under ms.grad): MindSpore's custom-bprop record
    of a Cell, whose bprop is the primitive's (inputs, out, dout) -> input gradients."""

    def __init__(self, bprop):
        super().__init__()
        self._bprop = bprop

    def bprop(self, *args):
        return self._bprop(*args)


def _dense(tensors):
    """A tensor (or tuple of tensors) whose memory is laid out densely, as the kernels read it: a strided
    view (a transposed or column slice) is copied first. In-place targets were checked to be whole
    tensors already, so this copies only inputs that are read."""
    if isinstance(tensors, tuple):
        if all(map(_is_contiguous, tensors)):  # (the common case, without a frame per tensor)
            return tensors
        return tuple(_dense(t) for t in tensors)
    return tensors if tensors.is_contiguous() else tensors.contiguous()


_is_contiguous = operator.methodcaller("is_contiguous")


class GradientOp(CopyPrimitive):
    """A device-to-device kernel without Python checks or gradient of its own, for use inside bprops.

    Only for ops without attributes whose output shape comes from the C++ infer hook.
    """

    def __init__(self, op_name: str) -> None:
        super().__init__(op_name, attrs={})
