"""upskill's kernel harness: runs with the configured Python (isolated: python -I), one role per
process.

  prepare    (judge)     inputs from the seed -> <dir>/in_<case>_<trial>.pt, <dir>/call.py
  candidate  (sandboxed) loads the candidate package, calls it on the inputs (on the CPU held in
                         read-only pages during the call) and writes, per call, the outputs and the
                         inputs as they were after the call; after a settle delay, both again;
                         outputs of a few timed calls chosen at random; its own timings, and marks
                         on stdout around the judge-clocked calls, which upskill timestamps with
                         its own clock. Never sees the reference, the spec or the seed
  compare    (judge)     regenerates the inputs from the seed, computes the reference, reads the
                         candidate's files with torch.load(weights_only=True) (no pickle code runs),
                         decides every fact of the verdict itself (outputs, inputs left unchanged,
                         timed outputs) and prints it on stdout, which the candidate cannot reach

The op's spec is a Python file that defines make_inputs(shape, dtype, device, generator),
reference(*inputs), call(kernel, *inputs), SHAPES and DTYPES, and optionally TOLERANCES
({dtype: (rtol, atol)}), BENCH_SHAPES, BENCH_DTYPE, bytes_moved(inputs, output), edge input
sets: EDGE_CASES [(name, shape, dtype)] with make_edge_inputs(name, shape, dtype, device,
generator), and the bounds of the shapes drawn at random per run: SHAPE_BOUNDS [(low, high) or
(low, high, step) per dimension], or DRAWN_SHAPES = 0 for none.
"""
import argparse
import ctypes
import importlib.util
import inspect
import json
import math
import mmap
import os
import random
import select
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
TIMED_CHECKS = 3  # timed calls drawn at random, beside the first, whose outputs are checked
DRAWN_SHAPES = 2  # correctness shapes drawn per run from the seed, beside the listed ones
SETTLE_S = 1.5  # after the last call: outputs and inputs are saved again and must not have changed
CLOCK_SEGMENTS = 5  # the judge-clocked calls, in segments: the fastest segment is the time
CLOCK_BUDGET_S = 0.5  # about how long the judge-clocked calls of one bench shape take
REFRESH_ELEMENTS = 2  # elements of each floating-point input given new values before every call
_clock = time.perf_counter_ns  # bound before any candidate code is imported
_monotonic = time.monotonic
_urandom = os.urandom  # likewise: the draw of the timed calls the judge checks
# The judge compares outputs CHUNK elements at a time: float64 copies of a whole large output
# would be fresh memory for every comparison, and on a CPU their page faults cost more than the
# arithmetic; a chunk's copies are reused.
CHUNK = 1 << 20


def system_below(n):
    """A number in [0, n) from the system's randomness (bias below n / 2**64)."""
    return int.from_bytes(_urandom(8), "little") % n


