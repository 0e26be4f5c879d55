"""Type-checked (mypy --strict) use of the public API: fails `make test` if
the stubs stop describing how the package is used. Not run by pytest."""

from __future__ import annotations

import datetime
import math
from collections.abc import Sequence

import telha_jobs
from telha_jobs import limits
from telha_jobs.aio import AsyncQueue, AsyncWorker


def open_queue() -> telha_jobs.Queue:
    q = telha_jobs.Queue(
        "/tmp/x",
        lease_ttl=datetime.timedelta(minutes=5),
        completed_retention=False,
        prune_batch=500,
        kinds={"ingest:pdf": {"lease_ttl": 1800.0, "max_attempts": 3}},
    )
    settings: dict[str, object] = q.settings()
    keys: list[str] = [k.name for k in telha_jobs.config_keys() if k.per_kind]
    print(settings, keys, limits.MAX_BATCH, limits.MAX_INSTANT)
    return telha_jobs.Queue("/tmp/y", completed_retention=math.inf)


def use(q: telha_jobs.Queue) -> Sequence[str]:
    job_id: str = q.enqueue("ingest:pdf", {"doc": "a.pdf"}, priority=10, delay=1.5)
    again = q.enqueue("ingest:pdf", {"doc": "a.pdf"}, idempotency_key="a")
    created: bool = again.created
    ids: list[telha_jobs.Enqueued] = q.enqueue_many([("embed", b"raw"), {"kind": "embed", "payload": 1}])
    print(created, [e.created for e in ids])
    job: telha_jobs.Job | None = q.lease_next("w", kinds="ingest:*", wait=5.0)
    if job is not None:
        alive: list[bool] = q.extend([job], "w")
        if all(alive):
            q.complete(job, {"pages": 12})
        else:
            q.fail(job, "lost", retryable=False)
    info: telha_jobs.JobInfo | None = q.get(job_id)
    if info is not None and info.state == "dead":
        q.retry(info.id)
    for ts, transition, detail in info.events if info else []:
        print(f"{ts:.3f} {transition} {detail}")
    page: telha_jobs.JobList = q.list(limit=limits.MAX_LIST_LIMIT)
    while page.next is not None:
        page = q.list(after=page.next)
    first: telha_jobs.JobInfo | None = page[0] if page else None
    print(first.cursor if first else None, first.payload_encoding if first else None, page.corrupt)
    counts: int = q.stats()["total"]["pending"]
    print(counts, q.metrics().splitlines()[0])
    return ids


def control(q: telha_jobs.Queue) -> None:
    job_id = q.enqueue("embed", expires_in=datetime.timedelta(hours=1),
                       expires_at=datetime.datetime(2100, 1, 1))
    outcome: str = q.cancel(job_id, "wrong batch")
    report: dict[str, int] = q.cancel_many(kind="ingest:*", state="pending", reason="x")
    q.delete(job_id)
    changed: bool = q.pause(kind="embed") or q.pause("scope:0190c0de-0000-7000-8000-0000000000a1")
    q.resume(kind="embed")
    paused: list[str] = q.paused()["kinds"]
    job = q.lease_next("w")
    if job is not None:
        timeout: float | None = job.timeout
        answers: list[str] = list(q.extend_answers([job], "w"))
        if answers == ["cancelled"]:
            q.fail(job, "stop", retry_in=datetime.timedelta(minutes=10))
        else:
            q.snooze(job, 60)
        print(timeout)
    info = q.get(job_id)
    if info is not None:
        print(info.cancel_requested, info.snoozes, info.expires_at, info.paused)
    print(outcome, report, changed, paused)
    try:
        q.cancel(job_id)
    except telha_jobs.WrongStateError:
        pass
    except telha_jobs.CancelledError as e:
        lost: telha_jobs.LeaseLostError = e
        print(lost)


def snoozing(job: telha_jobs.Job) -> None:
    lease = telha_jobs.current_lease()
    if lease is not None and (lease.cancelled or lease.timed_out):
        return
    if job.attempts == 0:
        raise telha_jobs.Snooze(datetime.timedelta(seconds=30))
    raise telha_jobs.Retry(ValueError("rate limited"), after=10)


