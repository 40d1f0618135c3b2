#!/usr/bin/env python3
"""Writes docs/CLI.md from the help of a built `peerlink`.

    scripts/gen-cli-doc.py [PEERLINK] > docs/CLI.md

PEERLINK defaults to .build/debug/peerlink. Every option list, usage line and description
comes from `peerlink help <command>`; only the examples and the section introductions are
written here. Run it again after changing a command's options.
"""
import re
import subprocess
import sys

PEERLINK = sys.argv[1] if len(sys.argv) > 1 else ".build/debug/peerlink"

# The commands in the order `peerlink --help` lists them, with their subcommands.
COMMANDS = ["id", "doctor", "browse", "advertise", "chat", "send", "receive", "links",
            ["trust", "add", "remove", "list", "verify"], "daemon", "status",
            ["pending", "list", "accept", "decline", "block", "unblock"]]

# Commands that open radios share these options; they are listed once.
RADIO_COMMANDS = ["browse", "advertise", "chat", "send", "receive"]
ANSWER_COMMANDS = ["advertise", "chat", "receive"]

EXAMPLES = {
    "id": ["peerlink id", "peerlink id --set-name alpha", "peerlink id --json"],
    "doctor": ["peerlink doctor", "peerlink doctor --wifi wlan1 --json"],
    "browse": ["peerlink browse --service field-demo", "peerlink browse --service field-demo --media bluetooth --timeout 30 --json"],
    "advertise": ["peerlink advertise --service field-demo --info role=sensor --info site=north --accept-all"],
    "chat": ["peerlink chat --service field-demo --peer alpha",
             "peerlink chat --service field-demo --peer alpha --media bluetooth --adapter hci1",
             "peerlink chat --service field-demo --accept-known      # no --peer: wait to be invited"],
    "send": ["peerlink send report.pdf photo.jpg --service field-demo --to alpha",
             "peerlink send big.iso --to alpha --media bluetooth,wifi-direct --wifi wlan0",
             "peerlink send survey.csv --to laptop-anna --wait      # through a running daemon",
             "peerlink send survey.csv --to alpha --direct          # own radios, beside a daemon"],
    "receive": ["peerlink receive --service field-demo --dir inbox --accept-known",
                "peerlink receive --dir /srv/in --keep-free 1G --count 1 --accept-all"],
    "links": ["peerlink links", "peerlink links --json --pid 4242"],
    "trust add": ["peerlink trust add <peer-id> \"alice's laptop\""],
    "trust remove": ["peerlink trust remove <peer-id>"],
    "trust list": ["peerlink trust list --json"],
    "daemon": ["peerlink daemon --check-config /etc/peerlink/daemon.toml",
               "peerlink daemon --config /etc/peerlink/daemon.toml"],
    "status": ["peerlink status", "peerlink status --socket /run/peerlink/daemon.sock --json"],
    "pending list": ["peerlink pending"],
    "pending accept": ["peerlink pending accept laptop-anna --name \"anna's laptop\"",
                       "peerlink pending accept z6zl --once"],
    "pending decline": ["peerlink pending decline z6zl"],
}


def help_text(words):
    out = subprocess.run([PEERLINK, "help", *words], capture_output=True, text=True, check=True)
    return out.stdout


def parse(text):
    """Splits help output into overview paragraphs, the usage line, and options."""
    sections, current = {}, None
    for line in text.splitlines():
        m = re.match(r"^(OVERVIEW|USAGE|ARGUMENTS|OPTIONS|SUBCOMMANDS):\s*(.*)$", line)
        if m:
            current = m.group(1)
            sections[current] = [m.group(2)] if m.group(2) else []
        elif current:
            sections[current].append(line)
    overview = paragraphs(sections.get("OVERVIEW", []))
    usage = " ".join(l.strip() for l in sections.get("USAGE", []) if l.strip())
    return overview, usage, entries(sections.get("ARGUMENTS", [])), entries(sections.get("OPTIONS", []))


def paragraphs(lines):
    out, cur = [], []
    for l in lines:
        if l.strip():
            cur.append(l.strip())
        elif cur:
            out.append(" ".join(cur))
            cur = []
    if cur:
        out.append(" ".join(cur))
    return out


def entries(lines):
    """(name, description) pairs; a name longer than the column has its text on later lines."""
    out = []
    for l in lines:
        if not l.strip():
            continue
        if re.match(r"^  \S", l):
            name, _, desc = l.strip().partition("  ")
            out.append([name.strip(), desc.strip()])
        elif out:
            out[-1][1] = (out[-1][1] + " " + l.strip()).strip()
    # Every command has these two; the page says so once, at the top.
    return [(n, d) for n, d in out if n not in ("-h, --help", "--version")]


