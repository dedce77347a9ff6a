"""The kernel harness's judge (src/kernel/harness/harness.py) compares outputs a chunk at a time;
these tests hold it to the whole-tensor definition, written out here, on outputs that span many
chunks: right answers, wrong ones, NaN and infinities in a late chunk, empty and 0-d tensors; the
audit's fast first look against it; values handed over in shared memory (layouts, fuzzed); the
seals that keep the inputs the judge's; the protocol's refusals (out of turn, garbage, silence);
fingerprints; the shapes drawn per run; the CUDA driver's structures against cuda.h.

Run by ctest with the Python that has torch and UPSKILL_SOURCE_DIR set.
"""
import ctypes
import importlib.util
import itertools
import math
import os
import pathlib
import random
import time
import unittest

import torch

SOURCE = pathlib.Path(os.environ["UPSKILL_SOURCE_DIR"])
_spec = importlib.util.spec_from_file_location(
    "harness", SOURCE / "src" / "kernel" / "harness" / "harness.py")
harness = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(harness)


def judge_whole(got, expected, rtol, atol):
    """The definition: every element in float64 at once."""
    worst = 0.0
    for k, (g, e) in enumerate(zip(got, expected)):
        g64, e64 = g.double(), e.double()
        bad = torch.zeros(g64.shape, dtype=torch.bool)
        for index in itertools.product(*(range(n) for n in g64.shape)):
            x, y = float(g64[index]), float(e64[index])
            if math.isfinite(y):
                bad[index] = not math.isfinite(x)
            else:  # the same infinity, or NaN for NaN
                bad[index] = not (x == y or (math.isnan(x) and math.isnan(y)))
        if bad.any():
            at = bad.nonzero()[0].tolist()
            return {"problem": f"output {k} has NaN/Inf at {at} ({int(bad.sum())} elements; "
                               f"where the reference is NaN or infinite, only the same value "
                               f"passes)"}
        diff = (g64 - e64).abs().masked_fill(~torch.isfinite(e64), 0.0)
        over = diff > atol + rtol * e64.abs()
        worst = max(worst, float(diff.max()) if diff.numel() else 0.0)
        if over.any():
            at = over.nonzero()[0].tolist()
            prefix = ""
            if g64.numel() > 1 and bool((g64 == 0).all()):
                prefix = "all-zero output: "
            elif g64.numel() > 1 and bool((g64 == g64.flatten()[0]).all()):
                prefix = "constant output: "
            return {"problem": prefix +
                    f"output {k} differs at {at}: got {float(g64[tuple(at)]):.6g}, "
                    f"expected {float(e64[tuple(at)]):.6g} "
                    f"({int(over.sum())} of {over.numel()} elements out of tolerance)",
                    "max_abs_error": float(diff.max())}
    return {"passed": True, "max_abs_error": worst}


def discriminates_whole(expected, rtol, atol):
    for e in expected:
        e64 = e.double()
        finite = e64[torch.isfinite(e64)]
        if finite.numel() == 0:
            continue
        limit = atol + rtol * e64.abs()
        zero_fails = bool((e64.abs() > limit).any())
        constant_fails = bool(((float(finite.mean()) - e64).abs() > limit).any())
        if zero_fails and constant_fails:
            return True
    return False


def same(a, b):
    """Results equal, NaN equal to NaN."""
    if a.keys() != b.keys():
        return False
    for key in a:
        x, y = a[key], b[key]
        if isinstance(x, float) and x != x:
            if not (isinstance(y, float) and y != y):
                return False
        elif x != y:
            return False
    return True


