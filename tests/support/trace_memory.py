#!/usr/bin/env python3
"""Peak memory of `upskill trace` on inputs built to need much of it (docs/PERFORMANCE.md,
"Parsing large traces"): a Claude Code session whose one line is a 50 MB tool result, a one-line
50 MB JSON document, a 50 MB line of markdown, a Gemini CLI session (JSON lines) with a 50 MB
message and a 50 MB tool output. Each must stay under the limit (150 MB by default).

Usage: tests/support/trace_memory.py UPSKILL [--limit-mb N]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

SIZE = 50 << 20


def cases(folder):
    big = "x" * SIZE
    session = os.path.join(folder, "one-huge-line.jsonl")
    with open(session, "w") as f:
        f.write(json.dumps({"type": "user", "uuid": "u0", "sessionId": "s",
                            "message": {"role": "user", "content": "Show the log."}}) + "\n")
        f.write(json.dumps({"type": "user", "uuid": "u1", "sessionId": "s",
                            "message": {"role": "user", "content": [
                                {"type": "tool_result", "tool_use_id": "t1", "content": big}]}})
                + "\n")
    document = os.path.join(folder, "one-line-document.json")
    with open(document, "w") as f:
        f.write(json.dumps({"messages": [{"role": "user", "content": big},
                                         {"role": "assistant", "content": "ok"}]}))
    markdown = os.path.join(folder, "one-huge-line.md")
    with open(markdown, "w") as f:
        f.write("## User\n" + big + "\n## Assistant\nDone.\n")
    # Gemini CLI's JSON lines (a header, messages, $set), one message 50 MB of user text and one
    # call's output 50 MB.
    gemini = os.path.join(folder, "gemini-session.jsonl")
    with open(gemini, "w") as f:
        for record in [
                {"sessionId": "s", "projectHash": "p", "startTime": "t", "kind": "main"},
                {"id": "u1", "type": "user", "content": [{"text": big}]},
                {"$set": {"lastUpdated": "t"}},
                {"id": "g1", "type": "gemini", "content": "", "model": "m", "toolCalls": [
                    {"id": "c1", "name": "run_shell_command", "args": {"command": "cat log"},
                     "status": "success", "result": [{"functionResponse": {
                         "id": "c1", "name": "run_shell_command",
                         "response": {"output": big}}}]}]},
                {"id": "g2", "type": "gemini", "content": "Done.", "model": "m"}]:
            f.write(json.dumps(record) + "\n")
    return [session, document, markdown, gemini]


def peak_kb(upskill, path):
    """The peak resident memory of one `upskill trace` (its own rusage, from wait4). Linux counts
    the parent's resident memory at the fork in the child's peak: this process never holds the
    big inputs (another one writes them)."""
    child = subprocess.Popen([upskill, "trace", path], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        sys.exit(f"upskill trace {path} exited with {child.returncode}")
    return usage.ru_maxrss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("upskill")
    parser.add_argument("--limit-mb", type=int, default=150)
    parser.add_argument("--write-into", help=argparse.SUPPRESS)  # the writer's own run
    args = parser.parse_args()
    if args.write_into:
        print("\n".join(cases(args.write_into)))
        return
    failed = False
    with tempfile.TemporaryDirectory() as folder:
        written = subprocess.run([sys.executable, __file__, args.upskill, "--write-into", folder],
                                 check=True, capture_output=True, text=True).stdout.split()
        for path in written:
            kb = peak_kb(args.upskill, path)
            over = kb > args.limit_mb * 1024
            failed = failed or over
            print(f"{os.path.basename(path)}: {os.path.getsize(path) / 2**20:.0f} MB, "
                  f"peak {kb / 1024:.0f} MB{'  OVER THE LIMIT' if over else ''}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
