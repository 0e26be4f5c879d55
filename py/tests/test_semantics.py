"""Poison, stale submit, retry from dead, scheduled jobs, idempotency."""

from __future__ import annotations

import datetime
import time
import uuid
from pathlib import Path

import pytest

import telha_jobs

from .conftest import Target

FAST_RETRY = {"backoff_base": 0.001, "backoff_cap": 0.001}


def test_a_poison_job_is_dead_after_exactly_max_attempts_with_its_event_log(target: Target) -> None:
    with target.open(reaper_interval=0, max_attempts=3, **FAST_RETRY) as q:
        job_id = q.enqueue("ingest:pdf", {"doc": "poison.pdf"})
        leases = 0
        while (job := q.lease_next("w", wait=1.0)) is not None:
            leases += 1
            assert job.attempts == leases - 1
            q.fail(job, f"cannot parse, try {leases}")
        assert leases == 3
        info = q.get(job_id)
        assert info is not None
        assert info.state == "dead" and info.attempts == 3 and info.max_attempts == 3
        assert info.last_error == "cannot parse, try 3"
        transitions = [e[1] for e in info.events]
        assert transitions == ["enqueued"] + ["leased", "failed"] * 3 + ["dead"]
        assert q.stats()["total"]["dead"] == 1


def test_per_job_and_per_kind_max_attempts_win_over_the_global(target: Target) -> None:
    with target.open(
        reaper_interval=0, max_attempts=5, kinds={"embed": {"max_attempts": 2}}, **FAST_RETRY
    ) as q:
        a = q.enqueue("embed")
        b = q.enqueue("embed", max_attempts=1)
        c = q.enqueue("other")
        assert [q.get(i).max_attempts for i in (a, b, c)] == [2, 1, 5]  # type: ignore[union-attr]


def test_a_stale_worker_gets_lease_lost_and_changes_nothing(target: Target) -> None:
    with target.open(reaper_interval=0, lease_ttl=0.05, backoff_base=0.001) as q:
        job_id = q.enqueue("embed", "x")
        stale = q.lease_next("slow")
        assert stale is not None
        time.sleep(0.1)  # past the 50 ms lease
        assert q.reap()["expired"] == 1
        fresh = q.lease_next("fast", wait=2.0)
        assert fresh is not None and fresh.id == job_id and fresh.generation == stale.generation + 1

        for settle in (
            lambda: q.complete(stale, "late result"),
            lambda: q.fail(stale, "late failure"),
            lambda: q.release(stale),
        ):
            with pytest.raises(telha_jobs.LeaseLostError) as exc:
                settle()
            assert exc.value.code == "ABORTED"
        assert q.extend([stale], "slow") == [False]

        info = q.get(job_id)
        assert info is not None
        assert info.state == "leased" and info.worker_id == "fast" and info.result is None
        assert info.attempts == 1 and info.last_error is not None and "expired" in info.last_error
        q.complete(fresh, "ok")
        assert q.get(job_id).result == "ok"  # type: ignore[union-attr]


def test_retry_brings_a_dead_job_back_with_attempts_reset(queue: telha_jobs.Queue) -> None:
    job_id = queue.enqueue("embed", {"n": 1})
    job = queue.lease_next("w")
    assert job is not None
    queue.fail(job, "bad input", retryable=False)
    assert queue.get(job_id).state == "dead"  # type: ignore[union-attr]
    assert [i.id for i in queue.list(state="dead")] == [job_id]

    queue.retry(uuid.UUID(job_id))
    info = queue.get(job_id)
    assert info is not None and info.state == "pending" and info.attempts == 0
    assert info.events[-1][1] == "retried"
    job = queue.lease_next("w")
    assert job is not None and job.id == job_id
    queue.complete(job)
    with pytest.raises(telha_jobs.InvalidArgumentError):
        queue.retry(job_id)  # completed jobs are not retried
    with pytest.raises(telha_jobs.NotFoundError):
        queue.retry(str(uuid.uuid4()))


def test_a_delayed_job_is_leased_only_once_due(queue: telha_jobs.Queue) -> None:
    t0 = time.time()
    job_id = queue.enqueue("embed", delay=0.3)
    info = queue.get(job_id)
    assert info is not None and info.state == "pending"
    assert info.state_at >= t0 + 0.29
    assert queue.lease_next("w") is None
    job = queue.lease_next("w", wait=10.0)  # woken when it falls due
    assert job is not None and job.id == job_id
    assert time.time() >= t0 + 0.29


def test_run_at_takes_epoch_seconds_or_a_datetime(queue: telha_jobs.Queue) -> None:
    later = queue.enqueue("embed", run_at=time.time() + 3600)
    when = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=2)
    later2 = queue.enqueue("embed", run_at=when)
    now = queue.enqueue("embed", run_at=time.time() - 1)
    job = queue.lease_next("w")
    assert job is not None and job.id == now
    assert queue.lease_next("w") is None
    assert abs(queue.get(later2).state_at - when.timestamp()) < 0.01  # type: ignore[union-attr]
    assert queue.get(later).state == "pending"  # type: ignore[union-attr]


