"""Spec of apply_rope(x, cos, sin): x * cos + rotate_half(x) * sin, x [batch, seq, heads, dim]."""
import torch

SHAPES = [(1, 3, 1, 6), (2, 17, 3, 36), (2, 64, 8, 128), (1, 5, 2, 130)]
DTYPES = ["float32", "float16", "bfloat16"]
BENCH_SHAPES = [(2, 4096, 24, 128), (1, 8192, 32, 128)]
BENCH_DTYPE = "bfloat16"


def make_inputs(shape, dtype, device, generator):
    batch, seq, heads, dim = shape
    x = torch.randn(batch, seq, heads, dim, generator=generator)
    # Real angles: positions times per-pair frequencies, plus a random phase against caching.
    freqs = 1.0 / (10000 ** (torch.arange(0, dim // 2).float() / (dim // 2)))
    pos = torch.arange(seq).float()[:, None] + torch.rand(1, generator=generator) * 100
    angles = torch.cat([pos * freqs, pos * freqs], dim=-1)
    return [t.to(device=device, dtype=dtype) for t in (x, angles.cos(), angles.sin())]


# Edge input sets (name, shape, dtype), checked like the cases above: products rounded to half
# precision and a mishandled tail fail here even where random inputs pass.
EDGE_CASES = [
    ("zero rows", (2, 9, 3, 134), "float32"),  # zero tokens among others
    ("tiny magnitudes", (2, 9, 3, 134), "float32"),  # |x| ~ 1e-4
    ("huge magnitudes", (2, 9, 3, 134), "float16"),  # |x| ~ 5e3..3e4: fp16 products off by units
    ("ragged tail", (2, 9, 3, 134), "bfloat16"),  # halves of 67 = 64 + 3, large tails
    ("short rows", (1, 5, 2, 14), "float16"),  # halves shorter than one 16-byte vector
    ("smallest bench shape", (2, 4096, 24, 128), "bfloat16"),
    ("largest bench shape", (1, 8192, 32, 128), "float32"),  # float32 only: affordable on a CPU
]


def make_edge_inputs(name, shape, dtype, device, generator):
    x, cos, sin = make_inputs(shape, torch.float32, "cpu", generator)
    half = shape[-1] // 2
    if name == "zero rows":
        x[:, 1::2] = 0
    elif name == "tiny magnitudes":
        x = x * 1e-4
    elif name == "huge magnitudes":
        x = (x * 5000).clamp(-30000, 30000)  # |x1 * cos - x2 * sin| stays below fp16's 65504
    elif name == "ragged tail":
        x[..., half - 3:half] *= 8
        x[..., -3:] *= 8
    elif name not in ("short rows", "smallest bench shape", "largest bench shape"):
        raise ValueError(f"unknown edge case {name!r}")
    return [t.to(device=device, dtype=dtype) for t in (x, cos, sin)]


def reference(x, cos, sin):
    x32 = x.float()
    x1, x2 = x32.chunk(2, dim=-1)
    rotated = torch.cat([-x2, x1], dim=-1)
    return (x32 * cos.float()[None, :, None, :] + rotated * sin.float()[None, :, None, :]).to(x.dtype)


def call(kernel, x, cos, sin):
    return kernel.apply_rope(x, cos, sin)
