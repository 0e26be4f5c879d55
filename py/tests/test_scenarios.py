"""The conformance scenarios (``tests/scenarios/*.json``, format in that
directory's README) run through the Python binding.

One pytest test per case file, then ``test_every_case_ran``, which fails when
fewer cases ran than there are files and prints the count (run pytest with
``-s`` to see it). To run the cases against another store implementation,
change :func:`open_store` and nothing else.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import telha_jobs

from .scenario_fanin import FANIN_OPS, fan_in_json, fan_kw, fanin_step
from .scenario_schedules import schedule_step

CASES_DIR = Path(__file__).resolve().parents[2] / "tests" / "scenarios"
CASE_FILES = sorted(CASES_DIR.glob("*.json"))
MIN_CASES = 30
RAN: list[str] = []

HOLDER_READY = "telha-scenario-holder ready"
# The other process of `hold_elsewhere`: opens the store, says so, and keeps
# it until its stdin closes.
HOLDER_CODE = f"""
import sys, telha_jobs
q = telha_jobs.Queue(sys.argv[1], reaper_interval=0)
print({HOLDER_READY!r}, flush=True)
sys.stdin.read()
q.close()
"""


KEY_TYPES = {k.name: k.type for k in telha_jobs.config_keys()}


def setting(name: str, value: Any) -> tuple[str, Any]:
    """A case's config entry as a Queue keyword, through the key table:
    ``<duration key>_ms`` in milliseconds becomes seconds, factors floats."""
    base = name.removesuffix("_ms")
    if name.endswith("_ms") and KEY_TYPES.get(base) in ("duration", "retention"):
        return base, value / 1000
    if KEY_TYPES.get(name) in ("factor", "fraction"):
        return name, float(value)
    if name in KEY_TYPES:
        return name, value
    raise AssertionError(f"unknown config key {name!r}")


def open_store(path: Path, config: dict[str, Any]) -> telha_jobs.Queue:
    """The one place this runner opens a store (the background reaper off:
    the cases reap explicitly; exact retry delays unless the case sets a
    ``backoff_jitter``)."""
    kw: dict[str, Any] = {"reaper_interval": 0, "backoff_jitter": 0.0}
    for k, v in config.items():
        if k == "kinds":
            kw["kinds"] = {kind: dict(setting(kk, vv) for kk, vv in o.items()) for kind, o in v.items()}
        else:
            kw.update([setting(k, v)])
    return telha_jobs.Queue(str(path), **kw)


class StepFailed(AssertionError):
    pass


def error_code(e: BaseException) -> str:
    if isinstance(e, telha_jobs.TelhaError):
        return e.code
    return type(e).__name__  # never one of the codes: the step fails


def as_bytes(step: dict[str, Any], name: str) -> bytes | None:
    if name in step:
        return str(step[name]).encode()
    if f"{name}_size" in step:
        return b"x" * int(step[f"{name}_size"])
    return None


def put_bytes(o: dict[str, Any], name: str, b: bytes | None) -> None:
    o[name] = None if b is None else b.decode("utf-8", "replace")
    o[f"{name}_size"] = None if b is None else len(b)


def subset(want: Any, got: Any, at: str = "") -> None:
    if isinstance(want, dict):
        if not isinstance(got, dict):
            raise StepFailed(f"{at}: wanted an object, got {got!r}")
        for k, wv in want.items():
            if k in got:
                subset(wv, got[k], f"{at}.{k}")
            elif at in (".by_kind", ".by_scope"):
                subset(wv, dict.fromkeys(("pending", "leased", "failed", "completed", "dead",
                                          "cancelled"), 0),
                       f"{at}.{k}")
            else:
                raise StepFailed(f"{at}.{k}: the runner has no such field")
    elif isinstance(want, list):
        # Arrays element by element (objects in them field by field), same length.
        if not isinstance(got, list) or len(got) != len(want):
            raise StepFailed(f"{at}: wanted {want!r}, got {got!r}")
        for i, (wv, gv) in enumerate(zip(want, got)):
            subset(wv, gv, f"{at}[{i}]")
    elif want != got or isinstance(want, bool) != isinstance(got, bool):
        raise StepFailed(f"{at}: wanted {want!r}, got {got!r}")


class Run:
    def __init__(self, store: Path, config: dict[str, Any]) -> None:
        self.path = store
        self.config = config
        self.q: telha_jobs.Queue | None = open_store(store, config)
        self.ids: dict[str, str] = {}
        self.leases: dict[str, str] = {}
        self.holder: subprocess.Popen[str] | None = None
        self.saved: dict[str, bytes] = {}  # store files before write_store_file
        self.subs: dict[str, telha_jobs.Subscription] = {}
        self.last_seq: dict[str, int] = {}  # per subscription, for the seq check
        self.cursors: dict[str, str] = {}  # stats page cursors by name

    # -- references -----------------------------------------------------
    def name_of(self, job_id: str) -> str:
        for k, v in self.ids.items():
            if v == job_id:
                return k
        return job_id

    def job_id(self, s: dict[str, Any]) -> str:
        if "job" in s:
            return self.ids[s["job"]]
        return str(s.get("job_id", ""))

    def token(self, ref: Any) -> str:
        if isinstance(ref, str):
            return self.leases[ref]
        return f"{self.job_id(ref)}:{ref['generation']}"

    def store_file(self, s: dict[str, Any]) -> Path:
        name = str(s.get("file", ""))
        if not name or "/" in name:
            raise StepFailed(f"bad store file name {name!r}")
        return self.path / name

    def sibling(self, s: dict[str, Any]) -> Path:
        """The directory beside the store named by ``dir`` (a plain name):
        where ``backup`` writes and ``open_backup`` opens."""
        name = str(s.get("dir", ""))
        if not name or "/" in name or name == "store":
            raise StepFailed(f"bad backup dir name {name!r}")
        return self.path.with_name(name)

    def queue(self) -> telha_jobs.Queue:
        if self.q is None:
            raise StepFailed("no open store (a reopen failed)")
        return self.q

    # -- normalised answers ---------------------------------------------
    def job_json(self, j: telha_jobs.Job) -> dict[str, Any]:
        o: dict[str, Any] = {
            "job": self.name_of(j.id), "kind": j.kind, "scope": j.scope,
            "attempts": j.attempts, "max_attempts": j.max_attempts,
            "generation": j.generation, "priority": j.priority, "worker_id": j.worker_id,
            "timeout_ms": None if j.timeout is None else round(j.timeout * 1000),
            "schedule": None if j.schedule is None else j.schedule.name,
            "schedule_missed": None if j.schedule is None else j.schedule.missed,
            "parent": None if j.parent is None else self.name_of(j.parent),
            "tags": j.tags, "metadata": j.metadata, "key": j.key,
        }
        put_bytes(o, "payload", j.raw_payload)
        return o

    def info_json(self, i: telha_jobs.JobInfo) -> dict[str, Any]:
        o: dict[str, Any] = {
            "job": self.name_of(i.id), "kind": i.kind, "scope": i.scope, "state": i.state,
            "priority": i.priority, "attempts": i.attempts, "max_attempts": i.max_attempts,
            "generation": i.generation, "worker_id": i.worker_id, "last_error": i.last_error,
            "idempotency_key": i.idempotency_key, "events": [e[1] for e in i.events],
            "cancel_requested": i.cancel_requested, "snoozes": i.snoozes, "paused": i.paused,
            "expires": i.expires_at is not None,
            "schedule": None if i.schedule is None else i.schedule.name,
            "schedule_missed": None if i.schedule is None else i.schedule.missed,
            "parent": None if i.parent is None else self.name_of(i.parent),
            "tags": i.tags, "metadata": i.metadata, "fan_in": fan_in_json(i.fan_in), "key": i.key,
        }
        put_bytes(o, "payload", i.raw_payload)
        put_bytes(o, "result", i.raw_result)
        put_bytes(o, "progress", i.raw_progress)
        return o

    def event_json(self, e: telha_jobs.Event) -> dict[str, Any]:
        o: dict[str, Any] = {
            "job": self.name_of(e.job_id), "kind": e.kind, "scope": e.scope,
            "transition": e.transition, "attempt": e.attempt, "worker_id": e.worker_id,
        }
        put_bytes(o, "progress", e.raw_progress)
        return o

    def events(self, s: dict[str, Any]) -> dict[str, Any]:
        """Read up to `count` events within `timeout_ms`, checking that
        `seq` (the subscription's own count) rises by exactly 1 + `missed`."""
        name = s.get("sub", "")
        if name not in self.subs:
            raise StepFailed(f"the case names no subscription {name!r}")
        sub = self.subs[name]
        end = time.monotonic() + s.get("timeout_ms", 2000) / 1000
        got: list[dict[str, Any]] = []
        missed = 0
        while len(got) < s.get("count", 1):
            ev = sub.next(timeout=max(end - time.monotonic(), 0.0))
            if ev is None:
                break
            last = self.last_seq.get(name)
            if last is not None:
                if ev.seq != last + 1 + ev.missed:
                    raise StepFailed(f"seq {ev.seq} after {last} with {ev.missed} missed")
            self.last_seq[name] = ev.seq
            missed += ev.missed
            got.append(self.event_json(ev))
        return {"events": got, "missed": missed}

    # -- steps ----------------------------------------------------------
    def enqueue_kw(self, s: dict[str, Any]) -> dict[str, Any]:
        kw: dict[str, Any] = {}
        for k in ("scope", "priority", "idempotency_key", "max_attempts", "key"):
            if k in s:
                kw[k] = s[k]
        if "delay_ms" in s:
            kw["delay"] = s["delay_ms"] / 1000
        if "run_at_ms" in s:
            kw["run_at"] = s["run_at_ms"] / 1000
        if "run_at_in_ms" in s:
            kw["run_at"] = time.time() + s["run_at_in_ms"] / 1000
        if "run_at_ago_ms" in s:
            kw["run_at"] = time.time() - s["run_at_ago_ms"] / 1000
        if "expires_in_ms" in s:
            kw["expires_in"] = s["expires_in_ms"] / 1000
        if "expires_at_ms" in s:
            kw["expires_at"] = s["expires_at_ms"] / 1000
        if "backoff_base_ms" in s:
            kw["backoff_base"] = s["backoff_base_ms"] / 1000
        if "unique_for_ms" in s:
            kw["unique_for"] = s["unique_for_ms"] / 1000
        if "unique_states" in s:
            kw["unique_states"] = s["unique_states"]
        if "tags" in s:
            kw["tags"] = s["tags"]
        if "metadata" in s:
            kw["metadata"] = s["metadata"]
        if "metadata_size" in s:
            kw["metadata"] = {"big": "x" * s["metadata_size"]}
        if "debounce_ms" in s:
            kw["debounce"] = s["debounce_ms"] / 1000
        if "debounce_max_ms" in s:
            kw["debounce_max"] = s["debounce_max_ms"] / 1000
        return kw | fan_kw(self.ids, s)

    def item(self, j: dict[str, Any]) -> dict[str, Any]:
        """An enqueue_many item (and a follow-up of complete's ``then``)."""
        return dict(kind=j.get("kind", ""), payload=as_bytes(j, "payload") or b"",
                    **self.enqueue_kw(j))

    def do(self, s: dict[str, Any]) -> Any:
        op = s["op"]
        if op == "enqueue":
            job_id = self.queue().enqueue(s.get("kind", ""), as_bytes(s, "payload") or b"",
                                          **self.enqueue_kw(s))
            if "as" in s:
                self.ids[s["as"]] = job_id
            return {"same_as": self.name_of(job_id)}
        if op == "enqueue_many":
            items = [self.item(j) for j in s["jobs"]]
            ids = self.queue().enqueue_many(items)
            for j, job_id in zip(s["jobs"], ids):
                if "as" in j:
                    self.ids[j["as"]] = job_id
            return None
        if op == "lease":
            job = self.queue().lease_next(s.get("worker", "w1"), kinds=s.get("kinds"),
                                          scope=s.get("scopes"))
            if job is None:
                return None
            if "as" in s:
                self.leases[s["as"]] = job.token
            return self.job_json(job)
        if op == "extend":
            tokens = [self.token(r) for r in s.get("leases", [])]
            progress: list[bytes | None] | None = None
            if "progress" in s:
                progress = [None if p is None else str(p).encode() for p in s["progress"]]
            elif "progress_size" in s:
                progress = [b"x" * int(s["progress_size"])] * len(tokens)
            answers = self.queue().extend_answers(tokens, s.get("worker", "w1"), progress=progress)
            return {"renewed": [a == "renewed" for a in answers], "answers": answers}
        if op == "complete":
            then = [self.item(j) for j in s.get("then", [])]
            self.queue().complete(self.token(s["lease"]), as_bytes(s, "result"), then=then)
            return None
        if op == "complete_many":
            items = s.get("items", [])
            answers = self.queue().complete_many(
                [self.token(i["lease"]) for i in items],
                [as_bytes(i, "result") for i in items],
                then=[[self.item(j) for j in i["then"]] if "then" in i else None for i in items],
            )
            return {"answers": ["ok" if a is None else a.code for a in answers]}
        if op == "fail_many":
            items = s.get("items", [])
            answers = self.queue().fail_many(
                [self.token(i["lease"]) for i in items],
                [i.get("reason", "") for i in items],
                retryable=[i.get("retryable", True) for i in items],
                retry_in=[i["retry_in_ms"] / 1000 if "retry_in_ms" in i else None for i in items],
            )
            return {"answers": ["ok" if a is None else a.code for a in answers]}
        if op == "release_many":
            answers = self.queue().release_many([self.token(i["lease"]) for i in s.get("items", [])])
            return {"answers": ["ok" if a is None else a.code for a in answers]}
        if op == "set_limit":
            self.queue().set_limit(s.get("target", ""), **{
                k: s[k] for k in ("concurrency", "rate", "burst", "weight", "ordered") if k in s})
            return None
        if op == "remove_limit":
            return {"removed": self.queue().remove_limit(s.get("target", ""))}
        if op == "limits":
            return {"limits": [dataclasses.asdict(l) for l in self.queue().limits()]}
        if op == "fail":
            retry_in = s["retry_in_ms"] / 1000 if "retry_in_ms" in s else None
            self.queue().fail(self.token(s["lease"]), s.get("reason", ""),
                              retryable=s.get("retryable", True), retry_in=retry_in)
            return None
        if op == "snooze":
            self.queue().snooze(self.token(s["lease"]), s["delay_ms"] / 1000)
            return None
        if op == "cancel":
            return {"outcome": self.queue().cancel(self.job_id(s), s.get("reason", ""))}
        if op == "cancel_many":
            r = self.queue().cancel_many(kind=s.get("kind"), scope=s.get("scope"),
                                         state=s.get("state"), reason=s.get("reason", ""),
                                         tag=s.get("tag"))
            return {"cancelled": r["cancelled"], "requested": r["requested"]}
        if op == "delete":
            self.queue().delete(self.job_id(s))
            return None
        if op == "promote":
            self.queue().promote(self.job_id(s))
            return None
        if op == "reschedule":
            if "run_at_in_ms" in s:
                at = time.time() + s["run_at_in_ms"] / 1000
            else:
                at = s["run_at_ms"] / 1000
            self.queue().reschedule(self.job_id(s), at)
            return None
        if op == "set_priority":
            self.queue().set_priority(self.job_id(s), s["priority"])
            return None
        if op in ("pause", "resume"):
            if ("kind" in s) == ("scope" in s):
                raise StepFailed("pause names a kind or a scope")
            fn = self.queue().pause if op == "pause" else self.queue().resume
            return {"changed": fn(kind=s.get("kind"), scope=s.get("scope"))}
        if op == "paused":
            return self.queue().paused()
        if op == "release":
            self.queue().release(self.token(s["lease"]))
            return None
        if op == "retry":
            self.queue().retry(self.job_id(s))
            return None
        if op == "get":
            info = self.queue().get(self.job_id(s))
            return None if info is None else self.info_json(info)
        if op == "wait":
            return self.info_json(self.queue().wait(self.job_id(s), timeout=s.get("timeout_ms", 0) / 1000))
        if op == "subscribe":
            sub = self.queue().subscribe(kinds=s.get("kinds"), scopes=s.get("scopes"),
                                         transitions=s.get("transitions"), buffer=s.get("buffer"))
            if "as" in s:
                self.subs[s["as"]] = sub
            return None
        if op == "events":
            return self.events(s)
        if op == "list":
            kw = {k: s[k] for k in ("state", "scope", "kind", "schedule", "tag") if k in s}
            if "parent" in s:
                kw["parent"] = self.ids[s["parent"]]
            page = self.queue().list(**kw)
            return {"jobs": [self.name_of(i.id) for i in page], "count": len(page)}
        if op == "count_tag":
            c = self.queue().count_tag(s.get("tag", ""), scope=s.get("scope"))
            return {**c, "total": sum(c.values())}
        if op == "find":
            text = "x" * s["text_size"] if "text_size" in s else s.get("text", "")
            text = self.ids[s["text_of"]] if "text_of" in s else text
            r = self.queue().find(text, **{k: s[k] for k in ("scope", "limit") if k in s})
            name = lambda j: None if j is None else self.name_of(j.id)  # noqa: E731
            return {"matched": list(r.matched), "by_id": name(r.by_id), "by_key": name(r.by_key),
                    "by_tag": [self.name_of(j.id) for j in r.by_tag], "more": r.by_tag.next is not None}
        if op.startswith("schedule_") or op == "run_schedules":
            return schedule_step(self, op, s)
        if op in FANIN_OPS:
            return fanin_step(self, op, s)
        if op == "reap":
            return self.queue().reap()
        if op == "purge":
            cutoff_ms = int(time.time() * 1000) - s.get("older_than_ms", 0)
            return {"purged": self.queue().purge(s.get("state", ""), cutoff_ms / 1000)}
        if op == "stats":
            kw = {k: s[k] for k in ("scope_order", "scope_limit", "scope_prefix", "oldest_ready") if k in s}
            if "after" in s:
                kw["scopes_after"] = self.cursors[s["after"]]
            st = self.queue().stats(**kw)
            if "as" in s and st["scopes_next"] is not None:
                self.cursors[s["as"]] = st["scopes_next"]
            return dict(
                st["total"],
                by_kind=st["by_kind"],
                by_scope=st["by_scope"],
                scopes=list(st["by_scope"]),
                has_next=st["scopes_next"] is not None,
                ready_kinds=sorted(st["oldest_ready_ms"]),
                oldest_ready_min={k: (ms + 30_000) // 60_000 for k, ms in st["oldest_ready_ms"].items()},
            )
        if op == "sleep_ms":
            time.sleep(s["ms"] / 1000)
            return None
        if op == "close":
            self.queue().close()
            return None
        if op == "reopen":
            self.q = open_store(self.path, self.config)
            return None
        if op == "backup":
            self.queue().backup(self.sibling(s))
            return None
        if op == "open_backup":
            # The case's store is now the backup (a later reopen too).
            self.path = self.sibling(s)
            self.q = open_store(self.path, self.config)
            return None
        if op == "open_at_file":
            # A store path that is a regular file: the open's I/O error.
            f = self.path.with_name("not-a-directory")
            f.write_bytes(b"a file, not a store")
            open_store(f, self.config).close()
            return None
        if op == "write_store_file":
            f = self.store_file(s)
            self.saved.setdefault(f.name, f.read_bytes())
            f.write_bytes(str(s.get("text", "")).encode())
            return None
        if op == "restore_store_file":
            f = self.store_file(s)
            f.write_bytes(self.saved.pop(f.name))
            return None
        if op == "hold_elsewhere":
            self.start_holder()
            return None
        if op == "release_elsewhere":
            self.stop_holder()
            return None
        raise StepFailed(f"unknown op {op!r}")

    def step(self, s: dict[str, Any]) -> None:
        expect = s.get("expect")
        want_err = expect.get("error") if isinstance(expect, dict) else None
        try:
            got = self.do(s)
        except StepFailed:
            raise
        except Exception as e:  # the binding's answer, compared below
            code = error_code(e)
            if want_err is None:
                raise StepFailed(f"unexpected {code}: {e}") from e
            if code != want_err:
                raise StepFailed(f"wanted {want_err}, got {code}: {e}") from e
            return
        if want_err is not None:
            raise StepFailed(f"wanted {want_err}, got success: {got!r}")
        if expect is None:
            return
        if expect.get("none") is True:
            if got is not None:
                raise StepFailed(f"wanted none, got {got!r}")
            return
        subset(expect, got)

    def start_holder(self) -> None:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.holder = subprocess.Popen([sys.executable, "-c", HOLDER_CODE, str(self.path)],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                       env=env)
        assert self.holder.stdout is not None
        line = self.holder.stdout.readline().strip()
        if line != HOLDER_READY:
            self.stop_holder()
            raise StepFailed(f"the holder process did not start: {line!r}")

    def stop_holder(self) -> None:
        h, self.holder = self.holder, None
        if h is None:
            return
        assert h.stdin is not None
        h.stdin.close()
        try:
            h.wait(timeout=30)
        except subprocess.TimeoutExpired:
            h.kill()
            h.wait()
        if h.stdout is not None:
            h.stdout.close()

    def close(self) -> None:
        for sub in self.subs.values():
            sub.close()
        if self.q is not None:
            self.q.close()
        self.stop_holder()


@pytest.fixture
def scenario_store(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "store"


@pytest.mark.parametrize("case_file", CASE_FILES, ids=[p.stem for p in CASE_FILES])
def test_scenario(case_file: Path, scenario_store: Path) -> None:
    case = json.loads(case_file.read_text())
    run = Run(scenario_store, case.get("config", {}))
    try:
        for i, s in enumerate(case["steps"], 1):
            try:
                run.step(s)
            except StepFailed as e:
                raise StepFailed(f"{case_file.name} step {i} ({s['op']}): {e}") from None
    finally:
        run.close()
    RAN.append(case_file.name)


def test_every_case_ran() -> None:
    print(f"\npython scenarios: ran {len(RAN)} of {len(CASE_FILES)} case files in {CASES_DIR}")
    assert len(CASE_FILES) >= MIN_CASES, f"only {len(CASE_FILES)} case files in {CASES_DIR}"
    missing = sorted({p.name for p in CASE_FILES} - set(RAN))
    assert not missing, f"cases that did not pass: {missing}"
