"""AclError, the code/name table, constants and prototypes against the C headers, and the import contract."""
import ctypes
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest

import ms_memcopy
from ms_memcopy import AclError, _acl_lib, acl_constants
from ms_memcopy.errors import ERROR_NAMES, error_name

INCLUDE = Path(ms_memcopy.get_include())
HEADERS = {
    "base": INCLUDE / "acl" / "acl_base.h",
    "rt": INCLUDE / "acl" / "acl_rt.h",
    "errors": INCLUDE / "acl" / "error_codes" / "rt_error_codes.h",
    "host": INCLUDE / "acl_host" / "acl_host_ext.h",
}


def _text(name):
    return HEADERS[name].read_text()


def header_error_codes():
    """Every ACL_SUCCESS / ACL_ERROR_* value the headers define (static const int or #define)."""
    codes = {}
    for name in ("base", "errors"):
        text = _text(name)
        for m in re.finditer(r"static\s+const\s+int\s+(ACL_\w+)\s*=\s*(\d+)\s*;", text):
            codes[m[1]] = int(m[2])
        for m in re.finditer(r"^\s*#define\s+(ACL_ERROR_\w+)\s+(\d+)\s*$", text, re.M):
            codes[m[1]] = int(m[2])
    return codes


def header_enums():
    """name -> {enumerator: value} for each typedef enum in acl_rt.h (implicit values counted)."""
    enums = {}
    for m in re.finditer(r"typedef\s+enum\s+(\w+)\s*\{(.*?)\}\s*(\w+)\s*;", _text("rt"), re.S):
        values, nxt = {}, 0
        for item in m[2].split(","):
            item = item.strip()
            if not item:
                continue
            if "=" in item:
                key, val = (s.strip() for s in item.split("="))
                nxt = int(val, 0)
            else:
                key = item
            values[key] = nxt
            nxt += 1
        enums[m[3]] = values
    return enums


def header_functions(*names):
    """function name -> number of parameters, for every ACL_FUNC_VISIBILITY declaration."""
    funcs = {}
    for name in names:
        text = re.sub(r"/\*.*?\*/", "", _text(name), flags=re.S)
        for m in re.finditer(r"ACL_FUNC_VISIBILITY\s+[\w\s\*]*?\b(\w+)\s*\(([^)]*)\)\s*;", text):
            params = m[2].strip()
            funcs[m[1]] = 0 if params in ("", "void") else params.count(",") + 1
    return funcs


# --- AclError -----------------------------------------------------------------------------------

def test_acl_error_attributes_and_text():
    err = AclError(107000, "aclrtMemcpyAsync", 3, "count 9 > destMax 8")
    assert isinstance(err, RuntimeError)
    assert (err.code, err.name, err.api, err.fail_index, err.message) == (
        107000, "ACL_ERROR_RT_PARAM_INVALID", "aclrtMemcpyAsync", 3, "count 9 > destMax 8")
    assert str(err) == ("aclrtMemcpyAsync failed: ACL_ERROR_RT_PARAM_INVALID (107000) [fail index 3]: "
                        "count 9 > destMax 8")


def test_acl_error_text_without_fail_index_or_message():
    err = AclError(100000, "aclrtFree")
    assert err.fail_index is None and err.message is None
    assert str(err) == "aclrtFree failed: ACL_ERROR_INVALID_PARAM (100000)"


def test_acl_error_fail_index_zero_is_shown():
    assert str(AclError(107000, "aclrtMemcpyBatch", 0)) == \
        "aclrtMemcpyBatch failed: ACL_ERROR_RT_PARAM_INVALID (107000) [fail index 0]"


@pytest.mark.parametrize("code", [1, 107999, 999999])
def test_acl_error_unknown_code_name(code):
    err = AclError(code, "aclrtMemcpy")
    assert err.name == f"ACL_ERROR_UNKNOWN_{code}" == error_name(code)
    assert str(err) == f"aclrtMemcpy failed: ACL_ERROR_UNKNOWN_{code} ({code})"


