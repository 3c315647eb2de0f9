"""Differential fuzzer of the host runtime's copy calls.

Random valid and invalid arguments to the 1D, 2D, batch, memset and descriptor calls (pointers into
device, pinned, framework-registered and pageable memory at random offsets; sizes up to SIZE_MAX; kinds
including invalid enum values; valid, NULL, destroyed, unknown and other-device streams; batch arrays with
random attributes) go to the C calls through ctypes, with nothing checked in Python first. A reference
model written from the documented checks (docs/host_runtime.md, "Copies") predicts each call: the return
code, the batch failIndex, and the copies made, from which numpy computes every byte of memory afterwards.
On an error the memory must be untouched (an asynchronous batch keeps the items before the failing one, as
CANN's item loop does).

Cases run in batches, each in its own interpreter, so a crash is a finding (with the range of cases to
replay), not a dead run. Case i of seed s is generated from (s, i) alone and starts from freshly filled
memory, so any case replays on its own:

    python tests/fuzz_runtime.py --cases 100000            # the long run (about 30 s)
    python tests/fuzz_runtime.py --seed 7 --first 4242 --cases 1 --verbose   # one case

Exit status 0 when every case matched the model. It tests the ms_memcopy that `import ms_memcopy`
finds (with a tree built in place: PYTHONPATH=<checkout>); `python -m tests.fuzz_runtime` from the
repository root works too. The test suite runs a short run (tests/test_runtime_fuzz.py).
"""
import argparse
import ctypes
import json
import os
import random
import struct
import subprocess
import sys
import time
from pathlib import Path

try:
    from ms_memcopy import _runtime_env, acl_limits  # acl_limits: from the header the runtime compiles
except ImportError:  # run from a checkout without an install
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from ms_memcopy import _runtime_env, acl_limits

SIZE_MAX = 2**64 - 1
OK, INVALID_PARAM, RT_PARAM_INVALID, RT_CONTEXT_STREAM = 0, 100000, 107000, 107003
RT_INVALID_HANDLE, RT_FEATURE_NOT_SUPPORT, RT_INTERNAL_ERROR = 107017, 207000, 507000
FEATURE_UNSUPPORTED, RT_INVALID_DEVICEID, RT_CONTEXT_NULL = 200006, 107001, 107002
EVENT_DEFAULT_FLAG, EVENT_FLAG_MASK, EVENT_DEVICE_USE_ONLY, EVENT_EXTERNAL = 0x0E, 0x3F, 0x10, 0x20
NOT_READY, COMPLETE = 0, 1
MAX_RUNTIME_DEVICES = acl_limits.MAX_RUNTIME_DEVICES  # CANN's RT_MAX_DEV_NUM
JUNK_HANDLE = 0x4321  # names no stream, event or context
H2H, H2D, D2H, D2D, DEFAULT, BUF_H2D, INNER_D2D = 0, 1, 2, 3, 4, 5, 6
DESC_MAGIC, DESC_VERSION, DESC_MAX_COUNT = 0x4344534D, 2, acl_limits.MAX_DESC_COUNT
LOC_HOST, LOC_DEVICE, LOC_UNREGISTERED, LOC_MANAGED, LOC_HOST_NUMA = 0, 1, 2, 3, 4
FAIL_INDEX_SENTINEL = 0x5EED
MAX_2D_HEIGHT, MAX_2D_WIDTH = acl_limits.MAX_2D_HEIGHT, acl_limits.MAX_2D_WIDTH
CASES_PER_PROCESS = 2000
# The runtime's environment variables are not inherited: the model assumes the default profile.


# --- memory of a worker ----------------------------------------------------------------------------

class Region:
    """A block the fuzzer owns: loc is "device" (aclrtMalloc or registered), "pinned" or "pageable"."""

    def __init__(self, name, loc, ptr, size, array):
        self.name, self.loc, self.ptr, self.size, self.array = name, loc, ptr, size, array


class Memory:
    """The regions and streams every case of a worker uses (made once per worker process)."""

    def __init__(self):
        import numpy as np
        import yaml

        from ms_memcopy import _acl_lib, _paths

        self.np = np
        self.lib = _acl_lib
        with open(_paths.configs_dir() / "soc_profiles.yaml", encoding="utf-8") as f:
            table = yaml.safe_load(f)
        self.profile = table["profiles"][table["default"]]
        call = self.call
        count = ctypes.c_uint32()
        assert call("aclrtGetDeviceCount", ctypes.byref(count)) == OK
        self.device_count = count.value
        self.primary = {}  # device -> its primary context's handle
        assert call("aclrtSetDevice", 1) == OK
        self.primary[1] = self.current_context()
        self.other_stream = self.new_stream()  # a stream of device 1
        assert call("aclrtSetDevice", 0) == OK
        self.primary[0] = self.current_context()
        created = ctypes.c_void_p()
        assert call("aclrtCreateContext", ctypes.byref(created), 0) == OK
        assert call("aclrtDestroyContext", created) == OK
        self.dead_context = created.value
        # Every case starts and ends here: the primary context of device 0 current, peer access off.
        assert call("aclrtSetCurrentContext", self.primary[0]) == OK
        event = ctypes.c_void_p()
        assert call("aclrtCreateEvent", ctypes.byref(event)) == OK
        assert call("aclrtDestroyEvent", event) == OK
        self.dead_event = event.value
        self.stream = self.new_stream()
        dead = self.new_stream()
        assert call("aclrtDestroyStream", dead) == OK
        self.streams = {"s0": self.stream, "null": None, "s1": self.other_stream, "dead": dead,
                        "junk": 0x4321}
        extra = self.profile["malloc_extra_bytes"]
        self.regions = {}
        self.allocations = []  # aclrtMalloc regions: their array is a host copy, kept by upload/download
        for name, size in (("dev", 1024), ("dev2", 300)):
            ptr = ctypes.c_void_p()
            assert call("aclrtMalloc", ctypes.byref(ptr), size, 0) == OK
            usable = (size + 31) // 32 * 32 + extra  # the recorded, padded size
            self.add(name, "device", ptr.value, usable)
        ptr = ctypes.c_void_p()
        assert call("aclrtMallocHost", ctypes.byref(ptr), 1024) == OK
        self.add("pin", "pinned", ptr.value, 1024)
        self.keep = []
        framework = np.zeros(512, np.uint8)
        self.keep.append(framework)
        assert call("aclhostRegisterDeviceMemory", framework.ctypes.data, framework.nbytes) == OK
        self.regions["fw"] = Region("fw", "device", framework.ctypes.data, 512, framework)
        page = np.zeros(4096, np.uint8)
        self.keep.append(page)
        self.regions["page"] = Region("page", "pageable", page.ctypes.data, 4096, page)
        self.names = sorted(self.regions)

    def add(self, name, loc, ptr, size):
        if loc == "device":  # the host reads aclrtMalloc memory only through copies (MS_MEMCOPY_STRICT_DEVICE)
            array = self.np.zeros(size, self.np.uint8)
            self.allocations.append(name)
        else:
            array = self.np.ctypeslib.as_array((ctypes.c_uint8 * size).from_address(ptr))
        self.regions[name] = Region(name, loc, ptr, size, array)

    def call(self, name, *args):
        return self.lib.func(name)(*args)

    def current_context(self):
        out = ctypes.c_void_p()
        assert self.call("aclrtGetCurrentContext", ctypes.byref(out)) == OK
        return out.value

    def new_stream(self):
        out = ctypes.c_void_p()
        assert self.call("aclrtCreateStream", ctypes.byref(out)) == OK
        return out.value

    def fill(self, rng):
        for name in self.names:
            region = self.regions[name]
            region.array[:] = self.np.frombuffer(rng.randbytes(region.size), self.np.uint8)
        self.copy_allocations(H2D)

    def download(self):
        """The aclrtMalloc regions' arrays read back from the device."""
        self.copy_allocations(D2H)

    def copy_allocations(self, kind):
        for name in self.allocations:
            region = self.regions[name]
            host = region.array.ctypes.data
            dst, src = (region.ptr, host) if kind == H2D else (host, region.ptr)
            assert self.call("aclrtMemcpy", dst, region.size, src, region.size, kind) == OK

    def snapshot(self):
        return {name: self.regions[name].array.copy() for name in self.names}

    def address(self, ptr):
        return 0 if ptr is None else self.regions[ptr[0]].ptr + ptr[1]

    def sync_all(self):
        for handle in (self.stream, self.other_stream, None):
            assert self.call("aclrtSynchronizeStream", handle) == OK