def load_spec(path):
    spec = importlib.util.spec_from_file_location("upskill_op_spec", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name in ("make_inputs", "reference", "call", "SHAPES", "DTYPES"):
        if not hasattr(module, name):
            raise SystemExit(f"{path}: the spec defines no {name}")
    return module


def cases_of(spec, seed):
    """Every correctness case as (shape, dtype, input set name or None, drawn): the listed shapes
    in every dtype, the edge input sets, and shapes drawn for this run from the seed (which the
    candidate never sees), so that a kernel right only for the listed shapes fails."""
    cases = [(tuple(shape), dtype, None, False) for shape in spec.SHAPES for dtype in spec.DTYPES]
    edges = getattr(spec, "EDGE_CASES", None) or []
    if edges and not hasattr(spec, "make_edge_inputs"):
        raise SystemExit("the spec defines EDGE_CASES but no make_edge_inputs")
    for name, shape, dtype in edges:
        cases.append((tuple(shape), dtype, str(name), False))
    for shape, dtype in drawn_shapes(spec, seed):
        cases.append((shape, dtype, None, True))
    return cases


def drawn_shapes(spec, seed):
    """DRAWN_SHAPES (shape, dtype) pairs, none of them listed. Each dimension is drawn within the
    spec's SHAPE_BOUNDS, or else between the smallest and largest value that dimension has among
    the listed shapes of the same rank, in steps of their greatest common divisor (even sizes
    where every listed one is even, as a rotary head or a gated pair needs; any size where the
    listed ones are ragged). No larger than the largest listed shape."""
    count = int(getattr(spec, "DRAWN_SHAPES", DRAWN_SHAPES))
    listed = [tuple(s) for s in spec.SHAPES]
    if count <= 0 or not listed:
        return []
    rng = random.Random(seed * 7907 + 17)
    bounds = getattr(spec, "SHAPE_BOUNDS", None)
    largest = max(math.prod(s) for s in listed)

    def pick(low, high, step=1):
        low = -(-low // step) * step
        return low if high <= low else rng.randrange(low, high + 1, step)

    out = []
    for _ in range(count):
        for _ in range(50):
            if bounds:
                shape = tuple(pick(*map(int, b)) for b in bounds)
            else:
                base = rng.choice(listed)
                peers = [s for s in listed if len(s) == len(base)]
                dims = []
                for d in range(len(base)):
                    values = [s[d] for s in peers]
                    dims.append(pick(min(values), max(values), math.gcd(*values)))
                shape = tuple(dims)
            if shape not in listed and (bounds or math.prod(shape) <= largest):
                out.append((shape, rng.choice(list(spec.DTYPES))))
                break
    return out


def bench_cases_of(spec):
    shapes = getattr(spec, "BENCH_SHAPES", None) or [max(spec.SHAPES, key=lambda s: math.prod(s))]
    dtype = getattr(spec, "BENCH_DTYPE", spec.DTYPES[0])
    return [(tuple(shape), dtype) for shape in shapes]


def make(spec, seed, index, trial, shape, dtype, device, edge=None):
    generator = torch.Generator().manual_seed((seed * 1009 + index * 31 + trial) % (2**63))
    if edge is None:
        inputs = spec.make_inputs(shape, getattr(torch, dtype), "cpu", generator)
    else:
        inputs = spec.make_edge_inputs(edge, shape, getattr(torch, dtype), "cpu", generator)
    return [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]


def as_list(out):
    if isinstance(out, (list, tuple)):
        return list(out)
    return [out]


def sync(device):
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def time_calls(fn, inputs, device, warmup, repeats, budget_s=1.0, minimum=5):
    """Median wall time per call in ms by this process's own clock: CUDA events around each call
    after an L2 flush, or perf_counter on the CPU, after up to `warmup` calls (at most a third of
    the budget). Stops early once `budget_s` is spent and `minimum` samples exist: only calls
    slower than budget_s / repeats (a CPU's large shapes) stop early, and 1 s gave the same
    medians as 3 s within the run-to-run spread (docs/PERFORMANCE.md). In the candidate's
    process this is only a cross-check of clocked_calls, whose time the candidate cannot reach.
    Returns (median, times)."""
    times = []
    start = time.monotonic()
    for _ in range(warmup):
        fn(*inputs)
        sync(device)
        if time.monotonic() - start > budget_s / 3:
            break
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
            begin = _clock()
            fn(*inputs)
            times.append((_clock() - begin) / 1e6)
    return statistics.median(times), times


def clocked_count(per_call_ms):
    """How many judge-clocked calls make about CLOCK_BUDGET_S: at least two a segment."""
    per_call_ms = per_call_ms if per_call_ms and per_call_ms > 0 else 1.0
    return max(2 * CLOCK_SEGMENTS, min(5000, math.ceil(CLOCK_BUDGET_S * 1e3 / per_call_ms)))


def refresh(inputs, rng):
    """Gives REFRESH_ELEMENTS elements of every floating-point input new values (the mean of two
    other elements: in range for the op) before a timed call, so that no two timed calls see the
    same inputs and an output memoised by the input bytes cannot be returned. The same rng seed
    replays the same inputs (the judge recomputes the reference of a kept call this way)."""
    with torch.no_grad():
        for t in inputs:
            if isinstance(t, torch.Tensor) and t.is_floating_point() and t.numel() > 1:
                for _ in range(REFRESH_ELEMENTS):
                    at, a, b = (tuple(rng.randrange(n) for n in t.shape) for _ in range(3))
                    t[at] = (t[a] + t[b]) * 0.5


def clocked_calls(fn, inputs, device, calls, refresh_seed, keep=False, mark=None,
                  draw=system_below):
    """`calls` calls of fn in CLOCK_SEGMENTS segments, each call on inputs refreshed first (and,
    on a GPU, after an L2 flush), with no synchronisation inside a segment. `mark(segment, what)`
    is told when each segment begins and ends (the candidate prints it for upskill's clock). With
    `keep`, the outputs of the first call and of TIMED_CHECKS calls drawn uniformly with `draw`
    as the calls are made (a reservoir draw) are kept, live, with the call's number.
    Kept outputs are also copied after each segment (work the kernel left running must be done
    by then). Returns (each segment's (ns by this process's clock, calls), kept [(number, live
    outputs)], the copies {number: outputs})."""
    rng = random.Random(refresh_seed)
    flush = (torch.empty(256 * 1024 * 1024, dtype=torch.int8, device=device)
             if device.startswith("cuda") else None)
    first, reservoir, segments, copies = [], [], [], {}
    made = 0
    per_segment = -(-calls // CLOCK_SEGMENTS)
    for segment in range(CLOCK_SEGMENTS):
        count = min(per_segment, calls - made)
        if count <= 0:
            break
        sync(device)
        if mark:
            mark(segment, "begin")
        begin = _clock()
        # A segment also ends at twice its share of the budget (two calls at least): `calls` is
        # drawn from a time the candidate's own clock took, which may be forged.
        stop = _monotonic() + 2 * CLOCK_BUDGET_S / CLOCK_SEGMENTS
        done = 0
        for _ in range(count):
            if done >= 2 and _monotonic() > stop:
                break
            done += 1
            if flush is not None:
                flush.zero_()
            refresh(inputs, rng)
            out = fn(*inputs)
            if keep:
                if made == 0:
                    first.append((made, as_list(out)))
                elif len(reservoir) < TIMED_CHECKS:
                    reservoir.append((made, as_list(out)))
                else:
                    slot = draw(made)
                    if slot < TIMED_CHECKS:
                        reservoir[slot] = (made, as_list(out))
            # Freed before the next call, as in time_calls: an output kept alive across the next
            # call makes the allocator hand out fresh pages every call (20x slower on a CPU).
            out = None
            made += 1
        sync(device)
        segments.append((_clock() - begin, done))
        if mark:
            mark(segment, f"end {done}")
        for number, out in first + reservoir:
            if number not in copies:
                copies[number] = detached(out)
    return segments, first + reservoir, copies


def fastest_ms(segments):
    """The fastest segment's time per call, in ms."""
    return min(ns / count for ns, count in segments) / 1e6 if segments else None


def detached(out):
    return [o.detach().to("cpu").clone() if isinstance(o, torch.Tensor) else o
            for o in as_list(out)]


def prepare(args):
    spec = load_spec(args.spec)
    os.makedirs(args.dir, exist_ok=True)
    listing = []
    for index, (shape, dtype, edge, _) in enumerate(cases_of(spec, args.seed)):
        for trial in range(TRIALS):
            inputs = make(spec, args.seed, index, trial, shape, dtype, "cpu", edge)
            torch.save(inputs, os.path.join(args.dir, f"in_{index}_{trial}.pt"))
        listing.append({})  # nothing of the case: which shapes were drawn is not told
    bench = []
    if args.bench:
        for index, (shape, dtype) in enumerate(bench_cases_of(spec)):
            inputs = make(spec, args.seed, 10_000 + index, 0, shape, dtype, "cpu")
            torch.save(inputs, os.path.join(args.dir, f"bench_{index}.pt"))
            bench.append({})
    with open(os.path.join(args.dir, "cases.json"), "w") as f:
        json.dump({"cases": listing, "bench": bench, "trials": TRIALS}, f)
    with open(os.path.join(args.dir, "call.py"), "w") as f:
        f.write("import torch\n\n" + inspect.getsource(spec.call))


class AccessLog:
    """Paths the candidate's Python code tried to open or list (an audit hook), re-tried after
    the run to report which ones the sandbox denied. Only Python-level accesses are seen."""

    def __init__(self, limit=200):
        self.paths = []
        self.limit = limit
        sys.addaudithook(self.hook)

    def hook(self, event, args):
        if event in ("open", "os.listdir", "os.scandir") and args and len(self.paths) < self.limit:
            path = args[0]
            if isinstance(path, (str, bytes)) and path:
                self.paths.append(os.fsdecode(path))

    def denied(self):
        out = []
        for path in dict.fromkeys(self.paths):
            try:
                if os.path.isdir(path):
                    os.listdir(path)
                else:
                    with open(path, "rb"):
                        pass
            except PermissionError:
                out.append(path)
            except OSError:
                pass
        return out[:50]


_libc = ctypes.CDLL(None, use_errno=True)
_read_only_pages = []  # the mappings behind read-only inputs, kept for the process's life


def read_only(t):
    """A copy of a CPU tensor (same shape and strides) in pages that cannot be written: a kernel
    that writes to its inputs, even one that restores them before it returns, crashes with
    SIGSEGV in the write (upskill names the call from calling.json). Other values as they are."""
    if not isinstance(t, torch.Tensor) or t.device.type != "cpu" or t.numel() == 0:
        return t
    span = 1 + sum((n - 1) * st for n, st in zip(t.shape, t.stride()))
    pages = mmap.mmap(-1, span * t.element_size())
    view = torch.frombuffer(pages, dtype=t.dtype, count=span).as_strided(t.shape, t.stride())
    view.copy_(t.detach())
    address = ctypes.addressof(ctypes.c_char.from_buffer(pages))
    if _libc.mprotect(ctypes.c_void_p(address), ctypes.c_size_t(len(pages)), 1) != 0:  # PROT_READ
        raise OSError(ctypes.get_errno(), "mprotect")
    _read_only_pages.append(pages)
    return view


def candidate(args):
    with open(os.path.join(args.dir, "cases.json")) as f:
        plan = json.load(f)
    namespace = {}
    with open(os.path.join(args.dir, "call.py")) as f:
        exec(compile(f.read(), "call.py", "exec"), namespace)
    call = namespace["call"]
    log = AccessLog()
    sys.path.insert(0, args.package)
    report = {"cases": [], "bench": []}
    try:
        kernel = importlib.import_module(args.name)
    except BaseException as e:
        report["import_error"] = "".join(traceback.format_exception_only(type(e), e)).strip()
        kernel = None
    calling = os.path.join(args.dir, "calling.json")
    # Every output and input the candidate was given, live: saved again after SETTLE_S.
    live = {"cases": [], "bench": []}
    for index, _ in enumerate(plan["cases"] if kernel else []):
        for trial in range(plan["trials"]):
            entry = {"case": index, "trial": trial}
            inputs = torch.load(os.path.join(args.dir, f"in_{index}_{trial}.pt"))
            inputs = [read_only(x.to(args.device)) if isinstance(x, torch.Tensor) else x
                      for x in inputs]
            if args.device.startswith("cuda"):
                # Poison the caching allocator: memory the kernel forgets to write reads as NaN.
                poison = torch.full((64 * 1024 * 1024,), float("nan"), device=args.device)
                del poison
            with open(calling, "w") as f:
                json.dump(entry, f)
            try:
                out = as_list(call(kernel, *inputs))
                sync(args.device)
                os.remove(calling)
                # The outputs and the inputs as the call left them: the judge compares the
                # latter with the inputs it regenerates itself.
                torch.save([detached(out), detached(inputs)],
                           os.path.join(args.dir, f"out_{index}_{trial}.pt"))
                live["cases"].append([index, trial, out, inputs])
            except Exception as e:  # the candidate's failure is a finding, not a harness crash
                entry["error"] = "".join(traceback.format_exception_only(type(e), e)).strip()
            report["cases"].append(entry)
    for index, _ in enumerate(plan["bench"] if kernel else []):
        inputs = torch.load(os.path.join(args.dir, f"bench_{index}.pt"))
        inputs = [x.to(args.device) if isinstance(x, torch.Tensor) else x for x in inputs]
        try:
            fn = lambda *a: call(kernel, *a)
            median, times = time_calls(fn, inputs, args.device, args.warmup, args.repeats)
            calls = clocked_count(median)

            def mark(segment, what, index=index):
                # On a line of its own whatever the kernel printed before; upskill acknowledges
                # each mark once it has taken the time (a segment starts after), within 10 s.
                print(f"\nUPSKILL-CLOCK {index} {segment} {what}", flush=True)
                if select.select([0], [], [], 10)[0]:
                    os.read(0, 1)

            # Which calls are checked is drawn from the system's randomness while they run,
            # after the candidate is loaded.
            segments, kept, copies = clocked_calls(fn, inputs, args.device, calls,
                                                   args.refresh_seed + index, keep=True, mark=mark)
            torch.save([[n, copies[n]] for n, _ in kept],
                       os.path.join(args.dir, f"timed_{index}.pt"))
            live["bench"].append([index, kept])
            # Its own clock's time of each clocked segment: the judge compares it with upskill's
            # time of the same segment (the same interval, whatever the load at the time).
            report["bench"].append({"median_ms": median, "samples": len(times),
                                    "segments": [[ns, n] for ns, n in segments]})
        except Exception as e:
            report["bench"].append({"error": str(e).strip()})
    if live["cases"] or live["bench"]:
        # A thread or stream the candidate left behind has had time to write into an output or
        # an input; the judge compares these with what was saved right after each call.
        time.sleep(SETTLE_S)
        sync(args.device)
        torch.save({"cases": [[i, t, detached(out), detached(inputs)]
                              for i, t, out, inputs in live["cases"]],
                    "bench": [[i, [[n, detached(out)] for n, out in kept]]
                              for i, kept in live["bench"]]},
                   os.path.join(args.dir, "settled.pt"))
    report["denied"] = log.denied()
    with open(os.path.join(args.dir, "candidate.json"), "w") as f:
        json.dump(report, f)


def compare(args):
    spec = load_spec(args.spec)
    tolerances = dict(DEFAULT_TOLERANCES)
    tolerances.update(getattr(spec, "TOLERANCES", {}))
    # What the candidate process says is used only for its own error messages and timings;
    # every other fact is taken from its output files and checked here.
    try:
        with open(os.path.join(args.dir, "candidate.json")) as f:
            claimed = json.load(f)
        if not isinstance(claimed, dict):
            claimed = {}
    except (OSError, ValueError):
        claimed = {}
    listed = lambda key: claimed.get(key) if isinstance(claimed.get(key), list) else []
    claims = {(c["case"], c["trial"]): c for c in listed("cases")
              if isinstance(c, dict) and isinstance(c.get("case"), int)
              and isinstance(c.get("trial"), int)}
    verdict = {"cases": [], "passed": True, "weak_cases": []}
    if isinstance(claimed.get("import_error"), str):
        verdict["import_error"] = claimed["import_error"][:400]
    settled, settle_problem = load_settled(os.path.join(args.dir, "settled.pt"))
    for index, (shape, dtype, edge, drawn) in enumerate(cases_of(spec, args.seed)):
        rtol, atol = tolerances.get(dtype, (1e-5, 1e-5))
        outputs = []
        for trial in range(TRIALS):
            inputs = make(spec, args.seed, index, trial, shape, dtype, args.device, edge)
            pristine = [x.to("cpu").clone() if isinstance(x, torch.Tensor) else x for x in inputs]
            expected = [e.to("cpu") for e in as_list(spec.reference(*inputs))]
            result = {"shape": list(shape), "dtype": dtype, "trial": trial, "passed": False}
            if edge is not None:
                result["input_set"] = edge
            if drawn:
                result["drawn"] = True
            claim = claims.get((index, trial), {})
            path = os.path.join(args.dir, f"out_{index}_{trial}.pt")
            if "import_error" in verdict and not os.path.exists(path):
                result["problem"] = "the package failed to import: " + verdict["import_error"]
            elif isinstance(claim.get("error"), str) and not os.path.exists(path):
                result["problem"] = "raised " + claim["error"][:300]
            else:
                got, after, problem = load_outputs(path)
                if problem:
                    result["problem"] = problem
                else:
                    result.update(judge_values(got, expected, rtol, atol))
                    outputs.append((got, expected))
                    mutated = changed_inputs(pristine, after)
                    if result["passed"] and mutated:
                        result["passed"] = False
                        result["problem"] = f"modified its inputs {mutated}"
                    late = settle_problem or changed_after_settling(
                        settled["cases"].get((index, trial)), got, pristine)
                    if result["passed"] and late:
                        result["passed"] = False
                        result["problem"] = late
            if trial == 0 and not discriminates(expected, rtol, atol):
                verdict["weak_cases"].append(f"{shape} {dtype}" + (f" ({edge})" if edge else ""))
            verdict["passed"] = verdict["passed"] and result["passed"]
            verdict["cases"].append(result)
        if len(outputs) == TRIALS and replayed(outputs):
            for result in verdict["cases"][-TRIALS:]:
                if not result["passed"]:
                    result["problem"] = ("returned the same output for different input sets "
                                         "(cached or replayed): " + result.get("problem", ""))
    if args.bench:
        verdict["bench"] = bench_reference(spec, args, listed("bench"), tolerances, settled,
                                           settle_problem)
    print("UPSKILL-VERDICT " + json.dumps(verdict))


def load_settled(path):
    """What the candidate saved SETTLE_S after its last call: ({"cases": {(case, trial): (outputs,
    inputs)}, "bench": {index: {call: outputs}}}, problem or None). Only well-formed entries are
    taken; a call without one fails (changed_after_settling)."""
    empty = {"cases": {}, "bench": {}}
    if not os.path.exists(path):
        return empty, "its outputs were not saved again after the settle delay (no settled.pt)"
    try:
        saved = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        return empty, f"settled outputs unreadable: {e}"[:300]
    if not isinstance(saved, dict):
        return empty, "settled.pt is not what the harness writes"
    for entry in saved.get("cases", []) if isinstance(saved.get("cases"), list) else []:
        if (isinstance(entry, list) and len(entry) == 4 and isinstance(entry[0], int)
                and isinstance(entry[1], int) and isinstance(entry[2], list)
                and isinstance(entry[3], list)):
            empty["cases"][(entry[0], entry[1])] = (entry[2], entry[3])
    for entry in saved.get("bench", []) if isinstance(saved.get("bench"), list) else []:
        if (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], int)
                and isinstance(entry[1], list)):
            empty["bench"][entry[0]] = {k[0]: k[1] for k in entry[1]
                                        if isinstance(k, list) and len(k) == 2
                                        and isinstance(k[0], int) and isinstance(k[1], list)}
    return empty, None


def identical(a, b):
    """Two lists of values equal bit for bit (NaN where NaN)."""
    if not isinstance(a, list) or not isinstance(b, list) or len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if isinstance(x, torch.Tensor) != isinstance(y, torch.Tensor):
            return False
        if not isinstance(x, torch.Tensor):
            continue
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if not torch.equal(x, y) and not (
                x.is_floating_point() and torch.equal(x.isnan(), y.isnan())
                and torch.equal(x.nan_to_num(), y.nan_to_num())):
            return False
    return True


def changed_after_settling(settled, got, pristine):
    """Why a call's outputs or inputs as saved after the settle delay differ from the outputs
    saved right after it and the judge's inputs; None when they do not."""
    if settled is None:
        return "its outputs were not saved again after the settle delay"
    outputs, inputs = settled
    if not identical(outputs, got):
        return ("its output changed after the call had returned (something the kernel left "
                "running wrote into it)")
    mutated = changed_inputs(pristine, inputs)
    if mutated:
        return f"its inputs {mutated} changed after the call had returned"
    return None


def load_outputs(path):
    """(outputs, inputs after the call, problem) from a candidate's output file."""
    if not os.path.exists(path):
        return None, None, "wrote no output"
    try:
        saved = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        return None, None, f"output unreadable: {e}"[:300]
    if (not isinstance(saved, list) or len(saved) != 2 or not isinstance(saved[0], list)
            or not isinstance(saved[1], list)):
        return None, None, "output file is not what the harness writes"
    return saved[0], saved[1], None


def changed_inputs(pristine, after):
    """Indices of tensor inputs that differ after the call from the judge's own copy."""
    if len(after) != len(pristine):
        return list(range(len(pristine)))
    out = []
    for i, (a, b) in enumerate(zip(pristine, after)):
        if not isinstance(a, torch.Tensor):
            continue
        if (not isinstance(b, torch.Tensor) or a.shape != b.shape or a.dtype != b.dtype):
            out.append(i)
        elif not torch.equal(a, b) and not (
                a.is_floating_point() and torch.equal(a.isnan(), b.isnan())
                and torch.equal(a.nan_to_num(), b.nan_to_num())):
            out.append(i)
    return out


def replayed(outputs):
    """The same output for every input set where the expected outputs differ."""
    (g0, e0), (g1, e1) = outputs[0], outputs[1]
    same = lambda a, b: (len(a) == len(b) and all(
        isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) and x.shape == y.shape
        and x.dtype == y.dtype and torch.equal(x, y) for x, y in zip(a, b)))
    return same(g0, g1) and not same(e0, e1)


