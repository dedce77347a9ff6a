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


# Edge input sets (name, shape, dtype), checked like the cases above: a forgotten eps, sums in
# half precision and a mishandled tail fail here even where random inputs pass.
EDGE_CASES = [
    ("zero rows", (2, 4, 1031), "float32"),  # zero tokens among others: shift, not NaN
    ("tiny magnitudes", (2, 4, 1031), "float32"),  # |x| ~ 1e-4: the variance is far below eps
    ("huge magnitudes", (2, 4, 1031), "float16"),  # |x| ~ 1e3..1e4: (x - mean)^2 overflows fp16
    ("ragged tail", (2, 3, 1031), "bfloat16"),  # 1031 = 1024 + 7, the tail holding the largest
    ("short rows", (2, 5, 7), "float16"),  # rows shorter than one 16-byte vector
    ("smallest bench shape", (2, 4096, 2048), "bfloat16"),
    ("largest bench shape", (1, 8192, 3072), "float32"),  # float32 only: affordable on a CPU
]


def make_edge_inputs(name, shape, dtype, device, generator):
    x, scale, shift = make_inputs(shape, torch.float32, "cpu", generator)
    if name == "zero rows":
        x[:, 1::2] = 0
    elif name == "tiny magnitudes":
        x = x * 1e-4
    elif name == "huge magnitudes":
        x = (x * 1000).clamp(-60000, 60000)
    elif name == "ragged tail":
        x[..., -7:] = x[..., -7:] * 8 - 20  # a kernel that drops the tail is far off
    elif name not in ("short rows", "smallest bench shape", "largest bench shape"):
        raise ValueError(f"unknown edge case {name!r}")
    return [t.to(device=device, dtype=dtype) for t in (x, scale, shift)]


def reference(x, scale, shift):
    y = torch.nn.functional.layer_norm(x.float(), (x.shape[-1],), eps=EPS)
    return (y * (1 + scale.float()[:, None, :]) + shift.float()[:, None, :]).to(x.dtype)


def call(kernel, x, scale, shift):
    return kernel.adaln_modulate(x, scale, shift, 1e-6)
