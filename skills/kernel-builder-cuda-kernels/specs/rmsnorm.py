"""Spec of rms_norm(input, weight, eps): input * rsqrt(mean(input^2, -1) + eps) * weight, fp32 math."""
import torch

EPS = 1e-6
SHAPES = [(1, 7), (5, 1031), (3, 17, 2048), (64, 4096)]  # ragged tails, 3-D input, aligned rows
DTYPES = ["float32", "float16", "bfloat16"]
BENCH_SHAPES = [(8192, 4096), (2048, 2048)]  # tokens x hidden (Qwen3-8B, LTX-Video-like)
BENCH_DTYPE = "bfloat16"


def make_inputs(shape, dtype, device, generator):
    x = torch.randn(*shape, generator=generator)
    x = x * (torch.rand(*shape[:-1], 1, generator=generator) * 4 + 0.25)  # per-row scale
    w = torch.rand(shape[-1], generator=generator) + 0.5
    return [x.to(device=device, dtype=dtype), w.to(device=device, dtype=dtype)]


def reference(x, w):
    x32 = x.float()
    return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + EPS) * w.float()).to(x.dtype)


def call(kernel, x, w):
    return kernel.rms_norm(x, w, 1e-6)
