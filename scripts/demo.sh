#!/usr/bin/env bash
# The offline demo: set up, build, start the scripted stand-in models on loopback, and run upskill's
# whole workflow over HTTP — read a trace, generate a skill from it (tests screened by building the
# trace's own kernel), evaluate the flagship CUDA-kernel skill with and without it (kernels really
# extracted, compiled, bound and, for the CPU case, run), and write the HTML report.
#
# Usage: scripts/demo.sh [--no-setup]     (--no-setup: skip scripts/bootstrap.sh)
# Output goes to build/demo/ (or $UPSKILL_DEMO_DIR). Everything stays on this machine.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
[[ "${1:-}" == "--no-setup" ]] || scripts/bootstrap.sh

bold() { printf '\n\033[1m%s\033[0m\n' "$*"; }
UPSKILL="$ROOT/build/upskill"
DEMO=${UPSKILL_DEMO_DIR:-$ROOT/build/demo}
START=$(date +%s)
rm -rf "$DEMO"
mkdir -p "$DEMO"

cat <<'NOTE'

┌──────────────────────────────────────────────────────────────────────────────────────────┐
│ upskill offline demo. The two models here — "teacher" and "student" — are SCRIPTED        │
│ STAND-INS answering from examples/demo/script.json on 127.0.0.1. They are not models, and │
│ nothing below measures any real model. Everything else is real: HTTP, trace parsing,      │
│ generation, screening, nvcc/g++ builds, the sandboxed kernel run, statistics, run logs.   │
└──────────────────────────────────────────────────────────────────────────────────────────┘
NOTE

"$ROOT/build/upskill-scripted-server" "$ROOT/examples/demo/script.json" >"$DEMO/server.port" \
  2>"$DEMO/server.log" &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true' EXIT
for _ in $(seq 50); do [[ -s "$DEMO/server.port" ]] && break; sleep 0.1; done
PORT=$(head -1 "$DEMO/server.port")
[[ -n "$PORT" ]] || { echo "the scripted server did not start: $(cat "$DEMO/server.log")" >&2; exit 3; }

cat >"$DEMO/upskill.config.yaml" <<YAML
# Written by scripts/demo.sh: both models are the scripted stand-in server on loopback.
skill_generation_model: teacher
eval_model: student
skills_dir: ./skills
runs_dir: ./runs
models:
  teacher: {provider: generic, base_url: "http://127.0.0.1:$PORT/v1"}
  student: {provider: generic, base_url: "http://127.0.0.1:$PORT/v1"}
YAML
cd "$DEMO"
TRACE="$ROOT/examples/traces/claude-code/rmsnorm-session.jsonl"

bold "1/4  upskill trace — what an expert agent's session contains (an example trace, written for the demo)"
echo "\$ upskill trace examples/traces/claude-code/rmsnorm-session.jsonl"
"$UPSKILL" trace "$TRACE" --show 3

bold "2/4  upskill generate --from — the teacher turns the trace into a skill, tests are screened against the trace's own kernel"
echo "\$ upskill generate \"write kernel-builder projects for RMSNorm\" --from …/rmsnorm-session.jsonl --eval-model student"
"$UPSKILL" generate "write kernel-builder projects for RMSNorm" --from "$TRACE" --eval-model student

bold "3/4  upskill eval — the flagship skill, 12 cases, with and without it (kernel cases are built for real)"
echo "\$ upskill eval skills/kernel-builder-cuda-kernels -m student -v"
"$UPSKILL" eval "$ROOT/skills/kernel-builder-cuda-kernels" -m student -v --json eval.json

bold "4/4  upskill runs — every run so far, and the HTML report"
echo "\$ upskill runs --html report.html"
"$UPSKILL" runs --html report.html

bold "Done in $(( $(date +%s) - START )) s. Look at:"
echo "  $DEMO/skills/kernel-builder-rmsnorm/     the generated skill (SKILL.md, tests in skill_meta.json, references/trace-digest.md)"
echo "  $DEMO/eval.json                           the evaluation as JSON (schema upskill.eval/1)"
echo "  $DEMO/report.html                         the report (open it in a browser)"
echo "  $DEMO/runs/                               run logs in upskill's layout"
echo "Again, the models were scripted stand-ins: the lift above is scripted, not measured."
