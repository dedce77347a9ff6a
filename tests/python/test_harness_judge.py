"""The kernel harness's judge (src/kernel/harness/harness.py) compares outputs a chunk at a time;
these tests hold it to the whole-tensor definition, written out here, on outputs that span many
chunks: right answers, wrong ones, NaN and infinities in a late chunk, empty and 0-d tensors;
and the bench's timing loops: their budgets, the draw of the timed calls whose outputs are checked,
the refreshed inputs the judge replays; the shapes drawn per run; the candidate's files and
upskill's clock read as untrusted; the cross-check of the candidate's own clock with upskill's.

Run by ctest with the Python that has torch and UPSKILL_SOURCE_DIR set.
"""
import collections
import importlib.util
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
        bad = ~torch.isfinite(g64) & torch.isfinite(e64)
        if bad.any():
            at = bad.nonzero()[0].tolist()
            return {"problem": f"output {k} has NaN/Inf at {at} ({int(bad.sum())} elements)"}
        diff = (g64 - e64).abs()
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
                     "0-d wrong", "3-d", "bfloat16 off by one step"):
            self.assertNotIn("passed", verdicts[name], name)
        self.assertIn("[4, 11]", verdicts["wrong in the last chunk"]["problem"])
        self.assertIn("[3, 2] (2 elements)", verdicts["NaN and Inf late"]["problem"])
        self.assertTrue(verdicts["all zero"]["problem"].startswith("all-zero output: "))
        self.assertTrue(verdicts["constant"]["problem"].startswith("constant output: "))
        self.assertIn("[2, 1, 2]", verdicts["3-d"]["problem"])
        for name in ("right", "within tolerance", "within the relative tolerance", "NaN where expected NaN", "empty", "0-d right"):
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


class TimedCalls(unittest.TestCase):
    """The bench's timing loop: its budget, and which timed calls' outputs the judge gets."""

    @staticmethod
    def counter(delay_s=0.0):
        calls = []

        def fn():
            calls.append(None)
            if delay_s:
                time.sleep(delay_s)
            return torch.tensor([len(calls)])
        return fn, calls

    def test_slow_calls_stop_at_the_budget_but_never_below_the_minimum(self):
        fn, _ = self.counter(0.03)
        _, times = harness.time_calls(fn, [], "cpu", warmup=1, repeats=30, budget_s=0.01)
        self.assertEqual(len(times), 5)
        fn, _ = self.counter(0.0)
        _, times = harness.time_calls(fn, [], "cpu", warmup=1, repeats=30, budget_s=10)
        self.assertEqual(len(times), 30)  # fast calls stop at the repeats, not the budget

    def test_the_first_and_three_random_calls_of_all_made_are_kept(self):
        # 12 clocked calls: the first is always kept, and each of the other 11 as often as any
        # other over many draws, with the number of the call that made it.
        seen = collections.Counter()
        draws = 3000
        rng = random.Random(7)
        for _ in range(draws):
            fn, _ = self.counter()
            segments, kept, copies = harness.clocked_calls(fn, [], "cpu", 12, 1, keep=True,
                                                           draw=rng.randrange)
            self.assertEqual(sum(n for _, n in segments), 12)
            numbers = [number for number, _ in kept]
            for number, out in kept:  # the counter returns its own call's number, from 1
                self.assertEqual(int(out[0]), number + 1)
                self.assertTrue(torch.equal(copies[number][0], out[0]))
            self.assertEqual(len(numbers), 1 + harness.TIMED_CHECKS)
            self.assertEqual(numbers[0], 0)
            self.assertEqual(len(set(numbers)), len(numbers))
            seen.update(numbers[1:])
        expected = draws * harness.TIMED_CHECKS / 11
        self.assertEqual(sorted(seen), list(range(1, 12)))
        for call, count in seen.items():
            self.assertLess(abs(count - expected), 0.15 * expected, (call, count, expected))

    def test_a_segment_ends_at_twice_its_share_of_the_budget(self):
        # A forged median asks for 5,000 calls of 30 ms: each segment stops after about 0.2 s.
        fn, calls = self.counter(0.03)
        start = time.monotonic()
        segments, _, _ = harness.clocked_calls(fn, [], "cpu", 5000, 1)
        self.assertLess(time.monotonic() - start, 2.5)
        self.assertEqual(len(segments), harness.CLOCK_SEGMENTS)
        self.assertTrue(all(2 <= n <= 10 for _, n in segments), segments)

    def test_every_call_sees_new_inputs_and_the_judge_replays_them(self):
        originals = [torch.randn(16, 33), torch.rand(33)]
        inputs = [t.clone() for t in originals]
        seen = []
        harness.clocked_calls(lambda a, b: seen.append((a.clone(), b.clone())), inputs, "cpu",
                              40, 99)
        self.assertEqual(len(seen), 40)
        for (a0, b0), (a1, b1) in zip(seen, seen[1:]):
            self.assertFalse(torch.equal(a0, a1) and torch.equal(b0, b1))  # never the same bytes
        # The judge replays the refreshes from its own copy of the inputs and the same seed:
        # before call 18 (number 17) they are exactly what that call saw.
        replay = [t.clone() for t in originals]
        rng = random.Random(99)
        for _ in range(18):
            harness.refresh(replay, rng)
        self.assertTrue(torch.equal(replay[0], seen[17][0]))
        self.assertTrue(torch.equal(replay[1], seen[17][1]))

    def test_integer_inputs_are_left_alone(self):
        idx = torch.arange(10)
        harness.refresh([idx], random.Random(1))
        self.assertTrue(torch.equal(idx, torch.arange(10)))

    def test_the_system_draw_covers_its_range(self):
        counts = collections.Counter(harness.system_below(7) for _ in range(7000))
        self.assertEqual(sorted(counts), list(range(7)))
        for value, count in counts.items():
            self.assertLess(abs(count - 1000), 200, (value, count))

    def test_nothing_is_kept_unless_asked(self):
        fn, _ = self.counter()
        _, kept, copies = harness.clocked_calls(fn, [], "cpu", 8, 1)
        self.assertEqual((kept, copies), ([], {}))


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


