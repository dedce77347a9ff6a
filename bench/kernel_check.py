#!/usr/bin/python3
"""What a CPU kernel check costs: `upskill check` of the reference RMSNorm kernel (kernels/rmsnorm)
against kernels/specs/rmsnorm.py, every stage to bench, with two upskill binaries side by side in
one run — a baseline (an earlier build, named on the command line) and the one under test — so the
ratio is taken on the same machine at the same time.

Per binary and round it prints the wall time of the whole check, the time the correct and bench
stages took (one harness run makes both), the most bytes the check's temporary folders held at once
(polled every 50 ms: before issue 46 the harness wrote the candidate's outputs to files, up to
≈850 MB for this spec), the largest resident set of any of its processes (GNU time's %M: the
judge, the candidate or upskill) and the bench's speedups. The ratio is the baseline's mean wall
time over the binary's. Rounds alternate between the binaries; the first check of each (which
builds the kernel and fills the cache) is not counted.

Usage: bench/kernel_check.py BASELINE_UPSKILL [UPSKILL] [ROUNDS]   (default: build/upskill, 3)
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARGS = sys.argv[1:]
if not ARGS or ARGS[0] in ("-h", "--help"):
    sys.exit(__doc__)
BASELINE = ARGS.pop(0)
NEW = ARGS.pop(0) if ARGS and not ARGS[0].isdigit() else os.path.join(ROOT, "build", "upskill")
ROUNDS = int(ARGS[0]) if ARGS else 3


def folder_bytes(path):
    total = 0
    for top, _, names in os.walk(path):
        for name in names:
            try:
                total += os.lstat(os.path.join(top, name)).st_blocks * 512
            except OSError:
                pass
    return total


def one_check(upskill, cache, scratch):
    """(seconds, stage seconds, peak scratch bytes, peak RSS in MB, speedups)"""
    os.makedirs(scratch, exist_ok=True)
    peak = [0]
    done = threading.Event()

    def watch():
        while not done.is_set():
            peak[0] = max(peak[0], folder_bytes(scratch))
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    env = dict(os.environ, UPSKILL_CACHE_DIR=cache, TMPDIR=scratch, UPSKILL_PCH="0")
    start = time.monotonic()
    out = subprocess.run(["/usr/bin/time", "-f", "MAXRSS %M", upskill, "check",
                          os.path.join(ROOT, "kernels", "cases.json"), "--case", "rmsnorm-cpu",
                          "--answer", os.path.join(ROOT, "kernels", "rmsnorm"), "--json"],
                         capture_output=True, text=True, env=env)
    seconds = time.monotonic() - start
    done.set()
    watcher.join()
    rss = [int(line.split()[1]) / 1024 for line in out.stderr.splitlines()
           if line.startswith("MAXRSS ")]
    try:
        report = json.loads(out.stdout)
    except ValueError:
        sys.exit(f"kernel_check: {upskill} printed no JSON:\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
    stages, speedups = {}, []

    def walk(o):
        if isinstance(o, dict):
            if o.get("stage") in ("correct", "bench"):
                stages[o["stage"]] = o.get("seconds", 0.0)
                for e in o.get("entries", []):
                    if "speedup" in e:
                        speedups.append(e["speedup"])
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    walk(report)
    return seconds, stages.get("correct", 0.0) + stages.get("bench", 0.0), peak[0], \
        rss[0] if rss else 0.0, speedups


def main():
    for binary in (BASELINE, NEW):
        if shutil.which(binary) is None and not os.access(binary, os.X_OK):
            sys.exit(f"kernel_check: no upskill at {binary}")
    work = tempfile.mkdtemp(prefix="kernel-check-bench-")
    try:
        rows = {BASELINE: [], NEW: []}
        for binary in (BASELINE, NEW):  # builds the kernel, fills each binary's cache
            one_check(binary, os.path.join(work, f"cache-{id(binary)}"),
                      os.path.join(work, "scratch"))
        for _ in range(ROUNDS):
            for binary in (BASELINE, NEW):
                scratch = os.path.join(work, "scratch")
                shutil.rmtree(scratch, ignore_errors=True)
                rows[binary].append(one_check(binary, os.path.join(work, f"cache-{id(binary)}"),
                                              scratch))
        base_mean = statistics.mean(r[0] for r in rows[BASELINE])
        print(f"{'binary':<10} {'check s':>8} {'harness s':>10} {'peak scratch MB':>16} "
              f"{'peak RSS MB':>12}  speedups")
        for name, binary in (("baseline", BASELINE), ("new", NEW)):
            for seconds, harness_s, peak, rss, speedups in rows[binary]:
                print(f"{name:<10} {seconds:8.1f} {harness_s:10.1f} {peak / 2**20:16.0f} "
                      f"{rss:12.0f}  {' '.join(f'{s:.2f}x' for s in speedups)}")
            mean = statistics.mean(r[0] for r in rows[binary])
            print(f"{name:<10} mean {mean:.1f} s, ratio {base_mean / mean:.2f}x "
                  f"(baseline {BASELINE})")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
