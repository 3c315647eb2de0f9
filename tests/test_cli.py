"""python -m ms_memcopy info."""
import os
import subprocess
import sys

import pytest

from ms_memcopy import _runtime_env


def info(soc=None):
    env = {k: v for k, v in os.environ.items() if k != _runtime_env.SOC}
    if soc is not None:
        env[_runtime_env.SOC] = soc
    result = subprocess.run([sys.executable, "-m", "ms_memcopy", "info"], capture_output=True, text=True, env=env,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_info_default_profile():
    import mindspore

    import ms_memcopy
    from ms_memcopy import _paths

    out = info()
    assert out.startswith(f"ms_memcopy {ms_memcopy.__version__}\n")
    assert f"ACL backend: host ACL runtime ({_paths.get_acl_library()})" in out
    assert "emulated SoC: Ascend910B (Atlas A2 training/inference (Ascend 910B))" in out
    assert "  supported: aclrtMemcpyBatch, aclrtMemcpyBatchAsync (+V2)" in out
    assert "  memcpy descriptor size: 32 bytes" in out
    assert "  streams per device: 1984 (its default streams included; more: 207008)" in out
    assert f"MindSpore {mindspore.__version__}, device target CPU" in out


@pytest.mark.parametrize("soc,batch,desc", [("Ascend310P", False, False), ("Ascend310B", False, True),
                                            ("Ascend950", True, True)])
def test_info_reports_the_gates_of_the_selected_profile(soc, batch, desc):
    out = info(soc)
    assert f"emulated SoC: {soc} (" in out
    assert ("  supported: aclrtMemcpyBatch" in out) is batch
    assert ("NOT supported (207000): aclrtMemcpyBatch" in out) is not batch
    assert ("  supported: aclrtGetMemcpyDescSize" in out) is desc
    if soc == "Ascend950":
        assert "memcpy descriptor size: 64 bytes" in out
    assert f"streams per device: {dict(Ascend310P=1024, Ascend310B=512, Ascend950=1984)[soc]} " in out


def test_info_unknown_profile():
    out = info("Ascend999")
    assert "emulated SoC: MS_MEMCOPY_SOC='Ascend999' is unknown; valid: Ascend950, Ascend910C, Ascend910B" in out
