#!/usr/bin/env bash
# Lists every function in src/ longer than a limit (C++ functions, and the Python functions and
# methods of src/**/*.py), measured by Universal Ctags from its first line to its last.
#
#   scripts/check_function_length.sh            limit 120 lines
#   scripts/check_function_length.sh --max 80
#
# Prints `file:line: name is N lines (limit L)` for each one that is longer. Exits 1 when there is
# any, 0 when there is none, 2 when ctags is missing or is not Universal Ctags (Exuberant Ctags
# does not report where a function ends), or on a usage error.
set -euo pipefail
cd "$(dirname "$0")/.."

MAX=120

# Declarative tables that are long by nature, as `file<TAB>function`, each with its reason.
EXCLUDED=(
  # The pybind11 module body: one .def(...) per exported name, a table read top to bottom.
  $'src/python/module.cpp\tPYBIND11_MODULE'
)

usage() { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; }
die() {
  printf 'check_function_length: %s\n' "$*" >&2
  exit 2
}

while (($#)); do
  case "$1" in
    --max)
      [[ $# -ge 2 && "$2" =~ ^[0-9]+$ && "$2" -gt 0 ]] || die "--max needs a positive number of lines"
      MAX=$2
      shift 2
      ;;
    --max=*)
      MAX=${1#--max=}
      [[ "$MAX" =~ ^[0-9]+$ && "$MAX" -gt 0 ]] || die "--max needs a positive number of lines"
      shift
      ;;
    -h | --help)
      usage
      exit 0
      ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done

command -v ctags >/dev/null ||
  die "ctags is missing; install Universal Ctags (Debian: apt-get install universal-ctags)"
ctags --version 2>/dev/null | head -1 | grep -q '^Universal Ctags' ||
  die "'$(command -v ctags)' is not Universal Ctags (it says: $(ctags --version 2>&1 | head -1));" \
    "install universal-ctags"

tags=$(ctags --languages=C++,Python --kinds-c++=f --kinds-python=fm --fields=+ne -f - -R src) ||
  die "ctags failed on src/"

excluded=$(printf '%s\n' "${EXCLUDED[@]}")
report=$(
  printf '%s\n' "$tags" | awk -F'\t' -v max="$MAX" -v excluded="$excluded" '
    BEGIN {
      n = split(excluded, rows, "\n")
      for (i = 1; i <= n; i++) if (rows[i] != "") skip[rows[i]] = 1
    }
    {
      line = ""; end = ""
      for (i = 4; i <= NF; i++) {
        if ($i ~ /^line:/) line = substr($i, 6)
        if ($i ~ /^end:/) end = substr($i, 5)
      }
      if (line == "" || end == "" || (($2 "\t" $1) in skip)) next
      len = end - line + 1
      if (len > max) printf "%s:%d: %s is %d lines (limit %d)\n", $2, line, $1, len, max
    }' | sort -t: -k1,1 -k2,2n
)

if [[ -n "$report" ]]; then
  printf '%s\n' "$report"
  exit 1
fi
exit 0