class ChunkedJudge(unittest.TestCase):
    def setUp(self):
        self.saved = harness.CHUNK
        harness.CHUNK = 7  # every output below spans several chunks, with a ragged last one

    def tearDown(self):
        harness.CHUNK = self.saved

    def outputs(self):
        """(name, got, expected, rtol, atol): what candidates return, right and wrong."""
        g = torch.Generator().manual_seed(7)
        e = torch.randn(5, 13, generator=g)
        out = [("right", e.clone(), e, 1e-5, 1e-5),
               ("within tolerance", e * (1 + 1e-7), e, 1e-5, 1e-5),
               ("within the relative tolerance", e * 3 * (1 + 5e-6), e * 3, 1e-5, 0.0)]
        late = e.clone()
        late[4, 11] += 1.0
        out.append(("wrong in the last chunk", late, e, 1e-5, 1e-5))
        many = e.clone()
        many[1:, :] *= 1.5
        out.append(("wrong in many chunks", many, e, 1e-5, 1e-5))
        nan = e.clone()
        nan[3, 2] = float("nan")
        nan[4, 12] = float("inf")
        out.append(("NaN and Inf late", nan, e, 1e-5, 1e-5))
        both = e.clone()
        both[2, 5] = float("nan")
        e_nan = e.clone()
        e_nan[2, 5] = float("nan")
        out.append(("NaN where expected NaN", both, e_nan, 1e-5, 1e-5))
        e_inf = e.clone()
        e_inf[0, 0] = float("inf")
        g_inf = e_inf.clone()
        g_inf[0, 0] = float("-inf")
        out.append(("opposite infinities", g_inf, e_inf, 1e-5, 1e-5))
        g_fin = e_inf.clone()
        g_fin[0, 0] = 1e30
        out.append(("finite where expected infinite", g_fin, e_inf, 1e-5, 1e-5))
        out.append(("anything where expected NaN", e.clone(), e_nan, 1e-5, 1e-5))
        out.append(("the same infinity", e_inf.clone(), e_inf, 1e-5, 1e-5))
        out.append(("all zero", torch.zeros_like(e), e, 1e-5, 1e-5))
        out.append(("constant", torch.full_like(e, 0.25), e, 1e-5, 1e-5))
        out.append(("empty", torch.empty(0, 4), torch.empty(0, 4), 1e-5, 1e-5))
        out.append(("0-d right", torch.tensor(2.0), torch.tensor(2.0), 1e-5, 1e-5))
        out.append(("0-d wrong", torch.tensor(3.0), torch.tensor(2.0), 1e-5, 1e-5))
        h = e.to(torch.bfloat16)
        out.append(("bfloat16 off by one step", (h.float() * 1.01).to(torch.bfloat16), h,
                    2e-3, 2e-3))
        out.append(("3-d", torch.ones(3, 4, 5), torch.ones(3, 4, 5) + (torch.arange(60) == 47)
                    .reshape(3, 4, 5).float(), 1e-5, 1e-5))
        return out

    def test_verdicts_and_messages_match_the_whole_tensor_definition(self):
        for name, got, expected, rtol, atol in self.outputs():
            with self.subTest(name):
                chunked = harness.judge_values([got], [expected], rtol, atol)
                whole = judge_whole([got], [expected], rtol, atol)
                self.assertTrue(same(chunked, whole), f"{chunked} != {whole}")

    def test_failures_are_failures(self):
        verdicts = {name: harness.judge_values([g], [e], r, a)
                    for name, g, e, r, a in self.outputs()}
        for name in ("wrong in the last chunk", "NaN and Inf late", "all zero", "constant",
                     "0-d wrong", "3-d", "bfloat16 off by one step", "opposite infinities",
                     "finite where expected infinite", "anything where expected NaN"):
            self.assertNotIn("passed", verdicts[name], name)
        self.assertIn("[4, 11]", verdicts["wrong in the last chunk"]["problem"])
        self.assertIn("[3, 2] (2 elements", verdicts["NaN and Inf late"]["problem"])
        self.assertTrue(verdicts["all zero"]["problem"].startswith("all-zero output: "))
        self.assertTrue(verdicts["constant"]["problem"].startswith("constant output: "))
        self.assertIn("[2, 1, 2]", verdicts["3-d"]["problem"])
        for name in ("right", "within tolerance", "within the relative tolerance",
                     "NaN where expected NaN", "the same infinity", "empty", "0-d right"):
            self.assertTrue(verdicts[name].get("passed"), name)

    def test_weak_cases_match_the_whole_tensor_definition(self):
        g = torch.Generator().manual_seed(3)
        cases = [torch.randn(4, 9, generator=g),  # discriminates
                 torch.full((4, 9), 1e-7),  # zero passes
                 torch.full((4, 9), 3.0),  # a constant passes
                 torch.full((2, 9), float("nan")),  # nothing finite
                 torch.cat([torch.randn(30, generator=g), torch.tensor([float("inf")])]),
                 torch.cat([torch.full((9,), 3.0), torch.tensor([float("inf")])]),  # mean of 3s
                 torch.empty(0)]
        for i, e in enumerate(cases):
            with self.subTest(i):
                self.assertEqual(harness.discriminates([e], 1e-5, 1e-5),
                                 discriminates_whole([e], 1e-5, 1e-5))
        self.assertTrue(harness.discriminates([cases[0]], 1e-5, 1e-5))
        self.assertFalse(harness.discriminates([cases[2]], 1e-5, 1e-5))
        self.assertFalse(harness.discriminates([cases[5]], 1e-5, 1e-5))

    def test_unravel_is_row_major(self):
        t = torch.zeros(3, 4, 5)
        for flat in (0, 7, 59):
            t.view(-1)[flat] = 1
            self.assertEqual(harness.unravel(flat, t.shape), t.nonzero()[0].tolist())
            t.view(-1)[flat] = 0


