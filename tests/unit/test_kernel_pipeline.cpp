// The whole kernel pipeline on real builds: a correct CPU kernel and hand-written broken and
// hostile variants of it, each of which must get the right verdict at the right stage. Builds share
// one cache (build/test-kernel-cache), so the torch PCH is built once per build folder.
#include <arpa/inet.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "support/kernel_answers.hpp"
#include "upskill/checks/kernel_runner.hpp"
#include "upskill/core/files.hpp"
#include "upskill/kernel/build.hpp"

namespace upskill::checks {
namespace {

namespace fs = std::filesystem;
using namespace kernel_answers;

TEST(KernelPipeline, CorrectCpuKernelPassesEveryStageAndRebuildsFromCache) {
  auto p = params(kAll, "kernel-builder");
  p.project = "rmsnorm";
  const CheckResult r = run(answer("rmsnorm-cpu-good.md"), p);
  ASSERT_EQ(r.status, Status::passed) << r.reason << "\n" << r.details.dump(2);
  for (const auto& s : r.details["stages"]) EXPECT_EQ(s.value("status", ""), "passed") << s.dump();
  EXPECT_EQ((*stage(r, "bind"))["style"], "kernel-builder");
  EXPECT_EQ((*stage(r, "bind"))["ops"], Json::array({"rmsnorm"}));
  // 4 shapes x 2 dtypes, 4 edge input sets and 2 shapes drawn for the run, x 2 input sets each
  EXPECT_EQ((*stage(r, "correct"))["cases"], 28);
  EXPECT_TRUE(stage(r, "bench")->contains("speedup"));
  // The judge's clock timed it; every timed call was checked; the kernel's accounting of its CPU
  // time came from upskill.
  const Json& entry = (*stage(r, "bench"))["entries"][0];
  EXPECT_GT(entry["candidate_ms"].get<double>(), 0);
  EXPECT_GT(entry["candidate_cpu_ms"].get<double>(), 0);
  EXPECT_GT(entry["reference_cpu_ms"].get<double>(), 0);
  EXPECT_GE(entry["segments"].get<int>(), 5);
  EXPECT_EQ(entry["audited_calls"].get<int>(),
            entry["segments"].get<int>() * entry["calls_per_segment"].get<int>());
  EXPECT_FALSE(entry.contains("problem")) << entry.dump();
  EXPECT_NE((*stage(r, "correct"))["sandbox"].get<std::string>().find("no network: yes"),
            std::string::npos);

  // The same candidate again: nothing is compiled or linked.
  const CheckResult again = run(answer("rmsnorm-cpu-good.md"), p);
  ASSERT_EQ(again.status, Status::passed) << again.reason;
  EXPECT_TRUE((*stage(again, "bind"))["cached"].get<bool>());
  // The precompiled header may still be building in the background (a cold cache): that is no
  // compile of this candidate's.
  for (const auto& step : (*stage(again, "compile"))["steps"])
    if (step["tool"] != "pch") EXPECT_TRUE(step["cached"]) << step.dump();
}

// UPSKILL_PCH=0: the checker compiles without the precompiled header, so none is asked for (the
// fixture's answer, from the cache: with the header on, its compile stage lists a pch step).
TEST(KernelPipeline, PrecompiledHeadersTurnedOffByTheEnvironment) {
  const auto has_pch_step = [](const CheckResult& r) {
    for (const auto& step : (*stage(r, "compile"))["steps"])
      if (step["tool"] == "pch") return true;
    return false;
  };
  const auto p = params({extract, layout, compile});
  const CheckResult on = run(answer("rmsnorm-cpu-good.md"), p);
  ASSERT_EQ(on.status, Status::passed) << on.reason;
  EXPECT_TRUE(has_pch_step(on));
  ::setenv("UPSKILL_PCH", "0", 1);
  const CheckResult off = run(answer("rmsnorm-cpu-good.md"), p);
  ::unsetenv("UPSKILL_PCH");
  ASSERT_EQ(off.status, Status::passed) << off.reason;
  EXPECT_FALSE(has_pch_step(off));
}

TEST(KernelPipeline, OffByOneTailFailsCorrect) {
  const std::string bad =
      replace(answer("rmsnorm-cpu-good.md"), "for (int64_t c = 0; c < cols; ++c)\n      y[c]",
              "for (int64_t c = 0; c + 1 < cols; ++c)\n      y[c]");
  const CheckResult r = run(bad, params(kToCorrect));
  EXPECT_EQ(r.status, Status::failed);
  EXPECT_TRUE(r.reason.starts_with("correct:")) << r.reason;
  EXPECT_EQ((*stage(r, "compile"))["status"], "passed");
}

TEST(KernelPipeline, MissingDtypeFailsCorrectWithTheError) {
  const std::string bad = replace(answer("rmsnorm-cpu-good.md"),
                                  "AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, ",
                                  "AT_DISPATCH_FLOATING_TYPES(");
  const CheckResult r = run(bad, params(kToCorrect));
  EXPECT_EQ(r.status, Status::failed);
  EXPECT_NE(r.reason.find("bfloat16"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("raised"), std::string::npos) << r.reason;
}

TEST(KernelPipeline, CompileErrorStopsAtCompile) {
  const std::string bad =
      replace(answer("rmsnorm-cpu-good.md"), "float sum = 0.f;", "float sum = 0.f");
  const CheckResult r = run(bad, params(kToCorrect));
  EXPECT_EQ(r.status, Status::failed);
  EXPECT_TRUE(r.reason.starts_with("compile: g++ rmsnorm_cpu/rmsnorm.cpp")) << r.reason;
  EXPECT_NE(r.reason.find("error"), std::string::npos);
  EXPECT_EQ(stage(r, "bind"), nullptr);  // stopped
}

TEST(KernelPipeline, BannedBindingStyleStopsAtLint) {
  const std::string bad = replace(answer("rmsnorm-cpu-good.md"), "#include <torch/library.h>",
                                  "#include <torch/extension.h>");
  const CheckResult r = run(bad, params(kAll, "kernel-builder"));
  EXPECT_EQ(r.status, Status::failed);
  EXPECT_TRUE(r.reason.starts_with("lint [pybind11]")) << r.reason;
  EXPECT_EQ(stage(r, "compile"), nullptr);
}

TEST(KernelPipeline, OutputCachingFailsOnTheSecondInputs) {
  std::string bad = replace(answer("rmsnorm-cpu-good.md"), kEntry,
                            "  static at::Tensor memo;\n"
                            "  if (memo.defined() && memo.sizes() == out.sizes() &&\n"
                            "      memo.scalar_type() == out.scalar_type()) {\n"
                            "    out.copy_(memo);\n    return;\n  }\n" +
                                kEntry);
  bad = replace(bad,
                "                           weight.data_ptr<scalar_t>(), rows, cols, eps);\n  });",
                "                           weight.data_ptr<scalar_t>(), rows, cols, eps);\n  });\n"
                "  memo = out.clone();");
  const CheckResult r = run(bad, params(kToCorrect));
  EXPECT_EQ(r.status, Status::failed) << r.details.dump();
  EXPECT_NE(r.reason.find("(inputs 2)"), std::string::npos) << r.reason;
}

TEST(KernelPipeline, InputUsedAsScratchSpaceAndRestoredStillFails) {
  // Doubled and halved again: bit for bit what it was when the call returns. On the CPU the
  // inputs are read-only while the call runs, so the first write is seen.
  const std::string mutating =
      replace(answer("rmsnorm-cpu-good.md"),
              "                           weight.data_ptr<scalar_t>(), rows, cols, eps);\n  });",
              "                           weight.data_ptr<scalar_t>(), rows, cols, eps);\n  });\n"
              "  const_cast<torch::Tensor&>(weight).mul_(2);\n"
              "  const_cast<torch::Tensor&>(weight).div_(2);");
  const CheckResult r = run(mutating, params(kToCorrect));
  EXPECT_EQ(r.status, Status::failed);
  EXPECT_NE(r.reason.find("in a call (case 1, inputs 1): its inputs are read-only"),
            std::string::npos)
      << r.reason;
}

TEST(KernelPipeline, ZeroOutputFails) {
  const std::string bad = replace(
      answer("rmsnorm-cpu-good.md"),
      "y[c] = static_cast<T>(static_cast<float>(x[c]) * scale * static_cast<float>(weight[c]));",
      "y[c] = static_cast<T>(0.f * scale);");
  const CheckResult r = run(bad, params(kToCorrect));
  EXPECT_EQ(r.status, Status::failed);
  EXPECT_TRUE(r.reason.starts_with("correct:")) << r.reason;
}

TEST(KernelPipeline, HostileCandidateCannotReachSecretsFilesOrNetwork) {
  // A listening socket on loopback the candidate will try to reach.
  const int server = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(server, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ::getsockname(server, reinterpret_cast<sockaddr*>(&addr), &len);
  ::listen(server, 4);
  const int port = ntohs(addr.sin_port);
  ::setenv("UPSKILL_TEST_SECRET", "hunter2", 1);
  const fs::path escape = fs::path(UPSKILL_TEST_KERNEL_CACHE).parent_path() / "escaped-write";
  std::error_code ec;
  fs::remove(escape, ec);

  // Each attempt that succeeds makes the output wrong, so a pass means every attempt failed.
  std::string hostile = replace(answer("rmsnorm-cpu-good.md"), "#include <cmath>",
                                "#include <cmath>\n#include <cstdio>\n#include <cstdlib>\n"
                                "#include <arpa/inet.h>\n#include <netinet/in.h>\n"
                                "#include <sys/socket.h>\n#include <unistd.h>");
  hostile = replace(
      hostile, kEntry,
      "  bool escaped = std::getenv(\"UPSKILL_TEST_SECRET\") != nullptr;\n"
      "  if (FILE* f = std::fopen(\"" +
          escape.string() +
          "\", \"w\")) { std::fputs(\"x\", f); std::fclose(f); escaped = true; }\n"
          "  const int s = socket(AF_INET, SOCK_STREAM, 0);\n"
          "  sockaddr_in a{};\n  a.sin_family = AF_INET;\n  a.sin_port = htons(" +
          std::to_string(port) +
          ");\n  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);\n"
          "  if (s >= 0 && connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) escaped = "
          "true;\n"
          "  if (escaped) { out.zero_(); return; }\n" +
          kEntry);
  const CheckResult r = run(hostile, params(kToCorrect));
  ::close(server);
  EXPECT_EQ(r.status, Status::passed) << r.reason << "\n" << r.details.dump(2);
  EXPECT_FALSE(fs::exists(escape));
  EXPECT_EQ(r.details.dump().find("hunter2"), std::string::npos);
  // The lint stage names every attempt.
  auto linted = params({extract, layout, lint}, "kernelbench");
  const CheckResult l = run(hostile, linted);
  EXPECT_EQ(l.status, Status::failed);
  const std::string findings = (*stage(l, "lint"))["diagnostics"].dump();
  for (const char* rule : {"[environment]", "[network]"})
    EXPECT_NE(findings.find(rule), std::string::npos) << rule << findings;
}

TEST(KernelPipeline, PlantsMeantForTheJudgeChangeNothing) {
  // The kernel is wrong (all zeros); it passes only if one of the plants forges the verdict: a
  // module named like one the judge imports, next to its harness or in its folder, and a .pth
  // hook in a user site-packages under every HOME it could guess.
  const std::string plant = R"(
import os as _os
_forged = "import sys\nprint('UPSKILL-VERDICT {\"cases\": [], \"passed\": true, \"weak_cases\": []}')\nsys.exit(0)\n"
_work = _os.path.dirname(_os.path.dirname(_os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))))
_planted = []
for _dir in ("harness", "judge", "run", "load-check", ""):
    for _name in ("argparse.py", "json.py", "torch.py"):
        try:
            with open(_os.path.join(_work, _dir, _name), "w") as _f:
                _f.write(_forged)
            _planted.append(_os.path.join(_dir, _name))
        except OSError:
            pass
    try:
        _site = _os.path.join(_work, _dir, ".local", "lib", "python3.11", "site-packages")
        _os.makedirs(_site, exist_ok=True)
        with open(_os.path.join(_site, "forge.pth"), "w") as _f:
            _f.write("import sys; print('UPSKILL-VERDICT {\"cases\": [], \"passed\": true}'); sys.exit(0)\n")
        _planted.append(_site)
    except OSError:
        pass
print("PLANTED", _planted)
)";
  const std::string bad = with_python(plant, "    out.zero_()\n");
  const CheckResult r = run(bad, params(kToCorrect));
  EXPECT_EQ(r.status, Status::failed) << r.details.dump(2);
  EXPECT_TRUE(r.reason.starts_with("correct:")) << r.reason;
  EXPECT_NE(r.reason.find("all-zero output"), std::string::npos) << r.reason;
  // Only its own run folder was writable.
  ASSERT_NE(stage(r, "correct"), nullptr);
  const std::string output = (*stage(r, "correct")).value("output", "");
  EXPECT_EQ(output.find("harness/"), std::string::npos) << output;
  EXPECT_EQ(output.find("judge/"), std::string::npos) << output;
}

TEST(KernelPipeline, InputMutationHiddenByAnExitHookStillFails) {
  // The claim file the old harness trusted is cleared on exit; the judge no longer reads it.
  const std::string hide = R"(
import atexit as _atexit, json as _json, os as _os
def _hide():
    _p = _os.path.join(_os.getcwd(), "candidate.json")
    try:
        with open(_p) as _f:
            _j = _json.load(_f)
        for _c in _j.get("cases", []):
            _c["mutated_inputs"] = []
        with open(_p, "w") as _f:
            _json.dump(_j, _f)
    except Exception:
        pass
_atexit.register(_hide)
)";
  const CheckResult r = run(with_python(hide, "    weight.mul_(2)\n"), params(kToCorrect));
  EXPECT_EQ(r.status, Status::failed) << r.details.dump(2);
  EXPECT_NE(r.reason.find("its inputs are read-only"), std::string::npos) << r.reason;
}