def test_acl_error_pickles_with_all_attributes():
    err = AclError(207000, "aclrtMemcpyBatchAsync", 5, "batch copy is not supported on Ascend310P")
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is AclError
    assert (back.code, back.name, back.api, back.fail_index, back.message, str(back)) == (
        err.code, err.name, err.api, err.fail_index, err.message, str(err))


# --- the one code table and the constants against the headers ------------------------------------

def test_error_names_match_every_header_code():
    codes = header_error_codes()
    assert len(codes) >= 20, "header parsing found too few codes"
    for name, value in codes.items():
        assert value in ERROR_NAMES, f"{name} = {value} is missing from ERROR_NAMES"
        assert codes.get(ERROR_NAMES[value]) == value, f"ERROR_NAMES[{value}] = {ERROR_NAMES[value]} but header {name}"
    for value, name in ERROR_NAMES.items():
        assert codes.get(name) == value, f"ERROR_NAMES has {name} = {value}, the headers do not"


def test_error_code_constants_match_headers():
    codes = header_error_codes()
    declared = {k: v for k, v in vars(acl_constants).items() if k == "ACL_SUCCESS" or k.startswith("ACL_ERROR_")}
    assert declared == codes


def test_enum_constants_match_header():
    enums = header_enums()
    assert set(enums) == {"aclrtMemcpyKind", "aclrtMemMallocPolicy", "aclrtMemLocationType", "aclrtRunMode",
                          "aclrtMemAttr", "aclrtEventRecordedStatus"}
    for values in enums.values():
        for name, value in values.items():
            assert getattr(acl_constants, name) == value, name
    declared = {k for k in vars(acl_constants)
                if k.startswith(("ACL_MEMCPY_", "ACL_MEM_", "ACL_DDR_", "ACL_HBM_", "ACL_EVENT_RECORDED_"))
                or k in ("ACL_DEVICE", "ACL_HOST")}
    assert declared == {name for values in enums.values() for name in values}


def test_event_flag_constants_match_header():
    flags = {m[1]: int(m[2], 16)
             for m in re.finditer(r"^#define\s+(ACL_EVENT_\w+)\s+0x([0-9A-Fa-f]+)U", _text("rt"), re.M)}
    assert flags == {"ACL_EVENT_SYNC": 1, "ACL_EVENT_CAPTURE_STREAM_PROGRESS": 2, "ACL_EVENT_TIME_LINE": 8,
                     "ACL_EVENT_DEVICE_USE_ONLY": 0x10, "ACL_EVENT_EXTERNAL": 0x20, "ACL_EVENT_IPC": 0x40}  # CANN 9.1
    declared = {k: v for k, v in vars(acl_constants).items()
                if k.startswith("ACL_EVENT_") and not k.startswith("ACL_EVENT_RECORDED_")}
    assert declared == flags


def test_constants_live_in_acl_constants_only():
    import ms_memcopy.acl as acl

    for name in acl_constants.__all__:
        assert getattr(_acl_lib, name) == getattr(acl_constants, name), name
    # As real pyACL, the top of `acl` defines no ACL_* names (scripts define their own).
    assert not [name for name in dir(acl) if name.startswith("ACL_")]
    assert acl_constants.ACL_MEMCPY_HOST_TO_DEVICE == 1 and acl_constants.ACL_ERROR_RT_PARAM_INVALID == 107000


def test_prototypes_cover_every_header_function():
    funcs = header_functions("base", "rt")
    assert {"aclrtMemcpyBatchAsync", "aclrtMemcpy2dAsync", "aclGetRecentErrMsg"} <= set(funcs)
    assert set(_acl_lib.PROTOTYPES) == set(funcs)
    for name, count in funcs.items():
        assert len(_acl_lib.PROTOTYPES[name][1]) == count, name
    host = header_functions("host")
    assert set(_acl_lib.HOST_PROTOTYPES) == set(host)
    for name, count in host.items():
        assert len(_acl_lib.HOST_PROTOTYPES[name][1]) == count, name


