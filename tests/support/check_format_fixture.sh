#!/usr/bin/env bash
# The format check must catch what it exists to catch: on a copy of the repository's .clang-format
# with one file laid out to it and one not, it must fail and name only the second.
#   tests/support/check_format_fixture.sh SOURCE_DIR
set -uo pipefail
src=$1
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/src"
cp "$src/.clang-format" "$tree/"
printf 'int f(int x) {\n  return x + 1;\n}\n' > "$tree/src/good.cpp"
printf 'int  g( int x ){return x+1;}\n' > "$tree/src/bad.cpp"
(cd "$tree" && git init -q && git add -A) || exit 1
out=$("$src/scripts/check_format.sh" "$tree" 2>&1)
code=$?
status=0
[ "$code" -eq 1 ] || { echo "expected exit 1, got $code: $out"; status=1; }
echo "$out" | grep -q "^  src/bad.cpp$" || { echo "bad.cpp not named: $out"; status=1; }
echo "$out" | grep -q "good.cpp" && { echo "good.cpp named: $out"; status=1; }
exit $status
