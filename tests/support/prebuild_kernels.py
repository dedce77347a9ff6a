"""The kernel tests' shared build, made once per test run before the tests that use it (a ctest
fixture, tests/CMakeLists.txt): every reference project of kernels/cases.json and the two answers
most kernel tests vary (tests/data/kernel-answers) are compiled and bound into the tests' kernel
cache, and the precompiled torch headers those builds start in the background are waited for. The
tests then find the reference builds in the cache instead of building them several at a time, and
every new candidate they build uses the precompiled header.

Usage: prebuild_kernels.py UPSKILL SOURCE_DIR CACHE_DIR
"""
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

BUILD_STAGES = ["extract", "layout", "compile", "bind"]
PCH_WAIT_S = 900  # a precompiled header builds in well under a minute on two cores


def build(upskill, cases_file, case, answer, env):
    """Compiles and binds one answer; exits non-zero with upskill's words when it fails."""
    start = time.monotonic()
    out = subprocess.run([upskill, "check", cases_file, "--case", case, "--answer", answer],
                         env=env, capture_output=True, text=True)
    print(f"{case} ({os.path.basename(answer)}): exit {out.returncode}, "
          f"{time.monotonic() - start:.1f} s", flush=True)
    if out.returncode != 0:
        sys.exit(f"prebuild_kernels: building {answer} for {case} failed:\n{out.stdout}{out.stderr}")


def build_only(cases, spec_base):
    """The cases with their build stages only, their specs made absolute."""
    out = []
    for case in cases:
        checks = []
        for check in case["checks"]:
            check = dict(check, stages=BUILD_STAGES)
            if "spec" in check:
                check["spec"] = os.path.join(spec_base, check["spec"])
            checks.append(check)
        out.append(dict(case, checks=checks))
    return out


def wait_for_headers(cache):
    """Waits until no precompiled header of the cache is being built."""
    start = time.monotonic()
    while glob.glob(os.path.join(cache, "pch", "*", "building")):
        if time.monotonic() - start > PCH_WAIT_S:
            sys.exit(f"prebuild_kernels: a precompiled header in {cache}/pch is still building "
                     f"after {PCH_WAIT_S} s")
        time.sleep(0.5)
    headers = glob.glob(os.path.join(cache, "pch", "*", "*.gch"))
    print(f"precompiled headers ready: {len(headers)} (waited {time.monotonic() - start:.0f} s)",
          flush=True)


def main():
    upskill, root, cache = sys.argv[1:4]
    env = dict(os.environ, UPSKILL_CACHE_DIR=cache)
    with open(os.path.join(root, "kernels", "cases.json")) as f:
        references = json.load(f)["cases"]
    answers = os.path.join(root, "tests", "data", "kernel-answers")
    with open(os.path.join(answers, "cases.json")) as f:
        test_cases = json.load(f)["cases"]
    with tempfile.TemporaryDirectory() as scratch:
        reference_file = os.path.join(scratch, "references.json")
        with open(reference_file, "w") as f:
            json.dump({"cases": build_only(references, os.path.join(root, "kernels"))}, f)
        test_file = os.path.join(scratch, "tests.json")
        with open(test_file, "w") as f:
            json.dump({"cases": build_only(test_cases, answers)}, f)
        project = lambda case: os.path.join(root, "kernels", case["checks"][0]["project"])
        first_cuda = next(c for c in references if c["checks"][0]["backend"] == "cuda")
        # First one build of each kind of precompiled header the tests use (C++ sources of a CUDA
        # project, the kernel-builder binding on the CPU): each starts its header's build in the
        # background. The pybind11 answer is built meanwhile without one: no test compiles
        # another pybind11 candidate, so its header would be built for nothing. The rest are
        # built once the headers are ready, with them.
        build(upskill, reference_file, first_cuda["id"], project(first_cuda), env)
        build(upskill, test_file, "rmsnorm-cpu", os.path.join(answers, "rmsnorm-cpu-good.md"), env)
        build(upskill, test_file, "rmsnorm-cpu", os.path.join(answers, "rmsnorm-cpu-pybind.md"),
              dict(env, UPSKILL_PCH="0"))
        wait_for_headers(cache)
        for case in references:
            if case is not first_cuda:
                build(upskill, reference_file, case["id"], project(case), env)
    wait_for_headers(cache)


if __name__ == "__main__":
    main()
