#!/usr/bin/env python3
"""Reads the output of XCTest runs and says whether they passed, without trusting the last line.

    xctest_verdict.py --log LOG --where host|vm --status RC [--list TESTS] [--skips FILE]

LOG is what `scripts/ci/xctest-groups.sh` printed: one or more XCTest runs, each between
"[xctest] group K/N start: FILTER" and "[xctest] group K/N end: exit=RC …" markers (a log
without markers is read as one run of every test). TESTS is the bundle's `--list-tests`
output; with it, every test a group's filter selects must have started and ended.

A run fails when:
- a test failed, or started and never ended (the process crashed, was killed, or hung: the
  test is named with the group's exit status);
- a test the filter selects never started, or a filter selects no test at all;
- the run has no closing "Test Suite 'All tests'" summary, or exited non-zero;
- a test was skipped that FILE does not expect to skip here, or for another reason (a skip
  is not a pass);
- FILE expects a skip of a test that no longer exists (with --list).

Prints each problem on a line of its own starting with "FAIL", the expected skips grouped by
reason, and last "N passed, M failed" (M counts failed tests and failed runs). Exit status:
0 when nothing failed, 1 otherwise, 2 for usage errors.
"""
import argparse
import re
import sys

import expectations

START = re.compile(r"^\[xctest\] group (\d+)/(\d+) start: (.*)$")
END = re.compile(r"^\[xctest\] group (\d+)/(\d+) end: exit=(\d+) seconds=\d+ ?(.*)$")
CASE_STARTED = re.compile(r"^Test Case '(?:-\[)?([\w.]+?)[ .](\w+)\]?' started")
CASE_ENDED = re.compile(r"^Test Case '(?:-\[)?([\w.]+?)[ .](\w+)\]?' (passed|failed|skipped)")
SKIP_REASON = re.compile(r": (?:-\[)?([\w.]+?)[ .](\w+)\]? : Test skipped(?: - (.*))?$")
FAILURE = re.compile(r": error: (?:-\[)?([\w.]+?)[ .](\w+)\]? : (.*)$")
CRASH = re.compile(r"Fatal error|fatal error|Precondition failed|Assertion failed|\*\*\* Program crashed")
PART_START = re.compile(r"^\[lab-step\] (smoke|harness) start$")
PART_END = re.compile(r"^\[lab-step\] (smoke|harness) end: exit=(\d+)")
COUNTS = re.compile(r"^(\d+) passed, (\d+) failed")
ALL_TESTS = re.compile(r"^Test Suite '(All|Selected) tests' (passed|failed)")
EXECUTED = re.compile(r"^\s*Executed (\d+) tests?")


class Run:
    """One XCTest process: what it was asked to run and what it printed."""

    def __init__(self, label, selector):
        self.label = label
        self.selector = selector
        self.exit = None
        self.note = ""
        self.started = []           # "Class/method" in order
        self.outcome = {}           # "Class/method" -> passed | failed | skipped
        self.skip_reason = {}
        self.failures = {}          # "Class/method" -> first failure message
        self.summary = False        # saw "Test Suite 'All tests' …" followed by "Executed N tests"
        self._after_all = False
        self.crash_line = ""        # the runtime's last words, if it printed any

    def feed(self, line):
        m = CASE_STARTED.match(line)
        if m:
            self.started.append(f"{short(m[1])}/{m[2]}")
            self.crash_line = ""
            return
        if CRASH.search(line) and not self.crash_line:
            self.crash_line = line.strip()[:300]     # the runtime's first words say most
        m = CASE_ENDED.match(line)
        if m:
            self.outcome[f"{short(m[1])}/{m[2]}"] = m[3]
            return
        m = SKIP_REASON.search(line)
        if m:
            self.skip_reason[f"{short(m[1])}/{m[2]}"] = (m[3] or "").strip()
            return
        m = FAILURE.search(line)
        if m:
            self.failures.setdefault(f"{short(m[1])}/{m[2]}", m[3].strip())
            return
        if ALL_TESTS.match(line):
            self._after_all = True
            return
        if self._after_all and EXECUTED.match(line):
            self.summary = True
        self._after_all = False


def short(cls):
    """XCTest prints "Class.method"; --list-tests prints "Module.Class/method"."""
    return cls.split(".")[-1]


def parse(path):
    runs, current = [], None
    with open(path, errors="replace") as f:
        lines = [raw.rstrip("\n") for raw in f]
    marked = any(START.match(line) for line in lines)
    for line in lines:
        m = START.match(line)
        if m:
            current = Run(f"group {m[1]}/{m[2]}", m[3].strip())
            runs.append(current)
            continue
        m = END.match(line)
        if m and current is not None:
            current.exit = int(m[3])
            current.note = m[4].strip()
            current = None
            continue
        if current is None:
            if marked:
                continue    # output between runs (the lab's own, a smoke suite…)
            # no markers: a single run of the whole bundle
            if not runs or runs[-1].exit is not None:
                current = Run("run", "")
                runs.append(current)
        current.feed(line)
    return runs


