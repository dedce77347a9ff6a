#!/usr/bin/env python3
"""Writes the example traces in this folder: one made-up session, rendered in every trace format
upskill reads. They were written for the examples (not recorded from a real agent): an agent builds
the rmsnorm kernel-builder project of kernels/rmsnorm, hits a build.toml schema error and a bf16
accuracy bug, fixes both, and is asked for one more check. The final files are exactly
kernels/rmsnorm, so the trace's solution passes the flagship skill's rmsnorm-cpu case.

Run from the repository root: python3 examples/traces/make_examples.py
"""
import json
import os
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "examples" / "traces"
CWD = "/home/dev/rmsnorm"
PROJECT = ROOT / "kernels" / "rmsnorm"
FILES = [
    "build.toml",
    "torch-ext/torch_binding.h",
    "torch-ext/torch_binding.cpp",
    "torch-ext/rmsnorm/__init__.py",
    "rmsnorm_cuda/vec.cuh",
    "rmsnorm_cuda/rmsnorm.h",
    "rmsnorm_cuda/rmsnorm.cu",
    "rmsnorm_cuda/rmsnorm_torch.cpp",
    "rmsnorm_cpu/rmsnorm_cpu.cpp",
]
final = {f: (PROJECT / f).read_text() for f in FILES}

GOOD_CAPS = 'cuda-capabilities = ["8.0", "9.0"]\n'
BAD_GENERAL = '\n[general.cuda]\ncapabilities = ["8.0", "9.0"]\n'
first = dict(final)
first["build.toml"] = final["build.toml"].replace(GOOD_CAPS, "").replace(
    'backends = ["cuda", "cpu"]\n', 'backends = ["cuda", "cpu"]\n' + BAD_GENERAL)
assert first["build.toml"] != final["build.toml"]
GOOD_SUM = """    float sum = 0.f;
    for (std::int64_t c = 0; c < cols; ++c) {
      const float v = static_cast<float>(x[c]);
      sum += v * v;
    }
    const float scale = 1.f / std::sqrt(sum / static_cast<float>(cols) + eps);
"""
BAD_SUM = """    T sum = T(0);
    for (std::int64_t c = 0; c < cols; ++c) sum += x[c] * x[c];
    const float scale = 1.f / std::sqrt(static_cast<float>(sum) / static_cast<float>(cols) + eps);
"""
assert GOOD_SUM in final["rmsnorm_cpu/rmsnorm_cpu.cpp"]
first["rmsnorm_cpu/rmsnorm_cpu.cpp"] = final["rmsnorm_cpu/rmsnorm_cpu.cpp"].replace(GOOD_SUM, BAD_SUM)

TASK = ("Create a kernel-builder project named rmsnorm (edition 5) with a CUDA kernel for H100 "
        "(sm_90, also sm_80) and a CPU kernel for the op rms_norm(Tensor input, Tensor weight, "
        "float eps) -> Tensor, fp32 accumulation, float32/float16/bfloat16. Expose "
        "rmsnorm.rms_norm(input, weight, eps=1e-6).")
BUILD_ERR = ("error: failed to parse build.toml\n  --> build.toml:7:1\n"
             "unknown field `cuda` in [general], expected one of `name`, `version`, `edition`, "
             "`license`, `backends`, `hub`, `python-depends`\n"
             "hint: CUDA capabilities are set per kernel: cuda-capabilities = [...] under "
             "[kernel.<name>]")
TEST_ERR = ("F.....\n=================================== FAILURES ===================================\n"
            "____________________________ test_rms_norm_bf16 _____________________________\n"
            "E   AssertionError: Tensor-likes are not close!\n"
            "E   Mismatched elements: 1873 / 8192 (22.9%)\n"
            "E   Greatest absolute difference: 0.0625 at index (3, 17) (up to 0.016 allowed)\n"
            "FAILED tests/test_rms_norm.py::test_rms_norm_bf16 - AssertionError\n"
            "1 failed, 5 passed in 3.12s")

