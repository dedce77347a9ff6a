#!/usr/bin/env python3
"""Parsing a large Claude Code session: `upskill trace --json` (parse, analysis and digest) against a
baseline that only decodes every line with Python's json module (no analysis at all), on the same
file in the same run.

Usage: bench/trace_parse.py [UPSKILL] [MB ...] [--shape realistic|short|synthetic|all]
                            [--keep DIR] [--repeat N] [--python PYTHON ...]
       (defaults: build/upskill, 100 MB, every shape, one run each; with --repeat the fastest of N
       runs and the largest peak memory; the baseline under this Python and /usr/bin/python3, the
       ratio against the faster)

Three shapes of session:
  realistic  records shaped like real Claude Code sessions: every record carries the envelope
             (parentUuid, isSidechain, userType, cwd, sessionId, version, gitBranch, uuid,
             timestamp); assistant messages arrive one content block per line (thinking, text,
             tool_use) sharing message.id, with usage and requestId; tool results carry the
             structured toolUseResult that duplicates the output (Bash stdout/stderr, Read file,
             Edit originalFile + structuredPatch, Write content + patch); file-history-snapshot,
             summary and system records in between. Tools like a kernel session (Bash 35 %,
             Read 25 %, Edit 20 %, Write 5 %, Grep/Glob/TodoWrite the rest); outputs mostly
             200 B - 4 KB with a few 50 - 200 KB build logs; written files 2 - 30 KB over 60 paths.
             Deterministic (seeded).
  short      the same records, as short as public sessions' usually are (about 800 bytes a line):
             prompts, messages and thinking of tens to a few hundred bytes, tool outputs and files
             of a few hundred, no build logs; many more records per megabyte.
  synthetic  the old bench: tool calls with 64 KB outputs and 16 KB written files, every tenth
             command failing.

For each shape and size it prints wall seconds, CPU seconds (user + system over all threads: upskill
decodes on a second thread and hashes the file on a third), MB/s and peak resident memory of both
programs, and the ratios baseline / upskill for CPU, wall time and memory (above 1: upskill is
faster / smaller), the baseline being the fastest of the Pythons it ran under. The CPU ratio is the one that counts: it cannot be bought with threads. It also
prints the floor no reader can go below — reading the file and taking its SHA-256 (hashlib,
OpenSSL), which `upskill trace` must do for skill_meta.json — and each program's CPU time as a
multiple of it.
"""
import hashlib
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# ---------------------------------------------------------------------------------------------
# The synthetic shape (the bench of issue 7).


def write_synthetic(path, megabytes):
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


# ---------------------------------------------------------------------------------------------
# The realistic shape.

CWD = "/home/dev/flash-rmsnorm"
WORDS = ("the kernel block warp thread shared memory tile load store vectorised float4 half bf16 "
         "reduction rsqrt epsilon weight input output stride contiguous launch grid occupancy "
         "register spill bank conflict coalesced global latency bandwidth H100 sm_90 sm_80 torch "
         "binding build toml cmake ninja nvcc ptxas error warning fix test pass fail benchmark "
         "check compare reference tolerance atol rtol cuda stream device host pointer template "
         "dispatch dtype accumulate fp32 so now next I will let me first then because this that "
         "should would could it is was we need to and or but with for from into on at by").split()
