"""upskill's kernel harness: runs with the configured Python, one role per process.

  prepare    (trusted)   inputs from the seed -> <dir>/in_<case>_<trial>.pt, <dir>/call.py
  candidate  (sandboxed) loads the candidate package, calls it on the inputs, writes outputs and
                         timings; never sees the reference or the seed
  compare    (trusted)   regenerates the inputs from the seed, computes the reference, reads the
                         candidate's outputs with torch.load(weights_only=True) and prints the
                         verdict on stdout, which the candidate cannot reach

The op's spec is a Python file that defines make_inputs(shape, dtype, device, generator),
reference(*inputs), call(kernel, *inputs), SHAPES and DTYPES, and optionally TOLERANCES
({dtype: (rtol, atol)}), BENCH_SHAPES, BENCH_DTYPE and bytes_moved(inputs, output).
"""
import argparse
import importlib.util
import inspect
import json
import math
import os
import statistics
import sys
import time
import traceback

import torch

DEFAULT_TOLERANCES = {
    "float32": (1e-5, 1e-5),
    "float64": (1e-7, 1e-7),
    "float16": (1e-2, 1e-2),
    "bfloat16": (2e-2, 2e-2),
}
TRIALS = 2  # two independent input sets per case: a cached or replayed output fails the second


def load_spec(path):
    spec = importlib.util.spec_from_file_location("upskill_op_spec", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name in ("make_inputs", "reference", "call", "SHAPES", "DTYPES"):
        if not hasattr(module, name):
            raise SystemExit(f"{path}: the spec defines no {name}")
    return module


def cases_of(spec):
    return [(tuple(shape), dtype) for shape in spec.SHAPES for dtype in spec.DTYPES]


def bench_cases_of(spec):
    shapes = getattr(spec, "BENCH_SHAPES", None) or [max(spec.SHAPES, key=lambda s: math.prod(s))]
    dtype = getattr(spec, "BENCH_DTYPE", spec.DTYPES[0])
    return [(tuple(shape), dtype) for shape in shapes]


def make(spec, seed, index, trial, shape, dtype, device):
    generator = torch.Generator().manual_seed((seed * 1009 + index * 31 + trial) % (2**63))
    inputs = spec.make_inputs(shape, getattr(torch, dtype), "cpu", generator)
    return [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]


def as_list(out):
    if isinstance(out, (list, tuple)):
        return list(out)
    return [out]


def sync(device):
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def time_calls(fn, inputs, device, warmup, repeats, budget_s=3.0, minimum=5):
    """Median wall time per call in ms: CUDA events around each call after an L2 flush, or
    perf_counter on the CPU. Stops early once `budget_s` is spent and `minimum` samples exist."""
    start = time.monotonic()
    for _ in range(warmup):
        fn(*inputs)
        sync(device)
        if time.monotonic() - start > budget_s / 3:
            break
    times = []
    deadline = time.monotonic() + budget_s

    def more():
        return len(times) < repeats and (len(times) < minimum or time.monotonic() < deadline)

    if device.startswith("cuda"):
        flush = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device=device)
        while more():
            flush.zero_()
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            fn(*inputs)
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
    else:
        while more():
            begin = time.perf_counter_ns()
            fn(*inputs)
            times.append((time.perf_counter_ns() - begin) / 1e6)
    return statistics.median(times), times


def prepare(args):
    spec = load_spec(args.spec)
    os.makedirs(args.dir, exist_ok=True)
    listing = []
    for index, (shape, dtype) in enumerate(cases_of(spec)):
        for trial in range(TRIALS):
            inputs = make(spec, args.seed, index, trial, shape, dtype, "cpu")
            torch.save(inputs, os.path.join(args.dir, f"in_{index}_{trial}.pt"))
        listing.append({"shape": list(shape), "dtype": dtype})
    bench = []
    if args.bench:
        for index, (shape, dtype) in enumerate(bench_cases_of(spec)):
            inputs = make(spec, args.seed, 10_000 + index, 0, shape, dtype, "cpu")
            torch.save(inputs, os.path.join(args.dir, f"bench_{index}.pt"))
            bench.append({"shape": list(shape), "dtype": dtype})
    with open(os.path.join(args.dir, "cases.json"), "w") as f:
        json.dump({"cases": listing, "bench": bench, "trials": TRIALS}, f)
    with open(os.path.join(args.dir, "call.py"), "w") as f:
        f.write("import torch\n\n" + inspect.getsource(spec.call))