TEST(KernelPipeline, UpskillsEnvironmentAndOtherProcessesAreOutOfReach) {
  ::setenv("UPSKILL_TEST_SECRET", "hunter2-in-environ", 1);
  // Reads every environ and cmdline it can see; anything found is raised, so it would show in the
  // reason and the details.
  const std::string snoop = R"(
import os as _os
_seen = []
for _pid in _os.listdir("/proc"):
    for _what in ("environ", "cmdline"):
        try:
            with open(f"/proc/{_pid}/{_what}", "rb") as _f:
                _seen.append(_f.read().decode(errors="replace"))
        except (OSError, ValueError):
            pass
for _pid in (_os.getppid(), 1):
    try:
        with open(f"/proc/{_pid}/root/proc/{_os.getppid()}/environ", "rb") as _f:
            _seen.append(_f.read().decode(errors="replace"))
    except OSError:
        pass
if any("hunter2" in _s for _s in _seen):
    raise RuntimeError("LEAKED " + " ".join(_s for _s in _seen if "hunter2" in _s))
)";
  const CheckResult r = run(with_python(snoop), params(kToCorrect));
  ::unsetenv("UPSKILL_TEST_SECRET");
  EXPECT_EQ(r.status, Status::passed) << r.reason;
  EXPECT_EQ(r.details.dump().find("hunter2"), std::string::npos);
  EXPECT_EQ(r.reason.find("hunter2"), std::string::npos);
}