# --- the reference model ---------------------------------------------------------------------------

# Kind correction by (src, dst) location: pinned and device memory on both sides force the direction;
# with a pageable side, the kinds that side accepts and what DEFAULT becomes.
FORCED = {("pinned", "pinned"): H2H, ("pinned", "device"): H2D, ("device", "pinned"): D2H,
          ("device", "device"): D2D}
PAGEABLE_RULES = {("pinned", "pageable"): ({H2H, H2D}, H2H), ("device", "pageable"): ({D2H, D2D}, D2H),
                  ("pageable", "pinned"): ({H2H, D2H}, H2H), ("pageable", "device"): ({H2D, D2D}, H2D),
                  ("pageable", "pageable"): ({H2H, H2D, D2H, D2D}, H2H)}


class Rejected(Exception):
    def __init__(self, code):
        super().__init__(code)
        self.code = code


def corrected_kind(kind, src_loc, dst_loc):
    """The copy kind the runtime uses for `kind` between these locations, or None (107000)."""
    pair = (src_loc, dst_loc)
    if pair in FORCED:
        return FORCED[pair]
    allowed, default = PAGEABLE_RULES[pair]
    if kind == DEFAULT:
        return default
    return kind if kind in allowed else None


class Model:
    def __init__(self, memory):
        self.m = memory

    def loc(self, ptr):
        return self.m.regions[ptr[0]].loc

    def check_extent(self, ptr, span):
        """107000 when [ptr, ptr + span) wraps the address space or runs past a registered block."""
        region = self.m.regions[ptr[0]]
        if span > SIZE_MAX or region.ptr + ptr[1] + span > SIZE_MAX:
            raise Rejected(RT_PARAM_INVALID)
        if region.loc != "pageable" and ptr[1] + span > region.size:
            raise Rejected(RT_PARAM_INVALID)

    def resolve(self, kind, src, dst):
        resolved = corrected_kind(kind, self.loc(src), self.loc(dst))
        if resolved is None:
            raise Rejected(RT_PARAM_INVALID)
        return resolved

    def stream_handle(self, stream):
        if stream in ("dead", "junk"):
            raise Rejected(RT_INVALID_HANDLE)

    def memcpy(self, c):
        """aclrtMemcpy / aclrtMemcpyAsync / WithCondition -> (code, copies)."""
        sync = c["api"] == "aclrtMemcpy"
        dst, src, count, dest_max, kind = c["dst"], c["src"], c["count"], c["dest_max"], c["kind"]
        if count == 0:
            return OK, []
        if dst is None or src is None:
            raise Rejected(INVALID_PARAM)
        if not 0 <= kind <= 5:
            raise Rejected(INVALID_PARAM)
        if not sync:
            self.stream_handle(c["stream"])
        if sync and dest_max == 0:
            raise Rejected(RT_PARAM_INVALID)
        if count > dest_max:
            raise Rejected(RT_PARAM_INVALID)
        if sync and dst == src:
            return OK, []
        if kind == BUF_H2D:
            if self.loc(src) == "device" or self.loc(dst) != "device":
                raise Rejected(RT_PARAM_INVALID)
            resolved = H2D
        else:
            resolved = self.resolve(kind, src, dst)
        self.check_extent(src, count)
        self.check_extent(dst, count)
        if not sync and resolved == H2H:
            raise Rejected(RT_FEATURE_NOT_SUPPORT)
        if not sync and dst == src:
            return OK, []
        pageable = "pageable" in (self.loc(src), self.loc(dst)) and kind != BUF_H2D
        if not sync and not pageable and c["stream"] == "s1":
            raise Rejected(RT_CONTEXT_STREAM)
        return OK, [("1d", dst, src, count)]

    def memcpy2d(self, c):
        sync = c["api"] == "aclrtMemcpy2d"
        dst, src, kind = c["dst"], c["src"], c["kind"]
        width, height, spitch, dpitch = c["width"], c["height"], c["spitch"], c["dpitch"]
        if width == 0 or height == 0:
            return OK, []
        if dst is None or src is None:
            raise Rejected(INVALID_PARAM)
        if width > spitch or width > dpitch:
            raise Rejected(INVALID_PARAM)
        if kind not in (H2D, D2H, D2D, DEFAULT):
            raise Rejected(INVALID_PARAM)
        if not sync:
            self.stream_handle(c["stream"])
            if c["stream"] == "null" and not self.m.profile["memcpy2d_null_stream"]:
                raise Rejected(RT_PARAM_INVALID)
        if height > MAX_2D_HEIGHT or width > MAX_2D_WIDTH:
            raise Rejected(RT_PARAM_INVALID)
        if sync and kind == D2D:
            raise Rejected(RT_FEATURE_NOT_SUPPORT)
        resolved = self.resolve(kind, src, dst)
        if sync and resolved == D2D:
            raise Rejected(RT_PARAM_INVALID)
        if resolved == H2H:
            raise Rejected(RT_PARAM_INVALID)
        if not sync and resolved == D2D and not self.m.profile["memcpy2d_d2d"]:
            raise Rejected(RT_FEATURE_NOT_SUPPORT)
        self.check_extent(src, (height - 1) * spitch + width)
        self.check_extent(dst, (height - 1) * dpitch + width)
        pageable = "pageable" in (self.loc(src), self.loc(dst))
        if not sync and not pageable and c["stream"] == "s1":
            raise Rejected(RT_CONTEXT_STREAM)
        if width == spitch == dpitch:  # dense rows are one copy, as by memmove
            return OK, [("1d", dst, src, width * height)]
        return OK, [("2d", dst, dpitch, src, spitch, width, height)]

    def batch(self, c):
        """The batch calls -> (code, copies, expected failIndex). An async failure keeps earlier items."""
        sync = c["api"] in ("aclrtMemcpyBatch", "aclrtMemcpyBatchV2")
        fail = [FAIL_INDEX_SENTINEL]
        done = []
        v2 = c["api"].endswith("V2")
        try:
            self._batch(c, sync, fail, done)
        except Rejected as e:
            return e.code, ([] if sync else done), (None if v2 else fail[0])
        return OK, done, (None if v2 else fail[0])

    def _batch(self, c, sync, fail, done):
        items, attrs, indexes, null = c["items"], c["attrs"], c["indexes"], c["null_array"]
        count, num_attrs = c["count"], c["num_attrs"]
        if null == "failIndex":
            raise Rejected(INVALID_PARAM)
        if null == "sizes":
            raise Rejected(INVALID_PARAM)
        if count == 0:
            raise Rejected(INVALID_PARAM)
        if all(item["size"] == 0 for item in items):
            fail[0] = SIZE_MAX
            return
        if null is not None:
            raise Rejected(INVALID_PARAM)
        if any(item["dest_max"] < item["size"] for item in items):
            raise Rejected(INVALID_PARAM)
        if any(attrs[k]["rsv"] for k in range(min(num_attrs, count))):
            raise Rejected(INVALID_PARAM)
        if not self.m.profile["memcpy_batch"]:
            raise Rejected(RT_FEATURE_NOT_SUPPORT)
        if not sync:
            self.stream_handle(c["stream"])
        fail[0] = SIZE_MAX
        if num_attrs == 0 or num_attrs > count:
            raise Rejected(RT_PARAM_INVALID)
        if indexes[0] != 0:
            raise Rejected(RT_PARAM_INVALID)
        for k in range(1, num_attrs):
            if indexes[k] <= indexes[k - 1] or indexes[k] >= count:
                raise Rejected(RT_PARAM_INVALID)
        checked = []
        for i, item in enumerate(items):
            k = max(k for k in range(num_attrs) if indexes[k] <= i)
            try:
                self._batch_item(item, attrs[k])
            except Rejected:
                fail[0] = i
                if not sync:
                    done.extend(checked)
                raise
            checked.append(("1d", item["dst"], item["src"], item["size"]))
        done.extend(checked)

    def _batch_item(self, item, attr):
        if item["size"] == 0 or item["size"] > item["dest_max"] or item["src"] is None or item["dst"] is None:
            raise Rejected(RT_PARAM_INVALID)
        for side in ("dst", "src"):
            declared_type, declared_id = attr[side]
            declared = LOC_HOST if declared_type == LOC_HOST_NUMA else declared_type
            real = LOC_DEVICE if self.loc(item[side]) == "device" else LOC_HOST
            if declared != real or (real == LOC_DEVICE and declared_id != 0):
                raise Rejected(RT_PARAM_INVALID)
        if (self.loc(item["src"]) == "device") == (self.loc(item["dst"]) == "device"):
            raise Rejected(RT_PARAM_INVALID)
        self.check_extent(item["src"], item["size"])
        self.check_extent(item["dst"], item["size"])

    def memset(self, c):
        """aclrtMemset / aclrtMemsetAsync -> (code, [("set", ptr, value byte, count)])."""
        ptr, max_count, count = c["dst"], c["dest_max"], c["count"]
        if count == 0:
            return OK, []
        if ptr is None:
            raise Rejected(INVALID_PARAM)
        if c["api"] == "aclrtMemsetAsync":
            self.stream_handle(c["stream"])
        if count > max_count:
            raise Rejected(RT_PARAM_INVALID)
        if c["api"] == "aclrtMemsetAsync" and c["stream"] == "s1":
            raise Rejected(RT_CONTEXT_STREAM)
        if self.loc(ptr) == "pageable" and c["api"] == "aclrtMemset":
            raise Rejected(RT_PARAM_INVALID)  # aclrtMemsetAsync sets pageable memory on the calling thread
        self.check_extent(ptr, count)
        return OK, [("set", ptr, c["value"] & 0xFF, count)]

    def set_desc(self, c):
        """aclrtSetMemcpyDesc -> its code (Rejected) or None."""
        desc, src, dst, count = c["desc"], c["src"], c["dst"], c["count"]
        if desc is None or not 0 <= c["set_kind"] < 8 or src is None or dst is None:
            raise Rejected(INVALID_PARAM)
        if count == 0 or c["config"]:
            raise Rejected(INVALID_PARAM)
        if not self.m.profile["memcpy_desc"] or c["set_kind"] != INNER_D2D:
            raise Rejected(RT_FEATURE_NOT_SUPPORT)
        if count > DESC_MAX_COUNT:
            raise Rejected(RT_PARAM_INVALID)
        self.check_desc(desc)
        if self.loc(src) != "device" or self.loc(dst) != "device":
            raise Rejected(RT_PARAM_INVALID)
        self.check_extent(src, count)
        self.check_extent(dst, count)

    def check_desc(self, desc):
        region = self.m.regions[desc[0]]
        if (region.ptr + desc[1]) % acl_limits.DESC_ALIGNMENT != 0 or region.loc != "device":
            raise Rejected(RT_PARAM_INVALID)
        if region.size - desc[1] < self.m.profile["memcpy_desc_size"]:
            raise Rejected(RT_PARAM_INVALID)

    def with_desc(self, c):
        """aclrtMemcpyAsyncWithDesc -> its code (Rejected) or None."""
        desc = c["desc2"]
        if desc is None or not 0 <= c["kind"] < 8 or c["stream"] == "null":
            raise Rejected(INVALID_PARAM)
        if not self.m.profile["memcpy_desc"]:
            raise Rejected(RT_FEATURE_NOT_SUPPORT)
        self.stream_handle(c["stream"])
        if c["kind"] != INNER_D2D:
            raise Rejected(RT_FEATURE_NOT_SUPPORT)
        self.check_desc(desc)

    def desc(self, c):
        """Set, then the copy with a descriptor, then a synchronize of its stream: the three codes, and the
        descriptor write and the copy."""
        copies = []
        try:
            self.set_desc(c)
            set_code = OK
            copies.append(("desc", c["desc"], self.m.address(c["src"]), self.m.address(c["dst"]), c["count"]))
        except Rejected as e:
            set_code = e.code
        try:
            self.with_desc(c)
        except Rejected as e:
            return (set_code, e.code, OK), copies
        if set_code == OK and c["desc2"] == c["desc"]:  # the task reads what the first call wrote
            if c["count"] % acl_limits.DESC_COUNT_WRAP:  # the count has 32 bits: 4 GiB copies nothing
                copies.append(("1d", c["dst"], c["src"], c["count"] % acl_limits.DESC_COUNT_WRAP))
            return (set_code, OK, OK), copies
        return (set_code, OK, RT_INTERNAL_ERROR), copies  # not a descriptor when the task reads it

    # Sequences of calls on runtime objects. Each step's expectation is (code, value): value None when the
    # call returns nothing to check (or fails), else the value it must give (a set: any of those).

    def run_steps(self, c, step_fn, state):
        """The expectations of the case's steps in turn: step_fn(step, state)'s, or (code, None) when it
        raises Rejected."""
        results = []
        for step in c["steps"]:
            try:
                results.append(step_fn(step, state))
            except Rejected as e:
                results.append((e.code, None))
        return tuple(results)

    def event_target(self, target, state):
        """An event argument -> "null", "dead" or "live" (the case's event: state["event"])."""
        if target == "new":
            return state["event"]
        return {"null": "null", "dead": "dead", "junk": "dead", "stream": "dead"}[target]

    def events(self, c):
        """aclrtCreateEvent(WithFlag), then record / query / synchronize / destroy of that event and of
        NULL, destroyed and foreign handles (docs/host_runtime.md, "Streams", Events)."""
        state = {"event": "null", "flag": None, "recorded": False, "complete": False}
        return self.run_steps(c, self.event_step, state)

    def event_step(self, step, state):
        api = step["api"]
        if api.startswith("aclrtCreateEvent"):
            flag = EVENT_DEFAULT_FLAG if api == "aclrtCreateEvent" else step["flag"]
            if step["null_out"]:
                raise Rejected(INVALID_PARAM)
            if flag & EVENT_FLAG_MASK == 0 or flag > EVENT_FLAG_MASK:
                raise Rejected(RT_PARAM_INVALID)
            if any(flag & sole and flag & ~sole for sole in (EVENT_DEVICE_USE_ONLY, EVENT_EXTERNAL)):
                raise Rejected(RT_PARAM_INVALID)
            if flag == EVENT_DEVICE_USE_ONLY and not self.m.profile["event_device_use_only"]:
                raise Rejected(RT_FEATURE_NOT_SUPPORT)
            state.update(event="live", flag=flag, recorded=False, complete=False)
            return OK, None
        if api == "aclrtQueryEventStatus" and step["null_status"]:
            raise Rejected(INVALID_PARAM)
        target = self.event_target(step["event"], state)
        if target == "null":
            raise Rejected(INVALID_PARAM)
        if target == "dead":
            raise Rejected(RT_INVALID_HANDLE)
        if api == "aclrtRecordEvent":
            self.stream_handle(step["stream"])
            if state["flag"] == EVENT_DEVICE_USE_ONLY:
                raise Rejected(RT_PARAM_INVALID)
            if step["stream"] == "s1":  # another context (and device) than the current one
                raise Rejected(RT_CONTEXT_STREAM)
            state.update(recorded=True, complete=False)
            return OK, None
        if api == "aclrtDestroyEvent":
            state["event"] = "dead"
            return OK, None
        if state["flag"] == EVENT_EXTERNAL:
            raise Rejected(RT_FEATURE_NOT_SUPPORT)
        if api == "aclrtSynchronizeEvent":
            state["complete"] = state["recorded"]
            return OK, None
        if not state["recorded"]:
            return OK, NOT_READY
        return OK, (COMPLETE if state["complete"] else frozenset((NOT_READY, COMPLETE)))

    def contexts(self, c):
        """aclrtCreateContext, then set / destroy / get of contexts (the new one, the primary contexts of
        devices 0 and 1, NULL, destroyed and foreign handles), and calls that need the current context
        (docs/host_runtime.md, "Initialization and devices", Contexts)."""
        state = {"current": "primary0", "new": "null", "new_device": None, "stream": "null", "stream_context": None}
        return self.run_steps(c, self.context_step, state)

    def context_live(self, target, state):
        if target in ("primary0", "primary1"):
            return True
        return target == "new" and state["new"] == "live"

    def context_step(self, step, state):
        api = step["api"]
        devices = {"primary0": 0, "primary1": 1, "new": state["new_device"]}
        if api == "aclrtCreateContext":
            if step["null_out"]:
                raise Rejected(INVALID_PARAM)
            if not 0 <= step["device"] < self.m.device_count:
                raise Rejected(RT_INVALID_DEVICEID)
            state.update(new="live", new_device=step["device"], current="new")
            return OK, None
        if api in ("aclrtSetCurrentContext", "aclrtDestroyContext"):
            target = step["target"]
            if target == "null" or (target == "new" and state["new"] == "null"):
                raise Rejected(INVALID_PARAM)
            if api == "aclrtSetCurrentContext":
                if not self.context_live(target, state):
                    raise Rejected(RT_PARAM_INVALID)
                state["current"] = target
                return OK, None
            if target != "new" or state["new"] != "live":  # a primary context, or not a live one
                raise Rejected(RT_CONTEXT_NULL)
            state["new"] = "dead"
            if state["stream_context"] == "new":
                state["stream"] = "dead"
            if state["current"] == "new":
                state["current"] = None
            return OK, None
        if api == "aclrtDestroyStream":  # ApiImpl::StreamDestroy: the stream's own context must be current
            if state["stream"] == "null":
                raise Rejected(INVALID_PARAM)
            if state["stream"] == "dead":
                raise Rejected(RT_INVALID_HANDLE)
            if state["current"] is None:
                raise Rejected(RT_CONTEXT_NULL)
            if state["current"] != state["stream_context"]:
                raise Rejected(RT_CONTEXT_STREAM)
            state["stream"] = "dead"
            return OK, None
        current = state["current"]
        if current is None:
            raise Rejected(RT_CONTEXT_NULL)
        if api == "aclrtGetCurrentContext":
            return OK, current
        if api == "aclrtGetDevice":
            return OK, devices[current]
        if api == "aclrtCreateStream":
            state.update(stream="live", stream_context=current)
            return OK, None
        return OK, None  # aclrtSynchronizeDevice: nothing is queued in any context

    def peers(self, c):
        """aclrtDeviceCanAccessPeer, aclrtDeviceEnablePeerAccess, aclrtDeviceDisablePeerAccess and
        aclrtDevicePeerAccessStatus with valid and invalid ids, from device 0 or 1 (docs/host_runtime.md,
        "Peer devices")."""
        state = {"device": 0, "enabled": set()}
        return self.run_steps(c, self.peer_step, state)

    def peer_step(self, step, state):
        api, count = step["api"], self.m.device_count
        if api == "aclrtSetCurrentContext":
            state["device"] = step["device"]
            return OK, None
        if api == "aclrtDevicePeerAccessStatus":
            if step["null_out"]:
                raise Rejected(INVALID_PARAM)
            if not all(0 <= d < MAX_RUNTIME_DEVICES for d in (step["device"], step["peer"])):
                raise Rejected(RT_PARAM_INVALID)
            mutual = {(step["device"], step["peer"]), (step["peer"], step["device"])} <= state["enabled"]
            return OK, int(step["device"] != step["peer"] and mutual)
        if api == "aclrtDeviceCanAccessPeer":
            device, peer = step["device"], step["peer"]
            if device == peer:
                raise Rejected(INVALID_PARAM)
            if not 0 <= peer < count:
                raise Rejected(RT_INVALID_DEVICEID)
            if not 0 <= device < MAX_RUNTIME_DEVICES or step["null_out"]:
                raise Rejected(RT_PARAM_INVALID)
            if not self.m.profile["peer_access"]:
                raise Rejected(RT_FEATURE_NOT_SUPPORT)
            if not 0 <= device < count:
                raise Rejected(RT_INVALID_DEVICEID)
            return OK, 1
        if api == "aclrtDeviceEnablePeerAccess" and step["flags"]:
            raise Rejected(FEATURE_UNSUPPORTED)
        peer = step["peer"]
        if peer == state["device"]:
            raise Rejected(INVALID_PARAM)
        if not 0 <= peer < count:
            raise Rejected(RT_INVALID_DEVICEID)
        if not self.m.profile["peer_access"]:
            raise Rejected(RT_FEATURE_NOT_SUPPORT)
        change = state["enabled"].add if api == "aclrtDeviceEnablePeerAccess" else state["enabled"].discard
        change((state["device"], peer))
        return OK, None

    def predict(self, c):
        """(code, copies, failIndex or None); for a sequence (SEQUENCES), code is each step's expectation."""
        if c["api"] in SEQUENCES:
            return getattr(self, SEQUENCES[c["api"]])(c), [], None
        if c["api"] == "descriptor":
            return (*self.desc(c), None)
        try:
            if c["api"].startswith("aclrtMemset"):
                return (*self.memset(c), None)
            if c["api"].startswith("aclrtMemcpyBatch"):
                return self.batch(c)
            if c["api"].startswith("aclrtMemcpy2d"):
                return (*self.memcpy2d(c), None)
            return (*self.memcpy(c), None)
        except Rejected as e:
            return e.code, [], None


