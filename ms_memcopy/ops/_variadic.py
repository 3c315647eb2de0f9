"""The Cell form of a primitive with a variadic input (its tensors passed one by one)."""
from mindspore import nn


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
