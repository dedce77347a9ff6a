"""Spec of layernorm_gelu(input, weight, bias, eps): gelu_tanh(layer_norm(input) * weight + bias)."""
import torch

EPS = 1e-5
SHAPES = [(1, 9), (6, 1033), (2, 33, 2048), (48, 4096)]
DTYPES = ["float32", "float16", "bfloat16"]
BENCH_SHAPES = [(8192, 4096), (4096, 2048)]
BENCH_DTYPE = "bfloat16"


def make_inputs(shape, dtype, device, generator):
    x = torch.randn(*shape, generator=generator) * 2 + torch.rand(*shape[:-1], 1, generator=generator) * 3
    w = torch.rand(shape[-1], generator=generator) + 0.5
    b = torch.randn(shape[-1], generator=generator) * 0.5
    return [t.to(device=device, dtype=dtype) for t in (x, w, b)]


def reference(x, w, b):
    y = torch.nn.functional.layer_norm(x.float(), (x.shape[-1],), w.float(), b.float(), EPS)
    return torch.nn.functional.gelu(y, approximate="tanh").to(x.dtype)


def call(kernel, x, w, b):
    return kernel.layernorm_gelu(x, w, b, 1e-5)