class DrawnShapes(unittest.TestCase):
    class Spec:
        SHAPES = [(1, 6), (4, 36), (3, 130), (33, 2048)]
        DTYPES = ["float32", "bfloat16"]

    def test_drawn_within_the_listed_bounds_in_their_steps_and_never_listed(self):
        for seed in range(200):
            drawn = harness.drawn_shapes(self.Spec, seed)
            self.assertEqual(len(drawn), harness.DRAWN_SHAPES)
            for shape, dtype in drawn:
                self.assertNotIn(shape, self.Spec.SHAPES)
                self.assertIn(dtype, self.Spec.DTYPES)
                self.assertTrue(1 <= shape[0] <= 33 and 6 <= shape[1] <= 2048, shape)
                self.assertEqual(shape[1] % 2, 0, shape)  # every listed size is even
                self.assertLessEqual(shape[0] * shape[1], 33 * 2048)
        self.assertEqual(harness.drawn_shapes(self.Spec, 5), harness.drawn_shapes(self.Spec, 5))
        self.assertNotEqual(harness.drawn_shapes(self.Spec, 5), harness.drawn_shapes(self.Spec, 6))

    def test_the_spec_bounds_or_turns_them_off(self):
        class Bounded(self.Spec):
            SHAPE_BOUNDS = [(2, 3), (64, 128, 64)]

        for seed in range(50):
            for shape, _ in harness.drawn_shapes(Bounded, seed):
                self.assertIn(shape[0], (2, 3))
                self.assertIn(shape[1], (64, 128))

        class Off(self.Spec):
            DRAWN_SHAPES = 0

        self.assertEqual(harness.drawn_shapes(Off, 1), [])

    def test_the_rmsnorm_spec_reaches_past_its_widest_listed_row(self):
        # A kernel right only up to some tile width (the red team's reduced the first 4096
        # columns) must meet a wider row in most runs: kernels/specs/rmsnorm.py's bounds.
        spec = harness.load_spec(str(SOURCE / "kernels" / "specs" / "rmsnorm.py"))
        widest = max(s[-1] for s in spec.SHAPES)
        wider = sum(any(shape[-1] > widest for shape, _ in harness.drawn_shapes(spec, seed))
                    for seed in range(200))
        self.assertGreater(wider, 180)


class Layouts(unittest.TestCase):
    """Values handed over in shared memory: both sides see the same tensors and values."""

    @staticmethod
    def values():
        g = torch.Generator().manual_seed(11)
        base = torch.randn(6, 10, generator=g)
        return [base, base.t(), base[:, 3:7], torch.randn(10, generator=g).expand(4, 10),
                torch.tensor(2.5), torch.empty(0, 3), base.to(torch.bfloat16),
                base.to(torch.float16), torch.arange(12, dtype=torch.int64).reshape(3, 4),
                torch.tensor([True, False]), 1e-6, 3, True, None, "mean", float("inf"),
                float("nan"), (1, 2.5), [0.5, float("-inf")], torch.float32]

    def test_every_value_comes_back_as_it_was(self):
        values = self.values()
        layout, size = harness.layout_of(values)
        self.assertEqual(size % harness.ALIGN, 0)
        memory = torch.zeros(size, dtype=torch.uint8)
        harness.write_values(layout, memory, 0, values)
        # What the other side sees, from the bytes and the layout (sent as JSON) alone.
        import json
        back = harness.place(json.loads(json.dumps(layout)), memory.clone(), 0)
        for v, w in zip(values, back):
            if isinstance(v, torch.Tensor):
                self.assertEqual((v.shape, v.stride(), v.dtype), (w.shape, w.stride(), w.dtype))
                self.assertTrue(torch.equal(v, w))
            elif isinstance(v, float) and v != v:
                self.assertTrue(w != w)
            else:
                self.assertEqual(v, w)
                self.assertEqual(type(v), type(w))

    def test_tensors_start_on_cache_lines_and_do_not_overlap(self):
        layout, size = harness.layout_of(self.values())
        spans = []
        for entry in layout:
            if "tensor" in entry:
                offset, shape, stride, dtype = entry["tensor"]
                self.assertEqual(offset % harness.ALIGN, 0)
                item = torch.empty((), dtype=harness.DTYPES[dtype]).element_size()
                spans.append((offset, offset + harness.span_of(shape, stride) * item))
        spans.sort()
        for (_, end), (start, _) in zip(spans, spans[1:]):
            self.assertLessEqual(end, start)
        self.assertLessEqual(spans[-1][1], size)

    def test_a_layout_that_does_not_fit_is_refused_never_read_past(self):
        layout, size = harness.layout_of(self.values())
        harness.check_layout(layout, size)
        rng = random.Random(5)
        refused = 0
        for _ in range(500):
            mutated = [dict(e) for e in layout]
            entry = rng.choice([e for e in mutated if "tensor" in e])
            offset, shape, stride, dtype = list(entry["tensor"])
            what = rng.randrange(3)
            if what == 0:
                offset += rng.choice([-1, 1]) * rng.randrange(1, size)
            elif what == 1 and shape:
                shape = list(shape)
                shape[0] += rng.randrange(1, 50)
            elif stride:
                stride = list(stride)
                stride[0] += rng.randrange(1, 50)
            entry["tensor"] = [offset, shape, stride, dtype]
            memory = torch.zeros(size, dtype=torch.uint8)
            try:
                harness.check_layout(mutated, size)
            except ValueError:
                refused += 1
                continue
            # Accepted: every view lies inside the memory.
            for t in harness.place(mutated, memory, 0):
                if isinstance(t, torch.Tensor) and t.numel():
                    t.sum()
        self.assertGreater(refused, 100)

    def test_what_cannot_be_handed_over_says_so(self):
        with self.assertRaises(TypeError):
            harness.layout_of([object()])
        with self.assertRaises(TypeError):
            harness.layout_of([{"a": 1}])


