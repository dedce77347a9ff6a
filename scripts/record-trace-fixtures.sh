#!/usr/bin/env bash
# Records the trace fixtures that come from the real agent CLIs (tests/data/traces/README.md): each
# pinned program (scripts/agent-clis.versions, installed by scripts/install-agent-clis.sh) is
# driven through a scripted session (tests/data/traces/scenarios/*.json) against
# build/upskill-scripted-server on loopback, and the record it keeps is copied unchanged. Then the
# recordings are checked against what tests/data/traces/manifest.json says each must show.
#
#   scripts/record-trace-fixtures.sh [OUT_DIR]     (default: tests/data/traces)
#   ONLY="claude-export claude-export-old" scripts/record-trace-fixtures.sh   (some of them: gemini,
#       copilot, codex, opencode, claude-stream, claude-export, claude-session, claude-export-old,
#       claude-rewrite-old, claude-bash-mode, claude-traceback, codex-error, opencode-error)
#
# Each session's workspace is kept too, as the agent found it and as it left it
# (workspaces/<record>/before and after): the digest oracle (tests/unit/test_trace_corpus.cpp)
# checks every file the digest shows against the file the agent really left.
# Needs build/ (the scripted server) and tmux (Claude Code's /export is an interactive command).
# The workspaces are fixed paths under /tmp, as the tests expect (a session names its folder);
# the sessions' ids and times differ from run to run, nothing the tests read does.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:-$root/tests/data/traces}" && cd "${1:-$root/tests/data/traces}" && pwd)
bin=$root/tools/agent-clis/node_modules/.bin
server=$root/build/upskill-scripted-server
scenarios=$root/tests/data/traces/scenarios
key=k123456  # the scenarios' require_key: a test key, not a secret
for program in claude codex gemini copilot opencode; do
  [ -x "$bin/$program" ] || { echo "$bin/$program missing: run scripts/install-agent-clis.sh" >&2; exit 2; }
done
[ -x "$server" ] || { echo "$server missing: build first" >&2; exit 2; }
command -v tmux >/dev/null || { echo "tmux missing (scripts/bootstrap.sh installs it)" >&2; exit 2; }