TEST(KernelPipeline, TheAnswerKeyIsUnreadable) {
  // Returns zeros unless it finds a file defining the reference: the spec (whose path it is even
  // told), or anything like it up the tree, in the cache, /tmp, /root or /home.
  const std::string spec = kData + "/specs/rmsnorm.py";
  const std::string hunt = R"(
import os as _os
_found = None
_roots = [")" + spec + R"(", _os.path.join(_os.getcwd(), ".."), "/proc/self/cwd/../..", ")" +
                           std::string(UPSKILL_TEST_KERNEL_CACHE) +
                           R"(", "/tmp", "/root", "/home", ")" + kData + R"("]
def _look(path, depth=0):
    global _found
    if _found or depth > 3:
        return
    try:
        if _os.path.isfile(path):
            if "rms" in _os.path.basename(path) and path.endswith(".py"):
                with open(path) as _f:
                    _text = _f.read()
                if "def reference" in _text:
                    _found = _text
            return
        for _entry in _os.listdir(path):
            _look(_os.path.join(path, _entry), depth + 1)
    except OSError:
        pass
for _root in _roots:
    _look(_root)
_ns = {}
if _found:
    exec(_found, _ns)
)";
  const std::string cheat = with_python(hunt,
                                        "    if _ns:\n        out.copy_(_ns['reference'](x, "
                                        "weight))\n    else:\n        out.zero_()\n");
  const CheckResult r = fails_with(cheat, params(kToCorrect), "all-zero output");
  // The sandbox report names what was refused.
  ASSERT_NE(stage(r, "correct"), nullptr);
  const Json denied = (*stage(r, "correct")).value("denied", Json::array());
  EXPECT_NE(denied.dump().find("specs/rmsnorm.py"), std::string::npos) << denied.dump();
}

