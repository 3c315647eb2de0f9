"""The one error type of ms_memcopy's raising layers: :class:`AclError`."""
from typing import Optional, Tuple

from ._extension import _paths
from ._acl.error_codes import error_names, read_error_codes

#: aclError code -> its name in the ACL headers, for every code the headers define.
ERROR_NAMES = error_names(read_error_codes(_paths.shipped_include()))


def error_name(code: int) -> str:
    """The header name of an aclError code; ``ACL_ERROR_UNKNOWN_<code>`` for codes the headers lack."""
    return ERROR_NAMES.get(code, f"ACL_ERROR_UNKNOWN_{code}")


class AclError(RuntimeError):
    """An ACL call returned a non-zero aclError.

    ``str(error)`` reads ``<api> failed: <name> (<code>) [fail index i]: <message>``.

    Args:
        code (int): the aclError value.
        api (str, optional): the C function that failed, e.g. ``"aclrtMemcpyAsync"``.
        fail_index (int, optional): for batch copies, the index of the copy at fault.
        message (str, optional): the message the failure added to the runtime's aclGetRecentErrMsg() text.

    Attributes:
        code: the aclError value (int).
        name: its header name, e.g. ``"ACL_ERROR_RT_PARAM_INVALID"``.
        api: the C function that failed, e.g. ``"aclrtMemcpyAsync"`` (or None).
        fail_index: for batch copies, the index of the copy at fault; None when
            the call has no failIndex or the runtime reported SIZE_MAX.
        message: the message the failure added to the runtime's
            aclGetRecentErrMsg() text, read right after it on the failing
            thread, or None.

    Raises:
        TypeError: code or fail_index is not a number (ValueError for a string that is not one).

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import ms_memcopy
        >>> from ms_memcopy import runtime
        >>> error = ms_memcopy.AclError(107000, "aclrtMemcpyAsync", None, "count 9 > destMax 8")
        >>> print(error.name, error.code)
        ACL_ERROR_RT_PARAM_INVALID 107000
        >>> print(error)
        aclrtMemcpyAsync failed: ACL_ERROR_RT_PARAM_INVALID (107000): count 9 > destMax 8
        >>> try:
        ...     runtime.memcpy(0, 0, 0, 8, 99)  # NULL pointers
        ... except ms_memcopy.AclError as e:
        ...     print(e.api, e.name, e.code)
        aclrtMemcpy ACL_ERROR_INVALID_PARAM 100000
    """

    def __init__(self, code: int, api: Optional[str] = None, fail_index: Optional[int] = None,
                 message: Optional[str] = None) -> None:
        self.code = int(code)
        self.name = error_name(self.code)
        self.api = api
        self.fail_index = None if fail_index is None else int(fail_index)
        self.message = message
        super().__init__(self._text())

    def _text(self) -> str:
        text = f"{self.name} ({self.code})"
        if self.api:
            text = f"{self.api} failed: {text}"
        if self.fail_index is not None:
            text += f" [fail index {self.fail_index}]"
        if self.message:
            text += f": {self.message}"
        return text

    def __str__(self) -> str:
        return self._text()

    def __reduce__(self) -> Tuple[type, Tuple[int, Optional[str], Optional[int], Optional[str]]]:
        return (type(self), (self.code, self.api, self.fail_index, self.message))
