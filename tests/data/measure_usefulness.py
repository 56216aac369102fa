#!/usr/bin/env python3
"""Usefulness and refusal quality on the corpora, for one or two policy-check binaries.

    python3 tests/data/measure_usefulness.py [BEFORE_BINARY] AFTER_BINARY

For each corpus: how many lines are allowed (ordinary corpora: higher is better; bypass: must
be 0), and over the refused lines how many refusals name an alternative (an allowed option or
form, quoting, `./`, `--`), and how many say "not an allowed program" where a rule for the
program exists (under the sandbox). Every command is decided in the example workspace
`/workspace` like the corpus tests (`--cwd /workspace`).
"""

import json
import re
import subprocess
import sys
from collections import defaultdict

ROOT = __file__.rsplit("/tests/", 1)[0]

# A reason that tells the model what it could write instead.
ALTERNATIVE = re.compile(
    r"allowed: |closest allowed|\(allowed|allowed only with|quote|write `|put `--`|"
    r"in full|instead|name the operand exactly|is allowed under|must match"
)


def corpus(path, policy_of=None):
    out = []
    for line in open(f"{ROOT}/{path}", encoding="utf-8"):
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        fields = line.split("\t")
        if path.endswith("workspace-code.txt"):
            out.append(("code", "sandbox", line))
        elif path.endswith("issue25-sample.tsv"):
            out.append((fields[0], fields[1], fields[2]))
        else:
            cmd = json.loads('"' + fields[1] + '"')
            out.append((fields[0], policy_of, cmd))
    return out


def decide(binary, policy, cmds):
    args = [binary, "check", "--format", "json", "--cwd", "/workspace"]
    if policy == "sandbox":
        args += ["--policy", "developer", "--sandboxed"]
    else:
        args += ["--policy", policy]
    text = "".join(json.dumps({"command": c}) + "\n" for c in cmds)
    res = subprocess.run(args, input=text, capture_output=True, text=True, check=False)
    out = [json.loads(l) for l in res.stdout.splitlines() if l.startswith("{")]
    if len(out) != len(cmds):
        raise SystemExit(f"{binary}: {len(out)} answers for {len(cmds)} commands: {res.stderr[:500]}")
    return out


def measure(binary, rows):
    by_policy = defaultdict(list)
    for i, (_, policy, cmd) in enumerate(rows):
        by_policy[policy].append((i, cmd))
    answers = [None] * len(rows)
    for policy, items in by_policy.items():
        for (i, _), a in zip(items, decide(binary, policy, [c for _, c in items])):
            answers[i] = a
    return answers


def summary(rows, answers):
    per = defaultdict(lambda: [0, 0, 0, 0, 0, 0])  # lines, allowed, refused, with alternative, "not an allowed program", names a close allowed program
    for (cls, _, _), a in zip(rows, answers):
        p = per[cls]
        p[0] += 1
        if a["decision"] == "allow":
            p[1] += 1
            continue
        p[2] += 1
        msgs = [r.get("message", "") for r in a.get("reasons", []) if r.get("verdict") != "allow"]
        if any(ALTERNATIVE.search(m) for m in msgs):
            p[3] += 1
        if any("is not an allowed program" in m for m in msgs):
            p[4] += 1
        if any("closest allowed: " in m and "is not an allowed program" in m for m in msgs):
            p[5] += 1
    return per


def main():
    binaries = sys.argv[1:] or [f"{ROOT}/target/debug/policy-check"]
    sets = [
        ("ordinary.tsv (developer)", corpus("tests/corpus/ordinary.tsv", "developer")),
        ("ordinary-refused.tsv (developer)", corpus("tests/corpus/ordinary-refused.tsv", "developer")),
        ("workspace-code.txt (developer, sandboxed)", corpus("tests/data/workspace-code.txt")),
        ("issue25-sample.tsv", corpus("tests/data/issue25-sample.tsv")),
        ("bypass.tsv (read-only)", corpus("tests/corpus/bypass.tsv", "read-only")),
        ("bypass.tsv (developer)", corpus("tests/corpus/bypass.tsv", "developer")),
    ]
    for name, rows in sets:
        print(f"## {name}: {len(rows)} lines")
        results = [summary(rows, measure(b, rows)) for b in binaries]
        classes = sorted(set().union(*[r.keys() for r in results]))
        tot = [[0] * 6 for _ in results]
        print("class | " + " | ".join(f"allowed, refused with alternative, 'not an allowed program', of which naming a close program ({'before' if len(binaries) == 2 and k == 0 else 'after'})" for k in range(len(binaries))))
        for cls in classes:
            cells = []
            for k, r in enumerate(results):
                p = r.get(cls, [0] * 6)
                tot[k] = [x + y for x, y in zip(tot[k], p)]
                cells.append(f"{p[1]}/{p[0]}, {p[3]}/{p[2]}, {p[4]}, {p[5]}")
            print(f"{cls} | " + " | ".join(cells))
        print("total | " + " | ".join(f"{t[1]}/{t[0]}, {t[3]}/{t[2]}, {t[4]}, {t[5]}" for t in tot))
        print()


if __name__ == "__main__":
    main()