def table(rows):
    lines = ["| Option | What |", "|---|---|"]
    for n, d in rows:
        lines.append(f"| `{n}` | {escape(d)} |")
    return "\n".join(lines)


def escape(text):
    text = text.replace("|", "\\|")
    return re.sub(r"(?<![`\w])(--[a-z][a-z-]*)", r"`\1`", text)


def command_names():
    for c in COMMANDS:
        if isinstance(c, list):
            yield [c[0]], True
            for sub in c[1:]:
                yield [c[0], sub], False
        else:
            yield [c], False


def main():
    parsed = {" ".join(w): parse(help_text(w)) for w, _ in command_names()}
    top_overview, _, _, _ = parse(help_text([]))
    common = [o for o in parsed["browse"][3] if all(o in parsed[c][3] for c in RADIO_COMMANDS)]
    answer = [o for o in parsed["advertise"][3]
              if o not in common and all(o in parsed[c][3] for c in ANSWER_COMMANDS)]
    top_lines = subprocess.run([PEERLINK, "--help"], capture_output=True, text=True, check=True).stdout
    summaries = dict(entries(top_lines.split("SUBCOMMANDS:", 1)[1].split("See '", 1)[0].splitlines()))

    w = []
    w.append("# CLI reference\n")
    w.append("This reference follows `peerlink <command> --help`: the usage lines, descriptions and "
             "option lists below are generated from the help of the built command "
             "(`scripts/gen-cli-doc.py`), so `--help` and this page say the same. For a guided tour, "
             "read [GETTING-STARTED.md](GETTING-STARTED.md).\n")
    w.append("\n\n".join(top_overview[1:]) + "\n")
    w.append("Every command and subcommand takes `-h`/`--help`; `peerlink --version` prints the "
             "release.\n")
    w.append("The commands that have a session answer `peerlink links` on a Unix socket in "
             "`$XDG_RUNTIME_DIR/peerlink` (else `/tmp/peerlink-<uid>`); `PEERLINK_RUNTIME_DIR` "
             "overrides it. The daemon's API socket is found by the rule under "
             "[`status`](#peerlink-status).\n")
    w.append("| Command | What |\n|---|---|")
    for name, d in summaries.items():
        base = name.split(" ")[0]
        w.append(f"| [`{base}`](#peerlink-{base}) | {escape(d)} |")
    w.append("")
    w.append("## Options of the commands that open radios\n")
    w.append("`" + "`, `".join(RADIO_COMMANDS) + "` all take these:\n")
    w.append(table(common) + "\n")
    w.append("## Options of the commands that answer invitations\n")
    w.append("`" + "`, `".join(ANSWER_COMMANDS) + "` also take these. Without either, each "
             "invitation is asked about on the terminal: `y`es, `n`o, or `a`lways (accept, and add "
             "the peer to the trust store).\n")
    w.append(table(answer) + "\n")

    for words, is_group in command_names():
        key = " ".join(words)
        overview, usage, args, opts = parsed[key]
        level = "###" if len(words) == 2 else "##"
        w.append(f"{level} `peerlink {key}`\n")
        w.append("\n\n".join(escape(p) for p in overview) + "\n")
        w.append("```\n" + usage + "\n```\n")
        if args:
            w.append("| Argument | What |\n|---|---|")
            for n, d in args:
                w.append(f"| `{n}` | {escape(d)} |")
            w.append("")
        own = [o for o in opts
               if not (words[0] in RADIO_COMMANDS and o in common)
               and not (words[0] in ANSWER_COMMANDS and o in answer)]
        notes = []
        if words[0] in RADIO_COMMANDS:
            notes.append("the [radio options](#options-of-the-commands-that-open-radios)")
        if words[0] in ANSWER_COMMANDS:
            notes.append("the [options that answer invitations](#options-of-the-commands-that-answer-invitations)")
        if notes:
            w.append("Besides " + " and ".join(notes) + ":\n" if own else "It takes " + " and ".join(notes) + ".\n")
        if own:
            w.append(table(own) + "\n")
        if is_group:
            continue
        if key in EXAMPLES:
            w.append("```sh\n" + "\n".join(EXAMPLES[key]) + "\n```\n")
    sys.stdout.write("\n".join(w).rstrip() + "\n")


if __name__ == "__main__":
    main()
