"""The 207000 feature gates of each SoC profile in configs/soc_profiles.yaml, each profile
in its own interpreter (MS_MEMCOPY_SOC), and an unknown profile name."""
import json

import pytest
import yaml

from ms_memcopy import _paths, _runtime_env
from ms_memcopy.acl_constants import SIZE_MAX

with open(_paths.configs_dir() / "soc_profiles.yaml", encoding="utf-8") as _f:
    SOC_TABLE = yaml.safe_load(_f)
PROFILES = SOC_TABLE["profiles"]

INVALID_PARAM = 100000
RT_PARAM_INVALID = 107000
RT_FEATURE_NOT_SUPPORT = 207000
SENTINEL = 0x5EED

# Runs under MS_MEMCOPY_SOC=<profile>; prints one JSON object of codes (pyACL layer: codes, never raises).
PROBE = r'''
import ctypes, json
import numpy as np
import ms_memcopy.acl as acl
from ms_memcopy import _acl_lib, _convert as cv, runtime
from ms_memcopy import acl_constants as C

SENTINEL = %(sentinel)d
H2D, D2D, INNER = C.ACL_MEMCPY_HOST_TO_DEVICE, C.ACL_MEMCPY_DEVICE_TO_DEVICE, C.ACL_MEMCPY_INNER_DEVICE_TO_DEVICE
ATTR = {"dst_loc": {"id": 0, "type": C.ACL_MEM_LOCATION_TYPE_DEVICE},
        "src_loc": {"id": 0, "type": C.ACL_MEM_LOCATION_TYPE_HOST}}
out = {"profile": runtime.soc_profile(), "set_device": acl.rt.set_device(0)}
stream, _ = acl.rt.create_stream()
data = np.arange(256, dtype=np.uint8)

def upload(array):
    ptr, ret = acl.rt.malloc(array.nbytes, 0)
    assert ret == 0 and acl.rt.memcpy(ptr, array.nbytes, acl.util.numpy_to_ptr(array), array.nbytes, H2D) == 0
    return ptr

def download(ptr, n):
    host = np.zeros(n, np.uint8)
    assert acl.rt.memcpy(acl.util.numpy_to_ptr(host), n, ptr, n, C.ACL_MEMCPY_DEVICE_TO_HOST) == 0
    return host

# descriptor calls
size, ret = acl.rt.get_memcpy_desc_size(INNER)
out["desc_size"] = [size, ret]
out["desc_size_kind8"] = acl.rt.get_memcpy_desc_size(8)[1]
src, dst = upload(data), upload(np.zeros(256, np.uint8))
desc, _ = acl.rt.malloc(128, 0)
out["set_desc"] = acl.rt.set_memcpy_desc(desc, INNER, src, dst, 256, 0)[1]
out["set_desc_kind8"] = acl.rt.set_memcpy_desc(desc, 8, src, dst, 256, 0)[1]
out["with_desc"] = acl.rt.memcpy_async_with_desc(desc, INNER, stream)
out["with_desc_kind8"] = acl.rt.memcpy_async_with_desc(desc, 8, stream)
acl.rt.synchronize_stream(stream)
out["desc_copied"] = bool((download(dst, 256) == data).all())

# 2D: D2D gated per chip, H2D everywhere
dst2 = upload(np.zeros(256, np.uint8))
out["2d_d2d"] = acl.rt.memcpy2d_async(dst2, 32, src, 16, 16, 8, D2D, stream)
acl.rt.synchronize_stream(stream)
ref = np.zeros(256, np.uint8)
for r in range(8):
    ref[r * 32:r * 32 + 16] = data[r * 16:r * 16 + 16]
got = download(dst2, 256)
out["2d_d2d_result"] = "copied" if (got == ref).all() else ("untouched" if (got == 0).all() else "other")
out["2d_h2d"] = acl.rt.memcpy2d_async(dst2, 16, acl.util.numpy_to_ptr(data), 16, 16, 16, H2D, stream)
acl.rt.synchronize_stream(stream)
out["2d_h2d_copied"] = bool((download(dst2, 256) == data).all())

# batch calls, through ctypes with a sentinel failIndex
pinned, _ = acl.rt.malloc_host(64)
acl.util.ptr_to_numpy(pinned, (64,), 2)[:] = 7  # 2: NPY_UBYTE
bdst = upload(np.zeros(64, np.uint8))

def batch(name, sizes=(64,), dest_maxs=(64,), attrs=(ATTR,), indexes=(0,), with_fi=True):
    args = cv.batch_arrays([bdst], list(dest_maxs), [pinned], list(sizes), 1, list(attrs), list(indexes), 1)
    fi = ctypes.c_size_t(SENTINEL)
    tail = [ctypes.byref(fi)] if with_fi else []
    if "Async" in name:
        tail.append(stream)
    ret = _acl_lib.func(name)(*args, *tail)
    acl.rt.synchronize_stream(stream)
    return [ret, fi.value] if with_fi else [ret]

out["batch_async"] = batch("aclrtMemcpyBatchAsync")
out["batch_sync"] = batch("aclrtMemcpyBatch")
out["batch_async_v2"] = batch("aclrtMemcpyBatchAsyncV2", with_fi=False)
out["batch_sync_v2"] = batch("aclrtMemcpyBatchV2", with_fi=False)
out["batch_copied"] = bool((download(bdst, 64) == 7).all())
out["batch_bad_indexes"] = batch("aclrtMemcpyBatchAsync", indexes=(1,))
out["batch_all_zero"] = batch("aclrtMemcpyBatchAsync", sizes=(0,))
out["batch_dest_max"] = batch("aclrtMemcpyBatchAsync", dest_maxs=(63,))
out["batch_rsv"] = batch("aclrtMemcpyBatchAsync", attrs=(dict(ATTR, rsv=[1] * 16),))

# aclrtMalloc rounds up to 32 bytes and adds the profile's padding; a copy may use all of it
out["malloc_sizes"] = []
for n in (1, 100, 128):
    ptr, _ = acl.rt.malloc(n, 0)
    size = runtime.get_mem_location(ptr).size
    host = np.zeros(size + 1, np.uint8)
    host_ptr = acl.util.numpy_to_ptr(host)
    out["malloc_sizes"].append([size, acl.rt.memcpy(ptr, size, host_ptr, size, H2D),
                                acl.rt.memcpy(ptr, size + 1, host_ptr, size + 1, H2D)])
print(json.dumps(out))
'''


