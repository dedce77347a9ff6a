#!/usr/bin/env bash
# ctest portable_build (docs/kernel-checks.md "On a GPU machine"): scripts/build-portable.sh makes a
# copy of upskill that needs from its host only glibc and the GCC runtime, and its check fails when
# the copy lacks a library (so it can fail). Then scripts/gpu_check_faults.py plants every wrong
# kernel of scripts/gpu-check.sh into the reference rmsnorm (one file changed per fault), and
# refuses a project its faults do not fit.
# Usage: portable_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$("$src/scripts/build-portable.sh" "$build" "$tmp/portable" 2>"$tmp/log") ||
  fail "build-portable.sh failed: $(cat "$tmp/log")"
[ "$out" = "$tmp/portable" ] || fail "printed '$out', not the folder"
grep -q "runs in a root holding only glibc" "$tmp/log" || fail "the bare-root run was not checked: $(cat "$tmp/log")"
ldd "$tmp/portable/bin/upskill" | grep '=>' | grep -v "$tmp/portable" |
  grep -v -E '^\s*(libc|libm|libstdc\+\+|libgcc_s|libresolv|libpthread|libdl|librt)\.so' &&
  fail "a library comes from the host"
readelf -d "$tmp/portable/bin/upskill" | grep -q 'RPATH.*\$ORIGIN/../lib' || fail "no \$ORIGIN RPATH"
[ -f "$tmp/portable/lib/libcurl.so.4" ] || fail "libcurl (opened at the first request) is not in the copy"
# A library the command links and one only libcurl needs, missing: both named.
rm "$tmp/portable/lib/libyaml-cpp.so.0.7" "$tmp/portable/lib/libnghttp2.so.14"
if "$src/scripts/build-portable.sh" --check "$tmp/portable" 2>"$tmp/log"; then
  fail "--check passed with libyaml-cpp and libnghttp2 missing"
fi
grep -q "libyaml-cpp.so.0.7" "$tmp/log" || fail "the missing library is not named: $(cat "$tmp/log")"
grep -q "libnghttp2.so.14" "$tmp/log" || fail "libcurl's missing need is not named: $(cat "$tmp/log")"

python3 "$src/scripts/gpu_check_faults.py" "$src/kernels/rmsnorm" "$tmp/wrong" || fail "faults did not apply"
for fault in race shuffle-mask unwritten-tail input-mutation; do
  changed=$( (diff -rq "$src/kernels/rmsnorm" "$tmp/wrong/$fault" || true) | wc -l)
  [ "$changed" -eq 1 ] || fail "$fault changed $changed files"
done
if python3 "$src/scripts/gpu_check_faults.py" "$src/kernels/geglu" "$tmp/geglu" 2>"$tmp/log"; then
  fail "faults applied to geglu"
fi
grep -q "occurs 0 times\|No such file" "$tmp/log" || fail "no reason given: $(cat "$tmp/log")"
echo "portable build and planted faults: ok"