def touched(copy):
    """(region, first, end) of every byte range a copy reads or writes."""
    if copy[0] == "1d":
        _, dst, src, n = copy
        return [(dst[0], dst[1], dst[1] + n), (src[0], src[1], src[1] + n)]
    if copy[0] == "set":
        _, dst, _, n = copy
        return [(dst[0], dst[1], dst[1] + n)]
    if copy[0] == "desc":
        return [(copy[1][0], copy[1][1], copy[1][1] + 32)]
    _, dst, dpitch, src, spitch, width, height = copy
    return [(dst[0], dst[1], dst[1] + (height - 1) * dpitch + width),
            (src[0], src[1], src[1] + (height - 1) * spitch + width)]


def apply(copies, mem):
    """The bytes after the copies, in order; 1D copies as by memmove; 2D rows in order, each as by
    memmove (what the runtime documents for overlapping extents; dense rows are a 1D copy)."""
    for copy in copies:
        if copy[0] == "1d":
            _, (dreg, doff), (sreg, soff), n = copy
            mem[dreg][doff:doff + n] = mem[sreg][soff:soff + n].copy()
        elif copy[0] == "set":
            _, (dreg, doff), value, n = copy
            mem[dreg][doff:doff + n] = value
        elif copy[0] == "desc":
            _, (dreg, doff), src, dst, n = copy
            fields = struct.pack("<IIQQII", DESC_MAGIC, DESC_VERSION, src, dst, n % acl_limits.DESC_COUNT_WRAP, 0)
            mem[dreg][doff:doff + len(fields)] = list(fields)
        else:
            _, (dreg, doff), dpitch, (sreg, soff), spitch, width, height = copy
            for r in range(height):
                row = mem[sreg][soff + r * spitch:soff + r * spitch + width].copy()
                mem[dreg][doff + r * dpitch:doff + r * dpitch + width] = row


