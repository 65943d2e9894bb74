#!/usr/bin/env python3
"""Runs brake-decide-bench briefly in every order, case and prefetch
setting, and checks its rows: one per combination, every grant and dry run
granted, every denial denied. It asserts no speed (docs/PERFORMANCE.md has
the figures; they need a quiet machine)."""
import itertools
import subprocess
import sys

ITERATIONS = 3000


def main():
    bench = sys.argv[1]
    out = subprocess.run(
        [bench, "--memory-subjects", "0", "--iterations", str(ITERATIONS),
         "--subjects", "1,500", "--cases", "grant,deny,dry",
         "--prefetch", "both", "--order", "seq,random"],
        check=True, capture_output=True, text=True).stdout
    rows = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 12 and f[0].isdigit():
            rows[(f[0], f[1], f[2], f[11])] = int(f[10])
    want = set(itertools.product(["1", "500"], ["grant", "deny", "dry"],
                                 ["off", "on"], ["seq", "random"]))
    if set(rows) != want:
        sys.exit(f"rows {sorted(rows)} are not {sorted(want)}\n{out}")
    for (subjects, case, pf, order), granted in rows.items():
        expected = 0 if case == "deny" else ITERATIONS
        if granted != expected:
            sys.exit(f"{subjects}/{case}/{pf}/{order}: {granted} granted, "
                     f"not {expected}\n{out}")
    print(f"{len(rows)} rows as expected")


if __name__ == "__main__":
    main()