TEST(KernelPipeline, CheatingOnlyWhileTimedFailsBench) {
  // Right on every correctness input (all small); on the bench shape, the rows after the first
  // half are left unwritten, which roughly halves the time.
  const std::string cheat =
      with_python("", "    if x.shape[0] >= 512:\n        out[x.shape[0] // 2:] = 0\n");
  auto p = params(kAll);
  const CheckResult r = run(cheat, p);
  EXPECT_EQ(r.status, Status::failed) << r.details.dump(2);
  EXPECT_TRUE(r.reason.starts_with("bench:")) << r.reason;
  EXPECT_NE(r.reason.find("timed call's output is wrong"), std::string::npos) << r.reason;
  ASSERT_NE(stage(r, "correct"), nullptr);
  EXPECT_EQ((*stage(r, "correct"))["status"], "passed");
}

// The clock the harness times with, replaced in the candidate's process (here from Python; from C++
// at first call it is the same): time runs a hundred times slower for it. No time is read from
// the candidate's process, so nothing changes: the speedup is still the kernel's.
TEST(KernelPipeline, AClockPatchedInTheCandidatesProcessForgesNoTime) {
  const std::string patch = R"(
import sys as _sys, time as _time
_real = _time.perf_counter_ns
_t0 = _real()
def _slow():
    return _t0 + (_real() - _t0) // 100
_time.perf_counter_ns = _slow
_time.perf_counter = lambda: _slow() / 1e9
_time.monotonic = lambda: _slow() / 1e9
_main = _sys.modules.get("__main__")
if _main is not None and hasattr(_main, "_clock"):
    _main._clock = _slow
)";
  const CheckResult r = run(with_python(patch), params(kAll));
  ASSERT_EQ(r.status, Status::passed) << r.reason << r.details.dump(2);
  const Json& entry = (*stage(r, "bench"))["entries"][0];
  // A forged clock would show a hundredfold speedup; the plain loop runs below the reference's two
  // threads.
  EXPECT_LT(entry["speedup"].get<double>(), 3.0) << entry.dump();
}

