"""`python -m ms_memcopy info`: what this installation runs on."""
import functools
import os
from typing import Any, Dict, Optional

import yaml

from .. import __version__, _runtime_env
from .._extension import _paths

# The ACL calls each SoC capability gates (configs/soc_profiles.yaml keys).
_GATED_CALLS = {
    "memcpy_batch": "aclrtMemcpyBatch, aclrtMemcpyBatchAsync (+V2)",
    "memcpy_desc": "aclrtGetMemcpyDescSize, aclrtSetMemcpyDesc, aclrtMemcpyAsyncWithDesc",
    "memcpy2d_d2d": "aclrtMemcpy2dAsync device-to-device",
    "peer_access": "aclrtDeviceCanAccessPeer, aclrtDeviceEnablePeerAccess, aclrtDeviceDisablePeerAccess",
    "event_device_use_only": "aclrtCreateEventWithFlag(ACL_EVENT_DEVICE_USE_ONLY)",
}
_ALWAYS = "aclrtMemcpy, aclrtMemcpyAsync, aclrtMemcpyAsyncWithCondition, aclrtMemcpy2d(Async) H2D/D2H"


@functools.lru_cache(maxsize=None)
def soc_profiles() -> Dict[str, Any]:
    with open(_paths.configs_dir() / "soc_profiles.yaml", encoding="utf-8") as f:
        return yaml.safe_load(f)


def emulated_soc() -> Optional[str]:
    """The SoC profile the host runtime emulates, as the runtime resolved it (None if MS_MEMCOPY_SOC is invalid)."""
    from .._acl import runtime

    return runtime.soc_profile()


def route_line() -> str:
    """The one route the primitives take, and where its module is built."""
    from .._extension import op_def_route

    backend = op_def_route.default_backend()
    directory = op_def_route.default_build_dir(backend)
    built = (directory / op_def_route.FINGERPRINT_FILE).exists()
    module = (f"op_def module ({backend}): {'built in' if built else 'not built yet; first use builds it in'} "
              f"{directory}")
    return ("primitive route: op_def (every device): CustomOpBuilder Custom_<op> primitives, KernelMods in "
            f"graphs, PyboostRunner functions for eager calls\n{module}")


def report() -> str:
    lines = [f"ms_memcopy {__version__}"]
    if _paths.uses_host_runtime():
        lines.append(f"ACL backend: host ACL runtime ({_paths.get_acl_library()})")
        name = emulated_soc()
        profile = soc_profiles()["profiles"].get(name)
        if profile is None:
            lines.append(f"emulated SoC: {_runtime_env.SOC}={os.environ.get(_runtime_env.SOC)!r} is unknown; "
                         f"valid: {', '.join(soc_profiles()['profiles'])}")
        else:
            lines.append(f"emulated SoC: {name} ({profile['product']})")
            lines.append(f"  supported: {_ALWAYS}")
            for key, calls in _GATED_CALLS.items():
                lines.append(f"  {'supported' if profile[key] else 'NOT supported (207000)'}: {calls}")
            if not profile["memcpy2d_null_stream"]:
                lines.append("  aclrtMemcpy2dAsync needs a stream: the NULL stream is 107000 on this SoC")
            if profile["memcpy_desc"]:
                lines.append(f"  memcpy descriptor size: {profile['memcpy_desc_size']} bytes")
            lines.append(f"  streams per device: {profile['max_streams']} (its default streams included; "
                         "more: 207008)")
    else:
        lines.append(f"ACL backend: CANN ({_paths.get_acl_library()})")
    try:
        import mindspore as ms

        lines.append(f"MindSpore {ms.__version__}, device target {ms.get_context('device_target')}")
    except ImportError as exc:
        lines.append(f"MindSpore: not importable ({exc})")
        return "\n".join(lines)
    lines.append(route_line())
    return "\n".join(lines)