class UntrustedFiles(unittest.TestCase):
    def test_upskills_clock_refuses_marks_out_of_range_or_forged(self):
        self.assertIsNone(harness.clock_problem([(0, 10.0, 5), (4, 9.0, 5)], {}, 0))
        self.assertIn("not the harness's", harness.clock_problem([(7, 1.0, 5)], {}, 0))
        self.assertIn("not the harness's", harness.clock_problem([(0, 1.0, 100000)], {}, 0))
        self.assertIn("began twice", harness.clock_problem([], {0: "a segment began twice"}, 0))

    def test_malformed_settled_files_are_problems_not_crashes(self):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "settled.pt")
            self.assertIn("no settled.pt", harness.load_settled(path)[1])
            torch.save({"cases": [[[1], 0, [], []], "junk"], "bench": [[[2], []], [0, [[1, [3]]]]]},
                       path)
            settled, problem = harness.load_settled(path)
            self.assertIsNone(problem)
            self.assertEqual(settled["cases"], {})
            self.assertEqual(list(settled["bench"]), [0])
            with open(path, "wb") as f:
                f.write(b"not a tensor file")
            self.assertIn("unreadable", harness.load_settled(path)[1])


class ClockCrossCheck(unittest.TestCase):
    """The candidate's own clock against upskill's over the same segments."""
    JUDGE = [(seg, 100.0, 50) for seg in range(5)]  # upskill's: 100 ms a segment

    def problem(self, own, judge=None):
        judge = judge or self.JUDGE
        return harness.own_clock_problem(harness.own_segments({"segments": own}, judge), judge)

    def test_an_honest_kernel_agrees_under_any_load(self):
        # The marks' delivery adds to upskill's time only; a loaded machine, 150 ms to one mark.
        self.assertIsNone(self.problem([[97e6, 50]] * 5))
        loaded = [(0, 250.0, 50)] + self.JUDGE[1:]
        self.assertIsNone(self.problem([[97e6, 50]] * 5, loaded))
        # Both clocks see the same interval, so a slow stretch slows both alike.
        slow = [(0, 400.0, 50)] + self.JUDGE[1:]
        self.assertIsNone(self.problem([[395e6, 50]] + [[97e6, 50]] * 4, slow))
        own = harness.own_segments({"segments": [[97e6, 50], [90e6, 50]]}, self.JUDGE)
        self.assertEqual(own, {0: (97e6, 50), 1: (90e6, 50)})

    def test_a_slowed_clock_or_marks_out_of_turn_are_tampering(self):
        self.assertIn("tampered", self.problem([[1e6, 50]] * 5))  # a clock 100x slow
        self.assertIn("tampered", self.problem([[45e6, 50]] * 5))  # just over 2x
        self.assertIsNone(self.problem([[55e6, 50]] * 5))
        self.assertIn("tampered", self.problem([[301e6, 50]] * 5))  # upskill's over 3x faster
        self.assertIsNone(self.problem([[290e6, 50]] * 5))
        # Below the latency slack nothing is said (calls too short for the clocks to differ).
        tiny = [(seg, 0.2, 50) for seg in range(5)]
        self.assertIsNone(self.problem([[0.01e6, 50]] * 5, tiny))

    def test_a_record_not_the_harnesses_is_tampering(self):
        for own in (None, "fast", [], [[1e6]], [[1e6, 0]], [[-1, 5]], [["1", 5]],
                    [[1e6, 50]] * 6, [[1e6, 50, 3]]):
            self.assertIn("missing or malformed", self.problem(own), own)
        self.assertIn("missing or malformed", harness.own_clock_problem(
            harness.own_segments({}, self.JUDGE), self.JUDGE))


if __name__ == "__main__":
    unittest.main()
