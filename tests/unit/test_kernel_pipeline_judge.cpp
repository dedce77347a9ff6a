// The judge's defences by construction (docs/SECURITY.md, "The judge's threat model"): each cheat
// below was written against a design that trusted something in the candidate's process, and the
// honest slow kernel they are built on must be reported slow. Every one runs as root; the ones
// marked run as an ordinary user too.
#include <gtest/gtest.h>

#include "support/kernel_answers.hpp"

namespace upskill::checks {
namespace {

using namespace kernel_answers;

// A correct kernel that pays 20 ms a call on the bench shape (the reference takes a few ms there):
// honestly about a tenth of the reference's speed. `pay` is the Python that pays it.
const std::string kSlow = "import time as _time\n";
std::string slow(
    const std::string& prelude = "",
    const std::string& pay = "    if x.shape[0] >= 512:\n        _time.sleep(0.02)\n") {
  return with_python(kSlow + prelude, pay);
}

double speedup(const CheckResult& r) {
  const Json* bench = stage(r, "bench");
  if (!bench || !bench->contains("speedup")) return -1;
  return (*bench)["speedup"].get<double>();
}

// The honest slow kernel: correct, timed, slow — not tampering, nothing implausible.
TEST(KernelJudge, AnHonestSlowKernelIsReportedSlow) {
  const CheckResult r = run(slow(), params(kAll));
  ASSERT_EQ(r.status, Status::passed) << r.reason << r.details.dump(2);  // no min_speedup asked
  EXPECT_GT(speedup(r), 0.0) << r.details.dump(2);
  EXPECT_LT(speedup(r), 0.4) << r.details.dump(2);
  const Json& entry = (*stage(r, "bench"))["entries"][0];
  EXPECT_FALSE(entry.contains("problem")) << entry.dump();
  EXPECT_FALSE(entry.contains("implausible")) << entry.dump();
  // Its CPU time is the kernel's, by the kernel's accounting: a sleeping call uses little of it.
  EXPECT_LT(entry["candidate_cpu_ms"].get<double>(), entry["candidate_ms"].get<double>());
}

// Issue 46's first cheat: only the rows whose input changed since the last call are paid for,
// the rest copied from the last output. Every timed call's inputs are new in full, so it pays for
// every row: as slow as honest.
TEST(KernelJudge, PayingOnlyForRowsThatChangedSavesNothing) {
  const std::string memo = R"(
_last = {}
def _changed_rows(x):
    prev = _last.get(tuple(x.shape))
    _last[tuple(x.shape)] = x.clone()
    if prev is None:
        return x.shape[0]
    return int((x != prev).any(dim=-1).sum())
)";
  const CheckResult r = run(slow(memo,
                                 "    if x.shape[0] >= 512:\n"
                                 "        _time.sleep(0.02 * _changed_rows(x) / x.shape[0])\n"),
                            params(kAll));
  ASSERT_NE(stage(r, "bench"), nullptr) << r.details.dump(2);
  EXPECT_GT(speedup(r), 0.0) << r.details.dump(2);
  EXPECT_LT(speedup(r), 0.4) << r.details.dump(2);
}

// Issue 46's second cheat: the candidate looks through the harness's frames for the draw of the
// calls that are checked, and computes only some calls. Nothing of the judge's is there; every
// call is checked.
TEST(KernelJudge, ComputingOnlySomeTimedCallsFails) {
  const std::string peek = R"(
import sys as _sys
_calls = [0]
_seen = set()
def _look():
    f = _sys._getframe(2)
    while f is not None:
        _seen.update(k for k in f.f_locals if k in ("kept", "reservoir", "draw", "refresh_seed",
                                                    "audit", "seed", "staging", "snapshot"))
        f = f.f_back
)";
  const CheckResult r = fails_with(with_python(peek,
                                               "    if x.shape[0] >= 512:\n"
                                               "        _look()\n"
                                               "        _calls[0] += 1\n"
                                               "        if _calls[0] % 3:\n"
                                               "            out.zero_()\n"),
                                   params(kAll), "a timed call's output is wrong");
  EXPECT_TRUE(r.reason.starts_with("bench:")) << r.reason;
}

// Issue 46's third cheat: answer at once, and write the outputs afterwards — here the harness's
// own loop replaced by one that answers where the outputs will be and fills them on a thread.
// upskill copies them out of the worker's memory before the judge's clock stops, and the judge
// checks that copy.
const std::string kAnswerFirst = R"(
import sys as _sys, threading as _threading, torch as _torch
_main = _sys.modules.get("__main__")
if _main is not None and hasattr(_main, "Worker") and not getattr(_main, "_patched", False):
    _main._patched = True
    def _early(self, message):
        bound = self.bound
        fn = self.function(dict(bound["message"], fn=message.get("fn", "call")))
        calls = [bound["calls"][i] for i in message.get("calls", range(len(bound["calls"])))]
        outs = [[_torch.empty(e["tensor"][1], dtype=getattr(_torch, e["tensor"][3]))
                 for e in bound["message"]["outputs"]] for _ in calls]
        self.held = outs
        def work():
            for (inputs, _), out in zip(calls, outs):
                for o, r in zip(out, _main.as_list(fn(*inputs))):
                    o.copy_(r)
        _threading.Thread(target=work, daemon=True).start()
        return {"outputs": [[[o.data_ptr(), o.numel() * o.element_size()] for o in out]
                            for out in outs]}
    _main.Worker.segment = _early
)";

TEST(KernelJudge, AnsweringBeforeTheWorkIsDoneFails) {
  fails_with(with_python(kAnswerFirst), params(kAll), "a timed call's output is wrong");
}