def flat_chunks(*tensors):
    """(offset, [float64 copy of each tensor's elements from offset]), CHUNK elements at a time."""
    flat = [t.reshape(-1) for t in tensors]
    for start in range(0, flat[0].numel(), CHUNK):
        yield start, [f[start:start + CHUNK].double() for f in flat]


def unravel(index, shape):
    """The coordinates (row-major) of a flat index, as nonzero() lists them."""
    at = []
    for size in reversed(tuple(shape)):
        at.append(index % size)
        index //= size
    return at[::-1]


def element(t, index):
    return float(t.reshape(-1)[index].double())


def judge_values(got, expected, rtol, atol):
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
        # Element by element in float64: NaN/Inf where the reference is finite, then
        # |got - expected| > atol + rtol * |expected| (elements both NaN or both infinite pass).
        bad_count, bad_at, over_count, over_at, maxima = 0, None, 0, None, []
        for start, (g64, e64) in flat_chunks(g, e):
            bad = ~torch.isfinite(g64) & torch.isfinite(e64)
            n = int(bad.sum())
            if n and bad_at is None:
                bad_at = start + int(bad.nonzero()[0])
            bad_count += n
            if bad_count:
                continue
            diff = (g64 - e64).abs_()
            over = diff > e64.abs_().mul_(rtol).add_(atol)
            maxima.append(diff.max())
            n = int(over.sum())
            if n and over_at is None:
                over_at = start + int(over.nonzero()[0])
            over_count += n
        if bad_count:
            return {"problem": f"output {k} has NaN/Inf at {unravel(bad_at, g.shape)} "
                               f"({bad_count} elements)"}
        top = float(torch.stack(maxima).max()) if maxima else 0.0  # NaN when any difference is
        worst = max(worst, top)
        if over_count:
            return {"problem": degenerate(g) +
                               f"output {k} differs at {unravel(over_at, g.shape)}: got "
                               f"{element(g, over_at):.6g}, expected {element(e, over_at):.6g} "
                               f"({over_count} of {g.numel()} elements out of tolerance)",
                    "max_abs_error": top}
    return {"passed": True, "max_abs_error": worst}


