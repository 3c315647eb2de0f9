"""Builds the host ACL runtime together with each C++ test program under sanitizers and runs them.

    python ops_impl/tools/run_sanitizers.py            # AddressSanitizer + UndefinedBehaviorSanitizer
    python ops_impl/tools/run_sanitizers.py --tsan     # then a second pass under ThreadSanitizer
    python ops_impl/tools/run_sanitizers.py --tsan-only

The runtime sources (ops_impl/acl_host/src/*.cpp, with soc_profiles.inc generated from
configs/soc_profiles.yaml into a temporary directory) are compiled with the sanitizer flags into a
libascendcl.so that every program links, so that the sanitizers see the runtime's own code. Sources,
include directories and flags (the sanitizer variants included) are ms_memcopy/_extension/build_recipe.py's, as
for the wheel and the C++ tests. The programs of
tests/cpp_kernels also get the copy kernels' sources (ops_impl/kernels, without the MindSpore entry
layers). Each pass then runs a short run of the model-based test (tests/runtime_model.py) against the
sanitizer build of libascendcl, through ctypes from Python with the sanitizer's runtime preloaded.
Exits non-zero when a build fails, a program fails or does not print "ALL PASSED", the model test
fails, or a sanitizer reports anything.
"""
import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODEL_TEST = ROOT / "tests" / "runtime_model.py"

sys.path.insert(0, str(ROOT))
from ms_memcopy import _runtime_env  # noqa: E402
from ms_memcopy._extension import build_recipe as recipe  # noqa: E402  (sources, include directories, flags)

HOST_INCLUDE = ROOT / recipe.HOST_INCLUDE
TEST_PROGRAMS = ROOT / recipe.CPP_TESTS
KERNEL_TEST_PROGRAMS = ROOT / recipe.KERNEL_TESTS
KERNEL_DIR = ROOT / recipe.KERNELS
COMMON_FLAGS = list(recipe.SANITIZER_FLAGS)
# flags: the recipe's sanitizer variant. model_*: the model test's run in the pass: the sanitizer runtime
# preloaded into Python (an uninstrumented interpreter loading an instrumented library needs it first), its
# options (no leak check: the interpreter itself never frees everything), and how many examples.
PASSES = {
    "asan+ubsan": {
        "flags": list(recipe.SANITIZERS["asan+ubsan"]),
        "env": {
            "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=1",
            "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
        },
        "model_preload": "libasan.so",
        "model_env": {"ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1"},
        "model_examples": 300,
    },
    "tsan": {
        "flags": list(recipe.SANITIZERS["tsan"]),
        "env": {"TSAN_OPTIONS": "halt_on_error=1:second_deadlock_stack=1"},
        "model_preload": "libtsan.so",
        "model_env": {},
        "model_examples": 150,
    },
}
# Text that means a sanitizer found something, even if the program still exited 0.
REPORT_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                  "WARNING: ThreadSanitizer", "ERROR: ThreadSanitizer", "SUMMARY: ")


def run(cmd, **kwargs):
    return subprocess.run(cmd, capture_output=True, text=True, **kwargs)


def compile_runtime(cxx, flags, gen_dir, obj_dir):
    """Compiles every runtime source to an object file; returns the objects, or None on failure."""
    includes = recipe.includes(recipe.host_runtime_includes(ROOT, gen_dir))
    sources = recipe.host_runtime_sources(ROOT)
    jobs = [(src, obj_dir / (src.stem + ".o")) for src in sources]

    def build(job):
        src, obj = job
        return src, run([cxx, *COMMON_FLAGS, *flags, "-fPIC", *includes, "-c", str(src), "-o", str(obj)])

    ok = True
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        for src, result in pool.map(build, jobs):
            if result.returncode != 0 or result.stderr.strip():
                ok = ok and result.returncode == 0
                sys.stderr.write(f"--- {src.name}\n{result.stdout}{result.stderr}")
    return [obj for _, obj in jobs] if ok else None


