"""The Python API (`import upskill`) against the scripted server on loopback, and against the CLI:
evaluate_skill must return the numbers `upskill eval --json` prints for the same skill and models.

Run by ctest with PYTHONPATH=build/python, UPSKILL_BINARY, UPSKILL_SERVER and UPSKILL_SOURCE_DIR set.
"""
import json
import os
import pathlib
import shutil
import subprocess
import tempfile
import unittest

import upskill

BINARY = os.environ["UPSKILL_BINARY"]
SERVER = os.environ["UPSKILL_SERVER"]
SOURCE = pathlib.Path(os.environ["UPSKILL_SOURCE_DIR"])
SCRIPT = SOURCE / "tests" / "data" / "generate" / "script.json"


class ScriptedServer:
    """build/upskill-scripted-server on a free port, for the length of a test."""

    def __init__(self, script):
        self.proc = subprocess.Popen([SERVER, str(script)], stdout=subprocess.PIPE, text=True)
        self.port = int(self.proc.stdout.readline())

    def url(self):
        return f"http://127.0.0.1:{self.port}/v1"

    def close(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


class Api(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ScriptedServer(SCRIPT)
        cls.tmp = pathlib.Path(tempfile.mkdtemp(prefix="upskill-py-"))
        cls.config_path = cls.tmp / "upskill.config.yaml"
        cls.config_path.write_text(
            "skill_generation_model: teacher\neval_model: student\nruns_dir: runs\nmodels:\n"
            f"  teacher: {{provider: generic, base_url: \"{cls.server.url()}\"}}\n"
            f"  student: {{provider: generic, base_url: \"{cls.server.url()}\"}}\n")
        cls.config = upskill.Config.load(str(cls.config_path))
        # A skill with text cases only, so that the comparison with the CLI is quick.
        skill = cls.tmp / "kb"
        skill.mkdir()
        (skill / "SKILL.md").write_text(
            "---\nname: kb\ndescription: kernel-builder facts. Use when writing build.toml.\n---\n"
            "CUDA capabilities go per kernel as cuda-capabilities.\n")
        cases = [{"id": "caps", "input": "In an edition-5 kernel-builder build.toml, where do the CUDA "
                  "capabilities of a kernel go? Answer in one sentence.",
                  "expected": {"contains": ["cuda-capabilities"]}},
                 {"id": "general", "input": "In an edition-5 kernel-builder build.toml, where do the CUDA "
                  "capabilities of a kernel go? Answer in one sentence. (again)",
                  "expected": {"contains": ["edition = 5"]}}]
        (skill / "skill_meta.json").write_text(json.dumps({"metadata": {}, "tests": cases}))
        cls.skill_dir = skill

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_the_same_request_as_the_cli_from_the_same_config(self):
        # One resolver: runs, jobs, the student and the retry policy come from the config the same
        # way for `upskill eval --dry-run` and for the Python module.
        path = self.tmp / "resolved.config.yaml"
        path.write_text(self.config_path.read_text() +
                        "num_runs: 2\nmax_parallel: 3\nretries: 7\nretry_delay_s: 0.25\n")
        config = upskill.Config.load(str(path))
        skill = upskill.Skill.load(str(self.skill_dir))
        ours = upskill.evaluation_request(skill, config=config)
        cli = json.loads(subprocess.run(
            [BINARY, "--config", str(path), "eval", str(self.skill_dir), "--dry-run"],
            check=True, capture_output=True, text=True, cwd=os.getcwd()).stdout)
        # One JSON form of the request, written over one field list: the whole of it agrees (the
        # config's relative runs_dir made absolute from the same working folder).
        self.assertEqual(ours["request"], cli["request"])
        self.assertEqual(ours["retry"], cli["retry"])
        self.assertEqual((ours["request"]["runs"], ours["request"]["jobs"]), (2, 3))
        self.assertEqual(ours["retry"]["retries"], 7)
        self.assertEqual(ours["request"]["models"], ["student"])
        # Given values win over the config, in both.
        self.assertEqual(upskill.evaluation_request(skill, config=config, runs=5)["request"]["runs"], 5)

    def test_a_request_in_its_json_form_runs_as_the_cli_runs_it(self):
        skill = upskill.Skill.load(str(self.skill_dir))
        request = upskill.evaluation_request(skill, config=self.config, seed=11)["request"]
        request["log_runs"] = False
        got = upskill.evaluate_request(request, config=self.config)
        whole = upskill.evaluate_skill(skill, config=self.config, seed=11)
        self.assertEqual(got.exit_code, whole.exit_code)
        self.assertEqual(got.lift_interval, whole.lift_interval)
        path = self.tmp / "request.json"
        path.write_text(json.dumps(request))
        out = self.tmp / "request-result.json"
        subprocess.run([BINARY, "--config", str(self.config_path), "eval", "--request", str(path),
                        "--json", str(out)], check=True, cwd=self.tmp, capture_output=True)
        cli = json.loads(out.read_text())["models"][0]
        ours = got.to_json()["models"][0]
        self.assertEqual(ours["lift"], cli["lift"])
        self.assertEqual(upskill.evaluate_request(str(path), config=self.config).lift_interval,
                         got.lift_interval)
        with self.assertRaisesRegex(ValueError, "'run' is not a request field"):
            upskill.evaluate_request(dict(request, run=3), config=self.config)
        # A flag that would set a field of the request is refused beside it, naming the file.
        refused = subprocess.run([BINARY, "--config", str(self.config_path), "eval", "--request",
                                  str(path), "--runs", "3"], cwd=self.tmp, capture_output=True,
                                 text=True)
        self.assertEqual(refused.returncode, 2)
        self.assertIn("--runs with --request", refused.stderr)
        self.assertIn(str(path), refused.stderr)

    def test_merge_runs_as_the_cli_merges(self):
        skill = upskill.Skill.load(str(self.skill_dir))
        env = dict(os.environ, UPSKILL_CONFIG=str(self.config_path))
        for k in (1, 2):
            subprocess.run([BINARY, "eval", str(self.skill_dir), "-m", "student", "--shard",
                            f"{k}/2", "--runs-dir", str(self.tmp / f"shard{k}")],
                           check=True, env=env, cwd=self.tmp, capture_output=True)
        shards = [str(next((self.tmp / f"shard{k}").iterdir())) for k in (1, 2)]
        merged = upskill.merge_runs(shards, runs_dir=str(self.tmp / "merged"), config=self.config)
        self.assertEqual(merged.exit_code, 0)
        self.assertTrue(merged.complete)
        self.assertTrue(pathlib.Path(merged.batch_dir, "plan.json").is_file())
        whole = upskill.evaluate_skill(skill, models=["student"], config=self.config)
        self.assertAlmostEqual(merged.skill_lift, whole.skill_lift)
        with self.assertRaises(ValueError):
            upskill.merge_runs([shards[0]], config=self.config)  # shard 2/2 missing
        with self.assertRaisesRegex(ValueError, "artifact"):
            upskill.run_remote(str(self.skill_dir), "jobs", models=["student"], config=self.config)
        # generate's evaluations on an executor come from the library too (scale::remote_evaluator):
        # its settings are checked before the teacher is called.
        with self.assertRaisesRegex(ValueError, "artifact"):
            upskill.generate("parse invoices", executor="jobs", config=self.config)
        with self.assertRaisesRegex(ValueError, "executor 'cloud'"):
            upskill.generate("parse invoices", executor="cloud", config=self.config)

    def test_config_and_skill_round_trip(self):
        self.assertEqual(self.config.skill_generation_model, "teacher")
        self.assertEqual(self.config.eval_model, "student")
        self.assertEqual(self.config.models, ["teacher", "student"])
        self.assertEqual(self.config.max_refine_attempts, 2)
        skill = upskill.Skill.load(str(SOURCE / "skills" / "kernel-builder-cuda-kernels"))
        self.assertEqual(skill.name, "kernel-builder-cuda-kernels")
        self.assertEqual(skill.validate(), [])
        self.assertEqual(len(skill.tests), 12)
        self.assertIn("references/build-toml.md", skill.files)
        out = self.tmp / "copy" / skill.name
        skill.save(str(out))
        self.assertEqual((out / "SKILL.md").read_text(),
                         (SOURCE / "skills/kernel-builder-cuda-kernels/SKILL.md").read_text())
        with self.assertRaises(ValueError):
            upskill.Skill.load(str(self.tmp / "missing"))

    def test_parse_trace(self):
        trace = upskill.parse_trace(str(SOURCE / "examples/traces/codex-rollout.jsonl"))
        self.assertEqual(trace.format, "codex-rollout")
        self.assertEqual(trace.counts["failed_commands"], 2)
        self.assertEqual(trace.final_files["build.toml"],
                         (SOURCE / "kernels/rmsnorm/build.toml").read_text())
        self.assertLessEqual(len(trace.digest(tokens=1000)) / 4, 1000)
        cli = json.loads(subprocess.run([BINARY, "trace", "--json",
                                         str(SOURCE / "examples/traces/codex-rollout.jsonl")],
                                        check=True, capture_output=True, text=True).stdout)
        self.assertEqual(trace.summary()["counts"], cli["counts"])
        with self.assertRaises(ValueError):
            upskill.parse_trace(str(self.tmp / "nope.jsonl"))

    def test_evaluate_skill_matches_the_cli(self):
        skill = upskill.Skill.load(str(self.skill_dir))
        results = upskill.evaluate_skill(skill, models=["student"], config=self.config)
        # With the skill the scripted student names cuda-capabilities (case 1) but never the
        # edition (case 2); without it, neither.
        self.assertAlmostEqual(results.with_skill_rate, 0.5)
        self.assertAlmostEqual(results.baseline_rate, 0.0)
        self.assertAlmostEqual(results.skill_lift, 0.5)
        self.assertTrue(results.is_beneficial)
        low, high = results.lift_interval
        self.assertLessEqual(low, 0.5)
        self.assertGreaterEqual(high, 0.5)
        env = dict(os.environ, UPSKILL_CONFIG=str(self.config_path))
        subprocess.run([BINARY, "eval", str(self.skill_dir), "-m", "student", "--no-log-runs",
                        "--json", str(self.tmp / "cli.json")], check=True, env=env, cwd=self.tmp,
                       capture_output=True)
        cli = json.loads((self.tmp / "cli.json").read_text())
        ours = results.to_json()
        self.assertEqual(ours["schema"], "upskill.eval/1")
        a, b = ours["models"][0], cli["models"][0]
        for arms in (a["arms"], b["arms"]):  # wall-clock latency differs run to run
            for arm in arms.values():
                arm.pop("latency_ms", None)
        self.assertEqual(a["arms"], b["arms"])
        self.assertEqual(a["lift"], b["lift"])
        self.assertAlmostEqual(results.token_savings, b["lift"]["token_savings"])

    def test_generate_refine_and_tests(self):
        trace = upskill.parse_trace(str(SOURCE / "examples/traces/claude-code/rmsnorm-session.jsonl"))
        skill = upskill.generate_skill("write kernel-builder projects for RMSNorm", trace=trace,
                                       config=self.config)
        self.assertEqual(skill.name, "kernel-builder-rmsnorm")
        self.assertEqual(skill.validate(), [])
        # Spec files need a folder to live in: the skill was never saved, so name one.
        with self.assertRaisesRegex(ValueError, "name a folder"):
            upskill.generate_tests("write kernel-builder projects for RMSNorm", skill=skill,
                                   config=self.config)
        folder = self.tmp / "generated-skill"
        tests = upskill.generate_tests("write kernel-builder projects for RMSNorm", skill=skill,
                                       config=self.config, directory=str(folder))
        # Screened as `upskill generate` screens: an empty answer passes "too-easy", so it is out.
        # Without a trace nothing can show that "setup-py" is wrong; it stays.
        self.assertEqual([t["id"] for t in tests],
                         ["rmsnorm-cpu", "capabilities-per-kernel", "setup-py"])
        self.assertTrue((folder / "specs" / "rmsnorm.py").is_file())
        results = upskill.evaluate_skill(skill, tests=[t for t in tests if t["id"] == "setup-py"],
                                         models=["student"], config=self.config)
        self.assertEqual(results.with_skill_rate, 0.0)
        refined = upskill.refine_skill(skill, results, config=self.config)
        self.assertIn("exact key name", refined.body)

    def test_generate_runs_the_whole_pipeline(self):
        # The same library call as `upskill generate`: skill, tests screened against the trace's
        # own files (the CPU kernel is really built), evaluation and refinement, all saved.
        out = self.tmp / "pipeline"
        result = upskill.generate(
            "write kernel-builder projects for RMSNorm",
            from_=str(SOURCE / "examples/traces/claude-code/rmsnorm-session.jsonl"),
            eval_models=["student"], output=str(out), runs_dir=str(self.tmp / "runs"),
            config=self.config)
        self.assertEqual(result.exit_code, 0, result.validation_errors)
        self.assertEqual(result.skill.name, "kernel-builder-rmsnorm")
        self.assertEqual(pathlib.Path(result.skill_dir), out / "kernel-builder-rmsnorm")
        self.assertEqual(result.tests, 2)
        meta = json.loads((out / "kernel-builder-rmsnorm" / "skill_meta.json").read_text())
        self.assertEqual([d["id"] for d in meta["metadata"]["dropped_tests"]],
                         ["setup-py", "too-easy"])
        self.assertEqual(meta["metadata"]["refinement"]["stopped_because"], "beneficial")
        self.assertTrue((out / "kernel-builder-rmsnorm" / "specs" / "rmsnorm.py").is_file())
        self.assertTrue((out / "kernel-builder-rmsnorm" / "references" / "trace-digest.md").is_file())
        batch = meta["metadata"]["refinement"]["attempts"][0]["batch_id"]
        self.assertTrue((self.tmp / "runs" / batch / "batch_summary.json").is_file())
        with self.assertRaisesRegex(ValueError, "without SKILL.md"):
            upskill.generate("x", from_=str(self.tmp), config=self.config, evaluate=False)


if __name__ == "__main__":
    unittest.main()