def degenerate(g):
    """'all-zero output: ' or 'constant output: ' for outputs that ignore their inputs."""
    if g.numel() > 1:
        if all(bool((c == 0).all()) for _, (c,) in flat_chunks(g)):
            return "all-zero output: "
        first = element(g, 0)
        if all(bool((c == first).all()) for _, (c,) in flat_chunks(g)):
            return "constant output: "
    return ""


def discriminates(expected, rtol, atol):
    """Would an all-zero or a constant output (the mean of the finite expected values) fail this
    case? If not, the case proves nothing."""
    for e in expected:
        total, count, zero_fails = 0.0, 0, False
        for _, (e64,) in flat_chunks(e):
            finite = torch.isfinite(e64)
            total += float(e64[finite].sum())
            count += int(finite.sum())
            magnitude = e64.abs()
            zero_fails = zero_fails or bool((magnitude > magnitude * rtol + atol).any())
        if count == 0:
            continue
        mean = total / count
        constant_fails = any(bool(((e64 - mean).abs_() > e64.abs().mul_(rtol).add_(atol)).any())
                             for _, (e64,) in flat_chunks(e))
        if zero_fails and constant_fails:
            return True
    return False


def timed_outputs_problem(spec, args, index, shape, dtype, tolerances, settled, calls):
    """Checks the outputs the candidate kept of its judge-clocked calls: each must be right for
    the inputs of its call (replayed here: the same refreshes from the same seed), and unchanged
    after the settle delay, so a kernel that does less work while it is timed fails. None when
    they are."""
    path = os.path.join(args.dir, f"timed_{index}.pt")
    if not os.path.exists(path):
        return "kept no outputs of its timed calls to check"
    try:
        kept = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        return f"outputs of timed calls unreadable: {e}"[:300]
    if (not isinstance(kept, list) or not kept
            or not all(isinstance(k, list) and len(k) == 2 and isinstance(k[0], int)
                       and isinstance(k[1], list) for k in kept)):
        return "kept no outputs of its timed calls to check"
    numbers = [k[0] for k in kept]
    if (len(set(numbers)) != len(numbers) or min(numbers) < 0 or 0 not in numbers
            or max(numbers) >= calls or len(numbers) > 1 + TIMED_CHECKS):
        return "the timed calls it kept are not the ones the harness draws"
    rtol, atol = tolerances.get(dtype, (1e-5, 1e-5))
    inputs = make(spec, args.seed, 10_000 + index, 0, shape, dtype, args.device)
    after = settled["bench"].get(index, {})
    try:
        return replayed_timed_problem(spec, args, index, kept, inputs, rtol, atol, after)
    except Exception as e:  # what the candidate saved is not what the harness writes
        return f"outputs of timed calls unusable: {type(e).__name__}: {e}"[:300]


