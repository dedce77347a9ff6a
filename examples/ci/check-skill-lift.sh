#!/usr/bin/env bash
# Gate a pipeline on a skill's measured lift.
#
#   examples/ci/check-skill-lift.sh SKILL_DIR MODEL [MIN_LIFT]
#
# Exits 0 when the lower bound of the lift's 95% interval reaches MIN_LIFT (default 0.1), 1 when it does
# not, 3 when the model endpoint failed. Writes upskill-eval.json, upskill-junit.xml and, on GitHub,
# the job summary. Set UPSKILL_REPLAY to a committed cassette to run offline.
set -euo pipefail

skill=${1:?usage: check-skill-lift.sh SKILL_DIR MODEL [MIN_LIFT]}
model=${2:?usage: check-skill-lift.sh SKILL_DIR MODEL [MIN_LIFT]}
min_lift=${3:-0.1}
upskill=${UPSKILL:-upskill}

replay=()
if [ -n "${UPSKILL_REPLAY:-}" ]; then replay=(--replay "$UPSKILL_REPLAY"); fi

set +e
"$upskill" "${replay[@]}" eval "$skill" -m "$model" --runs "${UPSKILL_RUNS:-1}" \
  --json upskill-eval.json --junit upskill-junit.xml --min-lift "$min_lift" --no-log-runs
status=$?
set -e

case $status in
  0) echo "skill lift gate passed" ;;
  1) echo "skill lift gate FAILED: the lift's lower bound is below $min_lift" >&2 ;;
  3) echo "the model endpoint failed; results so far are in upskill-eval.json" >&2 ;;
  *) echo "upskill eval exited $status" >&2 ;;
esac
exit $status
