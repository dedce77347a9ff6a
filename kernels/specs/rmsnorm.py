"""Spec of rms_norm(input, weight, eps): input * rsqrt(mean(input^2, -1) + eps) * weight, fp32 math."""
import torch

EPS = 1e-6
SHAPES = [(1, 7), (5, 1031), (3, 17, 2048), (64, 4096)]  # ragged tails, 3-D input, aligned rows
DTYPES = ["float32", "float16", "bfloat16"]
BENCH_SHAPES = [(8192, 4096), (2048, 2048)]  # tokens x hidden (Qwen3-8B, LTX-Video-like)
# The two shapes drawn per run: up to 64 rows of hidden sizes up to 16384, wider than any listed, so
# a kernel right only up to some tile width fails on a shape the listed ones never reach.
SHAPE_BOUNDS = [(1, 64), (1, 16384)]
BENCH_DTYPE = "bfloat16"


def make_inputs(shape, dtype, device, generator):
    x = torch.randn(*shape, generator=generator)
    x = x * (torch.rand(*shape[:-1], 1, generator=generator) * 4 + 0.25)  # per-row scale
    w = torch.rand(shape[-1], generator=generator) + 0.5
    return [x.to(device=device, dtype=dtype), w.to(device=device, dtype=dtype)]


# Edge input sets (name, shape, dtype), checked like the cases above: a forgotten eps, sums of
# squares in half precision and a mishandled tail fail here even where random inputs pass.
EDGE_CASES = [
    ("zero rows", (4, 1031), "float32"),  # among others: 0 * rsqrt(0 + eps) = 0, not NaN
    ("tiny magnitudes", (4, 1031), "float32"),  # |x| ~ 1e-4: mean(x^2) is far below eps
    ("huge magnitudes", (4, 1031), "float16"),  # |x| ~ 1e3..2e4: x^2 overflows fp16
    ("ragged tail", (3, 1031), "bfloat16"),  # 1031 = 1024 + 7, the tail holding the largest values
    ("short rows", (5, 7), "float16"),  # rows shorter than one 16-byte vector
    ("smallest bench shape", (2048, 2048), "bfloat16"),
    ("largest bench shape", (8192, 4096), "float32"),  # float32 only: affordable on a CPU
]


def make_edge_inputs(name, shape, dtype, device, generator):
    x, w = make_inputs(shape, torch.float32, "cpu", generator)
    rows = x.view(-1, shape[-1])
    if name == "zero rows":
        rows[1::2] = 0
    elif name == "tiny magnitudes":
        x = x * 1e-4
    elif name == "huge magnitudes":
        x = (x * 1000).clamp(-60000, 60000)
    elif name == "ragged tail":
        rows[:, -7:] *= 8  # a kernel that drops the tail from the sum of squares is far off
    elif name not in ("short rows", "smallest bench shape", "largest bench shape"):
        raise ValueError(f"unknown edge case {name!r}")
    return [x.to(device=device, dtype=dtype), w.to(device=device, dtype=dtype)]


def reference(x, w):
    x32 = x.float()
    return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + EPS) * w.float()).to(x.dtype)


def call(kernel, x, w):
    return kernel.rms_norm(x, w, 1e-6)