# The sequence cases: their "api" and the Model method that predicts them.
SEQUENCES = {"events": "events", "contexts": "contexts", "peer access": "peers"}


# --- case generation -------------------------------------------------------------------------------

HUGE = (2**63, SIZE_MAX, SIZE_MAX - 1023, 2**32 + 7, 2**62 + 5, 2**64 - 2**20)
BAD_KINDS = (6, 7, 8, -1, 2**31 - 1, 100)
API_WEIGHTS = {"aclrtMemcpy": 3, "aclrtMemcpyAsync": 3, "aclrtMemcpyAsyncWithCondition": 1, "aclrtMemcpy2d": 2,
               "aclrtMemcpy2dAsync": 2, "aclrtMemcpyBatchAsync": 2, "aclrtMemcpyBatch": 1,
               "aclrtMemcpyBatchAsyncV2": 0.5, "aclrtMemcpyBatchV2": 0.5, "aclrtMemset": 1,
               "aclrtMemsetAsync": 1, "descriptor": 1.5, "events": 1.5, "contexts": 1.5, "peer access": 1}
# aclrtCreateEvent (None), flags CANN accepts, then flags it refuses.
EVENT_FLAGS = ((None,) * 6 + (0x1, 0x2, 0x4, 0x8, 0xF, 0x3, 0xE, EVENT_DEVICE_USE_ONLY, EVENT_EXTERNAL) * 2
               + (0, 0x40, 0x80, 0x30, 0x11, 0x21, 0x3F, 2**31, 2**32 - 1))