CODE = [
    "#include <cuda_runtime.h>", "#include <torch/extension.h>", "", "namespace {",
    "template <typename T, int kVec>", "__global__ void rms_norm_kernel(const T* __restrict__ in,",
    "    const T* __restrict__ weight, T* __restrict__ out, int hidden, float eps) {",
    "  const int row = blockIdx.x;", "  float sum = 0.f;",
    "  for (int i = threadIdx.x * kVec; i < hidden; i += blockDim.x * kVec) {",
    "    float4 v = *reinterpret_cast<const float4*>(in + row * hidden + i);",
    "    sum += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;", "  }",
    "  sum = block_reduce_sum(sum);", "  const float scale = rsqrtf(sum / hidden + eps);",
    "  __syncthreads();", "}", "}  // namespace", "", "torch::Tensor rms_norm(torch::Tensor input,",
    "    torch::Tensor weight, double eps) {", "  TORCH_CHECK(input.is_cuda(), \"input on CUDA\");",
    "  auto out = torch::empty_like(input);", "  const int rows = input.numel() / input.size(-1);",
    "  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, input.scalar_type(), \"rms\", [&] {",
    "    rms_norm_kernel<scalar_t, 4><<<rows, 256, 0, stream>>>(", "  });", "  return out;",
    "def test_rms_norm_matches_reference(dtype, shape):",
    "    x = torch.randn(shape, dtype=dtype, device=\"cuda\")",
    "    torch.testing.assert_close(ops.rms_norm(x, w, 1e-6), reference(x, w), atol=1e-2, rtol=1e-2)",
    "[general]", "name = \"flash_rmsnorm\"", "backends = [\"cuda\", \"cpu\"]",
    "    // \u2713 vectorised path: hidden % 4 == 0 \u2192 float4 loads",
]
BUILD_LOG = [
    "[{}/{}] Building CUDA object CMakeFiles/_ops.dir/csrc/rms_norm.cu.o",
    "ptxas info    : Used {} registers, 384 bytes cmem[0]",
    "ptxas info    : Compiling entry function '_Z15rms_norm_kernelIfLi4EEvPKT_S2_PS0_if' for 'sm_90'",
    "[{}/{}] Linking CXX shared module _ops.abi3.so",
    "csrc/rms_norm.cu({}): warning #177-D: variable \"tid\" was declared but never referenced",
    "tests/test_rms_norm.py::test_rms_norm_matches_reference[{}-shape1] PASSED",
]
DIRS = ["csrc", "csrc/cuda", "torch-ext/flash_rmsnorm", "tests", "benchmarks", "scripts"]
EXTS = [".cu", ".cuh", ".cpp", ".h", ".py", ".toml"]


