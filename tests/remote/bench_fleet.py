"""The fleet bench (issue 15, `make bench-fleet`, part of `make bench`):
worker processes doing one job at a time through a real ``telha serve``,
beside the in-process Worker, the Rust core and raw RocksDB, all measured in
the same run.

    python tests/remote/bench_fleet.py --telha PATH --ref "BENCH_REF_CMD" [--jobs 20000] [--rounds 3]

Rows (jobs/s, no-op handlers, 60-byte payload):
- in-process Python Worker (embedded store, concurrency 4): the reference;
- in-process Node Worker (embedded store, concurrency 4);
- fleet: 4 Python + 4 Node worker processes (Worker, concurrency 4 each)
  on one `telha serve` (target >= 0.5x the in-process Python Worker);
- 4 Python worker processes, leasing ahead (the default) and with
  ``prefetch=0`` (one lease_next call per job: the path before issue 15);
- 4 Python worker processes, ``Worker(concurrency=1)`` each;
- 4 Node worker processes, ``Worker(concurrency: 1)`` and ``(concurrency: 4)``;
- issue 37's ratios: the 4-process Python and Node fleets (concurrency 1,
  and 4) against the core's batched lifecycle on 4 threads (``lease_many`` +
  ``complete_many``; targets 0.5x and 0.7x);
- issue 46's ratio: 4 Node processes against 4 Python processes, each a
  ``Worker`` of concurrency 1 leasing ahead through PollJobs (target >= 0.8x).

Each fleet row: the server is started on a fresh store (and stopped) by
pid, the jobs are enqueued with their kind paused, the workers start and
say "ready", then the kind is resumed and the clock runs until the server
counts every job completed. Every round measures every row; the median
round of each row is printed (the machine is shared and noisy).

Beside each fleet row's rate: the CPU the server process and the worker
processes (together) spent per job between the resume and the last
completion (user + system time from /proc/PID/stat, every thread), in
microseconds. On a machine with fewer cores than busy processes the rate is
about cores / (server + workers CPU per job), and CPU per job does not move
with the load other processes put on the machine: it is the figure to
drive down. ``--warmup 20000`` starts each fleet row's clock and CPU
counters after that many jobs (issue 37: a Node process's optimizing
compiler works through its first few thousand jobs; the default rows
include it). ``--only py4_c1,node4_c1`` measures only the named fleet rows
(with the core's reference; no in-process rows). ``--fixed-window`` runs
the workers with their whole prefetch window kept (``min_prefetch =
prefetch``, as before issue 37's window sized by the handlers' rate: pair
runs with and without it); ``--handler-ms 20`` gives each job a handler of
that long and prints wall time beside the ideal.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import telha_jobs

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
PAYLOAD = b'{"doc":"s3://bucket/key/0001.pdf","tenant":42,"pages":12}'
CONFIG = '[jobs]\nlease_ttl = "30s"\n'


CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a live process, every thread, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        # The command name (field 2) may hold spaces: split after its ")".
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def fill(q: telha_jobs.Queue, n: int) -> None:
    for at in range(0, n, 1000):
        q.enqueue_many([("bench", PAYLOAD)] * min(1000, n - at))


def local_python(base: Path, n: int) -> float:
    q = telha_jobs.Queue(base / "py-local", reaper_interval=0)
    fill(q, n)
    w = telha_jobs.Worker(q, lambda job: None, concurrency=4, poll_wait=0.05)
    t = time.perf_counter()
    w.start()
    while q.stats()["total"]["completed"] < n:
        time.sleep(0.002)
    rate = n / (time.perf_counter() - t)
    w.stop(5.0)
    q.close()
    return rate


def local_node(base: Path, n: int) -> float:
    out = subprocess.run(
        ["node", str(HERE / "node_bench_worker.js"), "local", str(base / "node-local"), str(n)],
        check=True, capture_output=True, text=True, env=node_env(),
    ).stdout
    return float(json.loads(out.strip().splitlines()[-1])["rate"])


def node_env() -> dict[str, str]:
    return dict(os.environ, PYTHONUNBUFFERED="1", TELHA_NODE_PKG=str(ROOT / "node"))


def start(cmd: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def stop(p: subprocess.Popen[str]) -> None:
    if p.poll() is None:
        os.kill(p.pid, signal.SIGTERM)
    try:
        p.wait(30.0)
    except subprocess.TimeoutExpired:
        os.kill(p.pid, signal.SIGKILL)
        p.wait()


def fleet(telha: str, base: Path, n: int, py: int, node: int, prefetch: int | None,
          concurrency: int = 4, node_concurrency: int = 4, warmup: int = 0) -> tuple[float, float, float]:
    """Jobs/s of `py` Python and `node` Node worker processes through one
    `telha serve` process (each Python one a Worker of `concurrency`), and
    the CPU per job (µs) of the server and of the workers together; with
    `warmup`, that many jobs run first and the clock starts after them."""
    base.mkdir(parents=True)
    cfg = base / "telha.toml"
    cfg.write_text(CONFIG)
    server = start([telha, "--db", str(base / "store"), "serve", "--listen", "127.0.0.1:0"],
                   dict(os.environ, TELHA_JOBS_CONFIG=str(cfg)))
    procs: list[subprocess.Popen[str]] = []
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert line.startswith("listening on "), (line, server.stderr.read() if server.stderr else "")
        url = line.split("listening on ", 1)[1].strip()
        q = telha_jobs.connect(url, timeout=10.0)
        q.pause(kind="bench")
        fill(q, n + warmup)
        for i in range(py):
            cmd = [sys.executable, str(HERE / "prefetch_worker.py"), url, "noop", f"py-{i}",
                   "default" if prefetch is None else str(prefetch), str(concurrency)]
            procs.append(start(cmd, node_env()))
        for i in range(node):
            procs.append(start(["node", str(HERE / "node_bench_worker.js"), "remote", url, f"node-{i}",
                                str(node_concurrency)], node_env()))
        for p in procs:
            assert p.stdout is not None
            got = p.stdout.readline().strip()
            assert got == "ready", (got, p.stderr.read() if p.stderr else "")
        q.resume(kind="bench")
        while q.stats()["total"]["completed"] < warmup:
            time.sleep(0.002)
        cpu0 = [cpu_seconds(p.pid) for p in (server, *procs)]
        t = time.perf_counter()
        while q.stats()["total"]["completed"] < n + warmup:
            for p in procs:
                assert p.poll() is None, p.stderr.read() if p.stderr else ""
            time.sleep(0.01)
        rate = n / (time.perf_counter() - t)
        cpu = [cpu_seconds(p.pid) - c for p, c in zip((server, *procs), cpu0)]
        total = q.stats()["total"]
        assert total["completed"] == n + warmup and total["leased"] == 0 and total["pending"] == 0, total
        q.close()
        return rate, cpu[0] * 1e6 / n, sum(cpu[1:]) * 1e6 / n
    finally:
        for p in procs:
            stop(p)
        stop(server)


ROWS = [
    # (label, key, ratio against)
    ("in-process Python Worker, 4 threads", "py_local", None),
    ("in-process Node Worker, concurrency 4", "node_local", "py_local"),
    ("fleet: 4 Python + 4 Node processes", "fleet", "py_local"),
    ("4 Python processes, leasing ahead", "py4", "py_local"),
    ("4 Python processes, prefetch=0", "py4_noprefetch", "py_local"),
    ("4 Python processes, Worker(concurrency=1)", "py4_c1", "py_local"),
    ("4 Node processes, Worker(concurrency: 1)", "node4_c1", "batch_pollers4"),
    ("4 Node processes, Worker(concurrency: 4)", "node4_c4", "batch_pollers4"),
]

# Issue 37: Python fleets beside the core's batched lifecycle on 4 threads
# (`lease_many` + `complete_many`, bench_ref's batch_pollers4).
ISSUE37 = [
    ("4 Python processes, Worker(concurrency=1)", "py4_c1", 0.5),
    ("4 Python processes, Worker(concurrency=4)", "py4", 0.7),
    ("4 Node processes, Worker(concurrency: 1)", "node4_c1", 0.5),
    ("4 Node processes, Worker(concurrency: 4)", "node4_c4", 0.7),
]


# The fleet rows: key -> (Python processes, Node processes, Python
# prefetch (None: the default), Python concurrency, Node concurrency).
FLEETS = {
    "fleet": (4, 4, None, 4, 4),
    "py4": (4, 0, None, 4, 4),
    "py4_noprefetch": (4, 0, 0, 4, 4),
    "py4_c1": (4, 0, None, 1, 4),
    "node4_c1": (0, 4, None, 4, 1),
    "node4_c4": (0, 4, None, 4, 4),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--telha", required=True, help="the telha binary")
    ap.add_argument("--ref", required=True, help="command printing the Rust reference JSON (bench_ref)")
    ap.add_argument("--jobs", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default="", help="comma-separated fleet rows (default: every row)")
    ap.add_argument("--fixed-window", action="store_true",
                    help="workers keep their whole prefetch window (min_prefetch = prefetch), as before "
                         "the server sized it by the handlers' rate (issue 37)")
    ap.add_argument("--warmup", type=int, default=0,
                    help="each fleet row runs this many jobs before its clock and CPU counters start "
                         "(the processes' start-up and JIT warm-up left out: the steady state)")
    ap.add_argument("--handler-ms", type=float, default=0.0,
                    help="each handler sleeps this long; prints each fleet row's wall time beside "
                         "the ideal (jobs x handler time / handlers)")
    a = ap.parse_args()
    if a.fixed_window:
        os.environ["TELHA_BENCH_FIXED_WINDOW"] = "1"
    if a.handler_ms > 0:
        os.environ["TELHA_BENCH_HANDLER_MS"] = str(a.handler_ms)
    only = [k for k in a.only.split(",") if k]
    for k in only:
        if k not in FLEETS:
            ap.error(f"--only: unknown row {k!r} (rows: {', '.join(FLEETS)})")
    runs: list[dict[str, float]] = []
    for r in range(a.rounds):
        with tempfile.TemporaryDirectory(prefix="telha-fleet-bench") as d:
            base = Path(d)
            cmd = [*shlex.split(a.ref), "--n", str(a.jobs), "--dir", str(base)]
            rust = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
            run = {k: float(rust[k]) for k in ("pollers4", "batch_pollers4", "raw_put")}
            if not only:
                run["py_local"] = local_python(base, a.jobs)
                run["node_local"] = local_node(base, a.jobs)
            for key, (py, node, prefetch, c, nc) in FLEETS.items():
                if only and key not in only:
                    continue
                rate, server_cpu, workers_cpu = fleet(
                    a.telha, base / key, a.jobs, py, node, prefetch, concurrency=c, node_concurrency=nc,
                    warmup=a.warmup,
                )
                run[key], run[f"{key}_server_us"], run[f"{key}_workers_us"] = rate, server_cpu, workers_cpu
            runs.append(run)
            print(f"round {r + 1}: " + ", ".join(f"{k} {v:,.1f}" if k.endswith("_us") else f"{k} {v:,.0f}"
                                                 for k, v in run.items()), flush=True)
    med = {k: statistics.median(run[k] for run in runs) for k in runs[0]}
    print(
        f"telha-jobs fleet benchmark: {a.jobs} jobs"
        + (f" (fleet rows after {a.warmup} warm-up jobs)" if a.warmup else "")
        + ", no-op handlers, one job at a time, jobs/s, "
        f"median of {a.rounds} rounds; every row measured in each round; CPU µs per job "
        "(server / worker processes together, each the median over the rounds)"
    )
    print(f"{'figure':<44}{'jobs/s':>10}{'vs in-proc':>12}{'vs core':>10}{'server µs':>11}{'workers µs':>12}")
    for label, key, _ in ROWS:
        if key not in med:
            continue
        v = med[key]
        vs_local = f"{v / med['py_local']:>11.2f}x" if "py_local" in med else f"{'-':>12}"
        cpu = (f"{med[key + '_server_us']:>11.1f}{med[key + '_workers_us']:>12.1f}"
               if key + "_server_us" in med else "")
        print(f"{label:<44}{v:>10,.0f}{vs_local}{v / med['pollers4']:>9.2f}x{cpu}")
    print(f"{'Rust core, 4 pollers (lease_next + complete)':<44}{med['pollers4']:>10,.0f}")
    print(f"{'Rust core, 4 threads lease_many + complete_many':<44}{med['batch_pollers4']:>10,.0f}")
    print(f"{'raw RocksDB single-put batch (ceiling)':<44}{med['raw_put']:>10,.0f}")
    for label, key, target in ISSUE37:
        if key not in med:
            continue
        r = med[key] / med["batch_pollers4"]
        print(f"issue 37: {label} vs the core's batched 4 threads: {r:.2f}x (target >= {target}x) "
              + ("ok" if r >= target else "BELOW")
              + f"; CPU/job server {med[key + '_server_us']:.1f} µs + workers {med[key + '_workers_us']:.1f} µs")
    if a.handler_ms > 0:
        for label, key, _ in ROWS:
            if key not in med or key not in FLEETS:
                continue
            py, node, _, c, nc = FLEETS[key]
            ideal = a.jobs * a.handler_ms / 1000 / (py * c + node * nc)
            print(f"{label}, {a.handler_ms:g} ms handlers: wall {a.jobs / med[key]:.2f} s, "
                  f"ideal {ideal:.2f} s ({ideal * med[key] / a.jobs:.2f} of ideal)")
    if "node4_c1" in med and "py4_c1" in med:
        r = med["node4_c1"] / med["py4_c1"]
        print(f"issue 46: 4 Node processes vs 4 Python processes, Worker concurrency 1 each: {r:.2f}x "
              "(target >= 0.8x) " + ("ok" if r >= 0.8 else "BELOW"))
    if "fleet" in med and "py_local" in med:
        ratio = med["fleet"] / med["py_local"]
        print(f"fleet vs in-process Python Worker: {ratio:.2f}x (target >= 0.5x) "
              + ("ok" if ratio >= 0.5 else "BELOW"))


if __name__ == "__main__":
    main()
