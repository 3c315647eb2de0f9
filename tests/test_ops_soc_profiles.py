"""Every op gives the same result on every SoC profile, whichever ACL calls the chip has (batch,
descriptors and 2-D device-to-device copies fall back to aclrtMemcpyAsync where missing): the sample
call of every op of configs/ops, in both modes, against numpy, on each profile whose features differ from
the default profile's (test_ops_samples.py runs them in-process on that one)."""
from pathlib import Path

import pytest

from _ops_support import PROFILES_WITH_OTHER_FEATURES, check_on_profile

from ms_memcopy import _runtime_env

SCRIPT = r'''
import sys
sys.path.insert(0, {tests!r})
import mindspore as ms
from ms_memcopy import HostBuffer, op_defs, runtime, samples
from _ops_support import FnCell

assert runtime.soc_profile() == "{profile}", runtime.soc_profile()

for mode in (ms.GRAPH_MODE, ms.PYNATIVE_MODE):
    ms.set_context(mode=mode)
    for name in op_defs.all_op_defs():  # the sample call of every op (ms_memcopy/samples.py) against numpy
        with HostBuffer(samples.HOST_BUFFER_BYTES) as buf:
            sample = samples.sample(name, buf)
            sample.check(FnCell(sample.op)(*sample.inputs))
print("OK")
'''.replace("{tests!r}", repr(str(Path(__file__).resolve().parent)))


@pytest.mark.parametrize("profile", PROFILES_WITH_OTHER_FEATURES)
def test_primitives_identical_on_every_profile(run_python, profile):
    check_on_profile(run_python, SCRIPT, profile, timeout=300)


def test_acl_failure_inside_a_kernel_names_the_call_code_and_message(run_python):
    """An ACL error in a kernel (here: the emulated SoC is unknown) carries the call, the code's name and
    number, and the runtime's message."""
    script = r'''
import numpy as np, mindspore as ms
from ms_memcopy.ops import MemcpyWithDesc
ms.set_context(mode=ms.GRAPH_MODE)
try:
    MemcpyWithDesc()(ms.Tensor(np.ones(3, np.float32)))
except RuntimeError as e:
    print("ERROR:", e)
'''
    result = run_python(script, env={_runtime_env.SOC: "Ascend999"}, timeout=300)
    assert "ms_memcopy MemcpyWithDesc: AclError: aclInit failed: ACL_ERROR_INVALID_PARAM (100000): " in result.stdout, \
        result.stdout + result.stderr[-2000:]
    assert "Ascend910B" in result.stdout  # the runtime's message lists the valid profiles


def test_misspelt_soc_is_reported_every_time_and_recovers_when_fixed(run_python):
    """Every launch under an unknown MS_MEMCOPY_SOC names the variable and the valid profiles (not only the
    first), and once the variable is fixed the same process copies correctly."""
    script = r'''
import os
import numpy as np, mindspore as ms
from ms_memcopy.ops import MemcpyWithDesc
ms.set_context(mode=ms.PYNATIVE_MODE)
x = ms.Tensor(np.arange(5, dtype=np.float32))
for attempt in range(3):
    try:
        MemcpyWithDesc()(x).asnumpy()
        print("NO ERROR")
    except RuntimeError as e:
        print("ERROR:", str(e).replace("\n", " "))
os.environ["MS_MEMCOPY_SOC"] = "Ascend910B"
print("FIXED:", MemcpyWithDesc()(x).asnumpy().tolist())
'''
    result = run_python(script, env={_runtime_env.SOC: "Ascend9l0B"}, timeout=120)
    errors = [line for line in result.stdout.splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 3, result.stdout + result.stderr[-2000:]
    for line in errors:
        assert 'MS_MEMCOPY_SOC="Ascend9l0B" names no SoC profile' in line and "Ascend910B" in line, line
    assert "FIXED: [0.0, 1.0, 2.0, 3.0, 4.0]" in result.stdout, result.stdout + result.stderr[-2000:]
