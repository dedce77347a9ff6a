#!/usr/bin/env python3
"""What upskill itself costs per trial: `upskill eval` of N single-assertion cases against a
zero-latency OpenAI-compatible server (Python's standard library, in its own process), with run logs
(the default) and with --no-log-runs, beside a plain Python asyncio client sending the same requests
(the floor: no checks, no files), and beside promptfoo 0.118 running the same N cases
(`promptfoo eval -j 8 --no-cache --no-write`, one "contains magic" assertion each, its openai provider
pointed at the same server). Then the same eval against a server that answers after a fixed latency L,
whose ideal wall time at concurrency C is N·L/C.

Usage: bench/eval_overhead.py [build/upskill] [N ...]   (default N: 2000 20000)

Prints for each N: wall seconds, CPU seconds (user+sys, waited-for child processes included) and peak
RSS of each client, the CPU ratio of run logs on/off (target ≤ 1.3), promptfoo's CPU and wall over
upskill's with default flags (targets ≥ 10 and > 1), and for the latency run the wall / (N·L/C) ratio
(target ≤ 1.10).

promptfoo is found through the environment variable PROMPTFOO (the path of its executable), else at
~/.cache/upskill-bench/promptfoo/node_modules/.bin/promptfoo; install it there, outside the
repository, with
    PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --prefix ~/.cache/upskill-bench/promptfoo promptfoo@0.118
(the variable skips a browser download that promptfoo's dependencies attempt). Without it the promptfoo
row is skipped with one line saying so. It runs with PROMPTFOO_DISABLE_TELEMETRY, _UPDATE, _SHARING and
_REMOTE_GENERATION set, its config directory (database, logs) in the bench's temporary directory, and
HTTPS_PROXY pointing at a closed loopback port, so that the one event it still posts when telemetry is
disabled goes nowhere. Its requests are counted at the server and its successes must equal N.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UPSKILL = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, "build", "upskill")
SIZES = [int(a) for a in sys.argv[2:]] or [2000, 20000]
JOBS = 8
LATENCY_S = 0.05
LATENCY_N = 800
PROMPTFOO = os.environ.get("PROMPTFOO") or os.path.expanduser(
    "~/.cache/upskill-bench/promptfoo/node_modules/.bin/promptfoo")
PROMPTFOO_INSTALL = ("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install "
                     "--prefix ~/.cache/upskill-bench/promptfoo promptfoo@0.118")

SERVER = textwrap.dedent("""
    import json, sys, threading, time
    from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
    latency = float(sys.argv[2])
    body = json.dumps({"id": "c", "object": "chat.completion", "model": "student-7b",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "The answer is magic."}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}}).encode()
    lock, served = threading.Lock(), [0]
    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True
        def log_message(self, *a): pass
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if latency: time.sleep(latency)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            with lock: served[0] += 1
        def do_GET(self):  # how many completions were served so far
            count = str(served[0]).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(count)))
            self.end_headers()
            self.wfile.write(count)
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer.request_queue_size = 128
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
""")

# The floor: the same requests from asyncio, JOBS keep-alive connections, nothing else done.
FLOOR = textwrap.dedent("""
    import asyncio, json, sys
    port, n, jobs = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    async def worker(queue):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        while not queue.empty():
            i = queue.get_nowait()
            body = json.dumps({"model": "student-7b", "messages": [
                {"role": "user", "content": f"task {i}"}]}).encode()
            writer.write(b"POST /v1/chat/completions HTTP/1.1\\r\\nHost: x\\r\\n"
                         b"Content-Type: application/json\\r\\nContent-Length: %d\\r\\n\\r\\n" % len(body)
                         + body)
            await writer.drain()
            length = 0
            while (line := await reader.readline()) not in (b"\\r\\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            reply = json.loads(await reader.readexactly(length))
            assert "magic" in reply["choices"][0]["message"]["content"]
        writer.close()
    async def main():
        queue = asyncio.Queue()
        for i in range(n): queue.put_nowait(i)
        await asyncio.gather(*(worker(queue) for _ in range(jobs)))
    asyncio.run(main())
""")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(tmp, latency):
    port = free_port()
    script = os.path.join(tmp, "server.py")
    with open(script, "w") as f:
        f.write(SERVER)
    proc = subprocess.Popen([sys.executable, script, str(port), str(latency)])
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    raise SystemExit("the bench server did not start")


def served(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/count") as reply:
        return int(reply.read())


def tail(log):
    if log == os.devnull:
        return ""
    with open(log, errors="replace") as f:
        return f.read()[-2000:]


def timed(cmd, cwd, env=None, log=os.devnull):
    """Wall, CPU (user+sys) and peak RSS of one command, from GNU time; its stdout goes to log."""
    out = os.path.join(cwd, "time.txt")
    start = time.perf_counter()
    with open(log, "w") as stdout:
        proc = subprocess.run(["/usr/bin/time", "-o", out, "-f", "%U %S %M"] + cmd, cwd=cwd, env=env,
                              stdout=stdout, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed ({proc.returncode}): {proc.stderr[-2000:]}{tail(log)}")
    user, system, peak_kb = open(out).read().split()[-3:]
    return wall, float(user) + float(system), int(peak_kb) / 1024


def write_skill(tmp, n, port):
    skill = os.path.join(tmp, "demo")
    os.makedirs(skill, exist_ok=True)
    with open(os.path.join(skill, "SKILL.md"), "w") as f:
        f.write("---\nname: demo\ndescription: Demo skill. Use when benchmarking.\n---\nSay magic.\n")
    tests = [{"id": f"c{i}", "input": f"task {i}", "expected": {"contains": "magic"}}
             for i in range(n)]
    with open(os.path.join(skill, "skill_meta.json"), "w") as f:
        json.dump({"metadata": {}, "tests": tests}, f)
    with open(os.path.join(tmp, "upskill.config.yaml"), "w") as f:
        f.write(f"runs_dir: runs\nmodels:\n  student:\n    provider: generic\n"
                f"    base_url: http://127.0.0.1:{port}/v1\n    model: student-7b\n"
                f"    max_concurrency: {JOBS}\n")


def write_promptfoo_config(tmp, n, port):
    tests = [{"description": f"c{i}", "vars": {"input": f"task {i}"},
              "assert": [{"type": "contains", "value": "magic"}]} for i in range(n)]
    provider = {"id": "openai:chat:student-7b",
                "config": {"apiBaseUrl": f"http://127.0.0.1:{port}/v1", "apiKey": "bench-dummy"}}
    path = os.path.join(tmp, "promptfooconfig.json")
    with open(path, "w") as f:
        json.dump({"prompts": ["{{input}}"], "providers": [provider], "tests": tests}, f)
    return path


def promptfoo_version():
    package = os.path.join(os.path.dirname(os.path.realpath(PROMPTFOO)), "..", "..", "package.json")
    try:
        with open(package) as f:
            return json.load(f)["version"]
    except (OSError, ValueError, KeyError):
        return "?"


def promptfoo_env(tmp):
    """Nothing leaves the machine: telemetry, update checks, sharing and remote generation off, any
    https request sent to a closed loopback port, state kept in the temporary directory."""
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env.update({name: "1" for name in ("PROMPTFOO_DISABLE_TELEMETRY", "PROMPTFOO_DISABLE_UPDATE",
                                        "PROMPTFOO_DISABLE_SHARING",
                                        "PROMPTFOO_DISABLE_REMOTE_GENERATION")})
    env.update(PROMPTFOO_CONFIG_DIR=os.path.join(tmp, "promptfoo-state"), OPENAI_API_KEY="bench-dummy",
               HTTPS_PROXY=f"http://127.0.0.1:{free_port()}", NO_PROXY="127.0.0.1,localhost")
    return env


def run_promptfoo(tmp, n, port):
    """promptfoo's row for n cases, or None when it is not installed."""
    if not os.access(PROMPTFOO, os.X_OK):
        print(f"  (promptfoo skipped: no {PROMPTFOO}; set PROMPTFOO or run `{PROMPTFOO_INSTALL}`)")
        return None
    config = write_promptfoo_config(tmp, n, port)
    log = os.path.join(tmp, "promptfoo.out")
    before = served(port)
    result = timed([PROMPTFOO, "eval", "-c", config, "-j", str(JOBS), "--no-cache", "--no-write"],
                   tmp, promptfoo_env(tmp), log)
    requests = served(port) - before
    if requests != n or f"\nSuccesses: {n}\n" not in tail(log):
        raise SystemExit(f"promptfoo did not pass {n} cases against the bench server ({requests} "
                         f"requests served); the end of its output:\n{tail(log)}")
    return result


def eval_cmd(extra):
    return [UPSKILL, "eval", "demo", "-m", "student", "--no-baseline", "-j", str(JOBS)] + extra


def row(name, wall, cpu, peak):
    print(f"  {name:<42} wall {wall:7.2f} s   CPU {cpu:7.2f} s   peak {peak:6.0f} MB")


with tempfile.TemporaryDirectory() as tmp:
    server, port = start_server(tmp, 0)
    floor_script = os.path.join(tmp, "floor.py")
    with open(floor_script, "w") as f:
        f.write(FLOOR)
    try:
        for n in SIZES:
            write_skill(tmp, n, port)
            print(f"{n} trials, {JOBS} in flight, zero-latency server:")
            on = timed(eval_cmd([]), tmp)
            off = timed(eval_cmd(["--no-log-runs"]), tmp)
            promptfoo = run_promptfoo(tmp, n, port)
            floor = timed([sys.executable, floor_script, str(port), str(n), str(JOBS)], tmp)
            row("upskill eval (run logs on)", *on)
            row("upskill eval --no-log-runs", *off)
            if promptfoo:
                row(f"promptfoo {promptfoo_version()} (-j {JOBS}, no cache/write)", *promptfoo)
            row("python asyncio client (floor)", *floor)
            print(f"  CPU ratio run logs on / off: {on[1] / off[1]:.2f}x   "
                  f"wall ratio: {on[0] / off[0]:.2f}x")
            if promptfoo:
                print(f"  promptfoo / upskill (run logs on): CPU {promptfoo[1] / on[1]:.1f}x "
                      f"(target >= 10)   wall {promptfoo[0] / on[0]:.2f}x (target > 1)")
    finally:
        server.kill()
    server, port = start_server(tmp, LATENCY_S)
    try:
        write_skill(tmp, LATENCY_N, port)
        ideal = LATENCY_N * LATENCY_S / JOBS
        print(f"{LATENCY_N} trials against a server answering after {LATENCY_S * 1000:.0f} ms, "
              f"{JOBS} in flight; ideal wall N·L/C = {ideal:.2f} s:")
        for name, extra in (("upskill eval (run logs on)", []),
                            ("upskill eval --no-log-runs", ["--no-log-runs"])):
            wall, cpu, peak = timed(eval_cmd(extra), tmp)
            row(name, wall, cpu, peak)
            print(f"  {'':<42} wall / ideal: {wall / ideal:.3f}")
        wall, cpu, peak = timed([sys.executable, floor_script, str(port), str(LATENCY_N),
                                 str(JOBS)], tmp)
        row("python asyncio client (floor)", wall, cpu, peak)
        print(f"  {'':<42} wall / ideal: {wall / ideal:.3f}")
    finally:
        server.kill()