class Realistic:
    """Writes one deterministic session record by record (random.Random(15))."""

    scale = 1.0  # of every text, output and file's size
    logs = 0.02  # the share of commands that print a build log of 50 - 200 KB

    def __init__(self, out):
        self.out = out
        self.rng = random.Random(15)
        rng = self.rng
        self.prose = " ".join(rng.choice(WORDS) for _ in range(400_000))
        self.code = [rng.choice(CODE) + ("" if rng.random() < 0.7 else f"  // step {i}")
                     for i in range(60_000)]
        self.paths = [f"{CWD}/{rng.choice(DIRS)}/part{i}{rng.choice(EXTS)}" for i in range(60)]
        self.files = {}  # path -> current contents (what the agent wrote)
        self.parent = None
        self.n = 0
        self.clock = 1_764_500_000.0
        self.tool_calls = 0

    # -- pieces ----------------------------------------------------------------------------
    def scaled(self, lo, hi):
        return max(8, int(lo * self.scale)), max(16, int(hi * self.scale))

    def text(self, lo, hi):
        size = self.rng.randint(*self.scaled(lo, hi))
        start = self.rng.randrange(0, len(self.prose) - size)
        return self.prose[start:start + size]

    def source(self, lo, hi):
        size = self.rng.randint(*self.scaled(lo, hi))
        start = self.rng.randrange(0, len(self.code) - 2000)
        lines, total = [], 0
        for line in self.code[start:]:
            lines.append(line)
            total += len(line) + 1
            if total >= size:
                break
        return "\n".join(lines) + "\n"

    def uuid(self):
        self.n += 1
        r = self.rng.getrandbits(64)
        return f"{r >> 32:08x}-{(r >> 16) & 0xffff:04x}-4{r & 0xfff:03x}-8000-{self.n:012x}"

    def envelope(self, kind):
        self.clock += self.rng.uniform(0.2, 4.0)
        ms = int(self.clock * 1000) % 1000
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(self.clock)) + f".{ms:03d}Z"
        uid = self.uuid()
        rec = {"parentUuid": self.parent, "isSidechain": False, "userType": "external",
               "cwd": CWD, "sessionId": "5f0c6a43-9d1e-4b4a-9a3e-2c1f0e7d8b21",
               "version": "2.0.31", "gitBranch": "main", "type": kind, "uuid": uid,
               "timestamp": stamp}
        self.parent = uid
        return rec

    def write(self, rec):
        self.out.write(json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n")

    # -- records ---------------------------------------------------------------------------
    def user_prompt(self, text):
        rec = self.envelope("user")
        rec["message"] = {"role": "user", "content": text}
        self.write(rec)
        snap = {"type": "file-history-snapshot", "messageId": rec["uuid"],
                "snapshot": {"messageId": rec["uuid"], "timestamp": rec["timestamp"],
                             "trackedFileBackups": {
                                 p[len(CWD) + 1:]: {"backupFileName": f"{zlib.crc32(p.encode()):08x}@v3",
                                                    "version": 3, "backupTime": rec["timestamp"]}
                                 for p in list(self.files)[:20]}},
                "isSnapshotUpdate": False}
        self.write(snap)

    def assistant_blocks(self, blocks, stop_reason):
        msg_id = f"msg_01{self.rng.getrandbits(96):024x}"
        request = f"req_011{self.rng.getrandbits(96):024x}"
        usage = {"input_tokens": self.rng.randint(2, 12),
                 "cache_creation_input_tokens": self.rng.randint(0, 4000),
                 "cache_read_input_tokens": self.rng.randint(10_000, 150_000),
                 "cache_creation": {"ephemeral_5m_input_tokens": 0,
                                    "ephemeral_1h_input_tokens": 0},
                 "output_tokens": self.rng.randint(1, 2000), "service_tier": "standard"}
        for i, block in enumerate(blocks):
            rec = self.envelope("assistant")
            rec["message"] = {"id": msg_id, "type": "message", "role": "assistant",
                              "model": "claude-sonnet-4-5-20250929", "content": [block],
                              "stop_reason": stop_reason if i == len(blocks) - 1 else None,
                              "stop_sequence": None, "usage": usage}
            rec["requestId"] = request
            self.write(rec)

    def tool_result(self, tool_id, content, is_error, structured):
        rec = self.envelope("user")
        block = {"tool_use_id": tool_id, "type": "tool_result", "content": content}
        if is_error:
            block["is_error"] = True
        rec["message"] = {"role": "user", "content": [block]}
        rec["toolUseResult"] = structured
        self.write(rec)

    # -- tools -----------------------------------------------------------------------------
    def bash(self):
        rng = self.rng
        command = rng.choice(["cd build && cmake --build . -j8", "python -m pytest tests -x -q",
                              "nvcc -O3 -arch=sm_90 -c csrc/rms_norm.cu -o /tmp/k.o",
                              "git status --short", "ls -la csrc", "python benchmarks/bench.py",
                              "kernel-builder build --backend cuda", "nvidia-smi"])
        if rng.random() < self.logs:
            lines, total, size = [], 0, rng.randint(50_000, 200_000)
            while total < size:
                line = rng.choice(BUILD_LOG).format(*(rng.randint(1, 400) for _ in range(2)))
                lines.append(line)
                total += len(line) + 1
            out = "\n".join(lines)
        else:
            out = self.source(200, 4000) if rng.random() < 0.3 else self.text(200, 4000)
        failed = rng.random() < 0.12
        if failed:
            code = rng.choice([1, 2, 127])
            content = f"Exit code {code}\n{out}"
            structured = f"Error: Exit code {code}\n{out}"
        else:
            content = out
            structured = {"stdout": out, "stderr": "", "interrupted": False, "isImage": False}
        return ("Bash", {"command": command, "description": self.text(20, 60)}, content, failed,
                structured)

    def numbered(self, contents):
        return "\n".join(f"{i:6d}\u2192{line}" for i, line in
                         enumerate(contents.split("\n")[:-1], start=1))

    def read(self):
        path = self.rng.choice(self.paths)
        contents = self.files.get(path) or self.source(500, 8000)
        lines = contents.count("\n")
        structured = {"type": "text", "file": {"filePath": path, "content": contents,
                                               "numLines": lines, "startLine": 1,
                                               "totalLines": lines}}
        return "Read", {"file_path": path}, self.numbered(contents), False, structured

    def write_file(self):
        path = self.rng.choice(self.paths)
        contents = self.source(2000, 30_000)
        old = self.files.get(path)
        self.files[path] = contents
        patch = [{"oldStart": 1, "oldLines": (old or "").count("\n"), "newStart": 1,
                  "newLines": contents.count("\n"),
                  "lines": ["+" + line for line in contents.split("\n")[:40]]}]
        structured = {"type": "update" if old else "create", "filePath": path,
                      "content": contents, "structuredPatch": patch if old else []}
        verb = "updated" if old else "created"
        return ("Write", {"file_path": path, "content": contents},
                f"File {verb} successfully at: {path}", False, structured)

    def edit(self):
        written = [p for p in self.paths if p in self.files]
        if not written:
            return self.write_file()
        path = self.rng.choice(written)
        original = self.files[path]
        lines = original.split("\n")
        at = self.rng.randrange(0, max(1, len(lines) - 4))
        old = "\n".join(lines[at:at + self.rng.randint(1, 4)])
        if not old.strip() or original.count(old) != 1:
            old = original[: min(len(original), 120)]
        new = old + "\n" + self.source(40, 600).rstrip("\n")
        self.files[path] = original.replace(old, new, 1)
        patch = [{"oldStart": at + 1, "oldLines": old.count("\n") + 1, "newStart": at + 1,
                  "newLines": new.count("\n") + 1,
                  "lines": [" " + line for line in lines[max(0, at - 3):at]] +
                           ["-" + line for line in old.split("\n")] +
                           ["+" + line for line in new.split("\n")]}]
        structured = {"filePath": path, "oldString": old, "newString": new,
                      "originalFile": original, "structuredPatch": patch,
                      "userModified": False, "replaceAll": False}
        snippet = self.numbered(self.files[path])[:max(200, int(1500 * self.scale))]
        content = (f"The file {path} has been updated. Here's the result of running `cat -n` on a "
                   f"snippet of the edited file:\n{snippet}")
        return ("Edit", {"file_path": path, "old_string": old, "new_string": new}, content, False,
                structured)

    def small_tool(self):
        rng = self.rng
        kind = rng.choice(["Grep", "Glob", "TodoWrite"])
        if kind == "Grep":
            out = "\n".join(f"{rng.choice(self.paths)}:{rng.randint(1, 400)}:{rng.choice(CODE)}"
                            for _ in range(rng.randint(1, 20)))
            return ("Grep", {"pattern": "rsqrt", "path": CWD, "output_mode": "content"}, out,
                    False, {"mode": "content", "numFiles": 3, "filenames": [],
                            "content": out, "numLines": out.count("\n") + 1})
        if kind == "Glob":
            names = rng.sample(self.paths, rng.randint(1, 12))
            return ("Glob", {"pattern": "**/*.cu"}, "\n".join(names), False,
                    {"filenames": names, "durationMs": 12, "numFiles": len(names),
                     "truncated": False})
        todos = [{"content": self.text(20, 80), "status": rng.choice(["pending", "completed"]),
                  "activeForm": self.text(20, 80)} for _ in range(rng.randint(2, 8))]
        return ("TodoWrite", {"todos": todos},
                "Todos have been modified successfully. Ensure that you continue to use the todo "
                "list to track your progress.", False, {"oldTodos": todos[1:], "newTodos": todos})

    def tool_step(self):
        r = self.rng.random()
        tool = (self.bash if r < 0.35 else self.read if r < 0.60 else self.edit if r < 0.80
                else self.write_file if r < 0.85 else self.small_tool)
        name, inp, content, failed, structured = tool()
        blocks = []
        if self.rng.random() < 0.5:
            blocks.append({"type": "thinking", "thinking": self.text(100, 3000),
                           "signature": "Eo" + "x" * int(self.rng.randint(200, 800) *
                                                         min(1.0, self.scale * 10))})
        if self.rng.random() < 0.6:
            blocks.append({"type": "text", "text": self.text(100, 3000)})
        tool_id = f"toolu_01{self.rng.getrandbits(96):024x}"
        blocks.append({"type": "tool_use", "id": tool_id, "name": name, "input": inp})
        self.assistant_blocks(blocks, "tool_use")
        if isinstance(content, str) and self.rng.random() < 0.3:
            content = [{"type": "text", "text": content}]
        self.tool_result(tool_id, content, failed, structured)
        self.tool_calls += 1

    def session(self, megabytes):
        self.write({"type": "summary", "summary": "Fused RMSNorm kernel for H100",
                    "leafUuid": "00000000-0000-4000-8000-000000000000"})
        self.user_prompt("Build a kernel-builder project with a fused RMSNorm CUDA kernel for "
                         "H100 (sm_90), float32/float16/bfloat16, with tests and a benchmark.")
        while self.out.tell() < megabytes << 20:
            self.tool_step()
            r = self.rng.random()
            if r < 0.025:
                self.assistant_blocks([{"type": "text", "text": self.text(100, 1500)}],
                                      "end_turn")
                self.user_prompt(self.text(40, 600))
            elif r < 0.03:
                rec = self.envelope("system")
                rec.update({"subtype": "compact_boundary", "content": "Conversation compacted",
                            "level": "info", "isMeta": False,
                            "compactMetadata": {"trigger": "auto", "preTokens": 155_000}})
                self.write(rec)
            elif r < 0.032:
                self.write({"type": "summary", "summary": self.text(30, 80),
                            "leafUuid": self.parent})
        return self.tool_calls


class Short(Realistic):
    """Realistic records, as short as public sessions' (about 800 bytes a line on average)."""

    scale = 0.03
    logs = 0.0


def write_realistic(path, megabytes):
    with open(path, "w", encoding="utf-8") as f:
        return Realistic(f).session(megabytes)


def write_short(path, megabytes):
    with open(path, "w", encoding="utf-8") as f:
        return Short(f).session(megabytes)


WRITERS = {"realistic": write_realistic, "short": write_short, "synthetic": write_synthetic}


# ---------------------------------------------------------------------------------------------
# Measuring.


def run(cmd):
    """Wall seconds, CPU seconds (user + system, every thread), peak resident memory (KB) of this
    child alone, and its stdout."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, stdout=out)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            sys.exit(f"{cmd[0]} exited with {proc.returncode}")
        out.seek(0)
        return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, out.read()


BASELINE = "import json,sys\nfor line in open(sys.argv[1], encoding='utf-8'):\n    json.loads(line)\n"
FLOOR = ("import hashlib,sys\nh = hashlib.sha256()\nwith open(sys.argv[1], 'rb') as f:\n"
         "    while block := f.read(1 << 20):\n        h.update(block)\n")
NOTHING = "import hashlib,sys\n"  # the floor's Python starting, to take off its time


def best_of(repeat, *cmds):
    """Each command run `repeat` times, taking turns (so that both see the same load): for each,
    the fastest wall time, the least CPU time, the largest peak memory and the output."""
    runs = [[run(cmd) for cmd in cmds] for _ in range(repeat)]
    return [(min(r[i][0] for r in runs), min(r[i][1] for r in runs), max(r[i][2] for r in runs),
             runs[-1][i][3]) for i in range(len(cmds))]


def interpreters(given):
    """The Pythons to take the baseline with: those given, or this one and the system's (Debian's
    build is compiled with profile-guided optimisation and decodes JSON faster than a Python built
    by pyenv), each once."""
    found = {}
    for python in given or [sys.executable, "/usr/bin/python3"]:
        if os.path.exists(python):
            found.setdefault(os.path.realpath(python), python)
    return list(found.values())


def version_of(python):
    return subprocess.run([python, "-c", "import platform; print(platform.python_version())"],
                          capture_output=True, text=True, check=True).stdout.strip()


def measure(upskill, shape, megabytes, folder, repeat, pythons):
    path = os.path.join(folder, f"{shape}-{megabytes}mb.jsonl")
    if not os.path.exists(path):
        WRITERS[shape](path, megabytes)
    size = os.path.getsize(path) / (1 << 20)
    with open(path, "rb") as f:
        lines = sum(1 for _ in f)
    results = best_of(repeat, [upskill, "trace", "--json", path],
                      [sys.executable, "-c", FLOOR, path], [sys.executable, "-c", NOTHING],
                      *[[python, "-c", BASELINE, path] for python in pythons])
    (ours_s, ours_cpu, ours_kb, out), (_, floor_cpu, _, _), (_, start_cpu, _, _) = results[:3]
    baselines = [(f"json.loads, Python {version_of(python)} ({python})", *r[:3])
                 for python, r in zip(pythons, results[3:])]
    floor = max(floor_cpu - start_cpu, 1e-3)
    summary = json.loads(out)
    c = summary["counts"]
    print(f"{shape}, {size:.0f} MB, {lines} lines ({(size * (1 << 20)) / lines:.0f} B a line): "
          f"{c['turns']} turns, {c['tool_calls']} tool calls, "
          f"{c['commands']} commands ({c['failed_commands']} failed), {c['files']} files, "
          f"digest {summary['digest']['tokens']} tokens")
    print(f"  floor     read + SHA-256 (hashlib) {floor:6.2f} s CPU")
    for who, s, cpu, kb in [("upskill trace --json", ours_s, ours_cpu, ours_kb)] + baselines:
        print(f"  {who}\n      {s:6.2f} s wall  {cpu:6.2f} s CPU  {size / s:7.1f} MB/s  "
              f"peak RSS {kb / 1024:6.0f} MB  CPU {cpu / floor:5.1f}x the floor")
    # The ratio is taken against the fastest baseline: the one hardest to beat.
    who, base_s, base_cpu, base_kb = min(baselines, key=lambda b: b[2])
    print(f"  ratio {who} / upskill: CPU {base_cpu / ours_cpu:.2f}x, "
          f"wall {base_s / ours_s:.2f}x, memory {base_kb / ours_kb:.2f}x")
    return base_s, ours_s, base_kb, ours_kb


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("upskill", nargs="?", default=os.path.join(ROOT, "build", "upskill"))
    p.add_argument("megabytes", nargs="*", type=int, default=[100])
    p.add_argument("--shape", choices=["realistic", "short", "synthetic", "all", "both"],
                   default="all", help="both: realistic and synthetic, as before")
    p.add_argument("--keep", help="write (and reuse) the sessions in this folder")
    p.add_argument("--repeat", type=int, default=1,
                   help="run both programs this many times, taking turns; report the fastest")
    p.add_argument("--python", action="append",
                   help="an interpreter to take the baseline with (again for more); default: this "
                        "one and /usr/bin/python3; the ratio is against the fastest")
    args = p.parse_args()
    pythons = interpreters(args.python)
    shapes = {"all": ["realistic", "short", "synthetic"], "both": ["realistic", "synthetic"]}.get(
        args.shape, [args.shape])
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or tmp
        os.makedirs(folder, exist_ok=True)
        for shape in shapes:
            for mb in args.megabytes:
                measure(args.upskill, shape, mb, folder, args.repeat, pythons)


if __name__ == "__main__":
    main()