def test_a_repeated_idempotency_key_returns_the_existing_job(queue: telha_jobs.Queue) -> None:
    a = queue.enqueue("ingest:pdf", {"doc": 1}, idempotency_key="doc-1")
    b = queue.enqueue("ingest:pdf", {"doc": 1}, idempotency_key="doc-1")
    assert a == b
    tenant = str(uuid.uuid4())
    c = queue.enqueue("ingest:pdf", {"doc": 1}, idempotency_key="doc-1", scope=tenant)
    assert c != a
    [d, e] = queue.enqueue_many(
        [
            {"kind": "ingest:pdf", "payload": 2, "idempotency_key": "doc-1"},
            {"kind": "ingest:pdf", "payload": 3, "idempotency_key": "doc-2"},
        ]
    )
    assert d == a and e not in (a, c)
    assert queue.stats()["total"]["pending"] == 3


def test_priority_kinds_and_scopes_select_what_is_leased(queue: telha_jobs.Queue) -> None:
    tenant = uuid.uuid4()
    low = queue.enqueue("embed", priority=200)
    high = queue.enqueue("embed", priority=0)
    pdf = queue.enqueue("ingest:pdf", scope=tenant)
    assert queue.lease_next("w", kinds="ingest:*").id == pdf  # type: ignore[union-attr]
    assert queue.lease_next("w", kinds=["embed"]).id == high  # type: ignore[union-attr]
    assert queue.lease_next("w", scope=str(tenant)) is None
    assert queue.lease_next("w").id == low  # type: ignore[union-attr]


def test_lease_many_takes_a_batch(queue: telha_jobs.Queue) -> None:
    queue.enqueue_many([("embed", i) for i in range(25)])
    jobs = queue.lease_many("w", 10)
    assert [j.payload for j in jobs] == list(range(10))
    assert queue.extend(jobs, "w") == [True] * 10
    assert queue.extend(jobs, "someone-else") == [False] * 10
    for j in jobs:
        queue.complete(j)
    assert len(queue.lease_many("w", 100)) == 15
    assert queue.lease_many("w", 5, wait=0.05) == []


def test_list_pages_with_after(queue: telha_jobs.Queue) -> None:
    ids = queue.enqueue_many([("embed", i) for i in range(7)])
    seen: list[str] = []
    page = queue.list(limit=3)
    while page:
        seen += [i.id for i in page]
        page = queue.list(limit=3, after=page[-1])
    assert seen == ids
    assert [i.id for i in queue.list(after=ids[4])] == ids[5:]
    assert [i.id for i in queue.list(kind="embed", state="pending", limit=2)] == ids[:2]
    assert queue.list(state="dead") == []


def test_release_returns_a_job_without_spending_an_attempt(queue: telha_jobs.Queue) -> None:
    job_id = queue.enqueue("embed")
    job = queue.lease_next("w")
    assert job is not None
    queue.release(job)
    info = queue.get(job_id)
    assert info is not None and info.state == "pending" and info.attempts == 0
    assert info.events[-1][1] == "released"


def test_the_queue_is_a_context_manager_and_close_is_final(target: Target) -> None:
    with target.open(reaper_interval=0) as q:
        q.enqueue("embed")
        assert not q.closed
    assert q.closed
    with pytest.raises(telha_jobs.QueueClosedError):
        q.lease_next("w")
    with pytest.raises(telha_jobs.QueueClosedError):
        q.stats()


def test_metrics_and_stats_count_the_jobs(queue: telha_jobs.Queue) -> None:
    queue.enqueue_many([("embed", 1), ("ingest:pdf", 2)])
    s = queue.stats()
    assert s["total"]["pending"] == 2
    assert s["by_kind"]["embed"]["pending"] == 1
    text = queue.metrics()
    assert 'telha_jobs_jobs{kind="embed",state="pending"} 1' in text