def handler(job: telha_jobs.Job) -> dict[str, int]:
    lease = telha_jobs.current_lease()
    if lease is not None:
        lease.check()
    return {"n": 1}


def workers(q: telha_jobs.Queue) -> None:
    w = telha_jobs.Worker(q, handler, concurrency=4, kinds=["embed", "ingest:*"])
    w.start()
    w.stop(5.0)


async def handle_async(job: telha_jobs.Job) -> None:
    return None


async def async_use() -> None:
    async with await AsyncQueue.open("/tmp/x", lease_ttl=60.0) as aq:
        await aq.enqueue("embed", 1)
        job = await aq.lease_next("w", wait=1.0)
        if job is not None:
            ttl: float = job.lease_ttl
            print(ttl)
            await aq.complete(job)
        e: telha_jobs.Enqueued = await aq.enqueue("embed", 2)
        page: telha_jobs.JobList = await aq.list(limit=5)
        print(e.created, page.next, aq.settings())
        await AsyncWorker(aq, handle_async).stop()


def remote_use(q: telha_jobs.Queue) -> None:
    with q.serve("127.0.0.1:0", token="t", metrics_listen="127.0.0.1:0") as server:
        url: str = server.url
        address: str = server.address
        remote: telha_jobs.Queue = telha_jobs.connect(url, "t", timeout=5.0)
        where: str = remote.location
        path: str | None = remote.path
        print(address, where, path, remote.remote)
        telha_jobs.Worker(remote, handler).stop()
        remote.close()
    server.stop(grace=1.0)


async def async_remote(url: str) -> None:
    async with await AsyncQueue.connect(url, token="t", timeout=2.0) as aq:
        await aq.enqueue("embed")


def results_events_progress(q: telha_jobs.Queue) -> None:
    job_id = q.enqueue("embed", {"doc": 1})
    info: telha_jobs.JobInfo = q.wait(job_id, timeout=30.0)
    if info.state == "dead":
        print(info.last_error)
    done: telha_jobs.JobInfo = q.enqueue_and_wait("embed", b"raw", timeout=datetime.timedelta(seconds=5), priority=3)
    print(done.result, done.progress, done.raw_progress)
    with q.subscribe(kinds="ingest:*", transitions=["completed", "dead"], buffer=limits.MAX_EVENT_BUFFER) as sub:
        for ev in sub:
            seq: int = ev.seq
            missed: int = ev.missed
            who: str | None = ev.worker_id
            print(seq, missed, who, ev.ts, ev.time, ev.job_id, ev.kind, ev.transition, ev.attempt, ev.progress)
        nxt: telha_jobs.Event | None = sub.next(timeout=1.0)
        print(nxt, sub.closed, sub.buffered)
    job = q.lease_next("w")
    if job is not None:
        renewed: list[bool] = q.extend([job], "w", progress=[{"page": 3}])
        print(renewed, q.extend_answers([job], "w", progress=[None]), limits.MAX_PROGRESS_BYTES)


def reporting(job: telha_jobs.Job) -> None:
    lease = telha_jobs.current_lease()
    if lease is not None:
        lease.progress({"step": 1, "of": 3})


async def async_results(aq: AsyncQueue) -> None:
    info: telha_jobs.JobInfo = await aq.wait("01890000-0000-7000-8000-000000000000", timeout=1.0)
    done: telha_jobs.JobInfo = await aq.enqueue_and_wait("embed", {"x": 1}, timeout=5.0)
    print(info.state, done.result)
    async with await aq.subscribe(kinds="embed") as sub:
        async for ev in sub:
            print(ev.transition)
        one: telha_jobs.Event | None = await sub.next(timeout=0.5)
        print(one, sub.closed)
    await aq.extend([], "w", progress=[])


