#!/usr/bin/env bash
# The one command to run on a GPU machine (docs/kernel-checks.md "On a GPU machine",
# docs/PERFORMANCE.md).
#
#  1. The flagship skill's CUDA cases (skills/kernel-builder-cuda-kernels) with the reference kernels
#     (kernels/<name>/) as answers: built by upskill's own pipeline against the torch of the Python
#     given, checked against PyTorch for every dtype and shape (ragged tails and edge inputs
#     included) — all at once, to fill the build cache.
#  2. Wrong kernels that must fail, each a reference kernel with one planted fault: a race (a
#     missing __syncthreads), a wrong shuffle lane mask, an unwritten ragged tail (caught only by the
#     NaN-poisoned allocator), an input modified in place; and the CPU case.
#  3. The reference kernels again one at a time, alone on the machine, for timing: against eager
#     PyTorch and torch.compile on the specs' realistic shapes, achieved bandwidth as a fraction of
#     the measured device copy bandwidth; registers and spills from ptxas.
#  Three tables last (also $OUT/summary.txt), every verdict as JSON and every log under $OUT.
#
# Needs only the tree and what a GPU machine has: torch with CUDA for the Python in
# $UPSKILL_PYTHON (default python3), nvcc ($CUDA_HOME, else the nvcc on PATH, else
# /usr/local/cuda), g++ — plus upskill: $UPSKILL, else build-portable/bin/upskill (made by
# scripts/build-portable.sh, which runs where Debian's libraries are absent), else build/upskill.
# GPU_CHECK_DEADLINE_S (default 480) bounds the whole run: what is not reached is reported as
# not run. GPU_CHECK_REHEARSE=1 runs everything on a machine without a GPU (the CUDA stages then
# report not run, and the exit status is 1): the planted faults, the builds and the table are
# checked before a GPU machine's minutes are spent.
#
# Exit status: 0 when every reference kernel passes and every wrong kernel fails; 1 otherwise;
# 2 when the machine cannot run the check (no GPU, no torch with CUDA, no nvcc, no upskill).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
START=$(date +%s)
DEADLINE=$((START + ${GPU_CHECK_DEADLINE_S:-480}))
# An absolute path: upskill runs the Python with a scrubbed environment (PATH included).
PYTHON=$(command -v "${UPSKILL_PYTHON:-python3}" || echo "${UPSKILL_PYTHON:-python3}")
export UPSKILL_PYTHON=$PYTHON
OUT=${OUT:-$ROOT/build-gpu/gpu-check}
WORK=${GPU_CHECK_WORK:-$(mktemp -d)}
export UPSKILL_CACHE_DIR=${UPSKILL_CACHE_DIR:-$WORK/cache}
mkdir -p "$OUT" "$UPSKILL_CACHE_DIR"
say() { printf '\033[1m==> %s\033[0m (%ds)\n' "$*" "$(($(date +%s) - START))" >&2; }
die() { printf 'gpu-check: %s\n' "$*" | tee -a "$OUT/summary.txt" >&2; exit 2; }
SKILL=skills/kernel-builder-cuda-kernels
REFERENCE="rmsnorm-bf16-sm90:rmsnorm layernorm-gelu-sm90:layernorm-gelu geglu-sm90:geglu
           rope-sm90:rope adaln-sm90:adaln"

say "machine"
"$PYTHON" - >"$OUT/machine.txt" 2>&1 <<'PY' || { cat "$OUT/machine.txt" >&2; die "the Python ($PYTHON) has no torch with a CUDA device"; }
import os, torch, sys
if not torch.cuda.is_available():
    print(f"no CUDA device for torch {torch.__version__} at {sys.executable}")
    sys.exit(0 if os.environ.get("GPU_CHECK_REHEARSE") == "1" else 1)
p = torch.cuda.get_device_properties(0)
print(f"device: {p.name}, capability {p.major}.{p.minor}, {p.multi_processor_count} SMs, "
      f"{p.total_memory / 2**30:.0f} GiB; torch {torch.__version__} (CUDA {torch.version.cuda}); "
      f"python {sys.version.split()[0]} at {sys.executable}")
