#!/usr/bin/python3
"""What the harness's allocator settings do to a CPU timing: the reference of kernels/specs/rmsnorm.py
timed by the harness itself (time_calls, its own clock, and clocked_calls, the refreshed calls whose
time upskill's clock takes) at each bench shape, in a fresh process with glibc's default malloc
(the baseline) and with the settings the harness processes get (GLIBC_TUNABLES: freed memory is kept,
no mmap'd blocks; see src/kernel/harness.cpp).

Prints one row per setting and shape, ms a call, and the baseline's time over the row's.

Usage: bench/harness_allocator.py   (run with the Python that has torch: /usr/bin/python3)
"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HARNESS = os.path.join(ROOT, "src", "kernel", "harness", "harness.py")
SPEC = os.path.join(ROOT, "kernels", "specs", "rmsnorm.py")
TUNED = "glibc.malloc.trim_threshold=17179869184:glibc.malloc.mmap_max=0"

CHILD = r"""
import importlib.util, json, sys, torch
spec = importlib.util.spec_from_file_location("harness", sys.argv[1])
h = importlib.util.module_from_spec(spec)
spec.loader.exec_module(h)
op = h.load_spec(sys.argv[2])
rows = []
for shape, dtype in h.bench_cases_of(op):
    inputs = h.make(op, 1, 0, 0, shape, dtype, "cpu")
    median, _ = h.time_calls(op.reference, inputs, "cpu", 5, 30)
    clocked = h.fastest_ms(h.clocked_calls(op.reference, inputs, "cpu", h.clocked_count(median), 7)[0])
    rows.append({"shape": list(shape), "dtype": dtype, "median_ms": median, "clocked_ms": clocked})
print(json.dumps(rows))
"""


def measure(tunables):
    env = dict(os.environ, OMP_NUM_THREADS="2", OMP_WAIT_POLICY="PASSIVE")
    env.pop("GLIBC_TUNABLES", None)
    if tunables:
        env["GLIBC_TUNABLES"] = tunables
    out = subprocess.run([sys.executable, "-I", "-B", "-c", CHILD, HARNESS, SPEC], env=env,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    baseline = measure("")
    tuned = measure(TUNED)
    print(f"{'malloc':<10} {'shape':<14} {'dtype':<9} {'time_calls ms':>14} {'clocked ms':>11} "
          f"{'ratio':>7}")
    for name, rows in (("default", baseline), ("harness", tuned)):
        for row, base in zip(rows, baseline):
            ratio = base["clocked_ms"] / row["clocked_ms"]
            print(f"{name:<10} {str(tuple(row['shape'])):<14} {row['dtype']:<9} "
                  f"{row['median_ms']:>14.3f} {row['clocked_ms']:>11.3f} {ratio:>6.1f}x")


if __name__ == "__main__":
    main()