def schedules(q: telha_jobs.Queue) -> None:
    info: telha_jobs.ScheduleInfo = q.schedule_put(
        "nightly", "0 3 * * *", kind="compact", payload={"all": True}, timezone="Europe/Lisbon",
        anchor=datetime.datetime(2026, 1, 1), priority=3, max_attempts=2,
        expires_in=datetime.timedelta(hours=1), catch_up="all", max_catch_up=limits.MAX_CATCH_UP_LIMIT,
    )
    nxt: float | None = info.next_slot
    policy: str = info.catch_up
    print(nxt, policy, info.cursor, info.last_job, info.enqueued, info.payload_encoding)
    every: list[telha_jobs.ScheduleInfo] = q.schedule_list()
    paused: bool = q.schedule_pause("nightly").paused
    q.schedule_resume("nightly")
    try:
        q.schedule_get("gone")
    except telha_jobs.NotFoundError:
        pass
    q.schedule_delete("nightly")
    report: telha_jobs.RunReport = q.run_schedules()
    print(every, paused, report.schedules, report.enqueued, report.skipped, report.failed)
    times: list[float] = telha_jobs.schedule_next_times("0 9 * * 1", after=0.0, n=limits.MAX_NEXT_TIMES)
    print(times, telha_jobs.schedule_next_times("every 5m", anchor=60))
    job = q.lease_next("w")
    ref: telha_jobs.ScheduleRef | None = job.schedule if job is not None else None
    if ref is not None:
        print(ref.name, ref.slot, ref.missed)
    for j in q.list(schedule="nightly"):
        print(j.schedule)


async def async_schedules(aq: AsyncQueue) -> None:
    info: telha_jobs.ScheduleInfo = await aq.schedule_put("tick", "every 1m", kind="tick")
    again: telha_jobs.ScheduleInfo = await aq.schedule_get(info.name)
    every: list[telha_jobs.ScheduleInfo] = await aq.schedule_list()
    await aq.schedule_pause("tick")
    await aq.schedule_resume("tick")
    report: telha_jobs.RunReport = await aq.run_schedules()
    await aq.schedule_delete("tick")
    print(again, every, report, await aq.list(schedule="tick"))


def flow(q: telha_jobs.Queue, job: telha_jobs.Job) -> None:
    q.set_limit("kind:embed", concurrency=4, rate=2.5, burst=5)
    q.set_limit("scope:*", weight=2)
    infos: list[telha_jobs.LimitInfo] = q.limits()
    held: int = infos[0].held if infos else 0
    rate: float | None = infos[0].rate if infos else None
    removed: bool = q.remove_limit("kind:embed")
    print(held, rate, removed)
    q.complete(job, {"ok": 1}, then=[("embed", b""), {"kind": "index", "priority": 3}])
    q.complete_many([job], then=[[("embed", b"")]])
    parent: str | None = job.parent
    kids = q.list(parent=job)
    print(parent, [k.parent for k in kids])


async def async_flow(aq: AsyncQueue, job: telha_jobs.Job) -> None:
    await aq.set_limit("kind:embed", concurrency=1)
    infos: list[telha_jobs.LimitInfo] = await aq.limits()
    print(infos, await aq.remove_limit("kind:embed"))
    await aq.complete(job, None, then=[("embed", b"")])
    await aq.complete_many([job], then=[None])


def fan_in(q: telha_jobs.Queue, job: telha_jobs.Job) -> None:
    kids: list[telha_jobs.Enqueued]
    kids, parent = q.enqueue_group([("page", 1)], {"kind": "index", "on_child_dead": "ignore"})
    later: telha_jobs.Enqueued = q.enqueue("report", None, after=[parent, *kids],
                                            on_child_dead="cancel_rest")
    info = q.get(later)
    f: telha_jobs.FanIn | None = info.fan_in if info is not None else None
    unfinished: int = f.unfinished if f is not None else 0
    page: telha_jobs.ChildPage = q.results_of_children(job, limit=10)
    first: telha_jobs.ChildResult | None = page[0] if page else None
    nxt: str | None = page.next
    print(unfinished, first.state if first else None, nxt)


async def async_fan_in(aq: AsyncQueue, job: telha_jobs.Job) -> None:
    kids, parent = await aq.enqueue_group([("page", 1)], ("index", None))
    page: telha_jobs.ChildPage = await aq.results_of_children(parent, cursor=None, limit=5)
    print(kids, [c.result for c in page], await aq.enqueue("x", None, after=kids))
