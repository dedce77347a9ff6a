"""Spec of geglu(input): a, b = input.chunk(2, -1); a * gelu_tanh(b)."""
import torch

SHAPES = [(1, 14), (7, 2 * 1031), (2, 9, 4096), (64, 8192)]
DTYPES = ["float32", "float16", "bfloat16"]
BENCH_SHAPES = [(2048, 8192), (8192, 8192)]  # [2x1024 tokens, 2x4096] as in HF's GEGLU numbers
BENCH_DTYPE = "bfloat16"


def make_inputs(shape, dtype, device, generator):
    return [(torch.randn(*shape, generator=generator) * 2).to(device=device, dtype=dtype)]


def reference(x):
    a, b = x.float().chunk(2, dim=-1)
    return (a * torch.nn.functional.gelu(b, approximate="tanh")).to(x.dtype)


def call(kernel, x):
    return kernel.geglu(x)