def pick_ptr(rng, memory):
    if rng.random() < 0.04:
        return None
    region = memory.regions[rng.choice(memory.names)]
    return (region.name, rng.randrange(region.size))  # interior pointers only: outside is not ours


def pick_size(rng, small=64, large=1200):
    r = rng.random()
    if r < 0.07:
        return 0
    if r < 0.13:
        return rng.choice(HUGE)
    return rng.randrange(1, small) if r < 0.55 else rng.randrange(1, large)


def pick_dest_max(rng, count):
    r = rng.random()
    if r < 0.06:
        return 0
    if r < 0.14 and count > 0:
        return rng.randrange(count)
    if r < 0.2:
        return SIZE_MAX
    return min(SIZE_MAX, count + rng.randrange(64))


def pick_kind(rng, valid=(H2H, H2D, D2H, D2D, DEFAULT, BUF_H2D)):
    return rng.choice(BAD_KINDS) if rng.random() < 0.08 else rng.choice(valid)


def pick_stream(rng):
    return rng.choices(["s0", "null", "s1", "dead", "junk"], [60, 20, 8, 6, 6])[0]


def real_loc(memory, ptr):
    if ptr is None:
        return (LOC_HOST, 0)
    return (LOC_DEVICE, 0) if memory.regions[ptr[0]].loc == "device" else (LOC_HOST, 0)


def gen_batch(rng, memory, api):
    count = 0 if rng.random() < 0.03 else rng.randrange(1, 7)
    items = []
    for _ in range(count):
        # Mostly host <-> device pairs, so that whole batches succeed often enough.
        if rng.random() < 0.75:
            dev = ("dev", "dev2", "fw")
            host = ("pin", "page")
            a, b = rng.choice(dev), rng.choice(host)
            src_name, dst_name = (a, b) if rng.random() < 0.5 else (b, a)
            src = (src_name, rng.randrange(memory.regions[src_name].size))
            dst = (dst_name, rng.randrange(memory.regions[dst_name].size))
        else:
            src, dst = pick_ptr(rng, memory), pick_ptr(rng, memory)
        size = 0 if rng.random() < 0.05 else pick_size(rng, 32, 200)
        items.append({"src": src, "dst": dst, "size": size, "dest_max": pick_dest_max(rng, size)})
    num_attrs = max(1, count) if count else 1
    if rng.random() < 0.5 and count > 1:
        num_attrs = rng.randrange(1, count + 1)
    if rng.random() < 0.05:
        num_attrs = rng.choice([0, count + 1])
    starts = sorted(rng.sample(range(1, count), max(0, min(num_attrs - 1, count - 1)))) if count > 1 else []
    indexes = [0] + starts
    while len(indexes) < max(num_attrs, 1):
        indexes.append(count + len(indexes))
    if rng.random() < 0.06:
        j = rng.randrange(len(indexes))
        indexes[j] = rng.choice([indexes[j] + 1, 0, count, SIZE_MAX])
    attrs = []
    for k in range(max(num_attrs, 1)):
        first = indexes[k] if indexes[k] < count else 0
        item = items[first] if items else {"src": None, "dst": None}
        attr = {"dst": real_loc(memory, item["dst"]), "src": real_loc(memory, item["src"]), "rsv": False}
        if rng.random() < 0.1:
            attr[rng.choice(["dst", "src"])] = (rng.choice([0, 1, 2, 3, 4, 7]), rng.choice([0, 0, 1]))
        if rng.random() < 0.1:
            side = rng.choice(["dst", "src"])
            if attr[side][0] == LOC_HOST:
                attr[side] = (LOC_HOST_NUMA, attr[side][1])
        attr["rsv"] = rng.random() < 0.03
        attrs.append(attr)
    null = None
    if rng.random() < 0.05:
        null = rng.choice(["sizes", "dsts", "srcs", "destMaxs", "attrs", "attrsIndexes"]
                          + (["failIndex"] if api in ("aclrtMemcpyBatch", "aclrtMemcpyBatchAsync") else []))
    return {"items": items, "attrs": attrs, "indexes": indexes, "num_attrs": num_attrs, "count": count,
            "null_array": null, "stream": pick_stream(rng)}


