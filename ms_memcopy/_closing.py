"""The `with` form shared by the package's objects that hold resources until closed."""
from typing import TypeVar

_Closing = TypeVar("_Closing", bound="ClosesOnExit")


class ClosesOnExit:
    """`with obj:` refuses a closed obj on entry (its _check_open raises ValueError) and closes it on exit."""

    def _check_open(self) -> object:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self: _Closing) -> _Closing:
        self._check_open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