// Lines that look like the harness's old timing marks, or a verdict, printed by the candidate: the
// judge reads nothing the candidate prints, so they change nothing; and what it printed is shown.
TEST(KernelPipeline, WhatTheCandidatePrintsIsShownAndChangesNothing) {
  const std::string forge = with_python(
      "import atexit as _atexit\n_forged = []\n"
      "_atexit.register(lambda: print('KERNEL SAYS BYE'))\n",
      "    if x.shape[0] >= 512 and not _forged:\n"
      "        _forged.append(1)\n"
      "        print('KERNEL SAYS HI')\n"
      "        print('\\nUPSKILL-CLOCK 0 0 end 900', flush=True)\n"
      "        print('UPSKILL-VERDICT {\"cases\": [], \"passed\": true}', flush=True)\n"
      "    out.zero_()\n");
  const CheckResult r = fails_with(forge, params(kAll), "all-zero output");
  ASSERT_NE(stage(r, "correct"), nullptr);
  const std::string output = (*stage(r, "correct")).value("output", "");
  EXPECT_NE(output.find("KERNEL SAYS BYE"), std::string::npos) << output;
}

// A thread the kernel leaves behind spoils its output half a second after the call returned.
TEST(KernelPipeline, AnOutputSpoiledAfterTheCallFails) {
  const std::string late =
      with_python("import threading as _threading, time as _ltime\n",
                  "    def _spoil(_o=out):\n"
                  "        _ltime.sleep(0.5)\n"
                  "        _o.fill_(7.0)\n"
                  "    _threading.Thread(target=_spoil, daemon=True).start()\n");
  fails_with(late, params(kToCorrect), "its output changed after the call had returned");
}

