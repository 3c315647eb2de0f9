"""Where the package's built libraries, headers and configs are.

A wheel carries them inside the package (``_lib``, ``include``, ``configs``);
an editable install of a source checkout builds ``_lib`` in place and reads the
headers and configs from the checkout. When the build used CANN (no host
runtime was built), the ACL headers and library are CANN's own.
"""
import os
from pathlib import Path
from typing import Optional

PACKAGE_DIR = Path(__file__).resolve().parent.parent  # ms_memcopy/
SOURCE_ROOT = PACKAGE_DIR.parent
LIB_DIR = PACKAGE_DIR / "_lib"
HOST_ACL_LIBRARY = LIB_DIR / "libascendcl.so"
KERNELS_LIBRARY = LIB_DIR / "libms_memcopy_kernels.so"


def _first_existing(*candidates: Path) -> Optional[Path]:
    for path in candidates:
        if path.exists():
            return path
    return None


def cann_home() -> Optional[Path]:
    """The CANN installation to use, or None: the directory named by ASCEND_HOME_PATH or
    ASCEND_TOOLKIT_HOME, else the one ASCEND_OPP_PATH lies in (the parent of its ``opp`` directory, or
    its part before the first ``opp`` as MindSpore's CustomOpBuilder derives it), whichever first has
    include/acl/acl.h."""
    candidates = [os.environ.get(var) for var in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME")]
    opp = os.environ.get("ASCEND_OPP_PATH")
    if opp:
        candidates += [str(parent) for parent in Path(opp).parents if (parent / "opp").is_dir()][:1]
        candidates.append(opp.split("opp")[0])
    for path in candidates:
        if path and (Path(path) / "include" / "acl" / "acl.h").exists():
            return Path(path)
    return None


CANN_MISSING = ("ms_memcopy was built against CANN, and no CANN installation with include/acl/acl.h is set: "
                "source CANN's set_env.sh (it sets ASCEND_HOME_PATH and ASCEND_OPP_PATH), or set "
                "ASCEND_HOME_PATH to the toolkit's directory")


def uses_host_runtime() -> bool:
    """True when this build ships the host ACL runtime (no CANN at build time)."""
    return HOST_ACL_LIBRARY.exists()


def configs_dir() -> Path:
    found = _first_existing(PACKAGE_DIR / "configs", SOURCE_ROOT / "configs")
    if found is None:
        raise FileNotFoundError("ms_memcopy configs not found: the installation is incomplete")
    return found


def get_include() -> str:
    """The directory to add with -I so that ``#include "acl/acl.h"`` declares the ACL API in use.

    CANN's include directory when ms_memcopy was built against CANN (:func:`cann_home`), else the headers
    of the host ACL runtime ms_memcopy ships. A CANN build never falls back to the shipped headers: code
    compiled against them would not match CANN's library.

    Args:
        None.

    Returns:
        str, the directory.

    Raises:
        FileNotFoundError: the installation has no ACL headers, or it was built against CANN and no CANN
            installation is set.

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import os
        >>> import ms_memcopy
        >>> print(os.path.exists(os.path.join(ms_memcopy.get_include(), "acl", "acl.h")))
        True
    """
    if not uses_host_runtime():
        cann = cann_home()
        if cann is None:
            raise FileNotFoundError(CANN_MISSING)
        return str(cann / "include")
    return shipped_include()


def shipped_include() -> str:
    """The ACL header directory ms_memcopy ships (the host ACL runtime's), whether or not CANN is used:
    the error codes the Python layer and the kernels name are read from it."""
    found = _first_existing(PACKAGE_DIR / "include", SOURCE_ROOT / "ops_impl" / "acl_host" / "include")
    if found is None:
        raise FileNotFoundError("ms_memcopy ACL headers not found: the installation is incomplete")
    return str(found)


def get_acl_library() -> str:
    """The path of the shared library implementing the ACL API: the host runtime's or CANN's libascendcl.so.

    Args:
        None.

    Returns:
        str, the library's path.

    Raises:
        FileNotFoundError: CANN's library is missing where ms_memcopy was built against it.

    Supported Platforms:
        ``Ascend`` ``CPU``

    Examples:
        >>> import os
        >>> import ms_memcopy
        >>> print(os.path.basename(ms_memcopy.get_acl_library()))
        libascendcl.so
    """
    if uses_host_runtime():
        return str(HOST_ACL_LIBRARY)
    cann = cann_home()
    if cann is not None:
        return str(cann / "lib64" / "libascendcl.so")
    raise FileNotFoundError(
        f"{HOST_ACL_LIBRARY} is missing and no CANN installation is set (ASCEND_HOME_PATH): "
        "reinstall ms_memcopy with `pip install .`")
