"""Framework registrations (aclhostRegisterDeviceMemory) of one device may overlap in any way and be
registered and released in any order and from several threads: the registry is checked against a model
(the union of the live ranges) after every step of random sequences."""
import random
import threading

import numpy as np
import pytest

from ms_memcopy import runtime as rt
from ms_memcopy.acl_constants import (
    ACL_MEM_LOCATION_TYPE_DEVICE as DEVICE,
    ACL_MEM_LOCATION_TYPE_UNREGISTERED as UNREGISTERED,
    ACL_MEMCPY_DEVICE_TO_HOST as D2H,
)

from _acl_support import code

RT_PARAM_INVALID = 107000
SPAN = 4096


class RegistrationModel:
    """Live registrations by base (same base: counted, extent the largest) and the runs of overlapping
    ranges the runtime reports as one allocation."""

    def __init__(self):
        self.live = {}  # base offset -> [count, size]

    def register(self, base, size):
        count, old = self.live.get(base, (0, 0))
        self.live[base] = [count + 1, max(old, size)]

    def unregister(self, base):
        self.live[base][0] -= 1
        if self.live[base][0] == 0:
            del self.live[base]

    def runs(self):
        runs = []
        for base in sorted(self.live):
            end = base + self.live[base][1]
            if runs and base < runs[-1][1]:
                runs[-1][1] = max(runs[-1][1], end)
            else:
                runs.append([base, end])
        return runs

    def location(self, offset):
        for begin, end in self.runs():
            if begin <= offset < end:
                return DEVICE, begin, end - begin
        return UNREGISTERED, 0, 0


def check_against(model, tensor, rng):
    origin = tensor.ctypes.data
    for offset in [rng.randrange(SPAN) for _ in range(24)] + [b for b in model.live]:
        loc = rt.get_mem_location(origin + offset)
        kind, begin, size = model.location(offset)
        got = (loc.type, loc.base - origin if loc.base else 0, loc.size)
        assert got == (kind, begin, size), f"offset {offset}: runtime {got}, model {(kind, begin, size)}"


@pytest.mark.parametrize("seed", range(6))
def test_random_register_unregister_orders_match_the_model(acl_device, seed):
    rng = random.Random(seed)
    tensor = np.random.default_rng(seed).integers(0, 256, SPAN, dtype=np.uint8)
    origin = tensor.ctypes.data
    model = RegistrationModel()
    held = []  # bases in registration order, one per reference
    try:
        for _ in range(150):
            if held and rng.random() < 0.45:
                base = held.pop(rng.randrange(len(held)))
                rt.unregister_device_memory(origin + base)
                model.unregister(base)
            else:
                base = rng.randrange(0, SPAN - 1, 16)
                size = rng.randrange(1, SPAN - base + 1)
                rt.register_device_memory(origin + base, size)
                model.register(base, size)
                held.append(base)
            check_against(model, tensor, rng)
            # A copy out of every run, whole, succeeds with the right bytes; one byte more is refused.
            for begin, end in model.runs():
                out = np.zeros(end - begin, np.uint8)
                rt.memcpy(out, out.nbytes, origin + begin, end - begin, D2H)
                assert (out == tensor[begin:end]).all()
                big = np.zeros(end - begin + 1, np.uint8)
                assert code(rt.memcpy, big, big.nbytes, origin + begin, end - begin + 1, D2H) == RT_PARAM_INVALID
    finally:
        for base in held:
            rt.unregister_device_memory(origin + base)
    assert rt.get_mem_location(tensor).type == UNREGISTERED


def test_containing_range_is_accepted_after_the_contained_one(acl_device):
    buf = np.zeros(1024, np.uint8)
    rt.register_device_memory(buf[256:], 256)
    rt.register_device_memory(buf, 1024)  # once refused: it contains a registered range
    rt.unregister_device_memory(buf)
    loc = rt.get_mem_location(buf[300:])
    assert (loc.type, loc.base, loc.size) == (DEVICE, buf[256:].ctypes.data, 256)
    rt.unregister_device_memory(buf[256:])
    assert rt.get_mem_location(buf[300:]).type == UNREGISTERED


def test_two_threads_register_overlapping_ranges_at_once(acl_device):
    tensor = np.arange(8192, dtype=np.uint32).view(np.uint8)[:8192].copy()
    origin = tensor.ctypes.data
    errors = []
    barrier = threading.Barrier(2)

    def worker(offset, size):
        try:
            rt.set_device(0)
            out = np.zeros(size, np.uint8)
            barrier.wait()
            for _ in range(300):
                rt.register_device_memory(origin + offset, size)
                loc = rt.get_mem_location(origin + offset + size - 1)
                assert loc.type == DEVICE and loc.base <= origin + offset
                assert origin + offset + size <= loc.base + loc.size
                rt.memcpy(out, size, origin + offset, size, D2H)
                assert (out == tensor[offset:offset + size]).all()
                rt.unregister_device_memory(origin + offset)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=worker, args=args) for args in ((0, 6000), (2000, 6000))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert rt.get_mem_location(origin + 4000).type == UNREGISTERED