def replayed_timed_problem(spec, args, index, kept, inputs, rtol, atol, after):
    """The first kept output that is wrong for its call's replayed inputs, or changed after the
    settle delay; None when none is."""
    rng = random.Random(args.refresh_seed + index)
    made = 0
    for number, got in sorted(kept, key=lambda k: k[0]):
        while made <= number:
            refresh(inputs, rng)
            made += 1
        expected = [e.to("cpu") for e in as_list(spec.reference(*inputs))]
        result = judge_values(got, expected, rtol, atol)
        if not result.get("passed"):
            return f"a timed call's output is wrong (call {number + 1}): " + result.get("problem", "")
        if not identical(after.get(number), got):
            return (f"the output of timed call {number + 1} changed after the call had returned "
                    "(something the kernel left running wrote into it)")
    return None


def judge_clock(path):
    """What upskill's clock measured of the candidate's clocked calls: ({bench index: [(ms, calls)
    per segment]}, {bench index: why its marks cannot be trusted}), written by upskill into the
    judge's folder, out of the candidate's reach."""
    try:
        with open(path) as f:
            data = json.load(f)
        segments = {int(k): [(int(seg), float(ms), int(n)) for seg, ms, n in v]
                    for k, v in data.get("segments", {}).items()}
        forged = {int(k): str(v) for k, v in data.get("forged", {}).items()}
        return segments, forged
    except (OSError, ValueError, TypeError, AttributeError):
        return {}, {}