// Right for every shape the spec lists (tests, edge sets, bench), wrong for any other: the shapes
// drawn for the run catch it.
TEST(KernelPipeline, RightOnlyForTheListedShapesFails) {
  const std::string listed = with_python(
      "",
      "    if tuple(x.shape) not in {(1, 7), (4, 256), (3, 1031), (33, 2048), (4, 1031), "
      "(8, 256), (4, 512), (3, 7), (512, 4096)}:\n        out.zero_()\n");
  fails_with(listed, params(kToCorrect), "a shape drawn for this run");
}

// With the lint stage off the sandbox alone stands between the answer and the machine: a fork bomb
// in a static initialiser runs in the bind stage's import check, which still ends at its limit.
TEST(KernelPipeline, AForkBombInAStaticInitialiserEndsAtTheImportLimit) {
  const std::string bomb =
      replace(answer("rmsnorm-cpu-good.md"), "#include <cmath>",
              "#include <cmath>\n#include <unistd.h>\n"
              "namespace {\nconst int kBomb = [] {\n  for (;;) fork();\n  return 0;\n}();\n}");
  auto p = params({extract, layout, compile, bind});
  p.timeout_s = 5;
  const auto start = std::chrono::steady_clock::now();
  fails_with(bomb, p, "import timed out after 5 s");
  // Its compile included (cached PCH): far below the old 3,900 s.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(150));
}

TEST(KernelPipeline, ForgottenEpsFailsOnAnEdgeInputSet) {
  const std::string bad = replace(answer("rmsnorm-cpu-good.md"),
                                  "sum / static_cast<float>(cols) + static_cast<float>(eps)",
                                  "sum / static_cast<float>(cols)");
  fails_with(bad, params(kToCorrect), "input set '");
}

