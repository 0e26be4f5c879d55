#!/usr/bin/env python3
"""What the wait and run-time histograms (core/src/timings.rs) cost a
lifecycle, counted by callgrind in one run: they cannot be turned off (no
setting, no feature), so "on beside off" is the lifecycle's instructions
beside the same minus what the histograms execute: every
`Timings::observe` call (two per lifecycle: the lease's wait, the
complete's run time; inclusive) and the complete's one clock read for the
run time (a `now_ms` call at its measured average). Instruction counts are
repeatable on a loaded machine, where wall clock is not.

    scripts/histogram_cost.py BINARY [N]

BINARY is core/examples/lifecycle_calls (release); prints one row.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def main() -> int:
    binary, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    if shutil.which("valgrind") is None or shutil.which("callgrind_annotate") is None:
        print("histogram cost: skipped (valgrind is not installed)")
        return 0
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "cg.out"
        subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--collect-atstart=no",
             "--toggle-collect=*measured*", binary, "lifecycle", str(n)],
            check=True, capture_output=True, cwd=d,
        )
        tree = subprocess.run(
            ["callgrind_annotate", "--inclusive=yes", "--tree=caller", "--threshold=100", str(out)],
            check=True, capture_output=True, text=True,
        ).stdout
    num = lambda s: int(s.replace(",", ""))  # noqa: E731
    total = num(re.search(r"^\s*([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS", tree, re.M).group(1))  # type: ignore[union-attr]

    def own(fn: str) -> int:
        m = re.search(rf"^\s*([\d,]+) \([\d. %]+\)\s+\*\s+\?\?\?:{re.escape(fn)} ", tree, re.M)
        return num(m.group(1)) if m else 0

    def calls(fn: str) -> int:
        # A callee's "<" lines under each caller: the largest count is its callers' sum only
        # when there is one caller, so add them up under the function's own block.
        block = re.search(rf"((?:^\s*[\d,]+ \([\d. %]+\)\s+<.*\n)+)^\s*[\d,]+ \([\d. %]+\)\s+\*\s+\?\?\?:{re.escape(fn)} ",
                          tree, re.M)
        if not block:
            return 0
        return sum(num(c) for c in re.findall(r"\(([\d,]+)x\)", block.group(1)))

    observe = own("telha_jobs::timings::Timings::observe")
    clock_fn = "<telha_jobs::clock::SystemClock as telha_jobs::clock::Clock>::now_ms"
    clock_calls = calls(clock_fn)
    clock = own(clock_fn) / clock_calls if clock_calls else 0.0
    if observe == 0:
        print("histogram cost: Timings::observe not found in the profile (inlined?)")
        return 1
    per = total / n
    hist = (observe + clock * n) / n
    print(f"{'lifecycle, 1 thread, histograms on (callgrind instr/job)':<62} {per:>16,.0f} "
          f"{f'{per / (per - hist):.4f}× off ({hist:.0f} instr/job)':>22}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
