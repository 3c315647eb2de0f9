"""The environment variables the host ACL runtime reads, named once for Python (C++:
``ACLHOST_ENV_*`` in acl_host/acl_host_ext.h; docs/host_runtime.md describes them)."""
from typing import Dict, Mapping

SOC = "MS_MEMCOPY_SOC"  #: the emulated SoC profile, resolved once per process
DEVICE_COUNT = "MS_MEMCOPY_DEVICE_COUNT"  #: the device count, 1..1024 (default 8)
STRICT_DEVICE = "MS_MEMCOPY_STRICT_DEVICE"  #: "1": aclrtMalloc memory the host cannot access
COPY_THREADS = "MS_MEMCOPY_COPY_THREADS"  #: at most this many threads per large copy (1: no copy pool)
#: the stores of large copies: "0" memcpy, "1" streaming, "interleaved" streaming four pages at a time;
#: otherwise a calibration decides
STREAMING_STORES = "MS_MEMCOPY_STREAMING_STORES"
STRICT_ORDER = "MS_MEMCOPY_STRICT_ORDER"  #: "1": a call racing with a queued copy of another stream fails

#: The variables that choose the emulated machine: a test or tool that starts a program expecting the
#: default machine removes them from the program's environment.
MACHINE = (SOC, DEVICE_COUNT)


def without_machine(environ: Mapping[str, str]) -> Dict[str, str]:
    """A copy of environ without the MACHINE variables."""
    return {key: value for key, value in environ.items() if key not in MACHINE}
