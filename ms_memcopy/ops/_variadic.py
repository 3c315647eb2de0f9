"""OpCell, the base of the public ops that are nn.Cells: those with a form whose input is variadic."""
from typing import Any, Tuple

from mindspore import nn

from ._errors import labelled_init


class OpCell(nn.Cell):
    """A public op holding its ``Custom_ms_memcopy_<op>`` primitive(s) (:class:`CopyPrimitive`) as
    ``self.primitive`` (or several, see MemcpyBatch's split read).

    The op_def primitive takes a variadic input (MemcpyBatch d2h's tensors, the block ops' caches) as
    one ``tuple[tensor]`` argument; the op keeps the call form ``op(t0, ..., tk, offsets)``: its
    ``construct`` packs the tensors in graphs (GRAPH_MODE construct, ms.jit), and called from Python
    (not from a graph being compiled) it runs the primitive directly in every mode, since a Cell called
    so in GRAPH_MODE would compile its construct, which takes tensors only and skips the primitive's
    eager checks and argument conversions (a numpy or list block_mapping).

    Subclasses set the documented attributes (``host_buffer``, ``direction``, ...) themselves and give
    ``_forms`` as :class:`CopyPrimitive` does: their ``__init__`` raises labelled errors.
    """

    _forms: Tuple[str, ...] = ()  # the values of a public subclass's first argument (its direction)

    #: Kept for code that read it: the primitives have one route, on every device.
    route = "op_def"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__ and not cls.__name__.startswith("_"):
            cls.__init__ = labelled_init(cls, cls.__dict__["__init__"])  # type: ignore[method-assign]

    def __call__(self, *args: Any) -> Any:
        # (construct's packing, inlined: the call goes to the primitive without another frame)
        return self.primitive(args[:-1], args[-1])

    def construct(self, *args: Any) -> Any:
        """op(t0, ..., tk, offsets) as primitive((t0, ..., tk), offsets): the variadic input is the
        op's first, followed by one input (offsets or block_mapping)."""
        return self.primitive(args[:-1], args[-1])