# The session as events; each format renders them.
EVENTS = [
    ("user", TASK),
    ("say", "I'll lay out the project the way kernel-builder expects: build.toml, the torch "
            "binding in torch-ext/, the CUDA kernel with vectorised loads and a CPU fallback."),
]
for f in FILES:
    EVENTS.append(("write", f, first[f]))
EVENTS += [
    ("bash", "kernel-builder build --backend cpu", 1, BUILD_ERR),
    ("say", "The edition-5 schema has no [general.cuda] table: capabilities belong to each CUDA "
            "kernel as cuda-capabilities. Moving them."),
    ("edit", "build.toml", BAD_GENERAL, ""),
    ("edit", "build.toml", 'backend = "cuda"\ndepends = ["torch"]\n',
     'backend = "cuda"\ndepends = ["torch"]\n'),
    ("edit", "build.toml", '  "rmsnorm_cuda/vec.cuh",\n]\n', '  "rmsnorm_cuda/vec.cuh",\n]\n' + GOOD_CAPS),
    ("bash", "kernel-builder build --backend cpu", 0, "Built build/torch-cpu/rmsnorm (1 kernel, 2 sources)"),
    ("bash", "python -m pytest tests/test_rms_norm.py -q", 1, TEST_ERR),
    ("say", "bf16 fails because the sum of squares is accumulated in bf16 itself. Accumulating in "
            "fp32 and converting once at the end fixes it."),
    ("edit", "rmsnorm_cpu/rmsnorm_cpu.cpp", BAD_SUM, GOOD_SUM),
    ("bash", "python -m pytest tests/test_rms_norm.py -q", 0, "......\n6 passed in 2.95s"),
    ("user", "Good. Check fp16 too, and a hidden size that is not a multiple of 8."),
    ("bash", "python -m pytest tests/test_rms_norm.py -q -k 'half or ragged'", 0, "..\n2 passed in 1.02s"),
    ("say", "Done. rmsnorm builds for cuda (sm_80, sm_90) and cpu. Lessons: in edition 5, CUDA "
            "capabilities go per kernel (cuda-capabilities), never in [general]; accumulate "
            "reductions in fp32 for bf16/fp16; the .cu files include no torch headers, so nvcc "
            "stays fast, and the torch wrapper lives in a .cpp; ragged hidden sizes take the "
            "scalar path."),
]


def apply_edit(content, old, new):
    assert old in content, old
    return content.replace(old, new, 1)


