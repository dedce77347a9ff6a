#!/usr/bin/python3
"""Build time of a kernel candidate: upskill's pipeline (compile + bind, sandboxed, PCH and
content-addressed cache) against torch.utils.cpp_extension.load on the same sources.

Usage: bench/kernel_build.py [build/upskill]   (run with the Python that has torch)

Prints seconds for each and the ratio baseline / upskill. Measured cases:
  cold        empty cache: upskill also builds its precompiled torch headers once
  new         a new candidate (sources differ) with a warm cache: the common case in an eval
  repeat      the same candidate again
The baseline, cpp_extension.load, builds into a fresh TORCH_EXTENSIONS_DIR for cold/new and
reuses it for repeat (ninja finds nothing to do).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UPSKILL = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "upskill")
ANSWER = os.path.join(ROOT, "tests", "data", "kernel-answers", "rmsnorm-cpu-good.md")


def upskill_build(answer_text, cache, scratch):
    answer = os.path.join(scratch, "answer.md")
    with open(answer, "w") as f:
        f.write(answer_text)
    cases = os.path.join(scratch, "cases.json")
    with open(cases, "w") as f:
        json.dump({"cases": [{"id": "build", "input": "-", "checks": [{
            "type": "kernel", "backend": "cpu", "lint": "none",
            "stages": ["extract", "layout", "compile", "bind"]}]}]}, f)
    env = dict(os.environ, UPSKILL_CACHE_DIR=cache)
    start = time.perf_counter()
    out = subprocess.run([UPSKILL, "check", cases, "--case", "build", "--answer", answer,
                          "--json", "--keep-build"], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    verdict = json.loads(out.stdout)
    check = verdict["checks"][0]
    if check["status"] != "passed":
        raise SystemExit(f"upskill build failed: {check.get('reason')}")
    return seconds, check["details"]["work_dir"]


def torch_build(src, ext_dir):
    from torch.utils import cpp_extension
    gen = os.path.join(os.path.dirname(src), "gen")
    start = time.perf_counter()
    cpp_extension.load(name="rmsnorm_baseline",
                       sources=[os.path.join(src, "rmsnorm_cpu", "rmsnorm.cpp"),
                                os.path.join(src, "torch-ext", "torch_binding.cpp")],
                       extra_include_paths=[gen, os.path.join(src, "torch-ext")],
                       extra_cflags=["-O2", "-DCPU_KERNEL"], build_directory=ext_dir,
                       is_python_module=False, verbose=False)
    return time.perf_counter() - start


def torch_in_child(src, ext_dir):
    # A fresh interpreter each time, as a new candidate would get; import time excluded.
    code = (f"import sys, time; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r});"
            f"import torch; import kernel_build as k; print(k.torch_build({src!r}, {ext_dir!r}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit("cpp_extension.load failed:\n" + out.stderr[-3000:])
    return float(out.stdout.strip().splitlines()[-1])


def main():
    base = open(ANSWER).read()
    # A different candidate: same code, different bytes (as two models' answers would be).
    other = base.replace("float sum = 0.f;", "float sum = 0.0f;").replace(
        "#pragma once", "#pragma once  // v2")
    with tempfile.TemporaryDirectory() as scratch:
        cache = os.path.join(scratch, "cache")
        cold, work = upskill_build(base, cache, scratch)
        new, work2 = upskill_build(other, cache, scratch)
        repeat, _ = upskill_build(other, cache, scratch)
        src = os.path.join(work2, "src")
        ext_cold = os.path.join(scratch, "ext-cold")
        ext_new = os.path.join(scratch, "ext-new")
        os.makedirs(ext_cold)
        os.makedirs(ext_new)
        t_cold = torch_in_child(os.path.join(work, "src"), ext_cold)
        t_new = torch_in_child(src, ext_new)
        t_repeat = torch_in_child(src, ext_new)
        for w in (work, work2):
            shutil.rmtree(w, ignore_errors=True)
    print(f"{'case':<8} {'upskill s':>10} {'cpp_extension.load s':>21} {'ratio':>7}")
    for name, ours, theirs in (("cold", cold, t_cold), ("new", new, t_new),
                               ("repeat", repeat, t_repeat)):
        print(f"{name:<8} {ours:>10.1f} {theirs:>21.1f} {theirs / ours:>6.2f}x")
    print("ratio = cpp_extension.load time / upskill time (higher is better for upskill); upskill "
          "times include its toolchain probe and the sandboxed load check")


if __name__ == "__main__":
    main()
