"""ms_memcopy.build_recipe is the one compile recipe: the wheel build, the C++ tests and the sanitizer runs
take their flags from it, and its commands hold what they must."""
import re
from pathlib import Path

from ms_memcopy import build_recipe as recipe

ROOT = Path(__file__).resolve().parents[1]
# The files that compile C++ code (route_ascend_check.py compiles with CustomOpBuilder's own flags).
BUILDERS = ("setup.py", "ops_impl/tools/run_sanitizers.py", "tests/test_cpp_programs.py", "tests/test_cpp_kernels.py",
            "ms_memcopy/_extension/route_build.py")


def test_no_builder_restates_a_flag():
    for name in BUILDERS:
        text = (ROOT / name).read_text(encoding="utf-8")
        found = re.findall(r'"(-std=c\+\+\d+|-O[0-3]|-W(?:all|extra)|-fsanitize=[\w,]+|-D\w+=?\w*)"', text)
        assert found == [], f"{name} restates {found}"


def test_kernel_program_command():
    cmd = recipe.program_command("t.cpp", "t", "/inc", "/lib", kernels_dir=ROOT / recipe.KERNELS, generated="/gen",
                                 compiler="c++")
    assert cmd[0] == "c++" and cmd[1:1 + len(recipe.TEST_FLAGS)] == list(recipe.TEST_FLAGS)
    assert {"-DMS_MEMCOPY_HOST_ACL=1", "-I/inc", f"-I{ROOT / recipe.KERNELS}", "-I/gen", "-lascendcl"} <= set(cmd)
    kernel_sources = [c for c in cmd if c.endswith(".cpp") and c != "t.cpp"]
    assert kernel_sources and not any("ms_extension" in c for c in kernel_sources)
    assert cmd[-2:] == ["-o", "t"] and "-Wl,-rpath,/lib" in cmd


def test_runtime_program_command_has_no_kernel_part():
    cmd = recipe.program_command("t.cpp", "t", "/inc", "/lib", flags=["-O0"], compiler="c++")
    assert cmd == ["c++", "-O0", "-I/inc", "t.cpp", "-L/lib", "-lascendcl", "-Wl,-rpath,/lib", "-o", "t"]


def test_kernel_program_command_with_the_kernels_objects():
    """The kernel sources compiled once each with the program's flags, then linked into every program."""
    kernels = ROOT / recipe.KERNELS
    source = str(recipe.kernel_sources(kernels)[0])
    obj = recipe.kernel_object_command(source, "k.o", "/inc", kernels, "/gen", compiler="c++")
    whole = recipe.program_command("t.cpp", "t", "/inc", "/lib", kernels_dir=kernels, generated="/gen", compiler="c++")
    assert obj == [*whole[:whole.index("t.cpp")], "-c", source, "-o", "k.o"]
    cmd = recipe.program_command("t.cpp", "t", "/inc", "/lib", kernels_dir=kernels, generated="/gen", compiler="c++",
                                 kernel_objects=["k.o"])
    assert cmd == [*whole[:whole.index("t.cpp") + 1], "k.o", *whole[whole.index("-L/lib"):]]
