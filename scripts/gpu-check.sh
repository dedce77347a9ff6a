#!/usr/bin/env bash
# The one command to run on a GPU machine (docs/kernel-checks.md, docs/PERFORMANCE.md).
#
# Builds every reference kernel (kernels/<name>/) with upskill's own pipeline, checks it against
# PyTorch for every dtype and several shapes (ragged tails included), times it against PyTorch eager
# and torch.compile on the specs' realistic shapes, reports achieved bandwidth as a fraction of the
# measured device copy bandwidth, runs the suite's kernel tests (which execute the CUDA stages when a
# GPU is present) and prints one summary table last.
#
# Needs only the tree and what a GPU machine has: torch (for the Python in $UPSKILL_PYTHON, default
# python3), nvcc ($CUDA_HOME, default /usr/local/cuda), cmake, ninja, g++ — plus upskill itself:
# $UPSKILL, else build/upskill when it runs, else a fresh build into build-gpu/ (which needs
# upskill's C++ libraries; scripts/bootstrap.sh lists them).
#
# Exit status: 0 when every reference kernel is correct on the GPU, 1 otherwise, 2 when the machine
# cannot run the check (no GPU, no torch with CUDA, no upskill).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PYTHON=${UPSKILL_PYTHON:-python3}
export UPSKILL_PYTHON=$PYTHON
export UPSKILL_CACHE_DIR=${UPSKILL_CACHE_DIR:-$ROOT/build-gpu/kernel-cache}
OUT=${OUT:-$ROOT/build-gpu/gpu-check}
mkdir -p "$OUT" "$UPSKILL_CACHE_DIR"
say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
die() { printf 'gpu-check: %s\n' "$*" >&2; exit 2; }

say "machine"
"$PYTHON" - <<'PY' || die "the Python ($PYTHON) has no torch with a CUDA device"
import torch, sys
if not torch.cuda.is_available():
    sys.exit(1)
p = torch.cuda.get_device_properties(0)
print(f"device: {p.name}, capability {p.major}.{p.minor}, {p.total_memory / 2**30:.0f} GiB; "
      f"torch {torch.__version__} (CUDA {torch.version.cuda})")
PY
nvcc=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
[ -x "$nvcc" ] && "$nvcc" --version | tail -1 || die "no nvcc at $nvcc (set CUDA_HOME)"

UPSKILL=${UPSKILL:-}
if [ -z "$UPSKILL" ]; then
  if build/upskill --version >/dev/null 2>&1; then
    UPSKILL=$ROOT/build/upskill
  else
    say "building upskill into build-gpu/"
    cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >"$OUT/cmake.log" 2>&1 &&
      cmake --build build-gpu >>"$OUT/cmake.log" 2>&1 ||
      die "could not build upskill (see $OUT/cmake.log; its libraries are listed in scripts/bootstrap.sh)"
    UPSKILL=$ROOT/build-gpu/upskill
  fi
fi
"$UPSKILL" --version || die "$UPSKILL does not run"

say "reference kernels: build, correctness, timing"
status=0
for entry in rmsnorm-bf16-sm90:rmsnorm layernorm-gelu-sm90:layernorm-gelu geglu-sm90:geglu \
             rope-sm90:rope adaln-sm90:adaln rmsnorm-cpu:rmsnorm; do
  id=${entry%%:*}
  project=${entry##*:}
  start=$(date +%s)
  "$UPSKILL" check kernels/cases.json --case "$id" --answer "kernels/$project" --json \
    >"$OUT/$id.json" 2>"$OUT/$id.err"
  rc=$?
  printf '%-22s exit %d in %ds\n' "$id" "$rc" "$(($(date +%s) - start))" >&2
  [ "$rc" -eq 0 ] || status=1
done

if [ -x build/tests/test_kernel_pipeline ] || [ -x build-gpu/tests/test_kernel_pipeline ]; then
  say "the suite's kernel tests (CUDA stages run on this machine)"
  dir=build; [ -x build/tests/test_kernel_pipeline ] || dir=build-gpu
  UPSKILL_CACHE_DIR=$UPSKILL_CACHE_DIR ctest --test-dir "$dir" -R 'KernelPipeline|ReferenceKernels|Ptxas' \
    --output-on-failure --parallel "$(nproc)" --timeout 600 >"$OUT/ctest.log" 2>&1 || status=1
  tail -3 "$OUT/ctest.log" >&2
fi

say "summary"
"$PYTHON" - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
rows = []
for name in sorted(os.listdir(out)):
    if not name.endswith(".json"):
        continue
    with open(os.path.join(out, name)) as f:
        try:
            verdict = json.load(f)
        except ValueError:
            rows.append((name[:-5], "no verdict", "", "", "", "", "", ""))
            continue
    check = verdict["checks"][0]
    stages = {s["stage"]: s for s in check["details"]["stages"]}
    correct = stages.get("correct", {})
    cases = f"{correct.get('cases', 0) - len(correct.get('failures', []))}/{correct.get('cases', 0)}"
    bench = stages.get("bench", {})
    entries = bench.get("entries", []) or [{}]
    for e in entries:
        def fmt(key, spec, suffix=""):
            return format(e[key], spec) + suffix if key in e else "-"
        rows.append((name[:-5], check["status"], cases, e.get("shape", "-"),
                     fmt("candidate_ms", ".4f"), fmt("speedup", ".2f", "x"),
                     fmt("speedup_vs_compile", ".2f", "x"),
                     fmt("bandwidth_fraction", ".0%")))
        if check["status"] != "passed":
            rows.append(("", check.get("reason", "")[:100], "", "", "", "", "", ""))
head = ("case", "verdict", "correct", "shape", "ms", "vs eager", "vs compile", "of copy BW")
widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
for r in [head] + rows:
    print("  ".join(str(v).ljust(w) for v, w in zip(r, widths)))
PY
exit $status