class SealedMemory(unittest.TestCase):
    """The inputs region: once sealed, no process can write it but through the judge's own
    mapping."""

    def test_a_sealed_region_refuses_every_way_of_writing_but_the_judges(self):
        import mmap
        region = harness.Region(8192, "test")
        region.bytes.fill_(7)
        region.seal(read_only=True)
        with self.assertRaises(OSError):
            mmap.mmap(region.fd, 8192)  # a new writable shared mapping
        with self.assertRaises(OSError):
            os.pwrite(region.fd, b"x", 0)
        reopened = os.open(f"/proc/self/fd/{region.fd}", os.O_RDWR)
        try:
            with self.assertRaises(OSError):
                os.pwrite(reopened, b"x", 0)
            with self.assertRaises(OSError):
                os.ftruncate(reopened, 0)  # would make the judge's mapping fault
        finally:
            os.close(reopened)
        m, view = harness.map_received(region.fd, 8192, writable=False)
        self.assertTrue(bool((view == 7).all()))
        region.bytes[0] = 9  # the judge's own mapping still writes
        self.assertEqual(int(view[0]), 9)
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        address = view.data_ptr()
        self.assertNotEqual(libc.mprotect(ctypes.c_void_p(address), ctypes.c_size_t(4096), 3), 0)
        del view
        m.close()
        region.close()

    def test_an_outputs_region_stays_writable_but_cannot_shrink(self):
        region = harness.Region(4096, "test")
        region.seal(read_only=False)
        m, view = harness.map_received(region.fd, 4096, writable=True)
        view.fill_(3)
        self.assertTrue(bool((region.bytes == 3).all()))
        with self.assertRaises(OSError):
            os.ftruncate(region.fd, 0)
        del view
        m.close()
        region.close()


