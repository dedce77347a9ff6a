#!/usr/bin/python3
"""Wall time of a CPU kernel check's correct and bench stages: the harness's three processes
(prepare, candidate, compare) on the reference RMSNorm kernel against kernels/specs/rmsnorm.py,
run one at a time and two at once (as two checks of an eval, or two tests of the suite, run on a
2-core machine), with the harness's settings against the ones it had before issue 16:

  threads   OMP_WAIT_POLICY=PASSIVE (waiting OpenMP threads sleep) against libgomp's default (they
            spin for a while first)
  budget    1 s of timed calls per bench shape against 3 s (time_calls' budget_s)

Each row prints the seconds of each check, the mean, and the bench speedups the checks measured
(reference ms / candidate ms per bench shape), so that what the settings do to the measurement is
seen beside what they cost. The ratio is the baseline's mean seconds over the row's.

Usage: bench/kernel_check.py [build/upskill] [ROUNDS]   (run with the Python that has torch)

The harness runs unsandboxed here, from a copy of src/kernel/harness/harness.py, on the package
`upskill check --keep-build` built (the sandbox's cost is the same for every row). The "before"
rows are today's harness with the budget set back to 3 s and libgomp's default wait policy: the
rest of what changed with them (the draw of the timed calls the judge checks) is in every row.
"""
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARGS = sys.argv[1:]
UPSKILL = ARGS.pop(0) if ARGS and not ARGS[0].isdigit() else os.path.join(ROOT, "build", "upskill")
ROUNDS = int(ARGS[0]) if ARGS else 2
SPEC = os.path.join(ROOT, "kernels", "specs", "rmsnorm.py")
HARNESS = os.path.join(ROOT, "src", "kernel", "harness", "harness.py")


def built_package(scratch):
    """The reference CPU kernel built and bound by upskill; returns its package's parent folder."""
    out = subprocess.run([UPSKILL, "check", os.path.join(ROOT, "kernels", "cases.json"), "--case",
                          "rmsnorm-cpu", "--answer", os.path.join(ROOT, "kernels", "rmsnorm"),
                          "--keep-build"], capture_output=True, text=True,
                         env=dict(os.environ, UPSKILL_CACHE_DIR=os.path.join(scratch, "cache"),
                                  UPSKILL_PCH="0"))  # no header build in the background
    kept = [line.split()[-1] for line in out.stdout.splitlines() if "build folder kept" in line]
    if out.returncode != 0 or not kept:
        sys.exit(f"kernel_check: building the reference kernel failed:\n{out.stdout}{out.stderr}")
    return os.path.join(kept[0], "build", "torch-cpu"), kept[0]


def harness_copy(scratch, budget):
    with open(HARNESS) as f:
        source = f.read()
    marker = "budget_s=1.0"
    if marker not in source:
        sys.exit(f"kernel_check: {HARNESS} no longer has {marker}; update the bench")
    path = os.path.join(scratch, f"harness_{budget}.py")
    with open(path, "w") as f:
        f.write(source.replace(marker, f"budget_s={budget}"))
    return path


def check(harness, package, run_dir, env):
    """Starts one check's three processes in order; returns a function that waits for it."""
    shutil.rmtree(run_dir, ignore_errors=True)
    os.makedirs(run_dir)
    python = [sys.executable, "-I", "-B", harness]
    common = ["--seed", "1", "--dir", run_dir, "--bench"]
    script = " && ".join([
        shlex.join(python + ["prepare", "--spec", SPEC] + common),
        shlex.join(python + ["candidate", "--dir", run_dir, "--package", package, "--name",
                             "rmsnorm", "--device", "cpu"]) + " >/dev/null",
        shlex.join(python + ["compare", "--spec", SPEC, "--device", "cpu"] + common)])
    start = time.monotonic()
    proc = subprocess.Popen(["sh", "-c", script], env=env, stdout=subprocess.PIPE, text=True)

    def wait():
        out, _ = proc.communicate()
        seconds = time.monotonic() - start
        line = next((l for l in out.splitlines() if l.startswith("UPSKILL-VERDICT ")), None)
        if proc.returncode != 0 or line is None:
            sys.exit(f"kernel_check: the harness failed (exit {proc.returncode}):\n{out[-2000:]}")
        verdict = json.loads(line.split(" ", 1)[1])
        return seconds, [round(b.get("speedup", 0.0), 2) for b in verdict["bench"]]
    return wait


def row(label, harness, package, scratch, env, at_once):
    seconds, speedups = [], []
    for r in range(ROUNDS):
        waits = [check(harness, package, os.path.join(scratch, f"run{i}"), env)
                 for i in range(at_once)]
        for w in waits:
            s, sp = w()
            seconds.append(s)
            speedups.append(sp)
    return label, seconds, speedups


def main():
    scratch = tempfile.mkdtemp(prefix="upskill-bench-check-")
    try:
        package, kept = built_package(scratch)
        base = {k: v for k, v in os.environ.items() if not k.startswith("OMP_")}
        base["OMP_NUM_THREADS"] = "2"
        passive = dict(base, OMP_WAIT_POLICY="PASSIVE")
        now, before = harness_copy(scratch, 1.0), harness_copy(scratch, 3.0)
        rows = []
        for at_once in (1, 2):
            what = "alone" if at_once == 1 else "two at once"
            rows.append(row(f"{what}: before (spin, 3 s)", before, package, scratch, base, at_once))
            rows.append(row(f"{what}: passive, 3 s", before, package, scratch, passive, at_once))
            rows.append(row(f"{what}: now (passive, 1 s)", now, package, scratch, passive, at_once))
        print(f"{'checks':34} {'seconds each':>28} {'mean s':>7} {'ratio':>6}  speedups measured")
        for i, (label, seconds, speedups) in enumerate(rows):
            baseline = statistics.mean(rows[i - i % 3][1])
            mean = statistics.mean(seconds)
            each = " ".join(f"{s:.1f}" for s in seconds)
            print(f"{label:34} {each:>28} {mean:7.1f} {baseline / mean:5.2f}x  {speedups}")
        shutil.rmtree(kept, ignore_errors=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