def pick_desc(rng, memory):
    """Mostly a 64-byte aligned address in aclrtMalloc memory, sometimes too near its end."""
    r = rng.random()
    if r < 0.75:
        region = memory.regions[rng.choice(["dev", "dev2"])]
        return (region.name, 64 * rng.randrange((region.size + 63) // 64))
    return pick_ptr(rng, memory)


def pick_device_ptr(rng, memory):
    if rng.random() < 0.85:
        region = memory.regions[rng.choice(["dev", "dev2", "fw"])]
        return (region.name, rng.randrange(region.size))
    return pick_ptr(rng, memory)


def gen_descriptor(rng, memory):
    desc = pick_desc(rng, memory)
    count = pick_size(rng, 64, 600)
    if rng.random() < 0.03:
        count = rng.choice([DESC_MAX_COUNT, DESC_MAX_COUNT + 1])
    return {"desc": desc, "set_kind": pick_kind(rng, (INNER_D2D,) * 6 + (D2D, H2D, 7)),
            "src": pick_device_ptr(rng, memory), "dst": pick_device_ptr(rng, memory), "count": count,
            "config": rng.random() < 0.04, "desc2": desc if rng.random() < 0.85 else pick_desc(rng, memory),
            "kind": pick_kind(rng, (INNER_D2D,) * 6 + (D2D, 7)), "stream": pick_stream(rng)}


def gen_events(rng):
    flag = rng.choice(EVENT_FLAGS)
    steps = [{"api": "aclrtCreateEvent" if flag is None else "aclrtCreateEventWithFlag", "flag": flag,
              "null_out": rng.random() < 0.05}]
    for _ in range(rng.randrange(1, 7)):
        api = rng.choice(["aclrtRecordEvent"] * 3 + ["aclrtQueryEventStatus"] * 2 + ["aclrtSynchronizeEvent"] * 2
                         + ["aclrtDestroyEvent"])
        step = {"api": api, "event": rng.choices(["new", "null", "dead", "junk", "stream"], [84, 4, 4, 4, 4])[0]}
        if api == "aclrtRecordEvent":
            step["stream"] = pick_stream(rng)
        if api == "aclrtQueryEventStatus":
            step["null_status"] = rng.random() < 0.05
        steps.append(step)
    return {"steps": steps}


def gen_contexts(rng, memory):
    count = memory.device_count
    steps = [{"api": "aclrtCreateContext", "device": rng.choice([0, 1, count - 1] * 4 + [count, -1, 2**31 - 1]),
              "null_out": rng.random() < 0.05}]
    for _ in range(rng.randrange(1, 7)):
        api = rng.choice(["aclrtSetCurrentContext"] * 3 + ["aclrtDestroyContext"] * 3 + ["aclrtGetCurrentContext",
                          "aclrtGetDevice", "aclrtSynchronizeDevice"] + ["aclrtCreateStream", "aclrtDestroyStream"] * 2)
        step = {"api": api}
        if api in ("aclrtSetCurrentContext", "aclrtDestroyContext"):
            step["target"] = rng.choices(["new", "primary0", "primary1", "null", "junk", "dead", "stream"],
                                         [50, 12, 10, 6, 6, 10, 6])[0]
        steps.append(step)
    return {"steps": steps}


def gen_peers(rng, memory):
    count = memory.device_count
    ids = [0, 1, 2, count - 1, count, MAX_RUNTIME_DEVICES - 1, MAX_RUNTIME_DEVICES, -1, -2**31, 2**31 - 1]
    weights = [20, 20, 8, 4, 4, 2, 2, 3, 1, 1]
    pick = lambda: rng.choices(ids, weights)[0]
    steps = []
    for _ in range(rng.randrange(2, 8)):
        api = rng.choice(["aclrtDeviceCanAccessPeer", "aclrtDeviceEnablePeerAccess", "aclrtDeviceEnablePeerAccess",
                          "aclrtDeviceDisablePeerAccess", "aclrtDevicePeerAccessStatus",
                          "aclrtDevicePeerAccessStatus", "aclrtSetCurrentContext"])
        if api == "aclrtSetCurrentContext":
            steps.append({"api": api, "device": rng.choice([0, 1])})
        elif api in ("aclrtDeviceCanAccessPeer", "aclrtDevicePeerAccessStatus"):
            steps.append({"api": api, "device": pick(), "peer": pick(), "null_out": rng.random() < 0.05})
        else:
            steps.append({"api": api, "peer": pick(), "flags": rng.choice([0] * 6 + [1, 2**31])})
    return {"steps": steps}


def gen_case(rng, memory):
    api = rng.choices(list(API_WEIGHTS), list(API_WEIGHTS.values()))[0]
    case = {"api": api}
    if api == "events":
        case.update(gen_events(rng))
    elif api == "contexts":
        case.update(gen_contexts(rng, memory))
    elif api == "peer access":
        case.update(gen_peers(rng, memory))
    elif api == "descriptor":
        case.update(gen_descriptor(rng, memory))
    elif api.startswith("aclrtMemset"):
        count = pick_size(rng)
        value = rng.choice([rng.randrange(256), rng.randrange(-2**31, 2**31)])
        case.update(dst=pick_ptr(rng, memory), dest_max=pick_dest_max(rng, count), count=count, value=value,
                    stream=pick_stream(rng))
    elif api.startswith("aclrtMemcpyBatch"):
        case.update(gen_batch(rng, memory, api))
    elif api.startswith("aclrtMemcpy2d"):
        width = rng.choice([0, rng.randrange(1, 9), rng.randrange(1, 80), MAX_2D_WIDTH + 1, 2**40])
        height = rng.choice([0, rng.randrange(1, 6), rng.randrange(1, 24), MAX_2D_HEIGHT + 1])

        def pitch():
            r = rng.random()
            if r < 0.05:
                return 0
            if r < 0.12:
                return rng.choice(HUGE)
            if r < 0.2 and width > 1:
                return rng.randrange(1, width)
            return width + rng.choice([0, 0, rng.randrange(1, 40)])

        case.update(dst=pick_ptr(rng, memory), src=pick_ptr(rng, memory), width=width, height=height,
                    spitch=pitch(), dpitch=pitch(), kind=pick_kind(rng, (H2H, H2D, D2H, D2D, DEFAULT)),
                    stream=pick_stream(rng))
    else:
        count = pick_size(rng)
        case.update(dst=pick_ptr(rng, memory), src=pick_ptr(rng, memory), count=count,
                    dest_max=pick_dest_max(rng, count), kind=pick_kind(rng), stream=pick_stream(rng))
    return case


def safe(memory, copies):
    """The predicted copies stay inside the fuzzer's own memory (pageable memory has no extent check)."""
    return all(first >= 0 and end <= memory.regions[name].size
               for copy in copies for name, first, end in touched(copy))


def make_case(seed, index, memory, model):
    rng = random.Random(seed * 1_000_003 + index)
    for _ in range(100):
        case = gen_case(rng, memory)
        code, copies, fail_index = model.predict(case)
        if safe(memory, copies):
            return rng, case, (code, copies, fail_index)
    raise RuntimeError(f"case {index}: no safe case in 100 draws")


# --- running a case --------------------------------------------------------------------------------

def run_step(memory, step, made):
    """One call of a sequence case -> (code, value or None). made: the handles the case created."""
    call, api = memory.call, step["api"]
    out = ctypes.c_void_p()
    value = ctypes.c_int32(-1)
    if api.startswith("aclrtCreateEvent"):
        target = None if step["null_out"] else ctypes.byref(out)
        code = (call(api, target) if api == "aclrtCreateEvent" else call(api, target, step["flag"]))
        made["event"] = out.value if code == OK else None
        return code, None
    if api in ("aclrtRecordEvent", "aclrtQueryEventStatus", "aclrtSynchronizeEvent", "aclrtDestroyEvent"):
        event = {"new": made["event"], "null": None, "dead": memory.dead_event, "junk": JUNK_HANDLE,
                 "stream": memory.stream}[step["event"]]
        if api == "aclrtRecordEvent":
            return call(api, event, memory.streams[step["stream"]]), None
        if api == "aclrtQueryEventStatus":
            code = call(api, event, None if step["null_status"] else ctypes.byref(value))
            return code, (value.value if code == OK else None)
        return call(api, event), None
    if api == "aclrtCreateContext":
        code = call(api, None if step["null_out"] else ctypes.byref(out), step["device"])
        made["context"] = out.value if code == OK else None
        return code, None
    if api == "aclrtSetCurrentContext" and "device" in step:  # a peer-access case moves to another device
        return call(api, memory.primary[step["device"]]), None
    if api in ("aclrtSetCurrentContext", "aclrtDestroyContext"):
        context = {"new": made["context"], "primary0": memory.primary[0], "primary1": memory.primary[1], "null": None,
                   "junk": JUNK_HANDLE, "dead": memory.dead_context, "stream": memory.stream}[step["target"]]
        return call(api, context), None
    if api == "aclrtGetCurrentContext":
        code = call(api, ctypes.byref(out))
        names = {memory.primary[0]: "primary0", memory.primary[1]: "primary1", made["context"]: "new"}
        return code, (names.get(out.value, hex(out.value or 0)) if code == OK else None)
    if api == "aclrtGetDevice":
        code = call(api, ctypes.byref(value))
        return code, (value.value if code == OK else None)
    if api == "aclrtSynchronizeDevice":
        return call(api), None
    if api == "aclrtCreateStream":
        code = call(api, ctypes.byref(out))
        made["stream"] = out.value if code == OK else made.get("stream")
        if code == OK:
            context = ctypes.c_void_p()
            call("aclrtGetCurrentContext", ctypes.byref(context))
            made["streams"].append((out.value, context.value))  # destroyed with that context current
        return code, None
    if api == "aclrtDestroyStream":
        return call(api, made.get("stream")), None
    if api in ("aclrtDeviceCanAccessPeer", "aclrtDevicePeerAccessStatus"):
        target = None if step["null_out"] else ctypes.byref(value)
        code = (call(api, target, step["device"], step["peer"]) if api == "aclrtDeviceCanAccessPeer"
                else call(api, step["device"], step["peer"], target))
        return code, (value.value if code == OK else None)
    if api == "aclrtDeviceEnablePeerAccess":
        made["peer"] = True
        return call(api, step["peer"], step["flags"]), None
    made["peer"] = True
    return call(api, step["peer"]), None  # aclrtDeviceDisablePeerAccess


def run_sequence(memory, case):
    """Makes the calls of a sequence case; returns each one's (code, value). Whatever happened, the runtime
    is left as every case finds it: what the case made is released, peer access is off, and the primary
    context of device 0 is current."""
    made = {"event": None, "context": None, "streams": [], "peer": False}
    try:
        return tuple(run_step(memory, step, made) for step in case["steps"])
    finally:
        call = memory.call
        if made["event"]:
            call("aclrtDestroyEvent", made["event"])
        for stream, context in made["streams"]:
            if call("aclrtSetCurrentContext", context) == OK:  # else the context is gone, and its streams
                call("aclrtDestroyStream", stream)
        if made["context"]:
            call("aclrtDestroyContext", made["context"])
        if made["peer"]:
            for device in (0, 1):
                assert call("aclrtSetCurrentContext", memory.primary[device]) == OK
                for peer in range(memory.device_count):
                    if peer != device:
                        assert call("aclrtDeviceDisablePeerAccess", peer) in (OK, RT_FEATURE_NOT_SUPPORT)
        assert call("aclrtSetCurrentContext", memory.primary[0]) == OK


def step_matches(want, got):
    """A step's (code, value) against the model's (code, value or set of values or None)."""
    if want[0] != got[0] or want[1] is None:
        return want[0] == got[0]
    return got[1] in want[1] if isinstance(want[1], frozenset) else got[1] == want[1]


def run_call(memory, case):
    """Calls the C function; returns (code, failIndex or None)."""
    lib = memory.lib
    addr = memory.address
    api = case["api"]
    if api in SEQUENCES:
        return run_sequence(memory, case), None
    stream = memory.streams.get(case.get("stream"))
    if api.startswith("aclrtMemcpyBatch"):
        n = case["count"]
        items = case["items"]
        ptr_array = ctypes.c_void_p * max(n, 1)
        size_array = ctypes.c_size_t * max(n, 1)
        dsts = ptr_array(*[addr(it["dst"]) for it in items])
        srcs = ptr_array(*[addr(it["src"]) for it in items])
        sizes = size_array(*[it["size"] for it in items])
        dest_maxs = size_array(*[it["dest_max"] for it in items])
        attr_count = max(len(case["attrs"]), 1)
        attrs = (lib.aclrtMemcpyBatchAttr * attr_count)()
        for k, a in enumerate(case["attrs"]):
            attrs[k].dstLoc.type, attrs[k].dstLoc.id = a["dst"]
            attrs[k].srcLoc.type, attrs[k].srcLoc.id = a["src"]
            attrs[k].rsv[7] = 1 if a["rsv"] else 0
        indexes = (ctypes.c_size_t * max(len(case["indexes"]), 1))(*case["indexes"])
        fail_index = ctypes.c_size_t(FAIL_INDEX_SENTINEL)
        arrays = {"dsts": dsts, "destMaxs": dest_maxs, "srcs": srcs, "sizes": sizes, "attrs": attrs,
                  "attrsIndexes": indexes, "failIndex": ctypes.pointer(fail_index)}
        if case["null_array"]:
            arrays[case["null_array"]] = None
        args = [arrays["dsts"], arrays["destMaxs"], arrays["srcs"], arrays["sizes"], n, arrays["attrs"],
                arrays["attrsIndexes"], case["num_attrs"]]
        v2 = api.endswith("V2")
        if not v2:
            args.append(arrays["failIndex"])
        if "Async" in api:
            args.append(stream)
        code = memory.call(api, *args)
        return code, (None if v2 else fail_index.value)
    if api == "descriptor":
        set_code = memory.call("aclrtSetMemcpyDesc", addr(case["desc"]), ctypes.c_int(case["set_kind"]),
                               addr(case["src"]), addr(case["dst"]), case["count"],
                               0x1000 if case["config"] else None)
        copy_code = memory.call("aclrtMemcpyAsyncWithDesc", addr(case["desc2"]), ctypes.c_int(case["kind"]), stream)
        sync_code = memory.call("aclrtSynchronizeStream", stream) if copy_code == OK else OK
        return (set_code, copy_code, sync_code), None
    if api.startswith("aclrtMemset"):
        args = [addr(case["dst"]), case["dest_max"], case["value"], case["count"]]
        if api == "aclrtMemsetAsync":
            args.append(stream)
        return memory.call(api, *args), None
    dst, src = addr(case["dst"]), addr(case["src"])
    kind = ctypes.c_int(case["kind"])
    if api.startswith("aclrtMemcpy2d"):
        args = [dst, case["dpitch"], src, case["spitch"], case["width"], case["height"], kind]
    else:
        args = [dst, case["dest_max"], src, case["count"], kind]
    if api != "aclrtMemcpy" and api != "aclrtMemcpy2d":
        args.append(stream)
    return memory.call(api, *args), None


def overlapping_batch(copies):
    ranges = [r for copy in copies for r in touched(copy)]
    dsts = [touched(copy)[0] for copy in copies]
    for i, (name, first, end) in enumerate(dsts):
        for j, (other, ofirst, oend) in enumerate(ranges):
            if j // 2 != i and name == other and first < oend and ofirst < end:
                return True
    return False


def describe(case):
    return json.dumps(case, default=str)


def run_case(memory, model, seed, index, tally=None):
    """None when the runtime matched the model, else a description of the mismatch."""
    rng, case, (code, copies, fail_index) = make_case(seed, index, memory, model)
    sequence = case["api"] in SEQUENCES
    if sequence and not isinstance(code, tuple):  # a model that predicts one code for the whole sequence
        code = tuple((code, None) for _ in case["steps"])
    if tally is not None:
        if sequence:
            keys = [f"{step['api']} {want[0]}" for step, want in zip(case["steps"], code)]
        else:
            keys = [f"{case['api']} {'/'.join(map(str, code)) if isinstance(code, tuple) else code}"]
        for key in keys:
            tally[key] = tally.get(key, 0) + 1
    memory.fill(rng)
    before = memory.snapshot()
    got, got_fail = run_call(memory, case)
    memory.sync_all()
    memory.download()
    problems = []
    if sequence:
        for i, (step, want, have) in enumerate(zip(case["steps"], code, got)):
            if not step_matches(want, have):
                problems.append(f"step {i} {step['api']}: (code, value) {have}, model {want}")
                break  # the later steps follow from this one
    elif got != code:
        problems.append(f"code {got}, model {code}")
    if fail_index is not None and got_fail != fail_index:
        problems.append(f"failIndex {got_fail}, model {fail_index}")
    expected = {name: array.copy() for name, array in before.items()}
    apply(copies if got == code and not problems else [], expected)
    skip = {}
    if case["api"].startswith("aclrtMemcpyBatch") and overlapping_batch(copies):
        for copy in copies:  # items of a batch run in no order: only bytes no item writes are compared
            name, first, end = touched(copy)[0]
            skip.setdefault(name, []).append((first, end))
    for name in memory.names:
        after = memory.regions[name].array
        want = expected[name]
        differ = after != want
        for first, end in skip.get(name, []):
            differ[first:end] = False
        if differ.any():
            where = int(differ.nonzero()[0][0])
            problems.append(f"region {name} differs from the model at byte {where} "
                            f"({int(differ.sum())} bytes; {'error: must be untouched' if code else 'copy'})")
    if problems:
        return f"seed {seed} case {index}: {'; '.join(problems)}\n    {describe(case)}"
    return None


def worker(seed, first, count, verbose):
    memory = Memory()
    model = Model(memory)
    findings = 0
    tally = {}
    abort_at = os.environ.get("MS_MEMCOPY_FUZZ_ABORT_AT")  # the driver's own test: a worker that crashes
    for index in range(first, first + count):
        if abort_at is not None and index == int(abort_at):
            os.abort()
        problem = run_case(memory, model, seed, index, tally)
        if verbose:
            print(f"case {index}: {describe(make_case(seed, index, memory, model)[1])}", flush=True)
        if problem is not None:
            findings += 1
            print(json.dumps({"finding": problem}), flush=True)
    print(json.dumps({"done": count, "findings": findings, "tally": tally}), flush=True)


# --- the driver ------------------------------------------------------------------------------------

def run_process(seed, first, count, verbose=False, timeout=600, tally=None):
    """Runs cases [first, first + count) in a fresh interpreter; returns the list of findings.
    tally (a dict): adds the number of cases per "api expected-code"."""
    env = _runtime_env.without_machine(os.environ)
    loaded = sys.modules.get("ms_memcopy")
    if loaded is not None:  # the worker tests the same ms_memcopy as this process
        parent = os.path.dirname(os.path.dirname(os.path.abspath(loaded.__file__)))
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [parent, env.get("PYTHONPATH")]))
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--seed", str(seed), "--first", str(first),
           "--cases", str(count)] + (["--verbose"] if verbose else [])
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return [f"seed {seed} cases {first}..{first + count - 1}: timed out after {timeout} s (a hang)"]
    findings, done = [], False
    for line in result.stdout.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            if "finding" in record:
                findings.append(record["finding"])
            done = done or "done" in record
            for key, n in record.get("tally", {}).items():
                if tally is not None:
                    tally[key] = tally.get(key, 0) + n
        elif verbose:
            print(line)
    if result.returncode != 0 or not done:
        findings.append(f"seed {seed} cases {first}..{first + count - 1}: the worker died (exit status "
                        f"{result.returncode}); replay them one by one with --first/--cases 1\n"
                        f"{result.stderr[-2000:]}")
    return findings