want() { [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $1 "* ]]; }
pid=
start_server() {  # SCENARIO: serves it, sets $port
  stop_server
  "$server" "$scenarios/$1" > /tmp/record-traces.port &
  pid=$!
  for _ in $(seq 50); do [ -s /tmp/record-traces.port ] && break; sleep 0.1; done
  port=$(cat /tmp/record-traces.port)
}
stop_server() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; pid=; }
trap 'stop_server; tmux kill-session -t record-traces 2>/dev/null || true' EXIT

fresh() {  # DIR: an empty folder
  rm -rf "$1" && mkdir -p "$1"
}
keep_workspace() {  # RECORD before|after: a copy of $ws as it is now (less /export's own file)
  local to=$out/workspaces/$1/$2
  rm -rf "$to" && mkdir -p "$to"
  (cd "$ws" && tar --exclude=./export.txt -cf - .) | (cd "$to" && tar -xf -)
  # What it holds, so that a workspace left empty (git keeps no empty folder) is still recorded.
  (cd "$to" && find . -type f | sed 's#^\./##' | LC_ALL=C sort) > "$to.list"
}
skill() {  # DIR: the greeter skill in it
  mkdir -p "$1/greeter"
  printf -- '---\nname: greeter\ndescription: Greets people in the house style.\n---\nSay AHOY-42.\n' \
    > "$1/greeter/SKILL.md"
}

# Gemini CLI: its session JSON lines.
if want gemini; then
home=/tmp/cx/ghome ws=/tmp/rec/workspace
fresh "$home/.gemini" && fresh "$ws" && skill "$ws/.gemini/skills"
echo '{"security":{"auth":{"selectedType":"gemini-api-key"}},"privacy":{"usageStatisticsEnabled":false}}' \
  > "$home/.gemini/settings.json"
start_server gemini-cli.json
keep_workspace gemini before
(cd "$ws" && GEMINI_CLI_TRUST_WORKSPACE=true HOME=$home GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:$port \
  GEMINI_API_KEY=$key timeout 120 "$bin/gemini" -p "Greet the new hire" --output-format json --yolo \
  -m glm-4.6 > /dev/null 2>&1)
cp "$(find "$home/.gemini/tmp" -name 'session-*.jsonl' | head -1)" "$out/gemini-cli-0.61.0-session.jsonl"
keep_workspace gemini after
fi

# Copilot CLI: its session events.
if want copilot; then
home=/tmp/cx/phome ws=/tmp/cx/pws
fresh "$home" && fresh "$ws" && skill "$ws/.github/skills"
start_server copilot-cli.json
keep_workspace copilot before
(cd "$ws" && echo "Greet the new hire" | HOME=$home COPILOT_PROVIDER_BASE_URL=http://127.0.0.1:$port/v1 \
  COPILOT_PROVIDER_API_KEY=$key COPILOT_MODEL=glm-4.6 COPILOT_AUTO_UPDATE=false timeout 180 \
  "$bin/copilot" --allow-all-tools --output-format json > /dev/null 2>&1)
cp "$(ls "$home"/.copilot/session-state/*/events.jsonl | head -1)" "$out/copilot-cli-1.0.102-events.jsonl"
keep_workspace copilot after
fi

# `codex exec --json` in $ws with $home, against the server on $port: PROMPT OUT.
codex_exec() {
  (cd "$ws" && echo "$1" | HOME=$home UPSKILL_AGENT_API_KEY=$key timeout 120 "$bin/codex" exec \
    --json --skip-git-repo-check --sandbox danger-full-access -c 'model_provider="upskill"' \
    -c 'model_providers.upskill.name="upskill"' \
    -c "model_providers.upskill.base_url=\"http://127.0.0.1:$port/v1\"" \
    -c 'model_providers.upskill.env_key="UPSKILL_AGENT_API_KEY"' \
    -c 'model_providers.upskill.wire_api="responses"' -m glm-4.6 - > "$2" 2>/dev/null)
}
# opencode's environment (opencode_env) for $home, its provider the server on $port.
opencode_setup() {
  local config='{"provider":{"upskill":{"npm":"@ai-sdk/openai-compatible","name":"upskill",
  "options":{"baseURL":"http://127.0.0.1:'$port'/v1","apiKey":"{env:UPSKILL_AGENT_API_KEY}"},
  "models":{"glm-4.6":{"name":"glm-4.6"}}}},"model":"upskill/glm-4.6","agent":{"title":{"disable":true}}}'
  opencode_env=(HOME=$home OPENCODE_CONFIG_CONTENT="$config" OPENCODE_DISABLE_MODELS_FETCH=1
    OPENCODE_DISABLE_AUTOUPDATE=1 npm_config_offline=true UPSKILL_AGENT_API_KEY=$key)
}

# `opencode run --format json` in $ws with opencode_env: PROMPT OUT.
opencode_run() {
  (cd "$ws" && echo "$1" | env "${opencode_env[@]}" timeout 180 "$bin/opencode" run --format json \
    -m upskill/glm-4.6 > "$2" 2>/dev/null)
}

# Codex: the rollout and the exec stream of one session of patches.
if want codex; then
home=/tmp/cx/home ws=/tmp/cx/xws
fresh "$home" && fresh "$ws" && echo old > "$ws/old.txt"
start_server codex-patches.json
keep_workspace codex before
codex_exec "Make hello.txt" "$out/codex-0.171.0-exec-patches.jsonl"
cp "$(find "$home/.codex/sessions" -name 'rollout-*.jsonl' | head -1)" "$out/codex-0.171.0-rollout-patches.jsonl"
keep_workspace codex after
fi

# Codex: an exec stream whose turn fails (the second request refused with HTTP 400).
if want codex-error; then
home=/tmp/cx/ehome ws=/tmp/cx/ews
fresh "$home" && fresh "$ws"
start_server codex-error.json
keep_workspace codex-error before
codex_exec "Start, then go on" "$out/codex-0.171.0-exec-error.jsonl" || true  # the run fails: that is what is recorded
keep_workspace codex-error after
fi

# opencode: its printed event stream and the export of the same session (its sessions live in a
# database; `opencode export ID` prints one as JSON). Its write tool takes absolute paths.
if want opencode; then
home=/tmp/cx/ohome ws=/tmp/rec/ows
fresh "$home" && fresh "$ws"
start_server opencode-session.json
keep_workspace opencode before
opencode_setup
opencode_run "Write the rmsnorm kernel and its build config" "$out/opencode-1.18.33-run.jsonl"
session=$(grep -o '"sessionID":"[^"]*"' "$out/opencode-1.18.33-run.jsonl" | head -1 | cut -d'"' -f4)
(cd "$ws" && env "${opencode_env[@]}" timeout 60 "$bin/opencode" export "$session" \
  > "$out/opencode-1.18.33-export.json" 2>/dev/null)
