#!/usr/bin/env python3
"""Checks the test tiers (tests/CMakeLists.txt, docs/testing.md): every ctest test carries exactly
one of the labels fast, slow and real-program, and no fast test requires a fixture (a fixture's
setup would pull a slow test into `ctest -L fast`).

Usage: tiers.py CTEST BUILD_DIR
Before reading the build's tests it checks itself on made-up ones, each wrong in one way."""
import json
import subprocess
import sys

TIERS = {"fast", "slow", "real-program"}


def problems(tests):
    """What is wrong with these tests (ctest --show-only=json-v1's "tests" list)."""
    found = []
    for test in tests:
        props = {p["name"]: p["value"] for p in test.get("properties", [])}
        tiers = sorted(TIERS & set(props.get("LABELS", [])))
        if len(tiers) != 1:
            found.append(f"{test['name']}: in {len(tiers)} tiers ({', '.join(tiers) or 'none'}); "
                         "give it exactly one LABELS of fast, slow, real-program")
        elif tiers == ["fast"] and props.get("FIXTURES_REQUIRED"):
            found.append(f"{test['name']}: a fast test requires the fixture(s) "
                         f"{', '.join(props['FIXTURES_REQUIRED'])}; make it slow or drop them")
    return found


def made_up(name, **props):
    return {"name": name, "properties": [{"name": k, "value": v} for k, v in props.items()]}


def check_self():
    wrong = [made_up("none"), made_up("two", LABELS=["fast", "slow"]),
             made_up("fixture", LABELS=["fast"], FIXTURES_REQUIRED=["kernel_cache"])]
    right = [made_up("ok", LABELS=["slow"], FIXTURES_REQUIRED=["kernel_cache"]),
             made_up("ok2", LABELS=["fast", "other"])]
    caught = problems(wrong)
    if len(caught) != len(wrong) or problems(right):
        sys.exit(f"tiers.py: the check itself is broken: {caught} / {problems(right)}")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    check_self()
    ctest, build = sys.argv[1:]
    listing = subprocess.run([ctest, "--test-dir", build, "--show-only=json-v1"],
                             capture_output=True, text=True, check=True).stdout
    tests = json.loads(listing)["tests"]
    found = problems(tests)
    for line in found:
        print(line)
    counts = {tier: sum(1 for t in tests for p in t.get("properties", [])
                        if p["name"] == "LABELS" and tier in p["value"]) for tier in sorted(TIERS)}
    print(f"{len(tests)} tests: " + ", ".join(f"{n} {tier}" for tier, n in counts.items()))
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
