#!/usr/bin/env bash
# Builds the Debian package with CPack from a build folder (default: build/, which
# scripts/bootstrap.sh makes): the command stripped, its documentation, the flagship skill, the
# reference kernels and the examples; dependencies computed from the libraries the command links.
# Prints the .deb's path. Usage: scripts/package.sh [BUILD_DIR [OUT_DIR]]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
out="${2:-$build/package}"
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$build" --target upskill >/dev/null
mkdir -p "$out"
(cd "$build" && cpack -G DEB -B "$out" >/dev/null)
ls "$out"/upskill_*_*.deb