keep_workspace opencode after
fi

# opencode: an event stream whose every request is refused (HTTP 400).
if want opencode-error; then
home=/tmp/cx/oehome ws=/tmp/rec/oews
fresh "$home" && fresh "$ws"
start_server opencode-error.json
keep_workspace opencode-error before
opencode_setup
opencode_run "Say hello" "$out/opencode-1.18.33-run-error.jsonl" || true  # the run fails: that is what is recorded
keep_workspace opencode-error after
fi

# Claude Code: -p stream-json (stdout and stderr together, as upskill keeps an agent's output).
if want claude-stream; then
home=/tmp/cx/chome ws=/tmp/cx/cws
fresh "$home" && fresh "$ws"
start_server say-hello.json
keep_workspace claude-stream before
(cd "$ws" && echo "Say hello" | HOME=$home IS_SANDBOX=1 ANTHROPIC_BASE_URL=http://127.0.0.1:$port \
  ANTHROPIC_AUTH_TOKEN=$key CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 timeout 120 "$bin/claude" -p \
  --output-format stream-json --verbose --model glm-4.6 > "$out/claude-code-2.1.328-stream.jsonl" 2>&1)
keep_workspace claude-stream after
fi

# Claude Code: /export of an interactive session, in tmux at 100 columns.
wait_for() {  # TEXT SECONDS: until the screen shows TEXT
  for _ in $(seq $(($2 * 2))); do
    tmux capture-pane -t record-traces -p | grep -q "$1" && return 0
    sleep 0.5
  done
  echo "record-trace-fixtures: Claude Code never showed '$1'" >&2
  tmux capture-pane -t record-traces -p >&2
  exit 1
}
claude_export() {  # RECORD CLAUDE SCENARIO TASK OUT [SESSION_OUT [SHELL]]: one task, /export into OUT,
                  # and its session record (~/.claude/projects/*/<id>.jsonl) into SESSION_OUT;
                  # SHELL, when given, is run first in bash mode ("!" then the command)
  local record=$1 home=/tmp/ex/home ws=/tmp/ex/ws
  shift
  fresh "$home/.claude" && fresh "$ws"
  printf '{"hasCompletedOnboarding": true, "theme": "dark", "projects": {"%s": {"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true, "allowedTools": []}}}\n' \
    "$ws" > "$home/.claude.json"
  echo '{"permissions":{"allow":["Bash","Write","Edit"]}}' > "$home/.claude/settings.json"
  start_server "$2"
  keep_workspace "$record" before
  # The last session's end stops tmux's server: a new session started as it exits finds it gone.
  tmux kill-session -t record-traces 2>/dev/null && sleep 1 || true
  tmux new-session -d -s record-traces -x 100 -y 40 -c "$ws" "env HOME=$home IS_SANDBOX=1 \
    ANTHROPIC_BASE_URL=http://127.0.0.1:$port ANTHROPIC_AUTH_TOKEN=$key DISABLE_AUTOUPDATER=1 \
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 $1 --model glm-4.6 --permission-mode acceptEdits"
  wait_for "accept edits" 60
  if [ -n "${6:-}" ]; then
    tmux send-keys -t record-traces "!"
    sleep 1
    tmux send-keys -t record-traces "$6"
    sleep 1
    tmux send-keys -t record-traces Enter
    sleep 3
  fi
  tmux send-keys -t record-traces "$3"
  # Typed text and its Enter in one burst can read as a paste, which is not submitted: Enter again
  # until the session shows a reply (⏺ or ●).
  for _ in $(seq 6); do
    sleep 1
    tmux send-keys -t record-traces Enter
    sleep 2
    tmux capture-pane -t record-traces -p | grep -q '^[⏺●]' && break
  done
  wait_for "Done:" 120  # the scenarios' last answer
  sleep 2
  tmux send-keys -t record-traces "/export export.txt"  # into the workspace (2.0: only there)
  sleep 1
  tmux send-keys -t record-traces Enter
  sleep 1
  if tmux capture-pane -t record-traces -p | grep -q "Select export method"; then
    # 2.0 asks: clipboard or file (then the file's name, the one typed after /export given)
    tmux send-keys -t record-traces Down
    sleep 0.5
    tmux send-keys -t record-traces Enter
    sleep 1
    tmux send-keys -t record-traces Enter
  fi
  for _ in $(seq 40); do [ -s "$ws/export.txt" ] && break; sleep 0.5; done
  if [ ! -s "$ws/export.txt" ]; then
    echo "record-trace-fixtures: /export wrote nothing; the screen:" >&2
    tmux capture-pane -t record-traces -p >&2
    exit 1
  fi
  cp "$ws/export.txt" "$4"
  keep_workspace "$record" after
  if [ -n "${5:-}" ]; then cp "$(find "$home/.claude/projects" -name '*.jsonl' | head -1)" "$5"; fi
}
want claude-export && claude_export claude-export "$bin/claude" claude-export.json \
  "Build the config for the rmsnorm kernel" "$out/claude-code-2.1.328-export.txt"
