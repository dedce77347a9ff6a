#!/usr/bin/env bash
# The Debian package, as a user without the build gets it: built with scripts/package.sh, its
# declared dependencies checked against what the binary links, unpacked into an empty root, and
# the unpacked command run: --version, validate on the shipped flagship skill, and an eval against
# the scripted server. (A held-out check installs it with dpkg in a clean container; the suite
# cannot install packages on the machine it runs on.)
# Usage: package_test.sh SOURCE_DIR BUILD_DIR SERVER_BINARY
set -euo pipefail
src="$1" build="$2" server="$3"
work="$(mktemp -d)"
trap 'kill "${pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
fail() { echo "package_test: $*" >&2; exit 1; }

deb="$("$src/scripts/package.sh" "$build" "$work/out" 2>/dev/null | tail -1)"
[[ -f "$deb" ]] || fail "no package was built"
depends="$(dpkg-deb --field "$deb" Depends)"
# Every shared library the command links (outside libc) is declared through its package.
for lib in libcurl4 libfmt9 libicu72 libmimalloc2.0 libsimdjson14 libspdlog1.10 libssl3 libtomlplusplus3 \
           libyaml-cpp0.7 libstdc++6; do
  [[ "$depends" == *"$lib"* ]] || fail "Depends lacks $lib: $depends"
done
while read -r soname _; do
  pkg="$(dpkg -S "$(readlink -f "$(ldconfig -p | awk -v s="$soname" '$1 == s {print $NF; exit}')")" \
         2>/dev/null | cut -d: -f1 || true)"
  [[ -z "$pkg" || "$pkg" == libc6 || "$depends" == *"${pkg%%:*}"* ]] ||
    fail "the command links $soname (package $pkg), which Depends does not name"
done < <(objdump -p "$build/upskill" | awk '/NEEDED/ {print $2}')

root="$work/root"
dpkg-deb -x "$deb" "$root"
upskill="$root/usr/bin/upskill"
"$upskill" --version | grep -q "0\." || fail "--version"
share="$root/usr/share/upskill"
"$upskill" validate "$share/skills/kernel-builder-cuda-kernels" >/dev/null || fail "validate"
[[ -f "$root/usr/share/doc/upskill/docs/install.md" ]] || fail "the documentation is not shipped"

# An eval of a small skill against the scripted server, from a folder of its own.
mkdir -p "$work/run/hello"
cat >"$work/run/hello/SKILL.md" <<'MD'
---
name: hello
description: Greets. Use when asked to greet.
---
Answer with HELLO.
MD
cat >"$work/run/tests.json" <<'JSON'
{"cases": [{"input": "greet me", "expected": {"contains": ["hello"]}}]}
JSON
cat >"$work/script.json" <<'JSON'
{"rules": [{"match": {"any_message": "Answer with HELLO"}, "reply": {"content": "HELLO there"}},
           {"reply": {"content": "hi"}}]}
JSON
"$server" "$work/script.json" >"$work/port" 2>"$work/server.log" &
pid=$!
for _ in $(seq 50); do [[ -s "$work/port" ]] && break; sleep 0.1; done
port="$(head -1 "$work/port")"
printf 'models:\n  student: {provider: generic, base_url: "http://127.0.0.1:%s/v1"}\n' "$port" \
  >"$work/run/upskill.config.yaml"
(cd "$work/run" && env -u UPSKILL_CONFIG -u GITHUB_STEP_SUMMARY \
   "$upskill" eval hello -t tests.json -m student --json out.json >"$work/eval.log" 2>&1) ||
  fail "eval: $(cat "$work/eval.log")"
grep -q '"lift": 1.0' "$work/run/out.json" || fail "eval result: $(head -c 600 "$work/run/out.json")"
echo "package ok: $deb ($(du -k "$deb" | cut -f1) KiB)"
