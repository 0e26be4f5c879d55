#!/usr/bin/env python3
"""`make bench`'s one table: every front end's lifecycle and batch figures in
jobs/s, each beside raw RocksDB measured in the same run, and beside Rust.

    python3 scripts/bench_table.py --ref CMD [--c-so EXE] [--c-a EXE]
        [--python CMD] [--node CMD] [--n 20000] [--batch 100] [--rounds 5]

Every command prints one JSON object (its "machine-readable mode"):

- --ref: core/examples/bench_ref.rs with --table: raw RocksDB's two ceilings
  ("raw_lifecycle", "raw_batch_lifecycle") and the Rust core's figures;
- --c-so / --c-a: tests/c/bench_lifecycle.c linked against libtelha_jobs.so /
  libtelha_jobs.a, run as `EXE --json N BATCH`;
- --python: py/bench/bench.py --json; --node: node/bench/bench.js --json.

lifecycle: enqueue + lease_next + complete, one job at a time, one thread.
batch: enqueue_many(B) + lease_many(B) + complete the B (complete_many where
the front end has one: Rust, Node; C and Python complete each, and their
÷Rust is against Rust completing each too: "batch_lifecycle_each").
raw RocksDB: the three WriteBatches a three-state job needs at the least
(put pending; delete + put leased; delete + put completed), one job per
batch for the lifecycle column, B jobs per batch for the batch column.

The machine is shared and noisy: each round runs every front end once, in
an order that rotates from round to round, and each figure is the median of
its rounds. The ratios are of those medians. Prints a Markdown table (the
README's), and exits non-zero when a front end fails.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys


def run_json(cmd: list[str]) -> dict[str, float]:
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd)} exited {p.returncode}: {p.stderr.strip()[-2000:]}")
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise RuntimeError(f"{shlex.join(cmd)} printed no JSON: {p.stdout[-500:]}")
    return {k: float(v) for k, v in json.loads(lines[-1]).items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ref", required=True, help="bench_ref command (raw RocksDB + Rust)")
    ap.add_argument("--c-so", help="bench_lifecycle linked against the .so")
    ap.add_argument("--c-a", help="bench_lifecycle linked against the .a")
    ap.add_argument("--python", help="command running py/bench/bench.py")
    ap.add_argument("--node", help="command running node/bench/bench.js")
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    n, b = str(a.n), str(a.batch)

    # (row label, command); the first is the reference (raw + Rust).
    fronts: list[tuple[str, list[str]]] = [
        ("Rust (telha-jobs crate)", [*shlex.split(a.ref), "--table", "--n", n, "--batch", b]),
    ]
    if a.c_so:
        fronts.append(("C (libtelha_jobs.so)", [a.c_so, "--json", n, b]))
    if a.c_a:
        fronts.append(("C (libtelha_jobs.a, static)", [a.c_a, "--json", n, b]))
    if a.python:
        fronts.append(("Python (telha_jobs wheel)", [*shlex.split(a.python), "--json", "--n", n, "--batch", b]))
    if a.node:
        fronts.append(("Node (telha-jobs addon)", [*shlex.split(a.node), "--json", "--n", n, "--batch", b]))

    runs: dict[str, list[dict[str, float]]] = {label: [] for label, _ in fronts}
    failed: dict[str, str] = {}
    for r in range(a.rounds):
        k = r % len(fronts)
        order = fronts[k:] + fronts[:k]
        if r % 2:
            order.reverse()
        for label, cmd in order:
            if label in failed:
                continue
            try:
                runs[label].append(run_json(cmd))
            except (RuntimeError, OSError, ValueError) as e:
                failed[label] = str(e)
        print(f"bench table: round {r + 1} of {a.rounds} done", file=sys.stderr)

    def med(label: str, key: str) -> float:
        return statistics.median(x[key] for x in runs[label])

    ref = fronts[0][0]
    if ref in failed:
        print(f"the reference failed: {failed[ref]}", file=sys.stderr)
        return 1
    raw_l, raw_b = med(ref, "raw_lifecycle"), med(ref, "raw_batch_lifecycle")
    rust_l, rust_b = med(ref, "lifecycle"), med(ref, "batch_lifecycle")
    # ÷Rust compares like with like: a front end without complete_many
    # against Rust completing each job too.
    rust_b_each = med(ref, "batch_lifecycle_each")
    each = {"C (libtelha_jobs.so)", "C (libtelha_jobs.a, static)", "Python (telha_jobs wheel)"}

    print()
    print(
        f"telha-jobs, one table (`make bench`): jobs/s, n = {a.n} jobs per figure, batch = {a.batch}, "
        f"60-byte payload, one thread, reaper off; median of {a.rounds} rounds (order rotating); "
        "raw RocksDB measured in the same run"
    )
    print()
    print("| front end | lifecycle jobs/s | ×raw | batch jobs/s | ×raw | ÷Rust (lifecycle / batch) |")
    print("|---|---:|---:|---:|---:|---:|")
    print(f"| raw RocksDB (3 WriteBatches per job; ceiling) | {raw_l:,.0f} | 1.00 | {raw_b:,.0f} | 1.00 | |")
    for label, _ in fronts:
        if label in failed:
            print(f"| {label} | failed | | failed | | |")
            continue
        lc, bt = med(label, "lifecycle"), med(label, "batch_lifecycle")
        rb = rust_b_each if label in each else rust_b
        print(
            f"| {label} | {lc:,.0f} | {lc / raw_l:.2f} | {bt:,.0f} | {bt / raw_b:.2f} "
            f"| {lc / rust_l:.2f} / {bt / rb:.2f}{'*' if label in each else ''} |"
        )
    print()
    print(
        "lifecycle = enqueue + lease_next + complete, one job at a time; batch = enqueue_many + "
        f"lease_many + complete of {a.batch} jobs (complete_many in Rust and Node, one complete per job "
        f"in C and Python); raw single-put WriteBatch in this run: {med(ref, 'raw_put'):,.0f}/s.\n"
        f"* batch ÷ Rust completing each job too ({rust_b_each:,.0f}/s in this run), like with like."
    )
    for label, why in failed.items():
        print(f"FAILED {label}: {why}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
