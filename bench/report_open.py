#!/usr/bin/env python3
"""The HTML report of a large runs folder: its size, the time `upskill runs --html` takes to write it,
and the time headless Chromium takes to open it, beside the same Chromium opening a one-line page (the
baseline: the browser's own start-up).

Two batches are evaluated with `upskill eval` against a zero-latency OpenAI-compatible server
(Python's standard library, in its own process) whose answers are about 600 bytes and pass on some
cases only: CASES cases × RUNS runs × 2 arms (default 500 × 10 × 2 = 10,000 trials) and CASES cases
× 1 run × 2 arms (another 1,000) with another seed — with the default sizes 11,000 trials in all,
every one of them in the page. Then `upskill runs --html` writes the page, and Chromium
(`--headless`, a fresh profile each time) opens it three ways: as it is (the page ready, all
batches folded), with `#q=no idea` (a search through every trial's prompt, answer and reasons) and with
`#b=<the large batch>` (its 500 case rows drawn). The time to open is the wall time of Chromium
taking a screenshot (`--screenshot`: the page loaded, laid out and painted); the page records its
own timings in data attributes (ready: milliseconds from the start of navigation until its script
ran; search and draw: how long those took), read back with a second load under `--dump-dom`.

Usage: bench/report_open.py [build/upskill] [CASES] [RUNS]

Prints the page's size, the trials in it, `runs --html` wall time, and for each way of opening it the
wall time of the Chromium process, the ratio to the one-line page's and the page's own timings.
"""
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
import json

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UPSKILL = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, "build", "upskill")
CASES = int(sys.argv[2]) if len(sys.argv) > 2 else 500
RUNS = int(sys.argv[3]) if len(sys.argv) > 3 else 10

SERVER = textwrap.dedent("""
    import json, re, sys
    from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
    filler = " ".join(["The kernel reads each row once and writes it once."] * 11)
    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def log_message(self, *a): pass
        def do_POST(self):
            req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            text = req["messages"][-1]["content"]
            skill = any("## Skill:" in str(m.get("content", "")) for m in req["messages"])
            n = int(re.search(r"case (\\d+)", text).group(1))
            ok = n % 3 != 0 if skill else n % 4 == 0
            body = json.dumps({"id": "c", "object": "chat.completion", "model": "student-7b",
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant",
                    "content": ("The answer is magic. " if ok else "No idea. ") + filler}}],
                "usage": {"prompt_tokens": 120, "completion_tokens": 140}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
    s = ThreadingHTTPServer(("127.0.0.1", 0), H)
    print(s.server_address[1], flush=True)
    s.serve_forever()
""")

CHROMIUM = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync"]


def chromium(url, tmp, name, how):
    """Wall seconds of headless Chromium loading `url`, and what it printed: `how` is
    "--screenshot" (the page loaded, laid out and its first screen painted: the time to open it)
    or "--dump-dom" (the DOM after load, which carries the page's own timings)."""
    profile = os.path.join(tmp, "profile-" + name)
    extra = ["--window-size=1200,900", "--screenshot=" + os.path.join(tmp, name + ".png")] \
        if how == "--screenshot" else ["--dump-dom"]
    start = time.perf_counter()
    out = subprocess.run(CHROMIUM + ["--user-data-dir=" + profile] + extra + [url],
                         capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - start
    if out.returncode != 0:
        sys.exit(f"chromium failed on {url}: {out.stderr[-2000:]}")
    return wall, out.stdout


def body_data(dom):
    m = re.search(r"<body([^>]*)>", dom)
    return dict(re.findall(r'data-([a-z-]+)="([^"]*)"', m.group(1))) if m else {}


def main():
    keep = os.environ.get("REPORT_BENCH_KEEP")  # a folder to keep the runs and the page in
    with tempfile.TemporaryDirectory(prefix="upskill-report-bench-") as scratch:
        tmp = keep or scratch
        os.makedirs(tmp, exist_ok=True)
        server = subprocess.Popen([sys.executable, "-c", SERVER], stdout=subprocess.PIPE, text=True)
        try:
            port = int(server.stdout.readline())
            with open(os.path.join(tmp, "upskill.config.yaml"), "w") as f:
                f.write(f"runs_dir: runs\nmodels:\n  student:\n    provider: generic\n"
                        f"    base_url: http://127.0.0.1:{port}/v1\n    model: student-7b\n")
            os.makedirs(os.path.join(tmp, "demo"))
            with open(os.path.join(tmp, "demo", "SKILL.md"), "w") as f:
                f.write("---\nname: demo\ndescription: Says magic. Use when testing.\n---\nSay magic.\n")
            tests = [{"id": f"case-{n}", "input": f"Solve case {n} of the kernel task.",
                      "expected": {"contains": "magic"}} for n in range(CASES)]
            with open(os.path.join(tmp, "tests.json"), "w") as f:
                json.dump(tests, f)
            for runs, seed in ((RUNS, 1), (1, 2)):
                subprocess.run([UPSKILL, "eval", "demo", "-t", "tests.json", "-m", "student", "-j", "8",
                                "--runs", str(runs), "--seed", str(seed)], cwd=tmp, check=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        finally:
            server.kill()
        batches = sorted(os.listdir(os.path.join(tmp, "runs")))
        large = next(b for b in batches
                     if json.load(open(os.path.join(tmp, "runs", b, "plan.json")))["runs"] == RUNS)
        start = time.perf_counter()
        subprocess.run([UPSKILL, "runs", "--html", "report.html"], cwd=tmp, check=True,
                       stdout=subprocess.DEVNULL)
        write_s = time.perf_counter() - start
        page = os.path.join(tmp, "report.html")
        html = open(page, encoding="utf-8").read()
        data = json.loads(re.search(r'id="upskill-data">(.*?)</script>', html, re.S).group(1))
        trials = sum(len(b["trials"]) for b in data["batches"])
        with open(os.path.join(tmp, "baseline.html"), "w") as f:
            f.write("<!doctype html><html><body><p>one line</p></body></html>\n")
        baseline = "file://" + os.path.join(tmp, "baseline.html")
        chromium(baseline, tmp, "warm", "--screenshot")  # the browser's files in the disk cache
        base_wall, _ = chromium(baseline, tmp, "base", "--screenshot")
        print(f"page: {os.path.getsize(page) / 1e6:.1f} MB, {trials} trials in "
              f"{len(data['batches'])} batches; `upskill runs --html` {write_s:.2f} s")
        print(f"one-line page (the baseline): {base_wall:.2f} s to open")
        for name, suffix in (("open", ""), ("search", "#q=no%20idea"), ("open batch", "#b=" + large)):
            slug = name.replace(" ", "-")
            wall, _ = chromium("file://" + page + suffix, tmp, slug, "--screenshot")
            _, dom = chromium("file://" + page + suffix, tmp, slug + "-dom", "--dump-dom")
            d = body_data(dom)
            extra = ", ".join(f"{k} {v}" for k, v in sorted(d.items()))
            print(f"{name:<11} {wall:.2f} s to open ({wall / base_wall:.2f}× the one-line page, "
                  f"+{wall - base_wall:.2f} s); the page's own: {extra}")


if __name__ == "__main__":
    main()
