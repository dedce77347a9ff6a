#!/usr/bin/env python3
"""A stand-in coding agent for the tests (never a model): it speaks the machine-readable output of
the CLI named by its first argument — claude (stream-json), codex (exec --json), gemini
(--output-format json), opencode (run --format json) or text (Copilot, Kiro) — from the formats'
public documentation.

Like a real agent it sees only the skills' names and descriptions first: it loads a skill (reads
its SKILL.md, or activates it) only when a word of the description's "Use when …" clause appears in
the task, then answers with the house greeting the skill teaches, or "hello" without it. It writes
answer.txt in its working folder. FAKE_MODE changes its behaviour: login (not logged in, exit 1),
hang (sleeps), escape (also tries to write outside its workspace), garbage (prints no JSON).
Usage: fake_agent.py FLAVOR [-p PROMPT | exec ... PROMPT | run ... PROMPT | chat ... PROMPT]
"""
import json
import os
import re
import sys
import time

SKILL_DIRS = {"claude": ".claude/skills", "codex": ".agents/skills", "gemini": ".gemini/skills",
              "opencode": ".opencode/skills", "text": ".github/skills"}


def prompt_of(argv):
    if "-p" in argv:
        return argv[argv.index("-p") + 1]
    return argv[-1]


def find_skill(flavor, task):
    """The installed skill whose description's trigger words appear in the task, if any."""
    base = SKILL_DIRS[flavor]
    if not os.path.isdir(base):
        return None
    for name in sorted(os.listdir(base)):
        path = os.path.join(base, name, "SKILL.md")
        if not os.path.isfile(path):
            continue
        text = open(path, encoding="utf-8").read()
        m = re.search(r"description:\s*(.*)", text)
        when = m.group(1).split("Use when", 1)[-1] if m else ""
        words = [w for w in re.findall(r"[a-z]{5,}", when.lower())]
        if any(w in task.lower() for w in words):
            return path, text
    return None


def main():
    flavor, argv = sys.argv[1], sys.argv[2:]
    mode = os.environ.get("FAKE_MODE", "")
    task = prompt_of(argv)
    if mode == "login":
        print("Invalid API key · Please run /login", file=sys.stderr)
        return 1
    if mode == "hang":
        time.sleep(120)
    if mode == "escape":
        try:
            with open(os.path.join(os.environ["HOME"], "escaped.txt"), "w") as f:
                f.write("out")
        except OSError as e:
            print(f"write outside the workspace refused: {e}", file=sys.stderr)
    if mode == "garbage":
        print("Starting…\nDone.")
        return 0
    found = find_skill(flavor, task)
    house = re.search(r"house greeting: (\S+)", found[1] if found else task)
    answer = f"Here you go: {house.group(1)}" if house else "hello"
    with open("answer.txt", "w") as f:
        f.write(answer + "\n")
    reads = [found[0]] if found else []
    if flavor == "claude":
        print(json.dumps({"type": "system", "subtype": "init", "model": "fake-claude-1",
                          "cwd": os.getcwd(), "session_id": "s1", "tools": ["Read", "Write"]}))
        for i, path in enumerate(reads):
            print(json.dumps({"type": "assistant", "message": {
                "id": f"m{i}", "role": "assistant", "model": "fake-claude-1",
                "content": [{"type": "tool_use", "id": f"t{i}", "name": "Read",
                             "input": {"file_path": os.path.join(os.getcwd(), path)}}]}}))
            print(json.dumps({"type": "user", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"t{i}", "content": "skill text"}]}}))
        print(json.dumps({"type": "assistant", "message": {
            "id": "mz", "role": "assistant", "model": "fake-claude-1",
            "content": [{"type": "tool_use", "id": "tw", "name": "Write",
                         "input": {"file_path": "answer.txt", "content": answer}}]}}))
        print(json.dumps({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "tw", "content": "ok"}]}}))
        print(json.dumps({"type": "assistant", "message": {
            "id": "mf", "role": "assistant", "model": "fake-claude-1",
            "content": [{"type": "text", "text": answer}]}}))
        print(json.dumps({"type": "result", "subtype": "success", "is_error": False,
                          "num_turns": 2 + len(reads), "result": answer, "session_id": "s1",
                          "total_cost_usd": 0.0123,
                          "usage": {"input_tokens": 100, "cache_read_input_tokens": 40,
                                    "cache_creation_input_tokens": 10, "output_tokens": 20}}))
    elif flavor == "codex":
        print(json.dumps({"type": "thread.started", "thread_id": "th1"}))
        print(json.dumps({"type": "turn.started"}))
        for i, path in enumerate(reads):
            item = {"id": f"i{i}", "type": "command_execution", "command": f"cat {path}",
                    "aggregated_output": "skill text", "exit_code": 0, "status": "completed"}
            print(json.dumps({"type": "item.started", "item": dict(item, status="in_progress")}))
            print(json.dumps({"type": "item.completed", "item": item}))
        print(json.dumps({"type": "item.completed",
                          "item": {"id": "iz", "type": "agent_message", "text": answer}}))
        print(json.dumps({"type": "turn.completed", "usage": {
            "input_tokens": 200, "cached_input_tokens": 50, "output_tokens": 30}}))
    elif flavor == "gemini":
        by_name = {"write_file": {"count": 1, "success": 1}}
        if reads:
            by_name["activate_skill"] = {"count": 1, "success": 1}
        print(json.dumps({"response": answer, "stats": {
            "models": {"gemini-2.5-pro": {"api": {"totalRequests": 2},
                                          "tokens": {"prompt": 300, "candidates": 40, "total": 360,
                                                     "cached": 100, "thoughts": 20, "tool": 0}}},
            "tools": {"totalCalls": len(by_name), "byName": by_name}}}, indent=2))
    elif flavor == "opencode":
        print(json.dumps({"type": "step_start", "sessionID": "ses1", "part": {"type": "step-start"}}))
        for i, path in enumerate(reads):
            print(json.dumps({"type": "tool_use", "sessionID": "ses1", "part": {
                "type": "tool", "callID": f"c{i}", "tool": "read",
                "state": {"status": "completed", "input": {"filePath": path},
                          "output": "skill text"}}}))
        print(json.dumps({"type": "text", "sessionID": "ses1", "part": {"type": "text", "text": answer}}))
        print(json.dumps({"type": "step_finish", "sessionID": "ses1", "part": {
            "type": "step-finish", "cost": 0.002,
            "tokens": {"input": 120, "output": 25, "reasoning": 5, "cache": {"read": 30, "write": 0}}}}))
    else:
        print(answer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
