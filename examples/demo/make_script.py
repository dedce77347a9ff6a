#!/usr/bin/env python3
"""Writes examples/demo/script.json: the rules the scripted stand-in models of the offline demo
answer from (scripts/demo.sh). They are not models. The "teacher" writes a small skill and tests for
the example trace; the "student" answers the flagship skill's cases well when a skill is in its
prompt (the reference kernels of kernels/ for kernel cases) and worse without one, so the demo shows
a lift that is scripted, not measured.

Run from the repository root: python3 examples/demo/make_script.py
"""
import json
import os
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
FLAGSHIP = json.loads((ROOT / "skills/kernel-builder-cuda-kernels/skill_meta.json").read_text())["tests"]
KERNEL_CASES = json.loads((ROOT / "kernels/cases.json").read_text())["cases"]
PROJECT_OF = {"rmsnorm-cpu": "rmsnorm", "rmsnorm-bf16-sm90": "rmsnorm", "layernorm-gelu-sm90": "layernorm-gelu",
              "geglu-sm90": "geglu", "rope-sm90": "rope", "adaln-sm90": "adaln"}
LANG = {".toml": "toml", ".py": "python", ".cu": "cuda", ".cuh": "cuda", ".h": "cpp", ".cpp": "cpp"}


def project_answer(name):
    root = ROOT / "kernels" / name
    blocks = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        lang = LANG.get(path.suffix, "")
        blocks.append(f'```{lang} title="{rel}"\n{path.read_text()}```')
    return f"Here is the complete kernel-builder project `{name}`:\n\n" + "\n\n".join(blocks) + "\n"


def key(text):
    """A plain run of the case's input, safe in any regex dialect."""
    runs = re.findall(r"[A-Za-z0-9 ]{24,}", text)
    return max(runs, key=len)[:60]


BAD_PROJECT = """I'd write it as a PyTorch C++ extension:

```python title="setup.py"
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension
setup(name="op", ext_modules=[CUDAExtension("op", ["op.cu"])], cmdclass={"build_ext": BuildExtension})
```

```toml title="build.toml"
[general]
name = "op"

[general.cuda]
capabilities = ["9.0"]
```
"""

GOOD = {
    "buildtoml-h100": """```toml
[general]
name = "rmsnorm"
version = 1
edition = 5
license = "Apache-2.0"
backends = ["cuda"]

[torch]
src = ["torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h"]

[kernel.rmsnorm]
backend = "cuda"
depends = ["torch"]
src = ["rmsnorm_cuda/rmsnorm.cu"]
cuda-capabilities = ["9.0"]
```""",
    "binding-registration": """```cpp
#include <torch/library.h>

#include "registration.h"
#include "torch_binding.h"

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("rms_norm(Tensor input, Tensor weight, float eps) -> Tensor");
  ops.impl("rms_norm", torch::kCUDA, &rms_norm);
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
```""",
    "python-package": """```python
import torch

from ._ops import ops


def rms_norm(input: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    return ops.rms_norm(input, weight, eps)
```""",
    "warp-reduction": """```cuda
__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffff, v, offset);
  return v;
}
```""",
    "bf16-vector-loads": """Load a `uint4` (8 bf16 values) per thread while `i + 8 <= hidden`, convert pairs with
`__bfloat1622float2` on `__nv_bfloat162`, and handle the tail (`hidden % 8` elements) with a scalar
loop using `__bfloat162float`.""",
    "h100-arch": "H100 is compute capability 9.0: `-gencode arch=compute_90,code=sm_90`, and \"9.0\" in cuda-capabilities.",
    "capabilities-per-kernel": "They go on the kernel itself: `cuda-capabilities = [\"8.0\", \"9.0\"]` under [kernel.rmsnorm].",
}
BASELINE = {
    "buildtoml-h100": "```toml\n[general]\nname = \"rmsnorm\"\n\n[general.cuda]\ncapabilities = [\"9.0\"]\n```",
    "binding-registration": "```cpp\n#include <torch/extension.h>\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def(\"rms_norm\", &rms_norm); }\n```",
    "python-package": "```python\nimport torch\n\ndef rms_norm(x, w, eps):\n    return torch.ops.rmsnorm.rms_norm(x, w, eps)\n```",
    "warp-reduction": GOOD["warp-reduction"],
    "bf16-vector-loads": "Read the row element by element with a float loop; vector loads are not needed.",
    "h100-arch": GOOD["h100-arch"],
    "capabilities-per-kernel": "Put them under [general.cuda] as capabilities.",
}

