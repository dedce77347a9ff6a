#!/usr/bin/env python3
"""Parsing a large Claude Code session: `upskill trace --json` against a baseline that only decodes
every line with Python's json module (no analysis at all), on the same file in the same run.

Usage: bench/trace_parse.py [build/upskill] [MB]   (default 200 MB)

Prints seconds for each, the ratio baseline / upskill, and each one's peak resident memory — the
point being that upskill reads line by line in bounded memory while the file is many times larger.
"""
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UPSKILL = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "upskill")
MEGABYTES = int(sys.argv[2]) if len(sys.argv) > 2 else 200


def write_session(path, megabytes):
    """Tool calls with 64 KB outputs and 16 KB written files, like a long kernel session."""
    output = "x" * 65536
    content = "// source\n" * 1600
    n = 0
    with open(path, "w") as f:
        f.write(json.dumps({"type": "user", "uuid": "first", "sessionId": "s", "cwd": "/w",
                            "message": {"role": "user", "content": "Build the kernel."}}) + "\n")
        while f.tell() < megabytes << 20:
            n += 1
            name, inp = ("Bash", {"command": f"make step{n}"}) if n % 2 else \
                        ("Write", {"file_path": f"/w/src/f{n % 50}.cu", "content": content})
            f.write(json.dumps({"type": "assistant", "uuid": f"a{n}", "sessionId": "s",
                                "message": {"id": f"m{n}", "role": "assistant", "model": "m",
                                            "content": [{"type": "tool_use", "id": f"t{n}",
                                                         "name": name, "input": inp}],
                                            "usage": {"input_tokens": 10, "output_tokens": 5}}}) + "\n")
            f.write(json.dumps({"type": "user", "uuid": f"u{n}", "sessionId": "s",
                                "message": {"role": "user", "content": [
                                    {"type": "tool_result", "tool_use_id": f"t{n}",
                                     "content": output if name == "Bash" else "ok",
                                     "is_error": n % 10 == 1}]}}) + "\n")
    return n


def run(cmd):
    start = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, check=True)
    seconds = time.perf_counter() - start
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return seconds, peak_kb if peak_kb > before else None, proc.stdout


BASELINE = "import json,sys\nfor line in open(sys.argv[1]):\n    json.loads(line)\n"

with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "session.jsonl")
    calls = write_session(path, MEGABYTES)
    size = os.path.getsize(path) / (1 << 20)
    # The baseline first, so that upskill's peak memory is measured after it (ru_maxrss of
    # children is a running maximum).
    base_s, base_kb, _ = run([sys.executable, "-c", BASELINE, path])
    ours_s, ours_kb, out = run([UPSKILL, "trace", "--json", path])
    summary = json.loads(out)
    print(f"file: {size:.0f} MB, {calls} tool calls "
          f"(upskill counted {summary['counts']['tool_calls']}, "
          f"{summary['counts']['failed_commands']} failed commands)")
    print(f"baseline  python json.loads per line   {base_s:6.2f} s   peak {base_kb / 1024:6.0f} MB")
    peak = f"{ours_kb / 1024:6.0f} MB" if ours_kb else "below the baseline's"
    print(f"upskill   trace --json (parse+analyse) {ours_s:6.2f} s   peak {peak}")
    print(f"ratio baseline/upskill: {base_s / ours_s:.2f}x")
