#!/usr/bin/env bash
# Makes a copy of upskill that runs on a machine without Debian's C++ libraries (a GPU machine's
# image, say): OUT/bin/upskill with every shared library it needs beside it in OUT/lib, found
# through the command's own search path ($ORIGIN/../lib), so that the host has to give only glibc
# and the GCC runtime (libstdc++, libgcc_s). Then checks the copy: `ldd` resolves every library
# into OUT/lib or to that host set, and the command runs in a root holding nothing else (a chroot
# with only glibc and the GCC runtime; as root). docs/kernel-checks.md "On a GPU machine".
#
#   scripts/build-portable.sh [BUILD_DIR [OUT]]     default: build/ and build-portable/
#   scripts/build-portable.sh --check OUT           only the checks, of a folder made earlier
#
# Exit 0 with the folder's path printed last; 1 when the copy needs a library it does not carry or
# does not run alone.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
die() { printf 'build-portable: %s\n' "$*" >&2; exit 1; }

# What every Linux host with a C++ runtime has: glibc's libraries, the loader, libstdc++, libgcc_s.
host_lib() {
  case "$1" in
    linux-vdso.so.* | ld-linux*.so.* | libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | \
      librt.so.* | libresolv.so.* | libutil.so.* | libstdc++.so.* | libgcc_s.so.*) return 0 ;;
  esac
  return 1
}

make_copy() {  # BUILD_DIR OUT
  local build=$1 out=$2 name path
  command -v patchelf >/dev/null || die "patchelf is missing (scripts/bootstrap.sh installs it)"
  if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  fi
  cmake --build "$build" --target upskill >/dev/null
  rm -rf "$out"
  mkdir -p "$out/bin" "$out/lib"
  cp "$build/upskill" "$out/bin/upskill"
  strip --strip-debug "$out/bin/upskill"
  # ldd lists the whole closure (the libraries' own needs too), each with the file it resolved to.
  # libcurl is not linked but opened on the first HTTP request (src/llm/http.cpp): it and its own
  # closure come too, found as the loader would find it.
  # (awk reads to the end: an early exit would stop ldconfig with SIGPIPE under pipefail)
  curl=$(ldconfig -p | awk '$1 == "libcurl.so.4" && /x86-64/ && !found {print $NF; found = 1}')
  [ -n "$curl" ] || die "libcurl.so.4 is not installed (scripts/bootstrap.sh installs it)"
  while read -r name path; do
    host_lib "$name" && continue
    [ -f "$path" ] || die "ldd could not resolve $name for $build/upskill"
    cp -L "$path" "$out/lib/$name"
    chmod u+w "$out/lib/$name"
    strip --strip-debug "$out/lib/$name"
    patchelf --set-rpath '$ORIGIN' "$out/lib/$name"
  done < <( (ldd "$build/upskill"; echo "libcurl.so.4 => $curl"; ldd "$curl") |
    awk '$2 == "=>" {print $1, $3}' | sort -u)
  # DT_RPATH rather than DT_RUNPATH: the loader searches the command's RPATH for the libraries'
  # own needs too (libcurl's libnghttp2, ...), not only for the command's.
  patchelf --force-rpath --set-rpath '$ORIGIN/../lib' "$out/bin/upskill"
}

jail=""
check_copy() {  # OUT
  local out=$1 stray f args
  # 1. Every library resolves into the folder or to the host set, libcurl's too.
  [ -f "$out/lib/libcurl.so.4" ] || die "$out/lib has no libcurl.so.4"
  stray=$( (ldd "$out/bin/upskill"; ldd "$out/lib/libcurl.so.4") | awk '$2 == "=>" {print $1, $3}' |
    while read -r name path; do
    host_lib "$name" && continue
    case "$(realpath -m "$path")" in "$out/lib/"*) ;; *) echo "$name => $path" ;; esac
  done)
  [ -z "$stray" ] || die "libraries resolved outside $out/lib: $stray"
  # 2. It runs where only glibc and the GCC runtime exist: a chroot (needs root). --version (fmt),
  #    the skill validator (ICU, yaml-cpp) and the trace reader (simdjson) run there.
  if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null; then
    echo "not checked: running alone in a bare root (needs root and unshare)" >&2
    return 0
  fi
  jail=$(mktemp -d)
  trap 'rm -rf "$jail"' EXIT
  mkdir -p "$jail/usr/lib/x86_64-linux-gnu" "$jail/usr/lib64" "$jail/tmp" "$jail/work" "$jail/proc"
  ln -s usr/lib "$jail/lib"
  ln -s usr/lib64 "$jail/lib64"
  for f in $( (ldd "$out/bin/upskill"; ldd "$out/lib/libcurl.so.4") |
    awk '{for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i}' | sort -u); do
    case "$(realpath -m "$f")" in "$out"/*) continue ;; esac
    cp -L "$f" "$jail$f"
  done
  cp -r "$out" "$jail/upskill"
  cp -r "$root/skills/kernel-builder-cuda-kernels" "$jail/work/"
  cp "$root/tests/data/traces/claude-code-2.1.328-stream.jsonl" "$jail/work/trace.jsonl"
  for args in "--version" "validate /work/kernel-builder-cuda-kernels" "trace /work/trace.jsonl"; do
    # /proc: the loader finds $ORIGIN through /proc/self/exe; mounted in a namespace of its own.
    # shellcheck disable=SC2086
    unshare --mount sh -c 'mount --bind /proc "$0/proc" && exec chroot "$0" "$@"' "$jail" \
      /upskill/bin/upskill $args >"$jail/tmp/log" 2>&1 ||
      die "'upskill $args' failed in a root holding only glibc and the GCC runtime: $(cat "$jail/tmp/log")"
  done
  # libcurl, opened on the first request, opens there too: a request to a closed port fails as
  # unreachable, not for a missing library.
  GENERIC_BASE_URL=http://127.0.0.1:9/v1 unshare --mount \
    sh -c 'mount --bind /proc "$0/proc" && exec chroot "$0" "$@"' "$jail" \
    /upskill/bin/upskill models -m generic.probe --ping >"$jail/tmp/log" 2>&1 || true
  grep -q "unreachable" "$jail/tmp/log" ||
    die "an HTTP request did not reach libcurl in a root holding only glibc and the GCC runtime: $(cat "$jail/tmp/log")"
  echo "checked: runs in a root holding only glibc, libstdc++ and libgcc_s" >&2
}

if [ "${1:-}" = "--check" ]; then
  [ -x "${2:-}/bin/upskill" ] || die "--check needs a folder made by this script (no ${2:-}/bin/upskill)"
  out="$(realpath "$2")"
else
  out="$(realpath -m "${2:-$root/build-portable}")"
  make_copy "$(realpath -m "${1:-$root/build}")" "$out"
fi
check_copy "$out"
du -sh "$out" | awk '{print "size: " $1}' >&2
echo "$out"
