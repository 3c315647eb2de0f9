"""What the sample calls of the families share (each ms_memcopy/ops/<family>.py holds its own in
``SAMPLES``; :mod:`ms_memcopy.samples` gathers them): :class:`Sample`, and the tensors they build."""
import dataclasses
import itertools
from typing import Any, Callable, Iterable, Tuple

import numpy as np
import mindspore as ms

from .._extension import _kernels_lib

_names = itertools.count()


@dataclasses.dataclass
class Sample:
    """One call of one op: ``op(*inputs)`` returns ``outputs`` (a numpy array, or a tuple of them for
    an op returning a tuple) and leaves each ``read()`` of ``writes`` equal to its expectation."""

    op_name: str
    op: object
    inputs: tuple
    outputs: object
    writes: Tuple[Tuple[str, Callable[[], np.ndarray], np.ndarray], ...] = ()

    @property
    def label(self) -> str:
        """The op's label, as its errors name it: "MemcpyBatch(d2h)"."""
        return _kernels_lib.op_label(self.op_name)

    def check(self, outputs: Any) -> None:
        """AssertionError unless outputs and the writes equal the numpy expectations."""
        if isinstance(self.outputs, tuple):
            if not isinstance(outputs, tuple) or len(outputs) != len(self.outputs):
                raise AssertionError(f"{self.label}: expected a tuple of {len(self.outputs)} tensors, "
                                     f"got {type(outputs).__name__}")
            pairs = [(f"outputs[{i}]", got, want) for i, (got, want) in enumerate(zip(outputs, self.outputs))]
        else:
            pairs = [("output", outputs, self.outputs)]
        self._compare(pairs)
        self.check_writes()

    def check_writes(self) -> None:
        """AssertionError unless what the call writes equals the numpy expectations."""
        self._compare([(name, read(), want) for name, read, want in self.writes])

    def _compare(self, pairs: Iterable[Tuple[str, Any, Any]]) -> None:
        for name, got, want in pairs:
            got = got.asnumpy() if isinstance(got, ms.Tensor) else np.asarray(got)
            np.testing.assert_array_equal(got, want, err_msg=f"{self.label}: {name}")
            if got.dtype != np.asarray(want).dtype:
                raise AssertionError(f"{self.label}: {name} has dtype {got.dtype}, expected {np.asarray(want).dtype}")


def int64(*values: int) -> ms.Tensor:
    return ms.Tensor(np.array(values, np.int64))


def parameter(values: np.ndarray) -> ms.Parameter:
    """A Parameter of values with a name of its own (a graph's inputs need distinct names)."""
    return ms.Parameter(ms.Tensor(values), name=f"ms_memcopy_sample_{next(_names)}")


def matrix() -> np.ndarray:
    return np.arange(30, dtype=np.float32).reshape(5, 6)