# The richer session (a refused edit, a failing command and its fix, rm) through 2.1 too: its
# /export and the session record it keeps.
want claude-session && claude_export claude-session "$bin/claude" claude-export-2.0.json \
  "Write the rmsnorm kernel and its build config" "$out/claude-code-2.1.328-export-edits.txt" \
  "$out/claude-code-2.1.328-session.jsonl"
# Claude Code 2.0 wrote /export differently (unnumbered Write previews, "Updated … with N additions
# and M removals"): an early 2.0 release, installed beside the pinned CLIs for this recording only.
if want claude-export-old; then
  version=${CLAUDE_OLD_VERSION:-2.0.0}
  old=$root/tools/claude-$version
  [ -x "$old/node_modules/.bin/claude" ] ||
    npm install --no-audit --no-fund --prefix "$old" "@anthropic-ai/claude-code@$version" >/dev/null
  claude_export claude-export-old "$old/node_modules/.bin/claude" claude-export-2.0.json \
    "Write the rmsnorm kernel and its build config" "$out/claude-code-$version-export.txt"
fi
# The same 2.0 release writing a file it wrote before: "● Write(path)" whose result is
# "Updated path with N additions and M removals" and a numbered diff, not the file.
if want claude-rewrite-old; then
  version=${CLAUDE_OLD_VERSION:-2.0.0}
  old=$root/tools/claude-$version
  [ -x "$old/node_modules/.bin/claude" ] ||
    npm install --no-audit --no-fund --prefix "$old" "@anthropic-ai/claude-code@$version" >/dev/null
  claude_export claude-rewrite-old "$old/node_modules/.bin/claude" claude-rewrite-2.0.json \
    "Write the build config, then rewrite it whole" "$out/claude-code-$version-export-rewrite.txt"
fi

# Claude Code's bash mode: "! echo hello-bash" typed at the prompt, then a task. The session keeps
# the command and its output as user records of their own (<bash-input>, <bash-stdout>).
want claude-bash-mode && claude_export claude-bash-mode "$bin/claude" claude-bash-mode.json \
  "Say what the shell printed" "$out/claude-code-2.1.328-export-bash-mode.txt" \
  "$out/claude-code-2.1.328-session-bash-mode.jsonl" "echo hello-bash"

# Claude Code: a script that fails with a Python traceback (indented frames, caret lines), the edit
# that fixes it and the run that succeeds: the error's shape and its fix, in the session record and
# the /export.
want claude-traceback && claude_export claude-traceback "$bin/claude" claude-traceback.json \
  "Make norm.py print the RMS of 3 and 4" "$out/claude-code-2.1.328-export-traceback.txt" \
  "$out/claude-code-2.1.328-session-traceback.jsonl"

echo "recorded into $out:"
ls -la "$out"/*-[0-9]*.* | awk '{print "  " $NF " (" $5 " bytes)"}'

# What each recording must show of its scenario (tests/data/traces/manifest.json), checked on the
# files just recorded: a program whose new version records differently fails here.
tests=$root/build/tests/test_trace
if [ -x "$tests" ]; then
  UPSKILL_TRACE_CORPUS=$out "$tests" --gtest_filter='TraceCorpus.EveryRecording*' --gtest_brief=1
else
  echo "$tests missing: build it to check the recordings against manifest.json" >&2
fi