def test_loaded_library_exports_every_header_function():
    missing = [name for name in (*_acl_lib.PROTOTYPES, *_acl_lib.HOST_PROTOTYPES) if not _acl_lib.has(name)]
    assert missing == []


def test_batch_attr_struct_layout():
    attr, loc = _acl_lib.aclrtMemcpyBatchAttr, _acl_lib.aclrtMemLocation
    assert ctypes.sizeof(attr) == 32 and ctypes.sizeof(loc) == 8
    assert (attr.dstLoc.offset, attr.srcLoc.offset, attr.rsv.offset) == (0, 8, 16)
    assert (loc.id.offset, loc.type.offset) == (0, 4)


def test_size_max_is_c_size_max():
    assert acl_constants.SIZE_MAX == ctypes.c_size_t(-1).value


# --- package import contract ---------------------------------------------------------------------

def test_version():
    assert ms_memcopy.__version__ == "0.1.0"


def test_import_is_silent_and_does_not_load_mindspore():
    code = "import ms_memcopy, sys; assert 'mindspore' not in sys.modules"
    result = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_lazy_submodules_do_not_load_mindspore_or_the_library_early():
    code = ("import ms_memcopy, sys\n"
            "assert 'ms_memcopy.runtime' not in sys.modules and 'ms_memcopy.acl' not in sys.modules\n"
            "ms_memcopy.runtime; ms_memcopy.acl\n"
            "import ms_memcopy._acl_lib as lib\n"
            "assert lib._lib is None, 'importing the layers must not load the ACL library'\n"
            "assert 'mindspore' not in sys.modules\n"
            "assert ms_memcopy.AclError is ms_memcopy.errors.AclError\n")
    result = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_unknown_attribute_is_attribute_error():
    with pytest.raises(AttributeError, match="no_such_thing"):
        ms_memcopy.no_such_thing  # noqa: B018


def test_kernel_error_names_match_the_python_table():
    """The built kernels name every code the Python layer (and the shipped headers) name, with the same
    name (both tables come from the headers: setup.py generates the kernels' one)."""
    from ms_memcopy import _kernels_lib

    assert len(ERROR_NAMES) == len(set(header_error_codes().values())) > 20
    for code, name in ERROR_NAMES.items():
        assert _kernels_lib.acl_error_name(code) == name, code
    assert _kernels_lib.acl_error_name(107999) is None  # (the kernels' text then reads ACL_ERROR_UNKNOWN_107999)
    assert ERROR_NAMES[0] == "ACL_SUCCESS" and ERROR_NAMES[507013] == "ACL_ERROR_RT_SYS_DMA"


def test_the_kernels_table_is_generated_from_the_headers(tmp_path):
    """A code added to a header reaches both tables: Python's reads the headers, and the kernels'
    (setup.py) is generated from what Python reads."""
    from ms_memcopy import acl_error_codes

    for header in acl_error_codes.ERROR_HEADERS:
        (tmp_path / header).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / header).write_text((INCLUDE / header).read_text())
    rt = tmp_path / acl_error_codes.ERROR_HEADERS[1]
    rt.write_text(rt.read_text().replace("#endif", "#define ACL_ERROR_RT_NEW_CODE 107099\n#endif"))
    codes = acl_error_codes.read_error_codes(tmp_path)
    assert codes["ACL_ERROR_RT_NEW_CODE"] == 107099 and codes["ACL_ERROR_RT_PARAM_INVALID"] == 107000
    table = acl_error_codes.kernel_table_source(codes)
    assert '{107099, "ACL_ERROR_RT_NEW_CODE"},' in table and '{0, "ACL_SUCCESS"},' in table
    assert "ACL_ERROR_NONE" not in table  # 0's older alias
