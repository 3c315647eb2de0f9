"""The public API's documentation: every public class and function of ms_memcopy, ms_memcopy.ops,
ms_memcopy.nn and ms_memcopy.offload has a MindSpore-style docstring (a one-line summary, then Args, Inputs, Outputs or
Returns, Raises, Supported Platforms, Examples), type hints on its signature, and Examples that
run (PYNATIVE_MODE, CPU) and print what the docstring says."""
import doctest
import inspect
import re

import pytest

import mindspore as ms

import ms_memcopy
import ms_memcopy.nn
import ms_memcopy.offload
import ms_memcopy.ops


def public_objects():
    """(qualified name, object) of every public class and function (modules and values left out)."""
    found = []
    for module in (ms_memcopy, ms_memcopy.ops, ms_memcopy.nn, ms_memcopy.offload):
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                found.append((f"{module.__name__}.{name}", obj))
    return found


PUBLIC = public_objects()
IDS = [name for name, _ in PUBLIC]
PLATFORMS = "Supported Platforms:\n    ``Ascend`` ``CPU``"


def sections(obj):
    """The section titles a docstring must hold, in order."""
    if inspect.isfunction(obj):
        return ["Args:", "Returns:", "Raises:", "Supported Platforms:", "Examples:"]
    if issubclass(obj, BaseException):
        return ["Args:", "Supported Platforms:", "Examples:"]
    if callable(getattr(obj, "construct", None)) or issubclass(obj, ms.ops.Primitive):
        return ["Args:", "Inputs:", "Outputs:", "Raises:", "Supported Platforms:", "Examples:"]
    return ["Args:", "Raises:", "Supported Platforms:", "Examples:"]


def test_the_public_api_is_all_here():
    names = {name.rsplit(".", 1)[1] for name in IDS}
    primitives = set(ms_memcopy.ops.__all__)  # one module per family of configs/ops
    assert {"MemcpyBatch", "Memcpy2D", "MemcpyWithDesc", "MemcpyWithCondition", "SwapBlocks",
            "CopyBlocks"} <= primitives
    assert {"AclError", "HostBuffer", "HostChunks", "get_include", "get_acl_library", "BlockPool", "OutOfBlocks",
            "BlockSlots", "SwapOutBlocks", "SwapInBlocks", "TransferQueue", "TransferPending", "OffloadingHandler",
            "TransferResult", "DeviceBlocksSpec", "HostBlocksSpec"} | primitives == names


@pytest.mark.parametrize("name,obj", PUBLIC, ids=IDS)
def test_docstring_sections(name, obj):
    doc = inspect.getdoc(obj)
    assert doc, f"{name} has no docstring"
    summary, _, rest = doc.partition("\n")
    assert summary.endswith(".") and len(summary) > 20, f"{name}: the first line is not a one-line summary"
    assert rest.startswith("\n") or not rest, f"{name}: the summary is not followed by a blank line"
    titles = [line for line in doc.splitlines() if re.fullmatch(r"[A-Z][A-Za-z ]+:", line)]
    wanted = sections(obj)
    assert [t for t in titles if t in wanted] == wanted, f"{name}: sections {titles}, wanted {wanted} in order"
    assert PLATFORMS in doc, name
    assert ">>> " in doc.split("Examples:")[1] and "print(" in doc.split("Examples:")[1], name


@pytest.mark.parametrize("name,obj", PUBLIC, ids=IDS)
def test_public_signatures_have_type_hints(name, obj):
    function = obj.__init__ if inspect.isclass(obj) else obj
    if inspect.isclass(obj) and issubclass(obj, BaseException) and "__init__" not in vars(obj):
        return  # an exception taking its message, as BaseException does
    signature = inspect.signature(function)
    missing = [p.name for p in signature.parameters.values()
               if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               and p.annotation is inspect.Parameter.empty]
    assert not missing, f"{name}: parameters without type hints: {missing}"
    if inspect.isfunction(obj):
        assert signature.return_annotation is not inspect.Signature.empty, name


@pytest.fixture
def pynative(route):
    ms.set_context(mode=ms.PYNATIVE_MODE)
    yield


@pytest.mark.parametrize("name,obj", PUBLIC, ids=IDS)
def test_examples_run(pynative, name, obj):
    finder = doctest.DocTestFinder(recurse=False)
    (test,) = finder.find(obj, name, globs={})
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    runner.run(test, out=lambda text: pytest.fail(f"{name}: an example failed:\n{text}"))
    assert runner.summarize(verbose=False).attempted > 2
