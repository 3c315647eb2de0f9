"""Which ACL headers a CANN build compiles against: CANN's, found the way MindSpore's CustomOpBuilder finds
them (the part of ASCEND_OPP_PATH before "opp") when ASCEND_HOME_PATH is not set, never the host runtime's
shipped headers; with no CANN set, a clear refusal naming what to set. Run against a fake CANN tree, with
the build made to look like a CANN build (no host runtime library)."""
from pathlib import Path

import pytest

from ms_memcopy import _paths, route_build, route_load

CANN_VARIABLES = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_OPP_PATH")


@pytest.fixture
def cann_build(monkeypatch):
    """This installation seen as a CANN build, with no CANN variable set."""
    for name in CANN_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(_paths, "uses_host_runtime", lambda: False)


def fake_cann(root: Path) -> Path:
    (root / "include" / "acl").mkdir(parents=True)
    (root / "include" / "acl" / "acl.h").write_text("/* CANN's acl.h */\n")
    (root / "opp" / "vendors").mkdir(parents=True)
    return root


def test_only_ascend_opp_path_finds_canns_headers(cann_build, monkeypatch, tmp_path):
    cann = fake_cann(tmp_path / "Ascend" / "cann-9.1")
    monkeypatch.setenv("ASCEND_OPP_PATH", str(cann / "opp"))
    assert Path(_paths.get_include()) == cann / "include"
    assert _paths.cann_home() == cann
    includes = route_build.build_options("Ascend", tmp_path / "generated")["include_paths"]
    assert str(cann / "include") in includes
    assert _paths.shipped_include() not in includes


def test_ascend_home_path_comes_first(cann_build, monkeypatch, tmp_path):
    home, other = fake_cann(tmp_path / "home"), fake_cann(tmp_path / "other")
    monkeypatch.setenv("ASCEND_HOME_PATH", str(home))
    monkeypatch.setenv("ASCEND_OPP_PATH", str(other / "opp"))
    assert Path(_paths.get_include()) == home / "include"


def test_an_opp_path_without_headers_is_not_cann(cann_build, monkeypatch, tmp_path):
    (tmp_path / "opp").mkdir()
    monkeypatch.setenv("ASCEND_OPP_PATH", str(tmp_path / "opp"))
    assert _paths.cann_home() is None
    with pytest.raises(FileNotFoundError, match="ASCEND_HOME_PATH") as raised:
        _paths.get_include()
    assert "set_env.sh" in str(raised.value)


def test_no_cann_never_falls_back_to_the_shipped_headers(cann_build):
    with pytest.raises(FileNotFoundError, match="built against CANN"):
        route_build.build_options("Ascend", Path("generated"))


def test_load_refuses_ascend_without_cann(cann_build):
    with pytest.raises(RuntimeError, match="ASCEND_HOME_PATH"):
        route_load.load("Ascend")
