#!/usr/bin/env python3
"""Time a kernel-builder op against its PyTorch reference with CUDA events.

Warm-up, an L2 flush before every timed call, and the median of many runs: the method KernelBench and
GPU MODE use, so numbers are comparable. Example:

    python scripts/benchmark.py --build build --package rmsnorm --op rms_norm \
        --shape 4096x4096 --dtype bfloat16 --reference "x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype) * w"
"""
import argparse
import statistics
import sys


def parse_shape(text):
    return tuple(int(part) for part in text.lower().split("x"))


def time_cuda(fn, torch, warmup, iters, flush_bytes):
    flush = torch.empty(flush_bytes, dtype=torch.uint8, device="cuda")
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        flush.zero_()  # evict the inputs from L2
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", required=True, help="directory holding the built package (kernels' get_local_kernel layout)")
    parser.add_argument("--package", required=True, help="python package name of the kernel")
    parser.add_argument("--op", required=True, help="function of the package to call as op(x, w, eps) or op(x)")
    parser.add_argument("--shape", default="4096x4096", help="input shape, e.g. 2x1024x2048")
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    parser.add_argument("--reference", required=True, help="Python expression over x (input), w (weight), torch")
    parser.add_argument("--with-weight", action="store_true", help="pass a weight of the last dimension and eps")
    parser.add_argument("--eps", type=float, default=1e-6)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--iters", type=int, default=100)
    args = parser.parse_args()

    import torch

    if not torch.cuda.is_available():
        sys.exit("benchmark.py needs a CUDA device")
    sys.path.insert(0, args.build)
    module = __import__(args.package)
    op = getattr(module, args.op)
    dtype = getattr(torch, args.dtype)
    shape = parse_shape(args.shape)
    x = torch.randn(shape, dtype=dtype, device="cuda")
    w = torch.randn(shape[-1], dtype=dtype, device="cuda")
    call = (lambda: op(x, w, args.eps)) if args.with_weight else (lambda: op(x))
    reference = eval("lambda x, w, torch: " + args.reference)  # the user's own expression

    expected = reference(x, w, torch)
    got = call()
    tol = 1e-4 if dtype == torch.float32 else 2e-2
    if not torch.allclose(got.float(), expected.float(), atol=tol, rtol=tol):
        diff = (got.float() - expected.float()).abs().max().item()
        sys.exit(f"mismatch: max abs diff {diff:.3e} exceeds {tol}")

    flush_bytes = 256 * 1024 * 1024
    kernel_ms = time_cuda(call, torch, args.warmup, args.iters, flush_bytes)
    torch_ms = time_cuda(lambda: reference(x, w, torch), torch, args.warmup, args.iters, flush_bytes)
    moved = 2 * x.numel() * x.element_size()
    print(f"shape {args.shape} {args.dtype}")
    print(f"kernel  {kernel_ms * 1e3:9.1f} us  {moved / kernel_ms / 1e6:8.1f} GB/s")
    print(f"torch   {torch_ms * 1e3:9.1f} us  {moved / torch_ms / 1e6:8.1f} GB/s")
    print(f"speedup {torch_ms / kernel_ms:9.2f}x")


if __name__ == "__main__":
    main()