class Protocol(unittest.TestCase):
    """The judge's side of the link: only replies to what it asked, within the time left."""

    def peer(self, budget=5.0):
        import socket
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.addCleanup(theirs.close)
        peer = harness.Peer(harness.Link(mine.detach()), "candidate", budget)
        self.addCleanup(peer.link.sock.close)
        return peer, theirs

    @staticmethod
    def reply(sock, message, fds=()):
        import json, socket
        if fds:
            socket.send_fds(sock, [json.dumps(message).encode()], list(fds))
        else:
            sock.send(json.dumps(message).encode())

    def test_a_reply_to_the_request_is_taken(self):
        peer, theirs = self.peer()
        peer.send({"op": "call"})
        import json
        asked = json.loads(theirs.recv(1 << 16))
        self.reply(theirs, {"nonce": asked["nonce"], "ok": 1})
        self.assertEqual(peer.receive()["ok"], 1)

    def test_a_reply_sent_before_the_request_or_unasked_is_refused(self):
        peer, theirs = self.peer()
        self.reply(theirs, {"nonce": 0, "done": True})  # ahead of any request
        peer.send({"op": "segment"})
        with self.assertRaisesRegex(harness.Lost, "out of turn"):
            peer.receive()
        peer, theirs = self.peer()
        self.reply(theirs, ["not", "an", "object"])
        with self.assertRaisesRegex(harness.Lost, "out of turn"):
            peer.receive(expect_nonce=False)

    def test_garbage_an_ended_process_and_silence_are_lost_not_crashes(self):
        peer, theirs = self.peer()
        theirs.send(b"{not json")
        with self.assertRaisesRegex(harness.Lost, "not the harness's message"):
            peer.receive(expect_nonce=False)
        peer, theirs = self.peer()
        theirs.send(b"[" * 100000 + b"]" * 100000)
        with self.assertRaises(harness.Lost):
            peer.receive(expect_nonce=False)
        peer, theirs = self.peer()
        theirs.close()
        with self.assertRaisesRegex(harness.Lost, "stopped"):
            peer.receive(expect_nonce=False)
        peer, theirs = self.peer(budget=0.3)
        start = time.monotonic()
        with self.assertRaisesRegex(harness.Lost, "ran past 0.3 s"):
            peer.receive(expect_nonce=False)
        self.assertLess(time.monotonic() - start, 2)

    def test_the_budget_is_all_waits_together(self):
        peer, theirs = self.peer(budget=0.5)
        for _ in range(2):
            peer.send({"op": "x"})
            import json
            nonce = json.loads(theirs.recv(1 << 16))["nonce"]
            time.sleep(0.2)
            self.reply(theirs, {"nonce": nonce})
            peer.receive()
        peer.send({"op": "x"})
        with self.assertRaisesRegex(harness.Lost, "ran past"):
            peer.receive()

    def test_descriptors_from_the_worker_are_closed_unread(self):
        peer, theirs = self.peer()
        r, w = os.pipe()
        before = set(os.listdir("/proc/self/fd"))
        peer.send({"op": "x"})
        import json
        nonce = json.loads(theirs.recv(1 << 16))["nonce"]
        self.reply(theirs, {"nonce": nonce}, fds=[r])
        peer.receive()
        self.assertEqual(set(os.listdir("/proc/self/fd")), before)
        os.close(r)
        os.close(w)


class FastLook(unittest.TestCase):
    """The audit's first look passes only outputs the float64 comparison passes too."""

    def test_it_never_passes_what_the_definition_fails(self):
        g = torch.Generator().manual_seed(17)
        passed_fast = 0
        for trial in range(400):
            dtype = [torch.float32, torch.float16, torch.bfloat16][trial % 3]
            rtol, atol = harness.DEFAULT_TOLERANCES[harness.dtype_name(dtype)]
            e = (torch.randn(64, generator=g) * 10 ** torch.randint(-3, 3, (1,), generator=g)
                 ).to(dtype)
            # Errors scaled around the tolerance, so that many outputs sit on its edge.
            scale = float(torch.rand(1, generator=g)) * 2.5
            noise = (torch.rand(64, generator=g) * 2 - 1) * (atol + rtol * e.float().abs())
            got = (e.float() + noise * scale).to(dtype)
            if trial % 17 == 0:
                got[trial % 64] = float("nan")
            fast = harness.clearly_within(got, e, rtol, atol)
            exact = harness.judge_values([got], [e], rtol, atol)
            if fast:
                passed_fast += 1
                self.assertTrue(exact.get("passed"), (trial, exact))
            self.assertEqual(bool(harness.audit_values([got], [e], rtol, atol).get("passed")),
                             bool(exact.get("passed")))
        self.assertGreater(passed_fast, 50)

    def test_float64_and_integers_always_take_the_exact_path(self):
        self.assertFalse(harness.clearly_within(torch.ones(3, dtype=torch.float64),
                                                torch.ones(3, dtype=torch.float64), 1e-7, 1e-7))
        self.assertFalse(harness.clearly_within(torch.ones(3, dtype=torch.int64),
                                                torch.ones(3, dtype=torch.int64), 0, 0))


class Fingerprints(unittest.TestCase):
    def test_any_changed_bit_shape_or_dtype_changes_it(self):
        x = torch.randn(5, 7)
        base = harness.fingerprint([x])
        self.assertEqual(base, harness.fingerprint([x.clone()]))
        for i in range(0, x.numel(), 5):
            y = x.clone()
            y.view(-1).view(torch.int32)[i] ^= 1
            self.assertNotEqual(harness.fingerprint([y]), base)
        self.assertNotEqual(harness.fingerprint([x.reshape(7, 5)]), base)
        self.assertNotEqual(harness.fingerprint([x.view(torch.int32)]), base)
        self.assertNotEqual(harness.fingerprint([x, x]), base)