PY
[ "${GPU_CHECK_REHEARSE:-0}" = 1 ] && echo "rehearsal: no CUDA device needed" >>"$OUT/machine.txt"
if [ -z "${CUDA_HOME:-}" ]; then
  if command -v nvcc >/dev/null; then CUDA_HOME=$(dirname "$(dirname "$(realpath "$(command -v nvcc)")")")
  else CUDA_HOME=/usr/local/cuda; fi
fi
export CUDA_HOME
[ -x "$CUDA_HOME/bin/nvcc" ] || die "no nvcc at $CUDA_HOME/bin/nvcc (set CUDA_HOME)"
{ "$CUDA_HOME/bin/nvcc" --version | tail -1; g++ --version | head -1
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader 2>&1
} >>"$OUT/machine.txt"

UPSKILL=${UPSKILL:-}
for candidate in "$ROOT/build-portable/bin/upskill" "$ROOT/build/upskill"; do
  [ -n "$UPSKILL" ] && break
  "$candidate" --version >/dev/null 2>&1 && UPSKILL=$candidate
done
[ -n "$UPSKILL" ] || die "no upskill that runs here: make one with scripts/build-portable.sh (or set UPSKILL)"
"$UPSKILL" --version >>"$OUT/machine.txt" 2>&1 || die "$UPSKILL does not run"
cat "$OUT/machine.txt" >&2

# check NAME TARGET CASE ANSWER: one `upskill check`, its verdict in $OUT/NAME.json, its exit status
# in $OUT/NAME.rc; not started after the deadline.
check() {
  local name=$1 target=$2 id=$3 answer=$4 t0 rc
  if [ "$(date +%s)" -ge "$DEADLINE" ]; then echo "deadline" >"$OUT/$name.rc"; return; fi
  t0=$(date +%s)
  timeout $((DEADLINE - t0 + 5)) "$UPSKILL" check "$target" --case "$id" --answer "$answer" --json \
    --require-gpu --seed 7 >"$OUT/$name.json" 2>"$OUT/$name.err"
  rc=$?
  echo "$rc" >"$OUT/$name.rc"
  printf '%-28s exit %d in %ds\n' "$name" "$rc" "$(($(date +%s) - t0))" >&2
}

# The wrong kernels: copies of the reference rmsnorm, one planted fault each.
say "planting the wrong kernels"
"$PYTHON" scripts/gpu_check_faults.py "$ROOT/kernels/rmsnorm" "$WORK/wrong" ||
  die "a planted fault no longer applies to kernels/rmsnorm"

say "pass 1: every case at once (correctness; fills the build cache)"
for entry in $REFERENCE; do
  check "first-${entry%%:*}" "$SKILL" "${entry%%:*}" "kernels/${entry##*:}" &
done
for fault in race shuffle-mask unwritten-tail input-mutation; do
  check "wrong-$fault" "$SKILL" rmsnorm-bf16-sm90 "$WORK/wrong/$fault" &
done
check cpu-rmsnorm kernels/cases.json rmsnorm-cpu kernels/rmsnorm &
wait

say "pass 2: the reference kernels one at a time (timing)"
for entry in $REFERENCE; do
  check "timed-${entry%%:*}" "$SKILL" "${entry%%:*}" "kernels/${entry##*:}"
done

say "summary"
"$PYTHON" - "$OUT" <<'PY' | tee "$OUT/summary.txt"
import json, os, sys
out = sys.argv[1]

def verdict(name):
    try:
        rc = open(os.path.join(out, name + ".rc")).read().strip()
    except OSError:
        return None, "not started"
    if rc == "deadline":
        return None, "not run: the deadline came first"
    try:
        with open(os.path.join(out, name + ".json")) as f:
            return json.load(f), rc
    except (OSError, ValueError):
        err = open(os.path.join(out, name + ".err"), errors="replace").read().strip()
        return None, f"exit {rc}, no verdict: {err[-300:]}"

def stages(v):
    return {s["stage"]: s for s in v["checks"][0]["details"].get("stages", [])}

def why(v):
    """The first stage that did not pass, in its own words (the check's summary otherwise)."""
    for s in v["checks"][0]["details"].get("stages", []):
        if s.get("status") not in ("passed", None) and s.get("reason"):
            return f"{s['stage']}: {s['reason']}"[:240]
    return v["checks"][0].get("reason", "")[:240]

REHEARSAL = os.environ.get("GPU_CHECK_REHEARSE") == "1"

