#!/usr/bin/env python3
"""Counts the public symbols of PeerLink's library modules that have no doc comment, from the
symbol graphs `swift package dump-symbol-graph` writes, and holds the count to a ratchet: it
may fall, never rise.

  doc_coverage.py SYMBOLGRAPH_DIR BASELINE_FILE MODULE...

Prints each module's count and the undocumented symbols added to a module that is over its
share. Exit 1 when the total exceeds the baseline (a new public symbol came without its
documentation), 0 otherwise; when the total fell, says to lower the baseline."""
import glob, json, os, sys


def undocumented(directory, module):
    found, total = [], 0
    for path in [os.path.join(directory, module + ".symbols.json")] + glob.glob(os.path.join(directory, module + "@*.symbols.json")):
        if not os.path.exists(path):
            continue
        with open(path) as f:
            graph = json.load(f)
        for s in graph["symbols"]:
            # Public symbols written in this package's sources (synthesized ones have no location).
            if s.get("accessLevel") != "public" or "location" not in s:
                continue
            total += 1
            if not s.get("docComment"):
                where = s["location"]["uri"].split("/Sources/")[-1]
                found.append("%s %s (%s:%d)" % (s["kind"]["identifier"].replace("swift.", ""), ".".join(s["pathComponents"]),
                                                where, s["location"]["position"]["line"] + 1))
    return total, sorted(found)


def main():
    if len(sys.argv) < 4:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    directory, baseline_file, modules = sys.argv[1], sys.argv[2], sys.argv[3:]
    with open(baseline_file) as f:
        baseline = int(f.read().split()[0])
    total_public = total_missing = 0
    lists = {}
    for m in modules:
        public, missing = undocumented(directory, m)
        if public == 0:
            print("doc coverage: no symbol graph for module %s in %s" % (m, directory))
            return 1
        total_public += public
        total_missing += len(missing)
        lists[m] = missing
        print("doc coverage: %-18s %4d public symbols, %4d without a doc comment" % (m, public, len(missing)))
    print("doc coverage: %d of %d public symbols documented; %d without (baseline %d)"
          % (total_public - total_missing, total_public, total_missing, baseline))
    if total_missing > baseline:
        print("FAIL doc coverage: %d more public symbols without a doc comment than the baseline in %s; document them:"
              % (total_missing - baseline, baseline_file))
        for m in modules:
            for line in lists[m]:
                print("  %s: %s" % (m, line))
        return 1
    if total_missing < baseline:
        print("doc coverage: fewer than the baseline: write %d into %s" % (total_missing, baseline_file))
    return 0


if __name__ == "__main__":
    sys.exit(main())
