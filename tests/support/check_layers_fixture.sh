#!/usr/bin/env bash
# The layering check must catch what it exists to catch: run on tests/data/layers, a tree and a
# module table that break every rule, it must fail and name each problem.
#   tests/support/check_layers_fixture.sh SOURCE_DIR
set -uo pipefail
src=$1
fixture=$src/tests/data/layers
out=$(python3 "$src/scripts/check_layers.py" --root "$fixture" --layers "$fixture/layers.txt" \
  --doc "$fixture/ARCHITECTURE.md" 2>&1)
code=$?
status=0
if [ "$code" -ne 1 ]; then
  echo "expected exit 1, got $code"
  status=1
fi
for expected in \
  "src/low/a.cpp:4: low includes upskill/high/b.hpp, but low does not depend on high (declared: nothing)" \
  "src/low/a.cpp:5: includes ../high/c.hpp: a module's local includes stay in its folder" \
  "src/low/a.cpp:6: includes upskill/nowhere/d.hpp, which is in no module" \
  "src/low/a.cpp:7: low includes upskill/high/e.hpp, but low does not depend on high" \
  "src/stray/x.cpp: module 'stray' is not declared" \
  "the declared dependencies have a cycle: ring -> ring2 -> ring" \
  "module 'low' is missing from the module table" \
  "the module table lists 'gone', which is not declared" \
  "the module table says high may include nothing, the build declares low"; do
  if ! grep -qF -- "$expected" <<<"$out"; then
    echo "not reported: $expected"
    status=1
  fi
done
# A subfolder reaching a header of its own module with ../ is allowed.
if grep -qF "inner.cpp" <<<"$out"; then
  echo "reported src/low/part/inner.cpp, whose ../ include stays in its module"
  status=1
fi
[ "$status" -eq 0 ] || printf 'the check printed:\n%s\n' "$out"
exit "$status"