TEST(KernelPipeline, AHungImportNamesTheTimeout) {
  const std::string hang = with_python("import time as _t\n_t.sleep(100000)\n");
  auto hp = params({extract, layout, compile, bind});
  hp.timeout_s = 4;
  const CheckResult r = run(hang, hp);
  EXPECT_EQ(r.status, Status::failed);
  EXPECT_NE(r.reason.find("import timed out after 4 s"), std::string::npos) << r.reason;
}

TEST(KernelPipeline, AMissingToolchainHeaderIsAnEnvironmentError) {
  const std::string bad =
      replace(answer("rmsnorm-cpu-good.md"), "#include <ATen/Dispatch.h>",
              "#include <ATen/Dispatch.h>\n#include <ATen/native/NoSuchHeaderInThisTorch.h>");
  const CheckResult r = run(bad, params({extract, layout, compile}));
  EXPECT_EQ(r.status, Status::error) << r.reason;
  EXPECT_NE(r.reason.find("lacks the header ATen/native/NoSuchHeaderInThisTorch.h"),
            std::string::npos)
      << r.reason;
}

// The attacks again, as an ordinary user: the child becomes `nobody` and scores the hostile answers
// with the shared cache read-only (the good answer is built first, as root, so the PCH and the
// kernel objects are there to be reused).
TEST(KernelPipeline, AnOrdinaryUserGetsTheSameVerdicts) {
  if (const std::string why = cannot_run_as_nobody(); !why.empty()) GTEST_SKIP() << why;
  ASSERT_EQ(run(answer("rmsnorm-cpu-good.md"), params(kToCorrect)).status, Status::passed);
  const std::string hunt = R"(
import os as _os
_ns = {}
for _p in (")" + kData + R"(/specs/rmsnorm.py", "/proc/1/environ"):
    try:
        with open(_p) as _f:
            _text = _f.read()
        if "def reference" in _text:
            exec(_text, _ns)
    except OSError:
        pass
)";
  const std::string cheat = with_python(hunt,
                                        "    if _ns:\n        out.copy_(_ns['reference'](x, "
                                        "weight))\n    else:\n        out.zero_()\n");
  const AsNobody nobody = as_nobody([&cheat] {
    ::setenv("UPSKILL_TEST_SECRET", "hunter2-as-nobody", 1);
    const CheckResult r = run(cheat, params(kToCorrect));
    return std::pair{r.status == Status::failed, r.reason + "\n" + r.details.dump()};
  });
  const std::string& report = nobody.report;
  EXPECT_TRUE(nobody.ok) << report;
  EXPECT_NE(report.find("all-zero output"), std::string::npos) << report;
  EXPECT_EQ(report.find("hunter2"), std::string::npos) << report;
  for (const char* in_force : {"user namespace: yes", "no network: yes", "own PID namespace: yes",
                               "reads confined: yes", "process limit binding: yes"})
    EXPECT_NE(report.find(in_force), std::string::npos) << in_force << "\n" << report;
}

TEST(KernelPipeline, RunningForeverIsKilled) {
  const std::string bad = replace(
      answer("rmsnorm-cpu-good.md"), kEntry,
      "  for (volatile int spin = 0; spin >= 0; spin = spin < 5 ? spin + 1 : 0) {\n  }\n" + kEntry);
  auto p = params(kToCorrect);
  p.timeout_s = 8;  // Python and torch load well within it, then the kernel spins
  const CheckResult r = run(bad, p);
  EXPECT_EQ(r.status, Status::failed);
  EXPECT_NE(r.reason.find("ran past 8 s"), std::string::npos) << r.reason;
}

TEST(KernelPipeline, TorchExtensionStyleBindsWithPybind11AndRuns) {
  auto p = params(kAll, "torch-extension");
  const CheckResult r = run(answer("rmsnorm-cpu-pybind.md"), p);
  ASSERT_EQ(r.status, Status::passed) << r.reason << "\n" << r.details.dump(2);
  EXPECT_EQ((*stage(r, "bind"))["style"], "torch-extension");
  EXPECT_EQ((*stage(r, "bind"))["ops"], Json::array({"rmsnorm"}));
  // The kernel-builder profile rejects the same project.
  const CheckResult strict = run(answer("rmsnorm-cpu-pybind.md"), params(kAll, "kernel-builder"));
  EXPECT_EQ(strict.status, Status::failed);
  EXPECT_TRUE(strict.reason.starts_with("lint [pybind11]")) << strict.reason;
}