def test_default_store_path_follows_telha_db(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TELHA_DB", "/srv/jobs")
    assert telha_jobs.default_store_path() == "/srv/jobs"
    monkeypatch.delenv("TELHA_DB")
    assert telha_jobs.default_store_path() == "telha-data"


def test_a_toml_config_file_and_keywords_combine(target: Target, tmp_path: Path) -> None:
    cfg = tmp_path / "jobs.toml"
    cfg.write_text('[jobs]\nmax_attempts = 7\nreaper_interval = 0\n[jobs.kinds."ingest:pdf"]\nmax_attempts = 2\n')
    with target.open(config_file=cfg, lease_ttl=12.5) as q:
        a = q.enqueue("embed")
        b = q.enqueue("ingest:pdf")
        assert q.get(a).max_attempts == 7  # type: ignore[union-attr]
        assert q.get(b).max_attempts == 2  # type: ignore[union-attr]
        job = q.lease_next("w")
        assert job is not None and 12.0 < job.deadline - time.time() <= 12.5


def test_completed_retention_prunes_old_completed_jobs_unless_kept_forever(target: Target) -> None:
    for retention, left in ((0.05, 0), (float("inf"), 1), (False, 1)):
        with target.open(reaper_interval=0, completed_retention=retention) as q:
            job_id = q.enqueue("embed")
            job = q.lease_next("w")
            assert job is not None
            q.complete(job)
            time.sleep(0.1)
            q.reap()
            assert q.stats()["total"]["completed"] == left
            assert (q.get(job_id) is not None) == bool(left)


def test_keywords_win_over_the_environment_which_wins_over_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TELHA_JOBS_MAX_ATTEMPTS", "4")
    monkeypatch.setenv("TELHA_JOBS_REAPER_INTERVAL", "0")
    with telha_jobs.Queue(tmp_path / "env") as q:
        assert q.get(q.enqueue("embed")).max_attempts == 4  # type: ignore[union-attr]
    with telha_jobs.Queue(tmp_path / "kw", max_attempts=6) as q:
        assert q.get(q.enqueue("embed")).max_attempts == 6  # type: ignore[union-attr]
    monkeypatch.setenv("TELHA_JOBS_MAX_ATTEMPTS", "many")
    with pytest.raises(telha_jobs.InvalidArgumentError, match="TELHA_JOBS_MAX_ATTEMPTS"):
        telha_jobs.Queue(tmp_path / "bad")


def test_complete_many_completes_a_batch_and_reports_each_lost_lease(queue: telha_jobs.Queue) -> None:
    ids = queue.enqueue_many([("embed", i) for i in range(3)])
    jobs = queue.lease_many("w", 3)
    assert [j.id for j in jobs] == ids
    queue.release(jobs[1])  # its lease is gone before the batch settles
    out = queue.complete_many(jobs, [{"n": 0}, None, b"raw"])
    assert out[0] is None and out[2] is None
    assert isinstance(out[1], telha_jobs.LeaseLostError) and out[1].code == "ABORTED"
    assert queue.get(ids[0]).result == {"n": 0}  # type: ignore[union-attr]
    assert queue.get(ids[1]).state == "pending"  # type: ignore[union-attr]
    assert queue.get(ids[2]).result == b"raw"  # type: ignore[union-attr]
    assert queue.complete_many([]) == []
    with pytest.raises(telha_jobs.InvalidArgumentError):
        queue.complete_many(jobs, [1])
    with pytest.raises(TypeError):
        queue.complete_many(jobs[0])  # type: ignore[arg-type]


def test_fail_many_and_release_many_settle_a_batch_and_report_each_lost_lease(queue: telha_jobs.Queue) -> None:
    ids = queue.enqueue_many([("embed", i) for i in range(4)])
    jobs = queue.lease_many("w", 4)
    assert [j.id for j in jobs] == ids
    queue.release(jobs[1])  # its lease is gone before the batch settles
    out = queue.fail_many(
        jobs[:3] + [jobs[3]],
        ["boom", "late", "bad input", "far"],
        retryable=[True, True, False, True],
        retry_in=[60, None, None, 4e9],  # the last over 100 years
    )
    assert out[0] is None and out[2] is None
    assert isinstance(out[1], telha_jobs.LeaseLostError) and out[1].code == "ABORTED"
    assert isinstance(out[3], telha_jobs.InvalidArgumentError)
    a = queue.get(ids[0])
    assert a is not None and a.state == "failed" and a.last_error == "boom" and a.attempts == 1
    assert queue.get(ids[2]).state == "dead"  # type: ignore[union-attr]
    assert queue.get(ids[3]).state == "leased"  # type: ignore[union-attr]
    # One reason for every job; a repeat answers as the first fail did.
    assert queue.fail_many([jobs[0]], "boom") == [None]
    out = queue.release_many([jobs[3], jobs[0], jobs[3]])
    assert out[0] is None and out[2] is None
    assert isinstance(out[1], telha_jobs.LeaseLostError)
    d = queue.get(ids[3])
    assert d is not None and d.state == "pending" and d.attempts == 0
    assert queue.fail_many([], []) == [] and queue.release_many([]) == []
    with pytest.raises(telha_jobs.InvalidArgumentError, match="reasons has 1 entries for 2 jobs"):
        queue.fail_many(jobs[:2], ["x"])
    with pytest.raises(TypeError):
        queue.fail_many(jobs[:1], [3])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        queue.release_many(jobs[0])  # type: ignore[arg-type]
