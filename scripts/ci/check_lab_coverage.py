#!/usr/bin/env python3
"""Fails when a lab test would silently leave CI.

    check_lab_coverage.py --list TESTS [--skips Tests/expected-skips.txt] [--groups Tests/lab-groups.txt]

TESTS is the bundle's `--list-tests` output. Every test that Tests/expected-skips.txt lets
skip on the host must be selected by a line of Tests/lab-groups.txt (a VM step runs it), and
every item of every filter there must select at least one test (XCTest exits 0 when a filter
matches nothing, so a renamed test would otherwise leave CI without a word). Prints one line
per problem and a closing "lab coverage: …" line; exit status 1 on any problem.
"""
import argparse
import os
import sys

import expectations

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--list", required=True)
    ap.add_argument("--skips", default=os.path.join(ROOT, "Tests/expected-skips.txt"))
    ap.add_argument("--groups", default=os.path.join(ROOT, "Tests/lab-groups.txt"))
    a = ap.parse_args()

    listed = expectations.read_list(a.list)
    skips = expectations.read_skips(a.skips)
    groups = expectations.read_groups(a.groups)
    problems = []

    covered = {}
    for line, step, selector in groups:
        for item, tests in expectations.select_each(listed, selector):
            if not tests:
                problems.append(f"Tests/lab-groups.txt line {line} ({step}): {item} selects no test in the bundle")
            for t in tests:
                covered.setdefault(t, []).append(step)

    lab_only = [t for t in listed if any(e.where == "host" and e.matches(t) for e in skips)]
    for e in skips:
        if e.where == "host" and not any(e.matches(t) for t in listed):
            problems.append(f"Tests/expected-skips.txt line {e.line}: {e.pattern} matches no test in the bundle")
    for t in lab_only:
        if t not in covered:
            problems.append(f"{t} skips on the host and no lab step runs it: add it to Tests/lab-groups.txt")

    for p in problems:
        print(f"FAIL {p}")
    steps = sorted({s for ss in covered.values() for s in ss})
    print(f"lab coverage: {len(lab_only)} lab-only tests, {sum(1 for t in lab_only if t in covered)} run by "
          f"{', '.join(steps) or 'no step'}; {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
