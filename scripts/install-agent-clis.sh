#!/usr/bin/env bash
# Installs the pinned coding-agent CLIs of scripts/agent-clis.versions from npm into a project-local
# prefix (tools/agent-clis, or $UPSKILL_AGENT_CLIS): their programs end up in
# tools/agent-clis/node_modules/.bin. Nothing is installed globally. npm's own cache (~/.npm) keeps
# the downloads between runs; when the installed versions already match the file, nothing runs.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PREFIX=${UPSKILL_AGENT_CLIS:-$ROOT/tools/agent-clis}
VERSIONS=$ROOT/scripts/agent-clis.versions

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }
die() { printf 'install-agent-clis: %s\n' "$*" >&2; exit 1; }

command -v npm >/dev/null || die "npm is missing (install Node.js 20 or later with npm)"
specs=()
while read -r name version rest; do
  case "$name" in ''|'#'*) continue ;; esac
  [ -n "$version" ] && [ -z "$rest" ] || die "$VERSIONS: expected 'package version', got: $name $version $rest"
  specs+=("$name@$version")
done < "$VERSIONS"

stamp=$PREFIX/.installed
want=$(printf '%s\n' "${specs[@]}")
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -d "$PREFIX/node_modules/.bin" ]; then
  say "agent CLIs: ${#specs[@]} pinned versions present in $PREFIX"
  exit 0
fi
say "installing agent CLIs into $PREFIX: ${specs[*]}"
mkdir -p "$PREFIX"
# The prefix is a package of its own: npm records exactly these versions in its package.json.
[ -f "$PREFIX/package.json" ] || printf '{"name": "upskill-agent-clis", "private": true}\n' > "$PREFIX/package.json"
npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error --save-exact "${specs[@]}" \
  || die "npm install failed for: ${specs[*]} (is the npm registry reachable?)"
for bin in claude codex gemini opencode copilot; do
  [ -x "$PREFIX/node_modules/.bin/$bin" ] || die "$bin is missing from $PREFIX/node_modules/.bin after npm install"
done
printf '%s\n' "$want" > "$stamp"
