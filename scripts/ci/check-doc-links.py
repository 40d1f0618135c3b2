#!/usr/bin/env python3
"""Checks the relative links of the user docs: every [text](path) and [name]: path in
README.md and docs/*.md (or the Markdown files given) must point to a file or directory that
exists. A link with an anchor (path#heading, or #heading alone) must also name a heading of
that Markdown file, as GitHub spells anchors. Links with a scheme (https:, mailto:) are not
checked; neither is anything inside code spans or fenced code blocks.

    scripts/ci/check-doc-links.py [--no-anchors] [FILE.md ...]

Prints each broken link as FILE:LINE: target (why), then "N passed, M failed" counting the
links checked (the result line scripts/test.sh's steps end with), and exits 1 when a link is
broken, else 0.
"""
import glob
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
FENCE = re.compile(r"^\s{0,3}(```|~~~)")


def strip_code(line):
    """The line without its code spans, so `[a](b)` inside backticks is not a link."""
    return re.sub(r"(`+)(.+?)\1", "", line)


def lines_outside_code(path):
    fenced = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if FENCE.match(line):
                fenced = not fenced
                continue
            if not fenced:
                yield number, line


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`([^`]*)`", r"\1", heading.strip())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


_anchors = {}


def anchors(path):
    if path not in _anchors:
        seen, found = {}, set()
        for _, line in lines_outside_code(path):
            m = re.match(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
        for _, line in lines_outside_code(path):
            for name in re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", line):
                found.add(name)
        _anchors[path] = found
    return _anchors[path]


def check(path, check_anchors):
    """(links checked, [(line, target, why)] for the broken ones)."""
    checked, broken = 0, []
    for number, line in lines_outside_code(path):
        text = strip_code(line)
        targets = [m.group(1) for m in INLINE.finditer(text)]
        ref = REFERENCE.match(text)
        if ref:
            targets.append(ref.group(1))
        for target in targets:
            if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
                continue
            checked += 1
            file_part, _, anchor = target.partition("#")
            resolved = path if not file_part else os.path.normpath(
                os.path.join(os.path.dirname(path), file_part))
            if not os.path.exists(resolved):
                broken.append((number, target, "no such file"))
            elif check_anchors and anchor and resolved.endswith(".md") and os.path.isfile(resolved):
                if anchor not in anchors(resolved):
                    broken.append((number, target, "no such heading"))
    return checked, broken


def main(argv):
    check_anchors = "--no-anchors" not in argv
    files = [a for a in argv if a != "--no-anchors"]
    if not files:
        files = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    total = failures = 0
    for path in files:
        checked, broken = check(os.path.abspath(path), check_anchors)
        total += checked
        for number, target, why in broken:
            print(f"{os.path.relpath(path, ROOT)}:{number}: {target} ({why})")
        failures += len(broken)
    print(f"check-doc-links: {total} relative links in {len(files)} files")
    print(f"{total - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
