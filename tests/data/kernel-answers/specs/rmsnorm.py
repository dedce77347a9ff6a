"""Test spec for the rmsnorm op: y = x / sqrt(mean(x^2) + eps) * weight over the last dimension.

Never shown to the model; upskill's harness uses it to make inputs, call the candidate and
compute the reference in a separate process.
"""
import torch

EPS = 1e-6
SHAPES = [(1, 7), (4, 256), (3, 1031), (33, 2048)]  # odd sizes and ragged tails
DTYPES = ["float32", "bfloat16"]
BENCH_SHAPES = [(512, 4096)]
BENCH_DTYPE = "float32"


def make_inputs(shape, dtype, device, generator):
    rows, cols = shape
    # Not standard normal: a per-row scale, so a kernel that forgets the row statistics fails.
    x = torch.randn(rows, cols, generator=generator) * (torch.rand(rows, 1, generator=generator) * 4 + 0.25)
    w = torch.rand(cols, generator=generator) + 0.5
    return [x.to(device=device, dtype=dtype), w.to(device=device, dtype=dtype)]


def reference(x, w):
    x32 = x.float()
    y = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + EPS) * w.float()
    return y.to(x.dtype)


def call(kernel, x, w):
    return kernel.rmsnorm(x, w, 1e-6)


# Edge input sets: a zero row among others (no eps: 0/0), rows of tiny magnitude (eps matters),
# large magnitudes (x^2 overflows half precision), a ragged last dimension.
EDGE_CASES = [
    ("zero row", (4, 1031), "float32"),
    ("tiny magnitudes", (8, 256), "float32"),
    ("large magnitudes", (4, 512), "bfloat16"),
    ("ragged tail", (3, 7), "bfloat16"),
]


def make_edge_inputs(name, shape, dtype, device, generator):
    x, w = make_inputs(shape, torch.float32, "cpu", generator)
    if name == "zero row":
        x[1] = 0
    elif name == "tiny magnitudes":
        x = x * 1e-4
    elif name == "large magnitudes":
        x = x * 300.0
    return [x.to(device=device, dtype=dtype), w.to(device=device, dtype=dtype)]