def unrunnable(v):
    """In a rehearsal, a verdict of not run for want of a CUDA device is what a machine without one
    can give: the rest ran."""
    return REHEARSAL and v["status"] == "not run" and "no CUDA device" in why(v)

def table(head, rows):
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    for r in [head] + rows:
        print("  ".join(str(x).ljust(w) for x, w in zip(r, widths)).rstrip())
    print()

failed = False
names = sorted(n[:-3] for n in os.listdir(out) if n.endswith(".rc"))

print("Correctness (pass 1, all cases at once)")
rows = []
for name in [n for n in names if n.startswith("first-") or n.startswith("cpu-")]:
    v, rc = verdict(name)
    if v is None:
        rows.append((name, rc, "", "")); failed = True; continue
    correct = stages(v).get("correct", {})
    n = correct.get("cases", 0)
    rows.append((name, v["status"], f"{n - len(correct.get('failures', []))}/{n}",
                 "" if v["status"] == "passed" else why(v)))
    failed |= v["status"] != "passed" and not unrunnable(v)
table(("case", "verdict", "inputs right", "why not passed"), rows)

print("Wrong kernels (each must fail)")
rows = []
for name in [n for n in names if n.startswith("wrong-")]:
    v, rc = verdict(name)
    if v is None:
        rows.append((name, "NO VERDICT", rc)); failed = True; continue
    caught = v["status"] == "failed"
    failed |= not caught and not unrunnable(v)
    rows.append((name, "caught" if caught else "not run (rehearsal)" if unrunnable(v)
                 else "MISSED (" + v["status"] + ")", why(v)))
table(("fault", "judge", "reason"), rows)

print("Timing (pass 2, one kernel at a time; ms a call by the judge's clock: the fastest segment, the loop's own cost taken off)")
rows, notes = [], []
for name in [n for n in names if n.startswith("timed-")]:
    v, rc = verdict(name)
    if v is None:
        rows.append((name, rc) + ("",) * 11); failed = True; continue
    st = stages(v)
    ptx = [p for step in st.get("compile", {}).get("steps", []) for p in step.get("ptxas", [])
           if p.get("arch") == "sm_90"]
    regs = f"{max(p['registers'] for p in ptx)}" if ptx else "-"
    spills = f"{sum(p['spill_stores'] + p['spill_loads'] for p in ptx)} B" if ptx else "-"
    entries = st.get("bench", {}).get("entries", []) or [{}]
    failed |= v["status"] != "passed" and not unrunnable(v)
    for e in entries:
        def f(key, spec, suffix=""):
            return format(e[key], spec) + suffix if isinstance(e.get(key), (int, float)) else "-"
        rows.append((name[6:], v["status"], "x".join(map(str, e.get("shape", []))) or "-",
                     e.get("dtype", "-"), f("candidate_ms", ".4f"), f("reference_ms", ".4f"),
                     f("compiled_ms", ".4f"), f("speedup", ".2f", "x"),
                     f("speedup_vs_compile", ".2f", "x"),
                     f("achieved_gbps", ".0f"), f("bandwidth_fraction", ".0%"), regs, spills))
        if e.get("compile_problem"):
            notes.append(f"{name[6:]} {e.get('shape')}: torch.compile: {e['compile_problem'][:200]}")
    if v["status"] != "passed":
        notes.append(f"{name[6:]}: {why(v)}")
copy = [e.get("copy_gbps") for n in names if n.startswith("timed-")
        for v in [verdict(n)[0]] if v for e in stages(v).get("bench", {}).get("entries", [])
        if e.get("copy_gbps")]
table(("kernel", "verdict", "shape", "dtype", "ms", "eager ms", "compile ms", "vs eager",
       "vs compile", "GB/s", "of copy BW", "regs", "spills"), rows)
for note in notes:
    print("  " + note)
if copy:
    print(f"measured device copy bandwidth (read + write): {min(copy):.0f}-{max(copy):.0f} GB/s")
# A rehearsal passes when everything but the CUDA stages ran as on a GPU machine.
print("RESULT:", "FAILED" if failed else "REHEARSED (every CUDA stage not run: no device)"
      if REHEARSAL else "PASSED")
sys.exit(1 if failed else 0)
PY
status=$?
say "done: exit $status"
exit $status