def _probe(run_python, profile):
    result = run_python(PROBE % {"sentinel": SENTINEL}, env={_runtime_env.SOC: profile})
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_profiles_are_read_from_the_yaml():
    assert SOC_TABLE["default"] in PROFILES and len(PROFILES) >= 2


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_soc_profile_feature_gates(run_python, profile):
    flags = PROFILES[profile]
    out = _probe(run_python, profile)
    assert (out["profile"], out["set_device"]) == (profile, 0)

    # descriptor copies: kind >= 8 is an ACL-layer 100000 on every chip
    assert (out["desc_size_kind8"], out["set_desc_kind8"], out["with_desc_kind8"]) == (INVALID_PARAM,) * 3
    if flags["memcpy_desc"]:
        assert out["desc_size"] == [flags["memcpy_desc_size"], 0]
        assert (out["set_desc"], out["with_desc"], out["desc_copied"]) == (0, 0, True)
    else:
        assert out["desc_size"][1] == RT_FEATURE_NOT_SUPPORT
        assert (out["set_desc"], out["with_desc"], out["desc_copied"]) == (RT_FEATURE_NOT_SUPPORT,) * 2 + (False,)

    # 2D: D2D only where the profile has it; H2D everywhere
    if flags["memcpy2d_d2d"]:
        assert (out["2d_d2d"], out["2d_d2d_result"]) == (0, "copied")
    else:
        assert (out["2d_d2d"], out["2d_d2d_result"]) == (RT_FEATURE_NOT_SUPPORT, "untouched")
    assert (out["2d_h2d"], out["2d_h2d_copied"]) == (0, True)

    # batch: the chip gate comes after the ACL-layer checks and before failIndex is set
    if flags["memcpy_batch"]:
        assert out["batch_async"] == out["batch_sync"] == [0, SIZE_MAX]
        assert out["batch_async_v2"] == out["batch_sync_v2"] == [0]
        assert out["batch_copied"] is True
        assert out["batch_bad_indexes"] == [RT_PARAM_INVALID, SIZE_MAX]
    else:
        assert out["batch_async"] == out["batch_sync"] == [RT_FEATURE_NOT_SUPPORT, SENTINEL]
        assert out["batch_async_v2"] == out["batch_sync_v2"] == [RT_FEATURE_NOT_SUPPORT]
        assert out["batch_copied"] is False
        assert out["batch_bad_indexes"] == [RT_FEATURE_NOT_SUPPORT, SENTINEL]
    assert out["batch_all_zero"] == [0, SIZE_MAX]
    assert out["batch_dest_max"] == [INVALID_PARAM, SENTINEL]
    assert out["batch_rsv"] == [INVALID_PARAM, SENTINEL]

    # allocation sizes: rounded up to 32, plus malloc_extra_bytes; the whole of it is usable
    expected = [[(n + 31) // 32 * 32 + flags["malloc_extra_bytes"], 0, RT_PARAM_INVALID] for n in (1, 100, 128)]
    assert out["malloc_sizes"] == expected


def test_unknown_soc_profile_is_rejected_with_the_valid_names(run_python):
    result = run_python(
        "import json, ms_memcopy.acl as acl\n"
        "out = {'init': acl.init(), 'init_msg': acl.get_recent_err_msg(),\n"
        "       'set_device': acl.rt.set_device(0), 'set_device_msg': acl.get_recent_err_msg()}\n"
        "print(json.dumps(out))\n", env={_runtime_env.SOC: "Ascend999X"})
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert (out["init"], out["set_device"]) == (INVALID_PARAM, INVALID_PARAM)
    for key in ("init_msg", "set_device_msg"):
        assert out[key], f"no aclGetRecentErrMsg text after {key[:-4]}"
        missing = [name for name in PROFILES if name not in out[key]]
        assert missing == [], f"{key} lacks the valid names {missing}: {out[key]}"


STREAM_LIMIT_PROBE = r'''
import json
from ms_memcopy import runtime, AclError

runtime.set_device(0)  # creates device 0's default stream, which counts against the limit
streams, code = [], 0
try:
    while len(streams) < 5000:
        streams.append(runtime.create_stream())
except AclError as e:
    code = e.code
out = {"created": len(streams), "code": code}
runtime.destroy_stream(streams.pop())
streams.append(runtime.create_stream())  # a destroyed stream frees its place
runtime.set_device(1)
other = runtime.create_stream()  # the limit is per device
out["other_device"] = runtime.get_device_count() > 1
runtime.destroy_stream(other)
runtime.set_device(0)  # a stream is destroyed with its context current
for s in streams:
    runtime.destroy_stream(s)
print(json.dumps(out))
'''


@pytest.mark.parametrize("profile,limit", [("Ascend910B", 1984), ("Ascend310B", 512)])
def test_stream_limit_per_device_returns_207008(run_python, profile, limit):
    assert PROFILES[profile]["max_streams"] == limit
    result = run_python(STREAM_LIMIT_PROBE, env={_runtime_env.SOC: profile})
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    # the profile's limit counts the default stream of device 0
    assert out == {"created": limit - 1, "code": 207008, "other_device": True}
