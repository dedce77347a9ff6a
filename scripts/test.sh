#!/usr/bin/env bash
# Builds upskill if needed and runs the test suite through ctest.
#   scripts/test.sh           the whole suite (every tier: fast, slow, real-program), as CI runs it
#   scripts/test.sh --fast    the fast tier only (ctest -L fast: no kernel builds, no real programs;
#                             under a minute on 2 cores after a build) — the quick loop while working
# Tiers are ctest labels (tests/CMakeLists.txt, docs/testing.md).
# Exits non-zero when any test fails, or when the suite left new changes in the source tree (tests
# write only into their temporary folders; a developer's own uncommitted edits do not count).
set -euo pipefail
cd "$(dirname "$0")/.."
tier=()
case "${1:-}" in
  "") ;;
  --fast) tier=(-L '^fast$') ;;
  -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) printf 'test.sh: unknown option %s (try --help)\n' "$1" >&2; exit 2 ;;
esac
scripts/bootstrap.sh
BUILD_DIR=${BUILD_DIR:-$(pwd)/build}

# What git sees as changed or untracked (ignored paths such as build*/ are not listed), one entry a
# line; empty outside a git work tree, where the check is skipped.
tree_state() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git status --porcelain --untracked-files=all | LC_ALL=C sort -u
  fi
}
before=$(tree_state)

printf '\033[1m==> running the test suite%s\033[0m\n' "${tier:+ (fast tier)}"
status=0
ctest --test-dir "$BUILD_DIR" --output-on-failure --parallel "$(nproc)" --timeout 600 \
  "${tier[@]}" || status=$?

after=$(tree_state)
dirtied=$(LC_ALL=C comm -13 <(printf '%s\n' "$before") <(printf '%s\n' "$after") | sed '/^$/d')
if [ -n "$dirtied" ]; then
  printf '\033[1m==> the test suite changed the source tree\033[0m\n' >&2
  printf 'test.sh: a test wrote outside its temporary folder; git status lists these entries now,\n' >&2
  printf 'which it did not list before the tests ran:\n' >&2
  printf '%s\n' "$dirtied" | sed 's/^/  /' >&2
  [ "$status" -ne 0 ] || status=1
fi
exit "$status"
