"""Spec of geglu(input): a, b = input.chunk(2, -1); a * gelu_tanh(b)."""
import torch

SHAPES = [(1, 14), (7, 2 * 1031), (2, 9, 4096), (64, 8192)]
DTYPES = ["float32", "float16", "bfloat16"]
BENCH_SHAPES = [(2048, 8192), (8192, 8192)]  # [2x1024 tokens, 2x4096] as in HF's GEGLU numbers
BENCH_DTYPE = "bfloat16"


def make_inputs(shape, dtype, device, generator):
    return [(torch.randn(*shape, generator=generator) * 2).to(device=device, dtype=dtype)]


# Edge input sets (name, shape, dtype), checked like the cases above: tanh built from exp that
# overflows, and a mishandled tail, fail here even where random inputs pass.
EDGE_CASES = [
    ("zero rows", (4, 2 * 1031), "float32"),  # zero rows among others
    ("tiny magnitudes", (4, 2 * 1031), "float32"),  # gate |b| ~ 1e-4: gelu(b) ~ b / 2
    ("huge magnitudes", (4, 2 * 1031), "float16"),  # |a|, |b| ~ 50..250: exp(2 * inner) overflows
    ("ragged tail", (3, 2 * 1031), "bfloat16"),  # halves of 1031 = 1024 + 7, large tails
    ("short rows", (5, 2 * 7), "float16"),  # halves shorter than one 16-byte vector
    ("smallest bench shape", (2048, 8192), "bfloat16"),
    ("largest bench shape", (8192, 8192), "float32"),  # float32 only: affordable on a CPU
]


def make_edge_inputs(name, shape, dtype, device, generator):
    (x,) = make_inputs(shape, torch.float32, "cpu", generator)
    half = shape[-1] // 2
    a, b = x[..., :half], x[..., half:]  # views into x
    if name == "zero rows":
        x.view(-1, shape[-1])[1::2] = 0
    elif name == "tiny magnitudes":
        b *= 5e-5
    elif name == "huge magnitudes":
        x = (x * 25).clamp(-250, 250)  # |a * gelu(b)| stays below fp16's 65504
    elif name == "ragged tail":
        a[..., -7:] *= 8
        b[..., -7:] *= 8
    elif name not in ("short rows", "smallest bench shape", "largest bench shape"):
        raise ValueError(f"unknown edge case {name!r}")
    return [x.to(device=device, dtype=dtype)]


def reference(x):
    a, b = x.float().chunk(2, dim=-1)
    return (a * torch.nn.functional.gelu(b, approximate="tanh")).to(x.dtype)


def call(kernel, x):
    return kernel.geglu(x)