rules = []
usage = lambda p, c: {"prompt_tokens": p, "completion_tokens": c}

# The teacher.
skill = {
    "name": "kernel-builder-rmsnorm",
    "description": "Write Hugging Face kernel-builder projects (build.toml edition 5, torch-ext binding, CUDA and CPU kernels) for normalisation ops such as RMSNorm. Use when asked to create or fix a kernel-builder project or its build.toml.",
    "body": "# kernel-builder projects\n\n1. Lay out `build.toml`, `torch-ext/torch_binding.cpp`, `torch-ext/<name>/__init__.py` and one folder per kernel.\n2. In edition 5, CUDA capabilities go on each CUDA kernel as `cuda-capabilities = [\"8.0\", \"9.0\"]` under `[kernel.<name>]`; there is no `[general.cuda]` table.\n3. Accumulate reductions in fp32 for bf16/fp16 inputs and convert once at the end.\n4. Keep torch headers out of `.cu` files; put the torch wrapper in a `.cpp`.\n\nSee [references/build-toml.md](references/build-toml.md) for every key.\n",
    "references": [{"path": "build-toml.md", "content": "# build.toml (edition 5)\n\n- `[general]`: name, version, edition, license, backends.\n- `[torch]`: src.\n- `[kernel.<name>]`: backend, depends, src, cuda-capabilities.\n"}],
    "scripts": [],
}
rms = next(c for c in KERNEL_CASES if c["id"] == "rmsnorm-cpu")
tests = {"cases": [
    rms,
    {"id": "capabilities-per-kernel", "input": "In an edition-5 kernel-builder build.toml, where do the CUDA capabilities of a kernel go? Answer in one sentence.", "expected": {"contains": ["cuda-capabilities"]}},
    {"id": "setup-py", "input": "Which file builds a kernel-builder project?", "expected": {"contains": ["setup.py"]}},
    {"id": "too-easy", "input": "Say anything.", "checks": [{"type": "not_contains", "value": "zebra"}]},
]}
rules.append({"name": "teacher-skill", "match": {"model": "teacher", "message": "Create a skill document"},
              "reply": {"content": json.dumps(skill), "usage": usage(5200, 900)}})
rules.append({"name": "teacher-tests", "match": {"model": "teacher", "message": "test cases"},
              "reply": {"content": "```json\n" + json.dumps(tests, indent=1) + "\n```", "usage": usage(6100, 700)}})

# The student, per case: with a skill in the prompt, and without.
cases = {c["id"]: c for c in FLAGSHIP}
cases["capabilities-per-kernel"] = tests["cases"][1]
for cid, case in cases.items():
    if cid in PROJECT_OF:
        good, bad = project_answer(PROJECT_OF[cid]), BAD_PROJECT
    else:
        good, bad = GOOD[cid], BASELINE[cid]
    k = key(case["input"])
    rules.append({"name": f"student-skill-{cid}", "match": {"model": "student", "any_message": "## Skill:", "message": k},
                  "reply": {"content": good, "usage": usage(2400, max(60, len(good) // 4))}})
    rules.append({"name": f"student-baseline-{cid}", "match": {"model": "student", "message": k},
                  "reply": {"content": bad, "usage": usage(600, max(40, len(bad) // 4))}})

out = ROOT / "examples/demo/script.json"
out.write_text(json.dumps({"rules": rules, "models": ["teacher", "student"]}, indent=1) + "\n")
print(f"wrote {out.relative_to(ROOT)}: {len(rules)} rules")