def run_pass(name, cxx, programs, work_dir):
    config = PASSES[name]
    print(f"== {name}: building the runtime", flush=True)
    pass_dir = work_dir / name
    pass_dir.mkdir()
    gen_dir = pass_dir / "generated"
    gen_dir.mkdir()
    recipe.write_host_tables(ROOT, gen_dir)
    recipe.write_kernel_tables(gen_dir, HOST_INCLUDE)
    objects = compile_runtime(cxx, config["flags"], gen_dir, pass_dir)
    library = pass_dir / "libascendcl.so"
    # A shared library, as the runtime ships: a kernel test may define its own ACL entry points to
    # count calls, and those must take precedence over the library's, not clash with its objects.
    if objects is not None and run([cxx, *COMMON_FLAGS, *config["flags"], "-shared", *map(str, objects),
                                    "-o", str(library)]).returncode != 0:
        objects = None
    if objects is None:
        print(f"== {name}: FAILED to build the runtime")
        return False
    env = _runtime_env.without_machine(os.environ)  # the programs choose their own SoC profile and device count
    env.update(config["env"])
    ok = True
    for source in programs:
        exe = pass_dir / source.stem
        kernel_test = source.parent == KERNEL_TEST_PROGRAMS
        build = run(recipe.program_command(source, exe, HOST_INCLUDE, pass_dir, flags=[*COMMON_FLAGS, *config["flags"]],
                                           kernels_dir=KERNEL_DIR if kernel_test else None, generated=gen_dir,
                                           compiler=cxx))
        if build.returncode != 0:
            print(f"== {name}: {source.name}: FAILED to build\n{build.stdout}{build.stderr}")
            ok = False
            continue
        result = run([str(exe)], env=env, timeout=600)
        output = result.stdout + result.stderr
        reported = [marker for marker in REPORT_MARKERS if marker in output]
        passed = result.returncode == 0 and "ALL PASSED" in result.stdout and not reported
        print(f"== {name}: {source.name}: {'ok' if passed else 'FAILED'} (exit status {result.returncode})")
        if not passed:
            sys.stdout.write(output)
            ok = False
    return run_model_test(name, cxx, library, env) and ok


def run_model_test(name, cxx, library, env):
    """The model test's short run against the pass's libascendcl."""
    config = PASSES[name]
    preload = run([cxx, f"-print-file-name={config['model_preload']}"]).stdout.strip()
    if not os.path.isabs(preload):
        print(f"== {name}: {MODEL_TEST.name}: FAILED: {cxx} does not know where {config['model_preload']} is")
        return False
    env = dict(env, LD_PRELOAD=preload, **config["model_env"])
    cmd = [sys.executable, str(MODEL_TEST), "--examples", str(config["model_examples"]), "--library", str(library)]
    start = time.monotonic()
    result = run(cmd, env=env, timeout=1800)
    output = result.stdout + result.stderr
    reported = [marker for marker in REPORT_MARKERS if marker in output]
    passed = result.returncode == 0 and "model: PASS" in result.stdout and not reported
    print(f"== {name}: {MODEL_TEST.name} ({config['model_examples']} examples): {'ok' if passed else 'FAILED'} "
          f"(exit status {result.returncode}, {time.monotonic() - start:.0f} s)")
    if not passed:
        sys.stdout.write(output)
    return passed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tsan", action="store_true", help="also run a ThreadSanitizer pass")
    parser.add_argument("--tsan-only", action="store_true", help="run only the ThreadSanitizer pass")
    args = parser.parse_args()
    cxx = recipe.cxx()
    programs = sorted(TEST_PROGRAMS.glob("*.cpp")) + sorted(KERNEL_TEST_PROGRAMS.glob("*.cpp"))
    if not programs:
        print(f"no programs in {TEST_PROGRAMS}")
        return 1
    if importlib.util.find_spec("hypothesis") is None:
        print(f"{MODEL_TEST.name} needs hypothesis: pip install -e '.[test]'")
        return 1
    passes = ["tsan"] if args.tsan_only else (["asan+ubsan", "tsan"] if args.tsan else ["asan+ubsan"])
    with tempfile.TemporaryDirectory(prefix="ms_memcopy_sanitizers_") as tmp:
        results = [run_pass(name, cxx, programs, Path(tmp)) for name in passes]
    if all(results):
        print("sanitizers: clean")
        return 0
    print("sanitizers: FAILED")
    return 1


if __name__ == "__main__":
    sys.exit(main())