// The red team's cheat on the design before this one: at a segment's first call, find every
// call's inputs in the harness's frames and run all the calls at once on threads, each honestly
// slow — only the calls overlap. Each call's inputs reach the worker once the last call's outputs
// are the judge's: the threads find old inputs, and the outputs made from them are wrong.
TEST(KernelJudge, RunningASegmentsCallsSideBySideGainsNothing) {
  const std::string overlap = R"(
import sys as _sys, _thread
_results, _locks = {}, {}
def _honest(x, w, eps):
    out = _torch_empty_like(x)
    ops.rmsnorm(out, x.contiguous(), w.contiguous(), eps)
    _time.sleep(0.02)
    return out
def _calls():
    f = _sys._getframe(2)
    while f is not None:
        if f.f_code.co_name == "segment" and "bound" in f.f_locals:
            return f.f_locals["bound"]["calls"]
        f = f.f_back
    return None
def _run(j, x, w, eps):
    _results[j] = _honest(x, w, eps)
    _locks[j].release()
def _side_by_side(x, w, eps):
    calls = _calls()
    if calls is None:
        return None
    ptrs = [c[0][0].data_ptr() for c in calls]
    if x.data_ptr() not in ptrs:
        return None
    i = ptrs.index(x.data_ptr())
    if i == 0:
        for j, c in enumerate(calls):
            _locks[j] = _thread.allocate_lock()
            _locks[j].acquire()
            _thread.start_new_thread(_run, (j, c[0][0], c[0][1], eps))
    if i not in _locks:
        return None
    _locks[i].acquire()
    del _locks[i]
    return _results.pop(i)
)";
  const CheckResult r =
      run(slow("import torch as _t\n_torch_empty_like = _t.empty_like\n" + overlap,
               "    if x.shape[0] >= 512:\n"
               "        early = _side_by_side(x, weight, eps)\n"
               "        if early is not None:\n"
               "            out = early\n"
               "        else:\n"
               "            _time.sleep(0.02)\n"),
          params(kAll));
  if (r.status == Status::passed)
    EXPECT_LT(speedup(r), 0.4) << r.details.dump(2);
  else
    EXPECT_NE(r.reason.find("a timed call's output is wrong"), std::string::npos) << r.reason;
}

// Issue 46's fourth cheat: the seed the inputs come from, taken from the candidate's own process
// (here: its randomness made predictable), and the outputs computed ahead from it. The seeds are
// drawn in the judge's process; outputs for predicted inputs are wrong.
TEST(KernelJudge, OutputsComputedAheadFromAPredictedSeedFail) {
  const std::string predict = R"(
import os as _os, torch as _torch
_os.urandom = lambda n: bytes(n)
def _predicted(shape):
    g = _torch.Generator().manual_seed(0)
    rows, cols = shape
    x = _torch.randn(rows, cols, generator=g) * (_torch.rand(rows, 1, generator=g) * 4 + 0.25)
    w = _torch.rand(cols, generator=g) + 0.5
    x32 = x.float()
    return (x32 * _torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-6) * w).to(x.dtype)
_ahead = {}
)";
  fails_with(with_python(predict,
                         "    if x.shape[0] >= 512:\n"
                         "        key = tuple(x.shape)\n"
                         "        if key not in _ahead:\n"
                         "            _ahead[key] = _predicted(key)\n"
                         "        out.copy_(_ahead[key])\n"),
             params(kAll), "a timed call's output is wrong");
}

// Issue 46's fifth cheat, on this protocol: the candidate speaks for the harness on its socket (a
// reply of its own, unasked). Every reply must carry the number of the request it answers.
const std::string kSpeakOutOfTurn = R"(
import json as _json, os as _os, socket as _socket
try:
    _s = _socket.socket(fileno=_os.dup(3))
    _s.send(_json.dumps({"nonce": 0, "loaded": True}).encode())
except OSError:
    pass
)";

TEST(KernelJudge, ARepliedUnaskedFails) {
  fails_with(with_python(kSpeakOutOfTurn), params(kToCorrect), "answered out of turn");
}

// The same verdicts as an ordinary user: the honest slow kernel, the early answer, the unasked
// reply.
TEST(KernelJudge, AnOrdinaryUserGetsTheSameVerdicts) {
  if (const std::string why = cannot_run_as_nobody(); !why.empty()) GTEST_SKIP() << why;
  const AsNobody honest = as_nobody([] {
    const CheckResult r = run(slow(), params(kAll));
    const bool ok = r.status == Status::passed && speedup(r) > 0 && speedup(r) < 0.4;
    const Json* bench = stage(r, "bench");
    return std::pair{ok, r.reason + "\n" + (bench ? bench->dump() : "") + "\n" + r.details.dump()};
  });
  EXPECT_TRUE(honest.ok) << honest.report;
  EXPECT_NE(honest.report.find("user namespace: yes"), std::string::npos) << honest.report;
  // upskill, running as the same user, reads the candidate's CPU time from outside too.
  EXPECT_NE(honest.report.find("candidate_cpu_ms"), std::string::npos) << honest.report;
  const AsNobody early = as_nobody([] {
    const CheckResult r = run(with_python(kAnswerFirst), params(kAll));
    return std::pair{r.status == Status::failed &&
                         r.reason.find("a timed call's output is wrong") != std::string::npos,
                     r.reason};
  });
  EXPECT_TRUE(early.ok) << early.report;
  const AsNobody unasked = as_nobody([] {
    const CheckResult r = run(with_python(kSpeakOutOfTurn), params(kToCorrect));
    return std::pair{
        r.status == Status::failed && r.reason.find("answered out of turn") != std::string::npos,
        r.reason};
  });
  EXPECT_TRUE(unasked.ok) << unasked.report;
}

}  // namespace
}  // namespace upskill::checks