def clock_problem(segments, forged, index):
    """Why upskill's timings of bench shape `index` cannot be used, or None."""
    if index in forged:
        return "its timing marks were not the harness's: " + forged[index]
    if any(not 0 <= seg < CLOCK_SEGMENTS or n <= 0 or n > -(-5000 // CLOCK_SEGMENTS) or ms < 0
           for seg, ms, n in segments):
        return "its timing marks were not the harness's: segments or calls out of range"
    return None


def own_segments(claim, segments):
    """{segment: (ns, calls)} by the candidate's own clock, for the segments upskill timed; None
    when its report of them is not what the harness writes."""
    own = claim.get("segments")
    if (not isinstance(own, list) or len(own) > CLOCK_SEGMENTS
            or not all(isinstance(o, list) and len(o) == 2
                       and all(isinstance(v, (int, float)) for v in o) and o[0] >= 0 and o[1] > 0
                       for o in own)):
        return None
    seen = {seg for seg, _, _ in segments}
    return {seg: (float(ns), int(n)) for seg, (ns, n) in enumerate(own) if seg in seen} or None


def own_clock_problem(own, segments):
    """The cross-check of upskill's clock with the candidate's own over the same segments, or
    None. Upskill's time of a segment holds the candidate's (it also holds the delivery of two
    marks), so for an honest kernel the two totals differ by that latency only, under any load.
    Its own clock more than twice as fast as upskill's saw (a clock replaced in its process), or
    upskill's more than three times as fast as its own (marks printed out of turn), is
    tampering; so is a report of its timed calls that is not the harness's."""
    if own is None:
        return "its process's record of its timed calls is missing or malformed"
    judge_ms = sum(ms for seg, ms, _ in segments if seg in own)
    own_ms = sum(ns for ns, _ in own.values()) / 1e6
    if ((own_ms * 2 < judge_ms and judge_ms - own_ms > 1.0)
            or (judge_ms * 3 < own_ms and own_ms - judge_ms > 1.0)):
        return (f"the candidate's own clock says its timed calls took {own_ms:.4g} ms, upskill's "
                f"clock {judge_ms:.4g} ms: its process's clock or its timing marks were tampered "
                f"with")
    return None


def bench_reference(spec, args, claimed, tolerances, settled, settle_problem):
    """Per bench shape: the reference's and the candidate's time a call by clocks the candidate
    cannot reach — the judge's own for the reference, upskill's timestamps of the candidate's
    marks for the candidate — each the fastest segment of refreshed calls less the loop's own
    overhead (the same calls of a function that does nothing, timed here); the candidate's own
    clock only as a cross-check."""
    out = []
    bandwidth = copy_bandwidth(args.device)
    clock, forged = judge_clock(args.clock) if args.clock else ({}, {})
    for index, (shape, dtype) in enumerate(bench_cases_of(spec)):
        seed = args.refresh_seed + index
        fresh = lambda: make(spec, args.seed, 10_000 + index, 0, shape, dtype, args.device)
        inputs = fresh()
        overhead = fastest_ms(clocked_calls(lambda *a: None, fresh(), args.device,
                                            20 * CLOCK_SEGMENTS, seed)[0])
        ref_median, _ = time_calls(spec.reference, inputs, args.device, args.warmup,
                                   args.repeats)
        ref_ms = fastest_ms(clocked_calls(spec.reference, inputs, args.device,
                                          clocked_count(ref_median), seed)[0]) - overhead
        entry = {"shape": list(shape), "dtype": dtype, "overhead_ms": overhead}
        if ref_ms > 0:
            entry["reference_ms"] = ref_ms
        segments = clock.get(index, [])
        wrong = clock_problem(segments, forged, index) or settle_problem or timed_outputs_problem(
            spec, args, index, shape, dtype, tolerances, settled, sum(n for _, _, n in segments))
        if args.device.startswith("cuda") and hasattr(torch, "compile"):
            # The other baseline a user would reach for; failures are recorded, not fatal.
            try:
                compiled = torch.compile(spec.reference)
                compiled_inputs = fresh()
                median, _ = time_calls(compiled, compiled_inputs, args.device, args.warmup,
                                       args.repeats)
                entry["compiled_ms"] = fastest_ms(clocked_calls(
                    compiled, compiled_inputs, args.device, clocked_count(median), seed)[0]) - overhead
            except Exception as e:
                entry["compile_problem"] = f"{type(e).__name__}: {e}"[:300]
        claim = claimed[index] if index < len(claimed) and isinstance(claimed[index], dict) else {}
        if "error" in claim or not segments:
            entry["problem"] = str(claim.get("error", "the candidate's timed calls did not "
                                                      "complete"))[:300]
            out.append(entry)
            continue
        cand = min(ms / n for _, ms, n in segments) - overhead
        own = own_segments(claim, segments)
        if own:
            entry["candidate_in_process_ms"] = min(ns / n for ns, n in own.values()) / 1e6
        wrong = wrong or own_clock_problem(own, segments)
        if cand <= 0 or ref_ms <= 0:
            entry["unmeasured"] = (f"a call takes less than the judge's clock can tell from the "
                                   f"timing loop's own overhead ({overhead:.3g} ms a call)")
            if wrong:
                entry["problem"] = wrong
            out.append(entry)
            continue
        entry["candidate_ms"] = cand
        entry["speedup"] = ref_ms / cand
        if entry.get("compiled_ms", 0) > 0:
            entry["speedup_vs_compile"] = entry["compiled_ms"] / cand
        output = as_list(spec.reference(*inputs))
        if hasattr(spec, "bytes_moved"):
            moved = spec.bytes_moved(inputs, output)
        else:
            moved = sum(x.numel() * x.element_size() for x in inputs + output
                        if isinstance(x, torch.Tensor))
        entry["bytes_moved"] = moved
        entry["achieved_gbps"] = moved / (cand / 1e3) / 1e9
        entry["copy_gbps"] = bandwidth
        entry["bandwidth_fraction"] = entry["achieved_gbps"] / bandwidth if bandwidth else 0.0
        flags = []
        if entry["speedup"] > 10:
            flags.append(f"speedup {entry['speedup']:.1f}x is above 10x")
        if entry["achieved_gbps"] > 2.0 * bandwidth:
            flags.append(f"moves {entry['achieved_gbps']:.0f} GB/s, more than twice the "
                         f"measured copy bandwidth ({bandwidth:.0f} GB/s)")
        entry["implausible"] = flags
        if wrong:
            entry["problem"] = wrong
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
    parser.add_argument("--refresh-seed", type=int, default=0)
    parser.add_argument("--clock")  # compare: upskill's timings of the candidate's clocked calls
    args = parser.parse_args()
    torch.manual_seed(0)
    {"prepare": prepare, "candidate": candidate, "compare": compare}[args.role](args)
    if args.role != "candidate":
        # The judge's processes end without tearing torch down (about 0.3 s each); the
        # candidate's ends normally, so a module that crashes while unloading is seen.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


if __name__ == "__main__":
    main()
