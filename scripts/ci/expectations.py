"""What CI expects of the XCTest bundle: the tests it lists, the skips Tests/expected-skips.txt
allows, and the lab steps' filters in Tests/lab-groups.txt. Shared by xctest_verdict.py and
check_lab_coverage.py."""
import signal


class SkipEntry:
    """One line of Tests/expected-skips.txt: WHERE PATTERN REASON."""

    def __init__(self, line, where, pattern, reason):
        self.line, self.where, self.pattern, self.reason = line, where, pattern, reason

    def matches(self, test):
        cls, _, method = self.pattern.partition("/")
        tcls, _, tmethod = test.partition("/")
        return cls == tcls and method in ("*", tmethod)

    def pattern_as_filter(self):
        """The entry as an XCTest-style selector over --list-tests names."""
        return self.pattern.removesuffix("/*")


def read_list(path):
    """The bundle's `--list-tests` output as "Class/method" names (module dropped, as XCTest prints them)."""
    names = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if "/" in line and "." in line.split("/")[0] and " " not in line:
                module_class, method = line.split("/", 1)
                names.append(f"{module_class.split('.')[-1]}/{method}")
    if not names:
        raise SystemExit(f"{path}: no tests listed (is it the output of BUNDLE --list-tests?)")
    return names


def read_skips(path):
    entries = []
    with open(path) as f:
        for n, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split(None, 2)
            if len(parts) < 3 or parts[0] not in ("host", "vm") or "/" not in parts[1]:
                raise SystemExit(f"{path}:{n}: expected 'host|vm Class/method-or-* reason', got: {raw.strip()}")
            entries.append(SkipEntry(n, parts[0], parts[1], parts[2]))
    return entries


def read_groups(path):
    """Tests/lab-groups.txt: (line, step, filter) in order."""
    groups = []
    with open(path) as f:
        for n, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 2:
                raise SystemExit(f"{path}:{n}: expected 'STEP FILTER[,FILTER…]', got: {raw.strip()}")
            groups.append((n, parts[0], parts[1]))
    return groups


def expected_skip(entries, where, test, reason):
    """The entry that allows `test` to skip `where` with `reason`, or None."""
    for e in entries:
        if e.where == where and e.matches(test) and reason.startswith(e.reason):
            return e
    return None


def select(listed, selector):
    """The listed tests an XCTest filter selects: "" is all; otherwise comma-separated
    Module.Class or Module.Class/method, each matched exactly as swift-corelibs-xctest does."""
    if not selector:
        return list(listed)
    chosen = []
    for item in selector.split(","):
        item = item.strip()
        cls, _, method = item.partition("/")
        cls = cls.split(".")[-1]
        for t in listed:
            tcls, _, tmethod = t.partition("/")
            if tcls == cls and (not method or method == tmethod) and t not in chosen:
                chosen.append(t)
    return chosen


def select_each(listed, selector):
    """(item, tests it selects) for every item of a comma-separated filter."""
    return [(item, select(listed, item)) for item in selector.split(",") if item.strip()]


def describe_status(code):
    if code is None:
        return "unknown"
    if code == 0:
        return "success"
    if code == 124:
        return "killed by its time limit"
    if code > 128:
        try:
            return f"killed by {signal.Signals(code - 128).name}"
        except ValueError:
            return f"killed by signal {code - 128}"
    return "failure"
