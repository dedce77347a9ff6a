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


def reference(x, cos, sin):
    x32 = x.float()
    x1, x2 = x32.chunk(2, dim=-1)
    rotated = torch.cat([-x2, x1], dim=-1)
    return (x32 * cos.float()[None, :, None, :] + rotated * sin.float()[None, :, None, :]).to(x.dtype)


def call(kernel, x, cos, sin):
    return kernel.apply_rope(x, cos, sin)
