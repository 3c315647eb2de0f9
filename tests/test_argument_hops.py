"""The hops of an argument from the public call to the ACL call (docs/ascend_route.md, "The hops of an
argument, and where it is checked"): the tables there are checked against the code, and the Python
hops of an eager call against a trace of the frames that receive the argument (issue 23, item 3).

A frame receives the argument when one of its parameters is the object (or a tuple holding it). The
eager calls below are traced with sys.setprofile; the C++ rows of the tables are checked to name
functions of the files they name, and no path may have more than 8 hops.
"""
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import mindspore as ms
from mindspore import Parameter

from ms_memcopy import HostBuffer
from ms_memcopy._framework import sync_launches
from ms_memcopy.ops import MemcpyWithCondition, SwapBlocks

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "ascend_route.md"
SECTION = "## The hops of an argument, and where it is checked"
MAX_HOPS = 8


def hop_tables():
    """The section's tables, each a list of rows, each row the list of `file:function` it names."""
    text = DOC.read_text()
    section = text[text.index(SECTION):]
    section = section[:section.index("\n## ", len(SECTION))]
    tables, rows = [], None
    for line in section.splitlines():
        if line.startswith("| hop |"):
            rows = []
            tables.append(rows)
        elif rows is not None and re.match(r"\| \d+ \|", line):
            cell = line.split("|")[2]
            rows.append(re.findall(r"`([^`:]+:[^`]+)`", cell))
    return tables


def python_hops(table):
    """The Python rows of a table as the trace names them ("ms_memcopy/ops/x.py:Class.method")."""
    return [hop for row in table for hop in row if hop.split(":")[0].endswith(".py")]


def receives(frame, obj):
    """"file:qualified name" of frame, a frame of ms_memcopy a parameter of which is obj (or a tuple
    holding it), else None."""
    code = frame.f_code
    if not code.co_filename.startswith(str(ROOT / "ms_memcopy")):
        return None
    count = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 0x04)
    for name in code.co_varnames[:count]:
        value = frame.f_locals.get(name)
        if value is obj or (isinstance(value, tuple) and any(v is obj for v in value)):
            return f"{Path(code.co_filename).relative_to(ROOT)}:{code.co_qualname}"
    return None


def receiving_frames(call, obj):
    """The frames that receive obj (:func:`receives`), in the order they are called, while call() runs."""
    seen = []

    def profile(frame, event, arg):
        name = receives(frame, obj) if event == "call" else None
        if name is not None:
            seen.append(name)

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return seen


@pytest.fixture
def pynative():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    yield
    sync_launches()


@pytest.fixture
def swap(pynative):
    buf = HostBuffer(2 * 4 * 32)
    caches = [Parameter(ms.Tensor(np.arange(32, dtype=np.float32).reshape(4, 8) + 100 * l), name=f"hops{l}")
              for l in range(2)]
    op = SwapBlocks("d2h", buf, num_caches=2)
    op(*caches, ms.Tensor(np.array([[0, 0]], np.int64)))  # the primitive's KernelInstance exists from here
    yield op, caches, buf
    sync_launches()
    buf.close()


def test_the_section_has_the_three_paths_within_the_budget():
    tables = hop_tables()
    assert len(tables) == 3  # block_mapping eagerly, block_mapping in a graph, an offset eagerly
    for table in tables:
        assert 0 < len(table) <= MAX_HOPS
        assert all(table)  # every row names its function


def test_every_function_the_section_names_is_in_its_file():
    for table in hop_tables():
        for row in table:
            for hop in row:
                path, function = hop.split(":", 1)
                source = (ROOT / path).read_text()
                name = re.split(r"::|\.", function)[-1]
                assert re.search(rf"\b{re.escape(name)}\b", source), f"{hop}: no {name} in {path}"


@pytest.mark.parametrize("given", ["tensor", "numpy", "list"])
def test_an_eager_block_mapping_takes_the_documented_python_hops(swap, given):
    """A Tensor mapping passes through the documented Python hops only (its dtype, shape and values are
    the kernel's checks); one given on the host is also converted once (_host_mapping)."""
    op, caches, buf = swap
    pairs = [[2, 1], [0, 3]]
    mapping = {"tensor": ms.Tensor(np.array(pairs, np.int64)), "numpy": np.array(pairs, np.int64),
               "list": pairs}[given]
    frames = receiving_frames(lambda: op(*caches, mapping), mapping)
    expected = python_hops(hop_tables()[0])
    if given != "tensor":
        expected = expected[:2] + ["ms_memcopy/ops/blocks.py:_host_mapping"] + expected[2:]
    assert frames == expected
    slots = buf.numpy(np.float32).reshape(2, 4, 8)  # host cache l, slot s
    for l, cache in enumerate(caches):
        np.testing.assert_array_equal(slots[l, [1, 3]], cache.asnumpy()[[2, 0]])


def test_an_eager_offset_takes_the_documented_python_hops_to_the_kernel(pynative):
    """The offset's path: the frames that hold it when the primitive's KernelInstance is called."""
    buf = HostBuffer(64)
    op = MemcpyWithCondition("d2h", host_buffer=buf)
    x = ms.Tensor(np.arange(4, dtype=np.float32))
    offset = ms.Tensor(np.array([16], np.int64))
    op(x, offset)
    kernel, on_the_path = op._kernel, []

    def record():
        frame = sys._getframe(2)
        while frame is not None:
            name = receives(frame, offset)
            if name is not None:
                on_the_path.insert(0, name)
            frame = frame.f_back

    class RecordingKernel:
        """The KernelInstance's two entries, recording the frames that hold the offset when called."""

        def __call__(self, *values):
            record()
            return kernel(*values)

        def try_call(self, *values):
            record()
            return kernel.try_call(*values)

    op._kernel = RecordingKernel()
    try:
        op(x, offset)
    finally:
        op._kernel = kernel
    assert on_the_path == python_hops(hop_tables()[2])
    sync_launches()
    np.testing.assert_array_equal(buf.numpy(np.float32)[4:8], x.asnumpy())
    buf.close()
