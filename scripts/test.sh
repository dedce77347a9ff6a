#!/usr/bin/env bash
# Builds upskill if needed and runs the whole test suite through ctest.
# Exits non-zero when any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
BUILD_DIR=${BUILD_DIR:-$(pwd)/build}
printf '\033[1m==> running the test suite\033[0m\n'
ctest --test-dir "$BUILD_DIR" --output-on-failure --parallel "$(nproc)" --timeout 600
