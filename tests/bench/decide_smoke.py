#!/usr/bin/env python3
"""Runs brake-decide-bench briefly in every order, case and prefetch
setting, and checks its rows: one per combination, every grant and dry run
granted, every denial denied; then its memory figures, each printed and
measured (a forked child that failed prints -1). It asserts no speed or
size (docs/PERFORMANCE.md has the figures; they need a quiet machine)."""
import itertools
import re
import subprocess
import sys

ITERATIONS = 3000


def main():
    bench = sys.argv[1]
    # 10,000 subjects: task names of 2 to 5 bytes, through every way the
    # bench copies a name (SubjectCursor::Put); a wrong copy decides for
    # another subject, so a denial is granted.
    out = subprocess.run(
        [bench, "--memory-subjects", "0", "--iterations", str(ITERATIONS),
         "--subjects", "1,10000", "--cases", "grant,deny,dry",
         "--prefetch", "both", "--order", "seq,random"],
        check=True, capture_output=True, text=True).stdout
    rows = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 12 and f[0].isdigit():
            rows[(f[0], f[1], f[2], f[11])] = int(f[10])
    want = set(itertools.product(["1", "10000"], ["grant", "deny", "dry"],
                                 ["off", "on"], ["seq", "random"]))
    if set(rows) != want:
        sys.exit(f"rows {sorted(rows)} are not {sorted(want)}\n{out}")
    for (subjects, case, pf, order), granted in rows.items():
        expected = 0 if case == "deny" else ITERATIONS
        if granted != expected:
            sys.exit(f"{subjects}/{case}/{pf}/{order}: {granted} granted, "
                     f"not {expected}\n{out}")
    print(f"{len(rows)} rows as expected")
    memory(bench)


def memory(bench):
    out = subprocess.run(
        [bench, "--memory-subjects", "5000", "--iterations", "10",
         "--subjects", "1", "--cases", "dry"],
        check=True, capture_output=True, text=True).stdout
    figures = {}
    for label in ("task:* bucket only:", "global + user:* + task:*:",
                  "memory per open lease"):
        m = re.search(re.escape(label) + r".*?(-?\d+) bytes", out)
        if m is None:
            sys.exit(f"no figure for {label!r}\n{out}")
        figures[label] = int(m.group(1))
    if min(figures.values()) < 0:
        sys.exit(f"a memory figure failed: {figures}\n{out}")
    print(f"memory figures {figures}")


if __name__ == "__main__":
    main()