class LocalService:
    """upskill's side of the judge (src/kernel/judge_service.cpp), played in this process: the
    same process_vm_readv(2) reads, of this process's own memory. `after_pull` runs once the
    outputs are copied: what a worker does after the judge holds them."""

    def __init__(self):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.snapshot = None
        self.after_pull = None
        self.pulls = 0

    def read(self):
        return None

    def map(self, region):
        self.snapshot = region

    def pull(self, who, ranges, peer):
        self.pulls += 1
        base = ctypes.addressof(ctypes.c_char.from_buffer(self.snapshot.map))
        for address, length, offset in ranges:
            local = (ctypes.c_void_p * 2)(base + offset, length)
            remote = (ctypes.c_void_p * 2)(address, length)
            n = self.libc.process_vm_readv(os.getpid(), local, 1, remote, 1, 0)
            if n != length:
                return 2
        if self.after_pull:
            self.after_pull()
        return 0


class JudgesCopy(unittest.TestCase):
    """A segment as the judge times it on the CPU, against a worker played here: the outputs are
    copied out of the worker's memory by upskill's side, inside the judge's clock; nothing the
    worker does after that changes what is judged, and a worker that names the wrong memory
    fails."""

    class Spec:
        @staticmethod
        def make_inputs(shape, dtype, device, generator):
            return [torch.randn(*shape, generator=generator).to(dtype)]

        @staticmethod
        def reference(x):
            return x * 2

    def judge(self):
        j = harness.Judge.__new__(harness.Judge)
        j.device, j.cuda, j.spec = "cpu", False, self.Spec
        j.tolerances = dict(harness.DEFAULT_TOLERANCES)
        j.flush = torch.empty(1 << 16, dtype=torch.uint8)
        j.audited = 0
        j.service = LocalService()
        j.candidate = None
        return j

    def channel(self, j, calls=6):
        sample = [torch.randn(64, 32)]
        in_layout, in_stride = harness.layout_of(sample)
        out_layout, out_stride = harness.outputs_layout([sample[0] * 2])
        plan = {"index": 0, "shape": (64, 32), "dtype": "float32", "in_layout": in_layout,
                "in_stride": in_stride, "out_layout": out_layout, "out_stride": out_stride,
                "calls": calls, "sample": (sample, [sample[0] * 2])}
        inputs = harness.Region(calls * in_stride, "test-in")
        snapshot = harness.Region(calls * out_stride, "test-snapshot")
        self.addCleanup(inputs.close)
        self.addCleanup(snapshot.close)
        j.service.map(snapshot)
        channel = {"inputs": inputs, "outputs": snapshot, "plan": plan,
                   "snapshot": snapshot.bytes,
                   "staging": torch.empty(inputs.size, dtype=torch.uint8)}
        for i in range(calls):
            j.stage(channel, i, harness.fresh_inputs(self.Spec, (64, 32), "float32"))
        return channel

    class Worker:
        """Plays the worker: computes the calls asked for (but `skip`) into tensors of its own
        and answers where they are (`where` rewrites the answer). `seen` records, per request,
        which calls' inputs were in the region by then."""

        def __init__(self, channel, skip=None, where=None):
            self.channel, self.skip, self.where = channel, skip, where
            self.name = "candidate"
            self.held, self.seen = [], []

        def request(self, message, fds=()):
            plan = self.channel["plan"]
            answer = []
            staged = [bool(torch.equal(
                self.channel["inputs"].bytes[k * plan["in_stride"]:(k + 1) * plan["in_stride"]],
                self.channel["staging"][k * plan["in_stride"]:(k + 1) * plan["in_stride"]]))
                for k in range(plan["calls"])]
            self.seen.append((message.get("calls"), staged))
            for i in message.get("calls", range(plan["calls"])):
                x = harness.place(plan["in_layout"], self.channel["inputs"].bytes,
                                  i * plan["in_stride"])
                y = torch.zeros_like(x[0]) if i == self.skip else x[0] * 2
                self.held.append(y)
                answer.append([[y.data_ptr(), y.numel() * y.element_size()]])
            return {"outputs": self.where(answer) if self.where else answer}

    def test_an_honest_segment_is_timed_and_every_call_audited(self):
        j = self.judge()
        channel = self.channel(j)
        elapsed, cpu = j.segment(self.Worker(channel), channel, "call", None, fresh=True)
        self.assertGreater(elapsed, 0)
        self.assertIsNone(cpu)
        self.assertEqual(j.service.pulls, 6)
        j.audit(channel, 0)
        self.assertEqual(j.audited, 6)

    def test_each_call_is_asked_for_alone_and_gets_its_inputs_only_then(self):
        # Nothing of call i+1 is in the worker's reach until call i's outputs are the judge's:
        # calls cannot be worked on side by side, or ahead.
        j = self.judge()
        channel = self.channel(j)
        worker = self.Worker(channel)
        j.segment(worker, channel, "call", None, fresh=True)
        self.assertEqual([calls for calls, _ in worker.seen], [[i] for i in range(6)])
        for i, (_, staged) in enumerate(worker.seen):
            self.assertEqual(staged[:i + 1], [True] * (i + 1))
            self.assertFalse(any(staged[i + 1:]), f"request {i} saw later inputs: {staged}")

    def test_a_skipped_call_fails_the_audit(self):
        j = self.judge()
        channel = self.channel(j)
        j.segment(self.Worker(channel, skip=3), channel, "call", None, fresh=True)
        with self.assertRaisesRegex(harness.CallFailed, "call 4 of 6"):
            j.audit(channel, 0)

    def test_what_is_written_after_the_copy_is_not_judged(self):
        # Outputs the worker fills only after the judge holds them (it answered first): the
        # judge judges what was there when upskill copied it.
        j = self.judge()
        channel = self.channel(j)
        worker = self.Worker(channel)
        real = []

        def answer_first(answer):
            for t in worker.held:
                real.append(t.clone())
                t.zero_()
            return answer

        def fill_late():
            for t, r in zip(worker.held, real):
                t.copy_(r)

        worker.where = answer_first
        j.service.after_pull = fill_late
        j.segment(worker, channel, "call", None, fresh=True)
        with self.assertRaisesRegex(harness.CallFailed, "call 1 of 6"):
            j.audit(channel, 0)

    def test_an_answer_that_names_the_wrong_memory_fails(self):
        j = self.judge()
        channel = self.channel(j)
        for where, problem in [
                (lambda a: a[:-1], "did not say where"),
                (lambda a: [[[p, n - 4]] for [[p, n]] in a], "wrong size"),
                (lambda a: [[[p, n], [p, n]] for [[p, n]] in a], "did not say where"),
                (lambda a: [[[-1, n]] for [[p, n]] in a], "wrong size"),
                (lambda a: [[["0", n]] for [[p, n]] in a], "wrong size"),
                (lambda a: [[[8, n]] for [[p, n]] in a], "could not be read")]:
            with self.subTest(problem):
                with self.assertRaisesRegex(harness.CallFailed, problem):
                    j.segment(self.Worker(channel, where=where), channel, "call", None,
                              fresh=True)

    def test_any_error_or_mismatch_fails_the_segment_and_nothing_is_copied(self):
        # Not only words: whatever the worker puts under "error" or "mismatch" ends the segment.
        j = self.judge()
        channel = self.channel(j)
        for reply in ({"error": 1}, {"mismatch": [0]}, {"error": None}, {"mismatch": "x"}):
            with self.subTest(reply):
                worker = self.Worker(channel)
                worker.request = lambda message, fds=(), reply=reply: dict(reply)
                with self.assertRaises(harness.CallFailed):
                    j.segment(worker, channel, "call", None, fresh=True)
        self.assertEqual(j.service.pulls, 0)

    def test_the_worker_names_memory_that_holds_what_its_outputs_read_as(self):
        # A lazily conjugated or negated view holds other bytes than it reads as: the worker's
        # answer names memory with the values resolved.
        x = torch.randn(8, dtype=torch.complex64)
        layout, _ = harness.outputs_layout([x])
        for name, fn in (("conj", lambda v: v.conj()), ("neg", lambda v: torch._neg_view(v)),
                         ("strided", lambda v: v.repeat(2)[::2])):
            with self.subTest(name):
                w = harness.Worker.__new__(harness.Worker)
                w.device, w.fn, w.templates = "cpu", fn, {}
                w.bound = {"calls": [([x], None)], "message": {"outputs": layout},
                           "pull": True, "regions": ()}
                reply = w.segment({"fn": "call"})
                [[[address, nbytes]]] = reply["outputs"]
                got = torch.empty_like(x)
                ctypes.memmove(got.data_ptr(), address, nbytes)
                self.assertTrue(torch.equal(got, fn(x)))

    def test_the_first_output_named_for_every_call_fails_the_audit(self):
        j = self.judge()
        channel = self.channel(j)
        worker = self.Worker(channel)
        worker.where = lambda a: [[[worker.held[0].data_ptr(), a[0][0][1]]]]
        j.segment(worker, channel, "call", None, fresh=True)
        with self.assertRaisesRegex(harness.CallFailed, "call 2 of 6"):
            j.audit(channel, 0)