def fuzz(cases, seed=0, per_process=CASES_PER_PROCESS, budget_s=None, verbose=False, tally=None):
    """Runs `cases` cases (fewer when budget_s runs out first); returns (cases run, findings)."""
    start = time.monotonic()
    findings, ran = [], 0
    while ran < cases:
        if budget_s is not None and ran and time.monotonic() - start > budget_s:
            break
        count = min(per_process, cases - ran)
        findings += run_process(seed, ran, count, verbose, tally=tally)
        ran += count
    return ran, findings


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--first", type=int, default=0, help="with --worker or a replay: the first case")
    parser.add_argument("--per-process", type=int, default=CASES_PER_PROCESS)
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--stats", action="store_true", help="print the cases per call and expected code")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.seed, args.first, args.cases, args.verbose)
        return 0
    if args.first:
        findings = run_process(args.seed, args.first, args.cases, args.verbose)
        ran = args.cases
    else:
        start = time.monotonic()
        tally = {}
        ran, findings = fuzz(args.cases, args.seed, args.per_process, verbose=args.verbose, tally=tally)
        print(f"{ran} cases in {time.monotonic() - start:.1f} s")
        if args.stats:
            for key in sorted(tally):
                print(f"  {key}: {tally[key]}")
    for finding in findings:
        print(finding)
    print(f"{len(findings)} finding(s)")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
