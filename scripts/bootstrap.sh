#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine for upskill and builds it into build/.
# Idempotent: installs only missing packages, reconfigures only when needed.
#
#   scripts/bootstrap.sh            install packages, configure, build
#   BUILD_TYPE=Debug scripts/bootstrap.sh
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo}

# Every Debian package the project needs, in one place.
PACKAGES=(
  build-essential   # g++ 12
  cmake
  ninja-build
  pkg-config
  libcli11-dev      # command line
  nlohmann-json3-dev
  libyaml-cpp-dev   # SKILL.md front matter, config
  libspdlog-dev
  libfmt-dev
  libssl-dev        # SHA-256 (OpenSSL libcrypto)
  libicu-dev        # Unicode rules of the skill validator (NFKC, case, letters)
  libcurl4-openssl-dev  # HTTP to model endpoints
  libcpp-httplib-dev    # the scripted test server (tests/support)
  libtomlplusplus-dev   # build.toml of kernel-builder projects
  libsimdjson-dev       # JSONL traces decoded at disk speed (simdjson 3)
  libmimalloc-dev       # the program's allocator: 2 MiB pages, fewer page faults (docs/PERFORMANCE.md)
  libgtest-dev
  libgmock-dev
  clang-format-14   # the format test (scripts/check_format.sh): one version, one layout
  chromium          # renders the HTML report in the browser test
  fonts-dejavu-core
  python3           # tests/support/png_pixels.py
  libxml2-utils     # xmllint validates the JUnit output in the tests
  universal-ctags   # scripts/check_function_length.sh measures functions
  git               # upskill ci reads the changed skills and their base versions
  binutils          # objdump: the package test checks what the command links; strip: jobs bundle
  patchelf          # scripts/build-portable.sh: the copy of upskill that finds its libraries beside it
  slurm-wlm         # --executor slurm: its tests start a single-node cluster
  munge             #   (tests/support/slurm_cluster.sh), authenticated by munge
  python3-torch     # kernel checks: the Python that loads, checks and times kernels (CPU torch 1.13)
  libtorch-dev      # torch headers for building kernel bindings
  python3-dev       # Python.h (REGISTER_EXTENSION, pybind11 bindings)
  pybind11-dev      # the Python module (import upskill)
)

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }
die() { printf 'bootstrap: %s\n' "$*" >&2; exit 1; }

missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done

if ((${#missing[@]})); then
  say "installing Debian packages: ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || die "need root (or sudo) to install: ${missing[*]}"
    SUDO=sudo
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq || die "apt-get update failed (is a Debian mirror reachable?)"
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    || die "apt-get install failed for: ${missing[*]}"
else
  say "Debian packages: all ${#PACKAGES[@]} present"
fi

# The real coding-agent CLIs, pinned, for the agent-student tests (scripts/agent-clis.versions).
scripts/install-agent-clis.sh

for tool in cmake ninja g++; do
  command -v "$tool" >/dev/null || die "$tool is missing after installing packages"
done

if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  say "configuring ($BUILD_TYPE) in $BUILD_DIR"
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" \
    || die "cmake configure failed (see the messages above for the missing piece)"
fi

say "building"
cmake --build "$BUILD_DIR" --parallel "$(nproc)" || die "build failed"
say "ready: $BUILD_DIR/upskill"