# ---------------------------------------------------------------------------------------------
def claude_jsonl():
    session = "rmsnorm-session"
    lines, n, parent = [], 0, None
    ts = lambda: f"2026-11-30T10:{n // 60:02d}:{n % 60:02d}.000Z"

    def record(kind, message, extra=None):
        nonlocal n, parent
        n += 1
        uuid = f"00000000-0000-4000-8000-{n:012d}"
        r = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": CWD,
             "sessionId": session, "version": "2.0.31", "gitBranch": "main", "type": kind,
             "message": message, "uuid": uuid, "timestamp": ts()}
        r.update(extra or {})
        parent = uuid
        lines.append(r)

    usage = {"input_tokens": 12, "cache_creation_input_tokens": 800, "cache_read_input_tokens": 15000,
             "output_tokens": 300, "service_tier": "standard"}
    lines.append({"type": "summary", "summary": "RMSNorm kernel-builder project", "leafUuid": "x"})
    msg = 0
    for ev in EVENTS:
        kind = ev[0]
        if kind == "user":
            record("user", {"role": "user", "content": ev[1]})
            continue
        msg += 1
        mid = f"msg_{msg:04d}"
        base = {"id": mid, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
                "stop_reason": None, "usage": usage}
        if kind == "say":
            record("assistant", dict(base, content=[{"type": "text", "text": ev[1]}]))
            continue
        tid = f"toolu_{msg:04d}"
        if kind == "write":
            call = {"type": "tool_use", "id": tid, "name": "Write",
                    "input": {"file_path": f"{CWD}/{ev[1]}", "content": ev[2]}}
            result, err, tur = f"File created successfully at: {CWD}/{ev[1]}", False, {"type": "create"}
        elif kind == "edit":
            call = {"type": "tool_use", "id": tid, "name": "Edit",
                    "input": {"file_path": f"{CWD}/{ev[1]}", "old_string": ev[2], "new_string": ev[3]}}
            result, err, tur = f"The file {CWD}/{ev[1]} has been updated.", False, {"oldString": ev[2]}
        else:
            call = {"type": "tool_use", "id": tid, "name": "Bash",
                    "input": {"command": ev[1], "description": "run " + ev[1].split()[0]}}
            err = ev[2] != 0
            result = (f"Exit code {ev[2]}\n" + ev[3]) if err else ev[3]
            tur = {"stdout": ev[3], "stderr": "", "interrupted": False, "isImage": False}
        # Thinking and the call arrive as two lines of one message, as Claude Code writes them.
        record("assistant", dict(base, content=[{"type": "thinking", "thinking": f"Next: {kind} {ev[1][:40]}", "signature": "sig"}]))
        record("assistant", dict(base, content=[call]))
        block = {"tool_use_id": tid, "type": "tool_result", "content": result}
        if err:
            block["is_error"] = True
        record("user", {"role": "user", "content": [block]}, {"toolUseResult": tur})
    lines.append({"type": "file-history-snapshot", "messageId": "x", "snapshot": {}, "isSnapshotUpdate": False})
    d = OUT / "claude-code"
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{session}.jsonl").write_text("".join(json.dumps(l) + "\n" for l in lines))
    # A subagent that reviewed the kernel.
    sub = d / session / "subagents"
    sub.mkdir(parents=True, exist_ok=True)
    sl = [
        {"parentUuid": None, "isSidechain": True, "sessionId": session, "agentId": "a1", "type": "user",
         "cwd": CWD, "version": "2.0.31", "uuid": "s1", "timestamp": "2026-11-30T10:05:00.000Z",
         "message": {"role": "user", "content": "Review rmsnorm_cuda/rmsnorm.cu for out-of-bounds accesses."}},
        {"parentUuid": "s1", "isSidechain": True, "sessionId": session, "agentId": "a1", "type": "assistant",
         "cwd": CWD, "version": "2.0.31", "uuid": "s2", "timestamp": "2026-11-30T10:05:01.000Z",
         "message": {"id": "msg_s1", "role": "assistant", "model": "claude-haiku-4-5", "usage": {"input_tokens": 900, "output_tokens": 40},
                     "content": [{"type": "tool_use", "id": "toolu_s1", "name": "Grep", "input": {"pattern": "threadIdx", "path": "rmsnorm_cuda"}}]}},
        {"parentUuid": "s2", "isSidechain": True, "sessionId": session, "agentId": "a1", "type": "user",
         "cwd": CWD, "version": "2.0.31", "uuid": "s3", "timestamp": "2026-11-30T10:05:02.000Z",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_s1", "content": "rmsnorm_cuda/rmsnorm.cu:41"}]}},
        {"parentUuid": "s3", "isSidechain": True, "sessionId": session, "agentId": "a1", "type": "assistant",
         "cwd": CWD, "version": "2.0.31", "uuid": "s4", "timestamp": "2026-11-30T10:05:03.000Z",
         "message": {"id": "msg_s2", "role": "assistant", "model": "claude-haiku-4-5", "usage": {"input_tokens": 950, "output_tokens": 60},
                     "content": [{"type": "text", "text": "No out-of-bounds access: the tail loop is guarded by col < cols."}]}},
    ]
    (sub / "agent-a1.jsonl").write_text("".join(json.dumps(l) + "\n" for l in sl))


def claude_export():
    out = ["╭───────────────────────────────────────────────────╮",
           "│ ✻ Welcome to Claude Code!                         │",
           "│   /help for help, /status for your current setup  │",
           "│   cwd: /home/dev/rmsnorm                          │",
           "╰───────────────────────────────────────────────────╯", "",
           " ※ Tip: Claude Code v2.0.31", ""]
    for ev in EVENTS:
        kind = ev[0]
        if kind == "user":
            words = ev[1]
            out.append("> " + words)
            out.append("")
        elif kind == "say":
            out.append("⏺ " + ev[1])
            out.append("")
        elif kind == "write":
            lines = ev[2].rstrip("\n").split("\n")
            out.append(f"⏺ Write({ev[1]})")
            out.append(f"  ⎿  Wrote {len(lines)} lines to {ev[1]}")
            shown = lines if len(lines) <= 12 else lines[:8]
            for i, l in enumerate(shown, 1):
                out.append(f"     {i:>2} {l}".rstrip())
            if len(lines) > 12:
                out.append(f"     … +{len(lines) - 8} lines (ctrl+o to expand)")
            out.append("")
        elif kind == "edit":
            removed = ev[2].rstrip("\n").split("\n") if ev[2] else []
            added = ev[3].rstrip("\n").split("\n") if ev[3] else []
            out.append(f"⏺ Update({ev[1]})")
            out.append(f"  ⎿  Updated {ev[1]} with {len(added)} additions and {len(removed)} removals")
            for l in removed:
                out.append(f"       - {l}".rstrip())
            for l in added:
                out.append(f"       + {l}".rstrip())
            out.append("")
        else:
            out.append(f"⏺ Bash({ev[1]})")
            body = ev[3].split("\n")
            if ev[2] != 0:
                body = ["Error: Exit code " + str(ev[2])] + body
            out.append("  ⎿  " + body[0])
            rest = body[1:]
            if len(rest) > 5:
                for l in rest[:4]:
                    out.append("     " + l)
                out.append(f"     … +{len(rest) - 4} lines (ctrl+r to expand)")
            else:
                for l in rest:
                    out.append("     " + l)
            out.append("")
    (OUT / "claude-export.txt").write_text("\n".join(out) + "\n")


def codex_rollout():
    lines = []
    t = lambda i: f"2026-11-30T11:00:{i % 60:02d}.000Z"
    add = lambda typ, payload: lines.append({"timestamp": t(len(lines)), "type": typ, "payload": payload})
    add("session_meta", {"id": "0199c0de-0000-7000-8000-000000000001", "timestamp": t(0), "cwd": CWD,
                         "originator": "codex_cli_rs", "cli_version": "0.58.0", "instructions": None,
                         "source": "cli", "model_provider": "openai"})
    add("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>\n  <cwd>" + CWD + "</cwd>\n</environment_context>"}]})
    add("turn_context", {"cwd": CWD, "approval_policy": "on-request", "sandbox_policy": {"mode": "workspace-write"}, "model": "gpt-5-codex", "effort": "medium", "summary": "auto"})
    tokens = 0
    call = 0
    for ev in EVENTS:
        kind = ev[0]
        if kind == "user":
            add("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": ev[1]}]})
            add("event_msg", {"type": "user_message", "message": ev[1], "images": []})
            continue
        if kind == "say":
            add("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": "**Planning**"}], "content": None, "encrypted_content": "gAAAA"})
            add("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": ev[1]}]})
            add("event_msg", {"type": "agent_message", "message": ev[1]})
        else:
            call += 1
            cid = f"call_{call:04d}"
            if kind in ("write", "edit"):
                path = ev[1]
                if kind == "write":
                    patch = f"*** Begin Patch\n*** Add File: {path}\n" + "".join("+" + l + "\n" for l in ev[2].rstrip("\n").split("\n")) + "*** End Patch\n"
                else:
                    old = ev[2].rstrip("\n").split("\n") if ev[2] else []
                    new = ev[3].rstrip("\n").split("\n") if ev[3] else []
                    patch = f"*** Begin Patch\n*** Update File: {path}\n@@\n" + "".join("-" + l + "\n" for l in old) + "".join("+" + l + "\n" for l in new) + "*** End Patch\n"
                add("response_item", {"type": "custom_tool_call", "status": "completed", "call_id": cid, "name": "apply_patch", "input": patch})
                add("response_item", {"type": "custom_tool_call_output", "call_id": cid, "output": json.dumps({"output": f"Success. Updated the following files:\n{'A' if kind == 'write' else 'M'} {path}\n", "metadata": {"exit_code": 0, "duration_seconds": 0.0}})})
            else:
                add("response_item", {"type": "function_call", "name": "shell_command", "arguments": json.dumps({"command": ev[1], "workdir": CWD}), "call_id": cid})
                add("response_item", {"type": "function_call_output", "call_id": cid, "output": f"Exit code: {ev[2]}\nWall time: 3.1 seconds\nOutput:\n{ev[3]}"})
        tokens += 4000
        add("event_msg", {"type": "token_count", "info": {"total_token_usage": {"input_tokens": tokens * 5, "cached_input_tokens": tokens * 4, "output_tokens": tokens // 10, "reasoning_output_tokens": tokens // 20, "total_tokens": tokens * 5 + tokens // 10}, "last_token_usage": {}, "model_context_window": 272000}, "rate_limits": None})
    (OUT / "codex-rollout.jsonl").write_text("".join(json.dumps(l) + "\n" for l in lines))


def chat_messages(style):
    """OpenAI chat, Anthropic messages or fast-agent JSON."""
    msgs = [{"role": "system", "content": "You are a coding agent with write_file, edit_file and bash tools."}] if style == "openai" else []
    call = 0
    for ev in EVENTS:
        kind = ev[0]
        if kind == "user":
            if style == "openai":
                msgs.append({"role": "user", "content": ev[1]})
            elif style == "anthropic":
                msgs.append({"role": "user", "content": [{"type": "text", "text": ev[1]}]})
            else:
                msgs.append({"role": "user", "content": [{"type": "text", "text": ev[1]}]})
            continue
        if kind == "say":
            if style == "openai":
                msgs.append({"role": "assistant", "content": ev[1]})
            elif style == "anthropic":
                msgs.append({"role": "assistant", "content": [{"type": "text", "text": ev[1]}], "model": "claude-sonnet-4-5", "usage": {"input_tokens": 1000, "output_tokens": 120}})
            else:
                msgs.append({"role": "assistant", "content": [{"type": "text", "text": ev[1]}],
                             "channels": {"fast-agent-usage": [{"type": "text", "text": json.dumps({"turn": {"input_tokens": 1000, "output_tokens": 120, "model": "kimi-k2"}})}]}})
            continue
        call += 1
        cid = f"call_{call}"
        if kind == "write":
            name, args, result, err = "write_file", {"path": ev[1], "content": ev[2]}, f"wrote {ev[1]}", False
        elif kind == "edit":
            name, args, result, err = "edit_file", {"path": ev[1], "old_str": ev[2], "new_str": ev[3]}, f"edited {ev[1]}", False
        else:
            name, args = "bash", {"command": ev[1]}
            err = ev[2] != 0
            result = (f"Exit code: {ev[2]}\n" if err else "") + ev[3]
        if style == "openai":
            msgs.append({"role": "assistant", "content": None, "tool_calls": [{"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]})
            msgs.append({"role": "tool", "tool_call_id": cid, "content": result})
        elif style == "anthropic":
            msgs.append({"role": "assistant", "content": [{"type": "tool_use", "id": cid, "name": name, "input": args}], "model": "claude-sonnet-4-5", "usage": {"input_tokens": 1000, "output_tokens": 80}})
            block = {"type": "tool_result", "tool_use_id": cid, "content": result}
            if err:
                block["is_error"] = True
            msgs.append({"role": "user", "content": [block]})
        else:
            msgs.append({"role": "assistant", "content": [], "tool_calls": {cid: {"method": "tools/call", "params": {"name": name, "arguments": args}}}, "stop_reason": "toolUse"})
            msgs.append({"role": "user", "content": [], "tool_results": {cid: {"content": [{"type": "text", "text": result}], "isError": err}}})
    return msgs


def responses_items():
    items = []
    call = 0
    for ev in EVENTS:
        kind = ev[0]
        if kind == "user":
            items.append({"type": "message", "role": "user", "content": [{"type": "input_text", "text": ev[1]}]})
        elif kind == "say":
            items.append({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": ev[1]}]})
        else:
            call += 1
            cid = f"call_{call}"
            if kind == "bash":
                items.append({"type": "function_call", "name": "shell", "arguments": json.dumps({"command": ["bash", "-lc", ev[1]]}), "call_id": cid})
                items.append({"type": "function_call_output", "call_id": cid, "output": json.dumps({"output": ev[3], "metadata": {"exit_code": ev[2], "duration_seconds": 1.2}})})
            elif kind == "write":
                items.append({"type": "function_call", "name": "write_file", "arguments": json.dumps({"path": ev[1], "content": ev[2]}), "call_id": cid})
                items.append({"type": "function_call_output", "call_id": cid, "output": "ok"})
            else:
                items.append({"type": "function_call", "name": "str_replace_based_edit_tool", "arguments": json.dumps({"command": "str_replace", "path": ev[1], "old_str": ev[2], "new_str": ev[3]}), "call_id": cid})
                items.append({"type": "function_call_output", "call_id": cid, "output": "ok"})
    return {"model": "gpt-5", "input": items[:1], "output": items[1:], "usage": {"input_tokens": 52000, "output_tokens": 9000, "input_tokens_details": {"cached_tokens": 40000}, "output_tokens_details": {"reasoning_tokens": 3000}}}


def fast_agent_text():
    out = []
    for ev in EVENTS:
        if ev[0] == "user":
            out += ["---USER", ev[1]]
        elif ev[0] == "say":
            out += ["---ASSISTANT", ev[1]]
        elif ev[0] == "write":
            out += ["---ASSISTANT", f"Writing `{ev[1]}`:", "```", ev[2].rstrip("\n"), "```"]
    out += ["---RESOURCE", json.dumps({"type": "resource", "resource": {"uri": "file:///home/dev/rmsnorm/build.toml", "mimeType": "text/plain", "text": final["build.toml"]}})]
    return "\n".join(out) + "\n"


def markdown():
    out = ["# Session: rmsnorm kernel (transcript)", ""]
    for ev in EVENTS:
        if ev[0] == "user":
            out += ["## User", "", ev[1], ""]
        elif ev[0] == "say":
            out += ["## Assistant", "", ev[1], ""]
        elif ev[0] == "write":
            lang = {".toml": "toml", ".py": "python", ".cu": "cuda", ".cuh": "cuda"}.get(os.path.splitext(ev[1])[1], "cpp")
            out += [f"**`{ev[1]}`**", f"```{lang}", ev[2].rstrip("\n"), "```", ""]
        elif ev[0] == "bash":
            out += [f"```console", f"$ {ev[1]}", ev[3], "```", ""]
    return "\n".join(out)


claude_jsonl()
claude_export()
codex_rollout()
(OUT / "openai-chat.json").write_text(json.dumps({"model": "gpt-4.1", "messages": chat_messages("openai")}, indent=1) + "\n")
(OUT / "anthropic-messages.json").write_text(json.dumps(chat_messages("anthropic"), indent=1) + "\n")
(OUT / "fast-agent-history.json").write_text(json.dumps({"messages": chat_messages("fast-agent")}, indent=1) + "\n")
(OUT / "responses.json").write_text(json.dumps(responses_items(), indent=1) + "\n")
(OUT / "fast-agent-history.txt").write_text(fast_agent_text())
(OUT / "transcript.md").write_text(markdown())
print("wrote", sorted(p.name for p in OUT.iterdir()))