def parse_parts(path):
    """The lab step's other parts (the smoke suite, the harness on the radios): name -> (exit,
    passed, failed, failure lines); exit is None when the part never ended."""
    parts, current = {}, None
    with open(path, errors="replace") as f:
        for raw in f:
            line = raw.rstrip("\n")
            m = PART_START.match(line)
            if m:
                current = m[1]
                parts[current] = [None, None, None, []]
                continue
            m = PART_END.match(line)
            if m and current == m[1]:
                parts[current][0] = int(m[2])
                current = None
                continue
            if current is None:
                continue
            m = COUNTS.match(line)
            if m:
                parts[current][1], parts[current][2] = int(m[1]), int(m[2])
            elif re.match(r"^(FAIL|  FAIL)", line):
                parts[current][3].append(line.strip())
    return parts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--log", required=True)
    ap.add_argument("--where", required=True, choices=["host", "vm"])
    ap.add_argument("--status", type=int, default=0, help="exit status of the whole step")
    ap.add_argument("--list", help="the bundle's --list-tests output")
    ap.add_argument("--skips", help="the expected skips (Tests/expected-skips.txt)")
    ap.add_argument("--expect", action="append", default=[], metavar="FILTER",
                    help="a group the runner was asked to run, in order (repeat): one that never started fails")
    ap.add_argument("--part", action="append", default=[], choices=["smoke", "harness"],
                    help="a part of the lab step besides XCTest that must have run and passed (repeat)")
    ap.add_argument("--groups", help="the lab steps' filters (Tests/lab-groups.txt): says which step runs a skipped test")
    a = ap.parse_args()

    listed = expectations.read_list(a.list) if a.list else None
    skips = expectations.read_skips(a.skips) if a.skips else []
    runs = parse(a.log)
    problems = []
    passed = failed = 0
    expected_skips = {}

    if not runs:
        problems.append("no XCTest output at all")
    for run in runs:
        if run.label == "run":      # a log without markers: the step's status is the run's
            run.exit = a.status
        where = f"{run.label} ({run.selector})" if run.selector else run.label
        ended = set(run.outcome)
        crashed = [t for t in run.started if t not in ended]
        for t in crashed:
            if "timeout" in run.note:
                problems.append(f"{t} hung: {where} was killed ({run.note}; its threads' stacks are in the log)")
            else:
                last = f": {run.crash_line}" if run.crash_line else ""
                problems.append(f"{t} started and never ended: the process exited with status {run.exit}"
                                f" ({expectations.describe_status(run.exit)}) in {where}{last}")
        for t, outcome in run.outcome.items():
            if outcome == "passed":
                passed += 1
            elif outcome == "failed":
                failed += 1
                problems.append(f"{t} failed: {run.failures.get(t, 'see the log')}")
            else:
                reason = run.skip_reason.get(t, "")
                entry = expectations.expected_skip(skips, a.where, t, reason)
                if entry is None:
                    problems.append(f"{t} skipped on the {a.where}, which Tests/expected-skips.txt does not expect: "
                                    f"\"{reason or 'no reason given'}\"")
                else:
                    expected_skips.setdefault(entry.reason, []).append(t)
        if listed is not None:
            selected = expectations.select(listed, run.selector)
            if run.selector and not selected:
                problems.append(f"{where}: the filter selects no test in the bundle")
            never = [t for t in selected if t not in set(run.started)]
            if never:
                shown = ", ".join(never[:5]) + (f" and {len(never) - 5} more" if len(never) > 5 else "")
                why = " (the run ended early)" if crashed or run.exit else ""
                problems.append(f"{where}: {len(never)} selected test(s) never ran{why}: {shown}")
        if run.exit is None:
            problems.append(f"{where}: the run has no end marker (the runner itself was killed)")
        elif run.exit != 0 and not crashed and not any(o == "failed" for o in run.outcome.values()):
            problems.append(f"{where}: exited with status {run.exit} ({expectations.describe_status(run.exit)})"
                            f" {run.note}".rstrip())
        if not run.summary and not crashed:
            problems.append(f"{where}: no closing \"Test Suite 'All tests'\" (or 'Selected tests') summary")
    for k, selector in enumerate(a.expect, 1):
        if not any(r.selector == selector for r in runs):
            problems.append(f"group {k}/{len(a.expect)} ({selector}) never started (the step ended before it)")
    if listed is not None:
        for entry in skips:
            if entry.where == a.where and not expectations.select(listed, entry.pattern_as_filter()):
                problems.append(f"Tests/expected-skips.txt line {entry.line}: {entry.pattern} matches no test in the bundle")
    parts = parse_parts(a.log)
    for name in a.part:
        if name not in parts:
            problems.append(f"the {name} part never started")
            continue
        code, p, f, lines = parts[name]
        passed += p or 0
        for line in lines:
            problems.append(f"{name}: {line.removeprefix('FAIL').strip()}")
        if code is None:
            problems.append(f"the {name} part never ended (the step was killed while it ran)")
        elif p is None:
            problems.append(f"the {name} part printed no result line (exit status {code})")
        elif code != 0 and not lines:
            problems.append(f"the {name} part exited with status {code} ({f} failed)")
        elif f and len(lines) < f:
            problems.append(f"the {name} part counted {f} failures")
    if a.status != 0 and not problems:
        problems.append(f"the step exited with status {a.status} ({expectations.describe_status(a.status)})")

    for p in problems:
        print(f"FAIL {p}")
    groups = expectations.read_groups(a.groups) if a.groups and listed is not None else []
    for reason, tests in sorted(expected_skips.items()):
        steps = sorted({step for _, step, sel in groups for t in tests if t in expectations.select(listed, sel)})
        where_run = f"; run by the lab step(s) {', '.join(steps)}" if steps else ""
        print(f"skipped as expected on the {a.where}: {len(tests)} tests ({reason}{where_run})")
    print(f"{passed} passed, {len(problems)} failed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