def candidate(args):
    with open(os.path.join(args.dir, "cases.json")) as f:
        plan = json.load(f)
    namespace = {}
    with open(os.path.join(args.dir, "call.py")) as f:
        exec(compile(f.read(), "call.py", "exec"), namespace)
    call = namespace["call"]
    sys.path.insert(0, args.package)
    kernel = importlib.import_module(args.name)
    report = {"cases": [], "bench": []}
    for index, _ in enumerate(plan["cases"]):
        for trial in range(plan["trials"]):
            entry = {"case": index, "trial": trial}
            inputs = torch.load(os.path.join(args.dir, f"in_{index}_{trial}.pt"))
            inputs = [x.to(args.device) if isinstance(x, torch.Tensor) else x for x in inputs]
            before = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
            if args.device.startswith("cuda"):
                # Poison the caching allocator: memory the kernel forgets to write reads as NaN.
                poison = torch.full((64 * 1024 * 1024,), float("nan"), device=args.device)
                del poison
            try:
                out = as_list(call(kernel, *inputs))
                sync(args.device)
                torch.save([o.detach().to("cpu") if isinstance(o, torch.Tensor) else o for o in out],
                           os.path.join(args.dir, f"out_{index}_{trial}.pt"))
                entry["mutated_inputs"] = [
                    i for i, (a, b) in enumerate(zip(before, inputs))
                    if isinstance(a, torch.Tensor) and not torch.equal(a, b)
                    and not (a.is_floating_point() and torch.equal(a.isnan(), b.isnan())
                             and torch.equal(a.nan_to_num(), b.nan_to_num()))
                ]
            except Exception as e:  # the candidate's failure is a finding, not a harness crash
                entry["error"] = "".join(traceback.format_exception_only(type(e), e)).strip()
            report["cases"].append(entry)
    for index, _ in enumerate(plan["bench"]):
        inputs = torch.load(os.path.join(args.dir, f"bench_{index}.pt"))
        inputs = [x.to(args.device) if isinstance(x, torch.Tensor) else x for x in inputs]
        try:
            median, times = time_calls(lambda *a: call(kernel, *a), inputs, args.device,
                                       args.warmup, args.repeats)
            report["bench"].append({"median_ms": median, "samples": len(times)})
        except Exception as e:
            report["bench"].append({"error": str(e).strip()})
    with open(os.path.join(args.dir, "candidate.json"), "w") as f:
        json.dump(report, f)


def compare(args):
    spec = load_spec(args.spec)
    tolerances = dict(DEFAULT_TOLERANCES)
    tolerances.update(getattr(spec, "TOLERANCES", {}))
    try:
        with open(os.path.join(args.dir, "candidate.json")) as f:
            claimed = json.load(f)
    except (OSError, ValueError):
        claimed = {"cases": [], "bench": []}
    claims = {(c.get("case"), c.get("trial")): c for c in claimed.get("cases", [])
              if isinstance(c, dict)}
    verdict = {"cases": [], "passed": True, "weak_cases": []}
    for index, (shape, dtype) in enumerate(cases_of(spec)):
        rtol, atol = tolerances.get(dtype, (1e-5, 1e-5))
        for trial in range(TRIALS):
            inputs = make(spec, args.seed, index, trial, shape, dtype, args.device)
            expected = [e.to("cpu") for e in as_list(spec.reference(*inputs))]
            result = {"shape": list(shape), "dtype": dtype, "trial": trial, "passed": False}
            claim = claims.get((index, trial), {})
            if claim.get("error"):
                result["problem"] = "raised " + str(claim["error"])[:300]
            else:
                result.update(judge(os.path.join(args.dir, f"out_{index}_{trial}.pt"), expected,
                                    rtol, atol))
                if result["passed"] and claim.get("mutated_inputs"):
                    result["passed"] = False
                    result["problem"] = f"modified its inputs {claim['mutated_inputs']}"
            if trial == 0 and not discriminates(expected, rtol, atol):
                verdict["weak_cases"].append(f"{shape} {dtype}")
            verdict["passed"] = verdict["passed"] and result["passed"]
            verdict["cases"].append(result)
    if args.bench:
        verdict["bench"] = bench_reference(spec, args, claimed.get("bench", []))
    print("UPSKILL-VERDICT " + json.dumps(verdict))


