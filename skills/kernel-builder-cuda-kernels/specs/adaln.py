"""Spec of adaln_modulate(input, scale, shift, eps): layer_norm(input) * (1 + scale) + shift."""
import torch

EPS = 1e-6
SHAPES = [(1, 3, 9), (2, 17, 1031), (3, 64, 2048), (2, 40, 3072)]
DTYPES = ["float32", "float16", "bfloat16"]
BENCH_SHAPES = [(2, 4096, 2048), (1, 8192, 3072)]
BENCH_DTYPE = "bfloat16"


def make_inputs(shape, dtype, device, generator):
    batch, seq, hidden = shape
    x = torch.randn(batch, seq, hidden, generator=generator) * 2 + 1
    scale = torch.randn(batch, hidden, generator=generator) * 0.5
    shift = torch.randn(batch, hidden, generator=generator) * 0.5
    return [t.to(device=device, dtype=dtype) for t in (x, scale, shift)]


def reference(x, scale, shift):
    y = torch.nn.functional.layer_norm(x.float(), (x.shape[-1],), eps=EPS)
    return (y * (1 + scale.float()[:, None, :]) + shift.float()[:, None, :]).to(x.dtype)


def call(kernel, x, scale, shift):
    return kernel.adaln_modulate(x, scale, shift, 1e-6)