class InputsLeftBehind(unittest.TestCase):
    """On a device the inputs cannot be made read-only: the worker hands them back as the call
    left them and the judge compares them with its own. Played here on the CPU, the worker's side
    real, its kernel a function."""

    def call(self, fn):
        import types
        j = harness.Judge.__new__(harness.Judge)
        j.device, j.cuda = "cpu", True  # the device path: the inputs are asked back
        worker = harness.Worker(types.SimpleNamespace(device="cpu", reference=True))
        worker.fn = fn

        class Peer:
            name = "candidate"

            def request(self, message, fds=()):
                return worker.call(message, list(fds))
        j.candidate = Peer()
        x = torch.randn(8, 16)
        return j.one_call([x, 0.5], [x * 0.5], 0)

    def test_a_kernel_that_leaves_an_input_changed_fails(self):
        got, problem = self.call(lambda x, s: (x.mul_(2), x * s)[1])
        self.assertIsNone(got)
        self.assertEqual(problem, "modified its inputs [0]")

    def test_an_honest_kernel_passes_its_outputs_on(self):
        got, problem = self.call(lambda x, s: x * s)
        self.assertIsNone(problem)
        self.assertEqual(len(got), 1)


class CudaDriverTypes(unittest.TestCase):
    """The driver API's structures as the harness declares them, against the toolkit's cuda.h;
    and every function it calls, in the driver (or the toolkit's stub of it). A GPU machine is
    where they run; this is where they can be checked before one is lent."""
    CUDA = os.environ.get("CUDA_HOME", "/usr/local/cuda")

    def test_structures_match_cuda_h(self):
        import ctypes, shutil, subprocess, tempfile
        header = os.path.join(self.CUDA, "include", "cuda.h")
        compiler = shutil.which("gcc") or shutil.which("cc")
        if not os.path.exists(header) or not compiler:
            self.skipTest("no cuda.h or C compiler")
        program = r"""
#include <cuda.h>
#include <stddef.h>
#include <stdio.h>
int main(void) {
  printf("%zu %zu %zu %zu %zu %zu\n", sizeof(CUmemAllocationProp),
         offsetof(CUmemAllocationProp, location), offsetof(CUmemAllocationProp, win32HandleMetaData),
         offsetof(CUmemAllocationProp, allocFlags), sizeof(CUmemAccessDesc),
         offsetof(CUmemAccessDesc, flags));
  printf("%d %d %d %d\n", CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
         CU_MEM_LOCATION_TYPE_DEVICE, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  return 0;
}
"""
        with tempfile.TemporaryDirectory() as d:
            source, binary = os.path.join(d, "s.c"), os.path.join(d, "s")
            with open(source, "w") as f:
                f.write(program)
            subprocess.run([compiler, "-I", os.path.dirname(header), source, "-o", binary],
                           check=True)
            sizes, values = subprocess.run([binary], capture_output=True, text=True,
                                           check=True).stdout.split("\n")[:2]
        P, A = harness.CUmemAllocationProp, harness.CUmemAccessDesc
        self.assertEqual([int(v) for v in sizes.split()],
                         [ctypes.sizeof(P), P.location.offset, P.win32HandleMetaData.offset,
                          P.allocFlags.offset, ctypes.sizeof(A), A.flags.offset])
        self.assertEqual([int(v) for v in values.split()],
                         [harness.CU_MEM_ALLOCATION_TYPE_PINNED,
                          harness.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                          harness.CU_MEM_LOCATION_TYPE_DEVICE,
                          harness.CU_MEM_ACCESS_FLAGS_PROT_READWRITE])

    def test_every_function_is_in_the_driver(self):
        import ctypes
        for path in ("libcuda.so.1", os.path.join(self.CUDA, "lib64", "stubs", "libcuda.so")):
            try:
                lib = ctypes.CDLL(path)
                break
            except OSError:
                continue
        else:
            self.skipTest("no CUDA driver or stub")
        for name in harness.CUDA_DRIVER_FUNCTIONS:
            self.assertTrue(hasattr(lib, name), name)


if __name__ == "__main__":
    unittest.main()