def judge(path, expected, rtol, atol):
    if not os.path.exists(path):
        return {"problem": "wrote no output"}
    try:
        got = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        return {"problem": f"output unreadable: {e}"[:300]}
    if not isinstance(got, list) or len(got) != len(expected):
        return {"problem": f"returned {len(got) if isinstance(got, list) else 'no'} outputs, "
                           f"expected {len(expected)}"}
    worst = 0.0
    for k, (g, e) in enumerate(zip(got, expected)):
        if not isinstance(g, torch.Tensor):
            return {"problem": f"output {k} is not a tensor"}
        if tuple(g.shape) != tuple(e.shape):
            return {"problem": f"output {k} has shape {tuple(g.shape)}, expected {tuple(e.shape)}"}
        if g.dtype != e.dtype:
            return {"problem": f"output {k} has dtype {g.dtype}, expected {e.dtype}"}
        g64, e64 = g.double(), e.double()
        bad = ~torch.isfinite(g64) & torch.isfinite(e64)
        if bad.any():
            at = bad.nonzero()[0].tolist()
            return {"problem": f"output {k} has NaN/Inf at {at} ({int(bad.sum())} elements)"}
        diff = (g64 - e64).abs()
        limit = atol + rtol * e64.abs()
        over = diff > limit
        worst = max(worst, float(diff.max()) if diff.numel() else 0.0)
        if over.any():
            at = over.nonzero()[0].tolist()
            return {"problem": f"output {k} differs at {at}: got {float(g64[tuple(at)]):.6g}, "
                               f"expected {float(e64[tuple(at)]):.6g} "
                               f"({int(over.sum())} of {over.numel()} elements out of tolerance)",
                    "max_abs_error": float(diff.max())}
    return {"passed": True, "max_abs_error": worst}


def discriminates(expected, rtol, atol):
    """Would an all-zero or a constant output fail this case? If not, the case proves nothing."""
    for e in expected:
        e64 = e.double()
        finite = e64[torch.isfinite(e64)]
        if finite.numel() == 0:
            continue
        limit = atol + rtol * e64.abs()
        zero_fails = bool(((e64.abs()) > limit).any())
        constant = torch.full_like(e64, float(finite.mean()))
        constant_fails = bool(((constant - e64).abs() > limit).any())
        if zero_fails and constant_fails:
            return True
    return False


def bench_reference(spec, args, claimed):
    out = []
    bandwidth = copy_bandwidth(args.device)
    for index, (shape, dtype) in enumerate(bench_cases_of(spec)):
        inputs = make(spec, args.seed, 10_000 + index, 0, shape, dtype, args.device)
        ref_ms, _ = time_calls(spec.reference, inputs, args.device, args.warmup, args.repeats)
        entry = {"shape": list(shape), "dtype": dtype, "reference_ms": ref_ms}
        if args.device.startswith("cuda") and hasattr(torch, "compile"):
            # The other baseline a user would reach for; failures are recorded, not fatal.
            try:
                compiled = torch.compile(spec.reference)
                entry["compiled_ms"], _ = time_calls(compiled, inputs, args.device, args.warmup,
                                                     args.repeats)
            except Exception as e:
                entry["compile_problem"] = f"{type(e).__name__}: {e}"[:300]
        claim = claimed[index] if index < len(claimed) and isinstance(claimed[index], dict) else {}
        if "median_ms" in claim and isinstance(claim["median_ms"], (int, float)):
            cand = float(claim["median_ms"])
            entry["candidate_ms"] = cand
            entry["speedup"] = ref_ms / cand if cand > 0 else float("inf")
            if "compiled_ms" in entry and cand > 0:
                entry["speedup_vs_compile"] = entry["compiled_ms"] / cand
            output = as_list(spec.reference(*inputs))
            if hasattr(spec, "bytes_moved"):
                moved = spec.bytes_moved(inputs, output)
            else:
                moved = sum(x.numel() * x.element_size() for x in inputs + output
                            if isinstance(x, torch.Tensor))
            entry["bytes_moved"] = moved
            entry["achieved_gbps"] = moved / (cand / 1e3) / 1e9 if cand > 0 else float("inf")
            entry["copy_gbps"] = bandwidth
            entry["bandwidth_fraction"] = entry["achieved_gbps"] / bandwidth if bandwidth else 0.0
            flags = []
            if entry["speedup"] > 10:
                flags.append(f"speedup {entry['speedup']:.1f}x is above 10x")
            if entry["achieved_gbps"] > 2.0 * bandwidth:
                flags.append(f"moves {entry['achieved_gbps']:.0f} GB/s, more than twice the "
                             f"measured copy bandwidth ({bandwidth:.0f} GB/s)")
            entry["implausible"] = flags
        else:
            entry["problem"] = claim.get("error", "the candidate reported no timing")
        out.append(entry)
    return out


def copy_bandwidth(device):
    x = torch.empty(64 * 1024 * 1024, dtype=torch.float32, device=device)
    y = torch.empty_like(x)
    median, _ = time_calls(lambda: y.copy_(x), [], device, 2, 7)
    return 2 * x.numel() * x.element_size() / (median / 1e3) / 1e9


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("role", choices=["prepare", "candidate", "compare"])
    parser.add_argument("--spec")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--package")
    parser.add_argument("--name")
    parser.add_argument("--bench", action="store_true")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    torch.manual_seed(0)
    {"prepare": prepare, "candidate": candidate, "compare": compare}[args.role](args)


if __name__ == "__main__":
    main()
