#!/usr/bin/env python3
"""Issue 45's instruction-count rows, counted by callgrind (repeatable on a
loaded machine, where wall clock is not), each pair from runs of the same
binary in one invocation:

- What the wait and run-time histograms (core/src/timings.rs) cost a
  lifecycle. They cannot be turned off (no setting, no feature), so "on
  beside off" is the lifecycle's instructions beside the same minus what
  the histograms execute: every `Timings::observe` call (two per
  lifecycle: the lease's wait, the complete's run time; inclusive) and the
  complete's one clock read for the run time (a `now_ms` call at its
  measured average).
- An enqueue, and a lifecycle, with a W3C `traceparent` in the job's
  metadata beside the same without.

    scripts/callgrind_rows.py BINARY [N]

BINARY is core/examples/lifecycle_calls (release).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROW = "{:<62} {:>16} {:>22}"


def num(s: str) -> int:
    return int(s.replace(",", ""))


def profile(binary: str, mode: str, n: int) -> str:
    """callgrind_annotate's inclusive caller tree of `n` rounds of `mode`."""
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "cg.out"
        subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--collect-atstart=no",
             "--toggle-collect=*measured*", binary, mode, str(n)],
            check=True, capture_output=True, cwd=d,
        )
        return subprocess.run(
            ["callgrind_annotate", "--inclusive=yes", "--tree=caller", "--threshold=100", str(out)],
            check=True, capture_output=True, text=True,
        ).stdout


def total(tree: str) -> int:
    m = re.search(r"^\s*([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS", tree, re.M)
    assert m, "no totals in the profile"
    return num(m.group(1))


def own(tree: str, fn: str) -> int:
    """A function's inclusive count (its `*` line)."""
    m = re.search(rf"^\s*([\d,]+) \([\d. %]+\)\s+\*\s+\?\?\?:{re.escape(fn)} ", tree, re.M)
    return num(m.group(1)) if m else 0


def calls(tree: str, fn: str) -> int:
    """How often `fn` was called: the `(Nx)` of the caller lines above its `*` line."""
    m = re.search(rf"((?:^\s*[\d,]+ \([\d. %]+\)\s+<.*\n)+)^\s*[\d,]+ \([\d. %]+\)\s+\*\s+\?\?\?:{re.escape(fn)} ",
                  tree, re.M)
    return sum(num(c) for c in re.findall(r"\(([\d,]+)x\)", m.group(1))) if m else 0


def main() -> int:
    binary, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    if shutil.which("valgrind") is None or shutil.which("callgrind_annotate") is None:
        print("callgrind rows: skipped (valgrind is not installed)")
        return 0
    print(ROW.format("figure (callgrind, instructions per job)", "value", "vs"))
    life = profile(binary, "lifecycle", n)
    observe = own(life, "telha_jobs::timings::Timings::observe")
    if observe == 0:
        print("Timings::observe is not in the profile (inlined?): no histogram row")
        return 1
    clock_fn = "<telha_jobs::clock::SystemClock as telha_jobs::clock::Clock>::now_ms"
    clock_calls = calls(life, clock_fn)
    clock = own(life, clock_fn) / clock_calls if clock_calls else 0.0
    per = total(life) / n
    hist = observe / n + clock
    print(ROW.format("lifecycle, 1 thread, histograms on", f"{per:,.0f}",
                     f"{per / (per - hist):.4f}× off ({hist:.0f})"))
    for plain, traced, what in [("enqueue", "enqueue-traced", "enqueue"),
                                (None, "lifecycle-traced", "lifecycle")]:
        p = per if plain is None else total(profile(binary, plain, n)) / n
        t = total(profile(binary, traced, n)) / n
        print(ROW.format(f"{what}, 1 thread, no metadata", f"{p:,.0f}", ""))
        print(ROW.format(f"{what}, 1 thread, traceparent in metadata", f"{t:,.0f}", f"{t / p:.4f}× plain"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
