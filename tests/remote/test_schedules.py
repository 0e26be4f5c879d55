"""Issue 17 across processes: a real ``telha serve`` owns the store and runs
its scheduler thread; a schedule is created from Python through the
server, listed from Node and from the ``telha`` CLI (``--server``), and
fires while a Python and a Node worker process lease its jobs. Afterwards
every slot has exactly one job, completed once, by one of the workers.

Every process is started and stopped here, by pid.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

import telha_jobs

from test_control import TELHA, Proc

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

CONFIG = """
[jobs]
reaper_interval = "100ms"
"""


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    if not Path(TELHA).exists():
        pytest.fail(f"the telha binary is not built at {TELHA} (make build-cli)")
    cfg = tmp_path / "telha.toml"
    cfg.write_text(CONFIG)
    env = dict(os.environ, TELHA_JOBS_CONFIG=str(cfg))
    server = Proc([TELHA, "--db", str(tmp_path / "store"), "serve", "--listen", "127.0.0.1:0"], env)
    try:
        line = server.line(60.0)
        assert line.startswith("listening on "), line
        yield line.split("listening on ", 1)[1].strip()
    finally:
        server.stop()


def start_worker(lang: str, url: str, name: str, kind: str) -> Proc:
    env = dict(os.environ, PYTHONUNBUFFERED="1", TELHA_NODE_PKG=str(ROOT / "node"))
    script = HERE / ("schedule_worker.py" if lang == "py" else "schedule_worker.js")
    cmd = [sys.executable, str(script)] if lang == "py" else ["node", str(script)]
    w = Proc(cmd + [url, name, kind], env)
    assert '"ready"' in w.line(60.0)
    return w


def done_lines(w: Proc) -> list[dict[str, Any]]:
    out = []
    while not w.lines.empty():
        line = w.lines.get_nowait()
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


NODE_LIST = """
const { Queue } = require(process.env.TELHA_NODE_PKG)
;(async () => {
  const q = await Queue.connect(process.argv[1], { timeoutMs: 10000 })
  const all = await q.scheduleList()
  process.stdout.write(JSON.stringify(all.map((s) => ({
    name: s.name, spec: s.spec, kind: s.kind, catchUp: s.catchUp, paused: s.paused,
  }))))
  await q.close()
})().catch((e) => { console.error(e); process.exit(1) })
"""


def test_a_schedule_put_from_python_is_listed_by_node_and_the_cli_and_fires_into_worker_processes(
    served: str,
) -> None:
    q = telha_jobs.connect(served, timeout=10.0)
    kind = "sched:tick"
    workers = [start_worker("py", served, "py-sched", kind), start_worker("node", served, "node-sched", kind)]
    try:
        info = q.schedule_put("tick", "* * * * * *", kind=kind, payload={"n": 1}, catch_up="all")
        assert info.name == "tick" and info.next_slot is not None

        env = dict(os.environ, TELHA_NODE_PKG=str(ROOT / "node"))
        node = subprocess.run(["node", "-e", NODE_LIST, served], capture_output=True, text=True,
                              timeout=60, env=env)
        assert node.returncode == 0, node.stderr
        listed = json.loads(node.stdout)
        assert listed == [{"name": "tick", "spec": "* * * * * *", "kind": kind, "catchUp": "all",
                           "paused": False}], listed

        cli = subprocess.run([TELHA, "--server", served, "schedules", "ls", "--json"],
                             capture_output=True, text=True, timeout=60)
        assert cli.returncode == 0, cli.stderr
        assert "tick" in [s["name"] for s in _json_items(cli.stdout)], cli.stdout

        # Let it fire for a few seconds while both workers lease.
        end = time.monotonic() + 30.0
        while q.schedule_get("tick").enqueued < 5:
            assert time.monotonic() < end, "the schedule did not fire 5 times in 30 s"
            time.sleep(0.1)
        q.schedule_pause("tick")
        paused = q.schedule_get("tick")
        # Every job it enqueued gets completed by one of the workers.
        end = time.monotonic() + 30.0
        while len(q.list(schedule="tick", state="completed", limit=1000)) < paused.enqueued:
            assert time.monotonic() < end, "the workers did not complete every scheduled job"
            time.sleep(0.1)
    finally:
        for w in workers:
            w.stop()
    seen = [d for w in workers for d in done_lines(w)]
    jobs = q.list(schedule="tick", limit=1000)
    q.close()
    assert len(jobs) == paused.enqueued
    assert all(j.state == "completed" for j in jobs)
    slots = sorted(round(j.schedule.slot * 1000) for j in jobs if j.schedule is not None)
    assert len(slots) == len(jobs), "every listed job carries its schedule"
    assert len(set(slots)) == len(slots), f"a slot twice: {slots}"
    assert all(b - a == 1000 for a, b in zip(slots, slots[1:])), f"a gap between slots: {slots}"
    # Each job was completed once, by one worker, which saw the same slot.
    by_job = {d["job"]: d for d in seen}
    assert len(by_job) == len(seen) == len(jobs), seen
    for j in jobs:
        d = by_job[j.id]
        assert d["schedule"] == "tick"
        assert round(d["slot"] * 1000) == round(j.schedule.slot * 1000)  # type: ignore[union-attr]


def _json_items(text: str) -> list[dict[str, Any]]:
    """The CLI's --json output: one array, or one object per line."""
    text = text.strip()
    if text.startswith("["):
        return list(json.loads(text))
    return [json.loads(line) for line in text.splitlines() if line.strip()]
