#!/bin/sh
# The C++ sources follow the repository's .clang-format (ctest `format`, docs/testing.md): every
# tracked or new .cpp/.hpp file outside tests/data is checked with clang-format 14 — the version the layout was made
# with (scripts/bootstrap.sh installs it), since another major version lays some code out
# differently. Prints each file that differs and the command that fixes it; exit 1 then, 2 when
# clang-format 14 is missing.
#
# Usage: scripts/check_format.sh [SOURCE_DIR]
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2
tool=$(command -v clang-format-14 || true)
if [ -z "$tool" ]; then
  tool=$(command -v clang-format || true)
  if [ -z "$tool" ] || ! "$tool" --version | grep -q "version 14\."; then
    echo "check_format: clang-format 14 is missing (scripts/bootstrap.sh installs clang-format-14)" >&2
    exit 2
  fi
fi
# Not tests/data: fixtures are kept as the programs and people that wrote them laid them out.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  list() { git ls-files --cached --others --exclude-standard -- '*.cpp' '*.hpp' ':!tests/data/'; }
else
  list() { find src include tests bench \( -path tests/data -prune \) -o \( -name '*.cpp' -o -name '*.hpp' \) -print; }
fi
# One clang-format for every file; a file that differs is named in its "file:line:col: error".
bad=$(list | xargs -d '\n' "$tool" --dry-run --Werror 2>&1 | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error:.*/\1/p' | sort -u)
if [ -n "$bad" ]; then
  echo "check_format: these files differ from .clang-format:" >&2
  echo "$bad" | sed 's/^/  /' >&2
  echo "fix: $tool -i $(echo "$bad" | tr '\n' ' ')" >&2
  exit 1
fi
echo "check_format: $(list | wc -l) files follow .clang-format"
