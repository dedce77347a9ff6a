#!/usr/bin/python3
"""Build time of a kernel candidate: upskill's compile and bind stages (sandboxed, content-addressed
object cache, precompiled torch header) against torch.utils.cpp_extension.load on the same sources.

Usage: bench/kernel_build.py [build/upskill] [cpu|cuda ...]   (run with the Python that has torch)

Two candidates: CPU, the RMSNorm answer tests/data/kernel-answers/rmsnorm-cpu-good.md (a kernel
source and a binding, both including torch/torch.h); CUDA, the reference project kernels/rmsnorm
(nvcc for sm_80 and sm_90, its torch glue in C++, the binding). For each, seconds and the ratio
baseline / upskill for:
  cold            an empty cache: the first candidate on a machine
  new             a candidate never seen, warm cache: its kernel source differs, its binding is the
                  one an earlier candidate had (most answers to one task share it verbatim)
  new, binding    a candidate whose binding differs too (a header it includes changed)
  repeat          the same candidate again
The cache is warm once its precompiled header is built: upskill builds it in the background after
the cold candidate's own compiles, and the bench waits for it (the wait is printed, not counted).
The baseline has no cache across candidates: each of cold, new and "new, binding" is a build into a
fresh TORCH_EXTENSIONS_DIR in a fresh interpreter (import time excluded); repeat reuses new's folder
(ninja finds nothing to do). Both get the same include folders, upskill's stand-in for the CUDA
header a CPU-only torch lacks among them, and MAX_JOBS=2. On a CPU-only torch the baseline's CUDA build stops at its link (torch's
CUDA libraries are absent) after compiling every object: its time is the compiles, which is what it
is compared with (upskill's CUDA bind links but cannot load without them either).
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARGS = sys.argv[1:]
UPSKILL = ARGS.pop(0) if ARGS and ARGS[0] not in ("cpu", "cuda") else os.path.join(
    ROOT, "build", "upskill")
BACKENDS = ARGS or ["cpu", "cuda"]
CPU_ANSWER = os.path.join(ROOT, "tests", "data", "kernel-answers", "rmsnorm-cpu-good.md")
CUDA_PROJECT = os.path.join(ROOT, "kernels", "rmsnorm")
# The baseline's architectures: cpp_extension takes them from TORCH_CUDA_ARCH_LIST (it fails without
# a device otherwise), and torch 1.13 does not know capability 9.0 by name, so 8.0 is named there
# and 9.0 given as an nvcc flag: sm_80 and sm_90, as upskill builds them.
ARCH_LIST = "8.0"
GENCODE = ["-gencode=arch=compute_90,code=sm_90"]


def edit(path, old, new):
    with open(path) as f:
        text = f.read()
    if old not in text:
        raise SystemExit(f"bench: {old!r} not in {path}")
    with open(path, "w") as f:
        f.write(text.replace(old, new, 1))


def cpu_candidate(scratch, name, kernel_change, binding_change):
    """The CPU answer as a workspace folder, its kernel and binding header edited as asked."""
    answer = os.path.join(scratch, name + ".md")
    shutil.copy(CPU_ANSWER, answer)
    if kernel_change:
        edit(answer, "float sum = 0.f;", f"float sum = 0.f;  // {name}")
    if binding_change:
        edit(answer, "#pragma once", f"#pragma once  // {name}")
    return answer


def cuda_candidate(scratch, name, kernel_change, binding_change):
    work = os.path.join(scratch, name)
    shutil.copytree(CUDA_PROJECT, work)
    if kernel_change:
        edit(os.path.join(work, "rmsnorm_cuda", "rmsnorm.cu"), "#include", f"// {name}\n#include")
    if binding_change:
        edit(os.path.join(work, "torch-ext", "torch_binding.h"), "#pragma once",
             f"#pragma once  // {name}")
    return work


def upskill_build(backend, answer, cache, scratch):
    cases = os.path.join(scratch, "cases.json")
    with open(cases, "w") as f:
        json.dump({"cases": [{"id": "build", "input": "-", "checks": [{
            "type": "kernel", "backend": backend, "lint": "none",
            "stages": ["extract", "layout", "compile", "bind"]}]}]}, f)
    env = dict(os.environ, UPSKILL_CACHE_DIR=cache)
    start = time.perf_counter()
    out = subprocess.run([UPSKILL, "check", cases, "--case", "build", "--answer", answer,
                          "--json", "--keep-build"], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    check = json.loads(out.stdout)["checks"][0]
    compiled = [s for s in check["details"]["stages"] if s["stage"] == "compile"]
    if not compiled or compiled[0]["status"] != "passed":
        raise SystemExit(f"upskill build failed: {check.get('reason')}")
    return seconds, check["details"]["work_dir"]


def wait_for_pch(cache):
    """Seconds until no precompiled header of the cache is being built."""
    start = time.perf_counter()
    while glob.glob(os.path.join(cache, "pch", "*", "building")):
        time.sleep(0.5)
    return time.perf_counter() - start


def torch_sources(backend, src):
    if backend == "cpu":
        return [os.path.join(src, "rmsnorm_cpu", "rmsnorm.cpp"),
                os.path.join(src, "torch-ext", "torch_binding.cpp")], ["-DCPU_KERNEL"]
    return [os.path.join(src, "rmsnorm_cuda", "rmsnorm.cu"),
            os.path.join(src, "rmsnorm_cuda", "rmsnorm_torch.cpp"),
            os.path.join(src, "torch-ext", "torch_binding.cpp")], ["-DCUDA_KERNEL"]


def torch_build(backend, src, ext_dir, standin):
    """cpp_extension.load of the candidate's sources; on a CPU-only torch a CUDA build ends at its
    link, which is accepted only when every object was compiled."""
    from torch.utils import cpp_extension
    sources, defines = torch_sources(backend, src)
    gen = os.path.join(os.path.dirname(src), "gen")
    start = time.perf_counter()
    try:
        cpp_extension.load(name=f"rmsnorm_{backend}_baseline", sources=sources,
                           extra_include_paths=[gen, os.path.join(src, "torch-ext"),
                                                os.path.dirname(sources[0]), standin],
                           extra_cflags=["-O2"] + defines,
                           extra_cuda_cflags=["-O3", "--expt-relaxed-constexpr"] + GENCODE
                           + defines,
                           build_directory=ext_dir, is_python_module=False, verbose=False)
    except RuntimeError:
        objects = glob.glob(os.path.join(ext_dir, "*.o"))
        if backend != "cuda" or len(objects) != len(sources):
            raise
    return time.perf_counter() - start


def torch_in_child(backend, src, ext_dir, standin):
    # A fresh interpreter each time, as a new candidate would get; import time excluded.
    code = (f"import sys; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r});"
            f"import torch; import kernel_build as k; "
            f"print(k.torch_build({backend!r}, {src!r}, {ext_dir!r}, {standin!r}))")
    env = dict(os.environ, MAX_JOBS="2", TORCH_CUDA_ARCH_LIST=ARCH_LIST)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise SystemExit("cpp_extension.load failed:\n" + out.stderr[-3000:])
    return float(out.stdout.strip().splitlines()[-1])


def bench(backend, scratch):
    make = cpu_candidate if backend == "cpu" else cuda_candidate
    cache = os.path.join(scratch, "cache")
    candidates = {"cold": make(scratch, "cold", False, False),
                  "new": make(scratch, "new", True, False),
                  "new, binding": make(scratch, "newbinding", True, True)}
    ours, works = {}, {}
    ours["cold"], works["cold"] = upskill_build(backend, candidates["cold"], cache, scratch)
    waited = wait_for_pch(cache)
    for name in ("new", "new, binding"):
        ours[name], works[name] = upskill_build(backend, candidates[name], cache, scratch)
    ours["repeat"], _ = upskill_build(backend, candidates["new"], cache, scratch)
    theirs = {}
    # The header a CPU-only torch lacks for CUDA sources, which upskill generates into its cache.
    standin = os.path.join(cache, "standin")
    for name in ("cold", "new", "new, binding"):
        ext = os.path.join(scratch, "ext-" + name.replace(", ", "-"))
        os.makedirs(ext)
        theirs[name] = torch_in_child(backend, os.path.join(works[name], "src"), ext, standin)
    theirs["repeat"] = torch_in_child(backend, os.path.join(works["new"], "src"),
                                      os.path.join(scratch, "ext-new"), standin)
    for w in works.values():
        shutil.rmtree(w, ignore_errors=True)
    return ours, theirs, waited


def main():
    print(f"{'candidate':<20} {'upskill s':>10} {'cpp_extension.load s':>21} {'ratio':>7}")
    for backend in BACKENDS:
        with tempfile.TemporaryDirectory() as scratch:
            ours, theirs, waited = bench(backend, scratch)
        for name in ("cold", "new", "new, binding", "repeat"):
            print(f"{backend + ' ' + name:<20} {ours[name]:>10.1f} {theirs[name]:>21.1f} "
                  f"{theirs[name] / ours[name]:>6.2f}x")
        print(f"  ({backend}: the precompiled header was ready {waited:.0f} s after the cold "
              "candidate ended)")
    print("ratio = cpp_extension.load time / upskill time (higher is better for upskill); upskill "
          "times include starting the process, its toolchain probe and, for CPU, the sandboxed "
          "load check")


if __name__ == "__main__":
    main()