TEST(KernelPipeline, BuildTomlFlagsReachTheCompiler) {
  std::string a =
      replace(answer("rmsnorm-cpu-good.md"), "src = [\"rmsnorm_cpu/rmsnorm.cpp\"]",
              "src = [\"rmsnorm_cpu/rmsnorm.cpp\"]\ncxx-flags = [\"-DUPSKILL_FLAG_SEEN=1\"]");
  a = replace(
      a, "#include <cmath>",
      "#include <cmath>\n#ifndef UPSKILL_FLAG_SEEN\n#error cxx-flags were not passed\n#endif");
  const CheckResult r = run(a, params({extract, layout, compile}));
  EXPECT_EQ(r.status, Status::passed) << r.reason;
  // Without the flag the same source stops at compile with the #error.
  const CheckResult without = run(replace(a, "cxx-flags = [\"-DUPSKILL_FLAG_SEEN=1\"]", ""),
                                  params({extract, layout, compile}));
  EXPECT_EQ(without.status, Status::failed);
  EXPECT_NE(without.reason.find("cxx-flags were not passed"), std::string::npos) << without.reason;
}

TEST(KernelPipeline, MissingSpecIsAnError) {
  auto p = params(kToCorrect);
  p.spec = "specs/no-such-spec.py";
  const CheckResult r = run(answer("rmsnorm-cpu-good.md"), p);
  EXPECT_EQ(r.status, Status::error);
  EXPECT_NE(r.reason.find("no-such-spec.py does not exist"), std::string::npos) << r.reason;
}

TEST(Ptxas, ParsesRegistersSpillsSharedAndConstantMemory) {
  const auto k = kernel::parse_ptxas(
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function '_Z3addPfS_i' for 'sm_90'\n"
      "ptxas info    : Function properties for _Z3addPfS_i\n"
      "    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 1 barriers, 4096 bytes smem, 368 bytes cmem[0], "
      "8 bytes cmem[2]\n"
      "ptxas info    : Compiling entry function 'plain' for 'sm_80'\n"
      "ptxas info    : Used 8 registers, 352 bytes cmem[0]\n");
  ASSERT_EQ(k.size(), 2u);
  EXPECT_EQ(k[0].function, "add(float*, float*, int)");
  EXPECT_EQ(k[0].arch, "sm_90");
  EXPECT_EQ(k[0].registers, 40);
  EXPECT_EQ(k[0].barriers, 1);
  EXPECT_EQ(k[0].stack_bytes, 16);
  EXPECT_EQ(k[0].spill_stores, 8);
  EXPECT_EQ(k[0].spill_loads, 4);
  EXPECT_EQ(k[0].shared_bytes, 4096);
  EXPECT_EQ(k[0].constant_bytes, 376);
  EXPECT_EQ(k[1].function, "plain");
  EXPECT_EQ(k[1].registers, 8);
  EXPECT_EQ(k[1].shared_bytes, 0);
}

TEST(Registration, HeaderMatchesKernelBuilder) {
  const std::string_view h = kernel::registration_header();
  EXPECT_NE(h.find("#define TORCH_LIBRARY_EXPAND(NAME, MODULE) TORCH_LIBRARY(NAME, MODULE)"),
            std::string_view::npos);
  EXPECT_NE(h.find("PyMODINIT_FUNC CONCAT(PyInit_, NAME)()"), std::string_view::npos);
  EXPECT_EQ(h.find("pybind11"), std::string_view::npos);
}

}  // namespace
}  // namespace upskill::checks
