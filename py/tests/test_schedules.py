"""Schedules: put / get / list / update / delete / pause / resume, the
checks at put, ``schedule_next_times``, slots fired by ``run_schedules``
and by the background scheduler, ``list(schedule=...)``, and the asyncio
calls. The ``queue`` fixture runs each test on an embedded queue and on a
client of a server."""

from __future__ import annotations

import asyncio
import datetime
import time
from pathlib import Path

import pytest

import telha_jobs
from telha_jobs import InvalidArgumentError, NotFoundError, Queue
from telha_jobs.aio import AsyncQueue

UTC = datetime.timezone.utc


def test_put_get_list_update_delete(queue: Queue) -> None:
    assert queue.schedule_list() == []
    before = time.time()
    info = queue.schedule_put(
        "nightly", "30 2 * * *", kind="compact", payload={"all": True}, timezone="Europe/Lisbon",
        priority=3, max_attempts=2, expires_in=datetime.timedelta(hours=1),
    )
    assert isinstance(info, telha_jobs.ScheduleInfo)
    assert (info.name, info.spec, info.kind, info.timezone) == (
        "nightly", "30 2 * * *", "compact", "Europe/Lisbon")
    assert info.payload == {"all": True}
    assert (info.priority, info.max_attempts, info.expires_in) == (3, 2, 3600.0)
    assert (info.catch_up, info.max_catch_up, info.paused) == ("one", None, False)
    assert (info.enqueued, info.skipped, info.last_error) == (0, 0, None)
    assert info.last_slot is None and info.last_job is None and info.last_fired_at is None
    assert info.scope is None and info.anchor is None
    assert info.created_at >= before - 1 and info.updated_at >= info.created_at
    assert info.next_slot is not None and info.next_slot > before
    # The next slot is 02:30 in Lisbon.
    at = datetime.datetime.fromtimestamp(info.next_slot, datetime.timezone.utc)
    assert at.minute == 30 and at.hour in (1, 2)

    queue.schedule_put("every-5m", "every 5m", kind="sync", catch_up="all", max_catch_up=10,
                       anchor=60, scope="00000000-0000-0000-0000-000000000007")
    queue.schedule_put("a-first", "@hourly", kind="sync", catch_up="skip", paused=True)
    assert [i.name for i in queue.schedule_list()] == ["a-first", "every-5m", "nightly"]
    e = queue.schedule_get("every-5m")
    assert (e.catch_up, e.max_catch_up, e.anchor) == ("all", 10, 60.0)
    assert e.scope == "00000000-0000-0000-0000-000000000007"
    assert e.next_slot is not None and (e.next_slot - 60) % 300 == 0
    a = queue.schedule_get("a-first")
    assert a.paused and a.catch_up == "skip"

    # Put again: replaced in place, the options not given back to defaults.
    v2 = queue.schedule_put("nightly", "30 2 * * *", kind="compact-v2", timezone="Europe/Lisbon")
    assert (v2.kind, v2.priority, v2.max_attempts, v2.payload) == ("compact-v2", None, None, None)
    assert [i.name for i in queue.schedule_list()] == ["a-first", "every-5m", "nightly"]

    assert queue.schedule_pause("nightly").paused
    assert queue.schedule_get("nightly").paused
    assert queue.schedule_pause("nightly").paused  # pausing twice is fine
    assert not queue.schedule_resume("nightly").paused
    assert queue.schedule_delete("every-5m") is None
    assert [i.name for i in queue.schedule_list()] == ["a-first", "nightly"]


def test_unknown_names_are_not_found(queue: Queue) -> None:
    for call in (queue.schedule_get, queue.schedule_delete, queue.schedule_pause,
                 queue.schedule_resume):
        with pytest.raises(NotFoundError):
            call("nope")
    queue.schedule_put("there", "@daily", kind="k")
    queue.schedule_delete("there")
    with pytest.raises(NotFoundError):
        queue.schedule_get("there")


BAD_PUTS = [
    ({"spec": "0 25 * * *"}, "bad cron"),
    ({"spec": ""}, "empty spec"),
    ({"spec": "0 3 * * *", "timezone": "Mars/Olympus"}, "unknown zone"),
    ({"spec": "every 0s"}, "zero interval"),
    ({"spec": "every 500ms"}, "sub-second interval"),
    ({"spec": "every 5m", "timezone": "UTC"}, "zone on an interval"),
    ({"name": "n" * 201}, "201-byte name"),
    ({"name": ""}, "empty name"),
    ({"kind": "Not A Kind!"}, "bad kind"),
    ({"max_attempts": 0}, "zero attempts"),
    ({"max_catch_up": 0}, "max_catch_up 0"),
    ({"max_catch_up": 10001}, "max_catch_up 10001"),
    ({"catch_up": "some"}, "unknown catch_up"),
    ({"expires_in": 1e30}, "huge expires_in"),
    ({"expires_in": 4e9}, "expires_in over MAX_DURATION"),
    ({"expires_in": -1}, "negative expires_in"),
    ({"expires_in": 0}, "zero expires_in"),
    ({"priority": 256}, "priority 256"),
    ({"anchor": -1}, "anchor before the epoch"),
    ({"spec": "0 0 30 2 *"}, "a spec that never fires"),
    ({"colour": "red"}, "unknown option"),
]


@pytest.mark.parametrize("change,why", BAD_PUTS, ids=[w for _, w in BAD_PUTS])
def test_bad_input_is_invalid_argument(queue: Queue, change: dict[str, object], why: str) -> None:
    kw: dict[str, object] = {"name": "n", "spec": "every 5m", "kind": "k"}
    kw.update(change)
    with pytest.raises(InvalidArgumentError):
        queue.schedule_put(**kw)  # type: ignore[arg-type]
    assert queue.schedule_list() == []


def test_a_200_byte_name_is_fine(queue: Queue) -> None:
    assert queue.schedule_put("n" * 200, "every 5m", kind="k").name == "n" * 200


def test_wrong_types_are_type_errors(queue: Queue) -> None:
    with pytest.raises(TypeError):
        queue.schedule_put("n", "every 5m", kind="k", paused=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        queue.schedule_put("n", 5, kind="k")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        queue.schedule_put("n", "every 5m", kind="k", priority="high")  # type: ignore[arg-type]


def test_next_times() -> None:
    after = datetime.datetime(2026, 1, 1, tzinfo=UTC)
    got = telha_jobs.schedule_next_times("0 9 * * 1", after=after, n=1)
    assert got == [datetime.datetime(2026, 1, 5, 9, tzinfo=UTC).timestamp()]
    assert telha_jobs.schedule_next_times("0 9 * * 1", after=after.timestamp(), n=1) == got
    assert telha_jobs.schedule_next_times("every 5m", after=0, n=3) == [300.0, 600.0, 900.0]
    assert telha_jobs.schedule_next_times("every 1h", anchor=900, after=0, n=2) == [900.0, 4500.0]
    # Default: 5 times after now.
    now = time.time()
    times = telha_jobs.schedule_next_times("@hourly")
    assert len(times) == 5 and now < times[0] <= now + 3600 and times == sorted(times)
    assert telha_jobs.schedule_next_times("@daily", n=0) == []
    berlin = telha_jobs.schedule_next_times("0 12 * * *", timezone="Europe/Berlin",
                                            after=datetime.datetime(2026, 7, 1, tzinfo=UTC), n=1)
    assert berlin == [datetime.datetime(2026, 7, 1, 10, tzinfo=UTC).timestamp()]
    for spec, kw in [("0 25 * * *", {}), ("0 3 * * *", {"timezone": "Nowhere/Land"}),
                     ("every 0s", {}), ("every 5m", {"timezone": "UTC"}),
                     ("* * * * *", {"n": 1001}), ("@daily", {"after": -1})]:
        with pytest.raises(InvalidArgumentError):
            telha_jobs.schedule_next_times(spec, **kw)  # type: ignore[arg-type]


def test_run_schedules_fires_one_job_per_slot(queue: Queue) -> None:
    queue.schedule_put("tick", "* * * * * *", kind="tick", payload={"n": 1}, priority=200)
    queue.schedule_put("other", "@yearly", kind="tick")
    plain = queue.enqueue("tick", b"plain")
    time.sleep(1.1)
    r = queue.run_schedules()
    assert isinstance(r, telha_jobs.RunReport)
    assert (r.schedules, r.enqueued, r.failed) == (1, 1, 0)
    info = queue.schedule_get("tick")
    assert info.enqueued == 1 and info.last_slot is not None and info.last_job is not None
    assert info.last_fired_at is not None and info.last_fired_at >= info.last_slot
    assert info.cursor >= info.last_slot

    first = queue.lease_next("w1")
    assert first is not None and first.id == plain and first.schedule is None
    job = queue.lease_next("w1")
    assert job is not None and job.kind == "tick" and job.priority == 200
    assert job.payload == {"n": 1}
    assert job.id == info.last_job
    assert job.schedule is not None
    assert job.schedule.name == "tick" and job.schedule.slot == info.last_slot
    assert job.schedule.missed >= 0
    assert queue.lease_next("w1") is None
    queue.complete(job)
    queue.complete(first)

    got = queue.get(job.id)
    assert got is not None and got.schedule is not None and got.schedule.name == "tick"
    assert got.idempotency_key == f"schedule:tick:{round(info.last_slot * 1000)}"
    plain_info = queue.get(plain)
    assert plain_info is not None and plain_info.schedule is None

    assert [j.id for j in queue.list(schedule="tick")] == [job.id]
    assert [j.id for j in queue.list(state="completed", schedule="tick")] == [job.id]
    assert list(queue.list(schedule="other")) == []
    assert len(queue.list(state="completed")) == 2
    with pytest.raises(InvalidArgumentError):
        queue.list(schedule="")

    # Paused: nothing is enqueued, and resuming does not catch up.
    queue.schedule_pause("tick")
    time.sleep(1.1)
    assert queue.run_schedules().enqueued == 0
    queue.schedule_resume("tick")
    assert queue.run_schedules().enqueued == 0
    assert queue.schedule_get("tick").enqueued == 1


def test_tags_and_metadata_go_on_every_slots_job(queue: Queue) -> None:
    info = queue.schedule_put("tagged", "* * * * * *", kind="tick",
                              tags=["nightly", "team-a", "nightly"], metadata={"owner": "ops"})
    assert (info.tags, info.metadata) == (["nightly", "team-a"], {"owner": "ops"})
    assert queue.schedule_get("tagged").tags == ["nightly", "team-a"]
    time.sleep(1.1)
    assert queue.run_schedules().enqueued == 1
    job = queue.lease_next("w1")
    assert job is not None and job.schedule is not None and job.schedule.name == "tagged"
    assert (job.tags, job.metadata) == (["nightly", "team-a"], {"owner": "ops"})
    assert [j.id for j in queue.list(tag="team-a")] == [job.id]
    assert queue.count_tag("nightly")["leased"] == 1
    # Bad ones are refused at put, naming the limit, and nothing is written.
    for kw, why in [
        ({"tags": [f"t{i}" for i in range(17)]}, "at most 16 tags"),
        ({"tags": ["x" * 65]}, "1 to 64 bytes"),
        ({"tags": ["a\nb"]}, "control character"),
        ({"metadata": {"k": "v" * 5120}}, "limit of 4096 bytes"),
    ]:
        with pytest.raises(InvalidArgumentError, match=why):
            queue.schedule_put("bad", "@daily", kind="k", **kw)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        queue.schedule_put("bad", "@daily", kind="k", tags="nightly")
    assert [i.name for i in queue.schedule_list()] == ["tagged"]


def test_the_background_scheduler_fires_by_itself(tmp_path: Path) -> None:
    with Queue(tmp_path / "store", reaper_interval=0.1) as q:
        q.schedule_put("tick", "* * * * * *", kind="tick")
        deadline = time.monotonic() + 10
        job = None
        while job is None and time.monotonic() < deadline:
            job = q.lease_next("w1", kinds="tick", wait=0.5)
        assert job is not None, "the scheduler thread enqueued nothing in 10 s"
        assert job.schedule is not None and job.schedule.name == "tick"
        assert q.schedule_get("tick").enqueued >= 1


def test_asyncio_calls(tmp_path: Path) -> None:
    async def main() -> None:
        async with await AsyncQueue.open(tmp_path / "store", reaper_interval=0) as aq:
            assert await aq.schedule_list() == []
            info = await aq.schedule_put("tick", "* * * * * *", kind="tick", payload=b"raw",
                                         tags=["nightly"], metadata={"owner": "ops"})
            assert info.payload == b"raw"
            assert (info.tags, info.metadata) == (["nightly"], {"owner": "ops"})
            assert (await aq.schedule_get("tick")).name == "tick"
            assert [i.name for i in await aq.schedule_list()] == ["tick"]
            assert (await aq.schedule_pause("tick")).paused
            assert not (await aq.schedule_resume("tick")).paused
            await asyncio.sleep(1.1)
            r = await aq.run_schedules()
            assert r.enqueued == 1
            job = await aq.lease_next("w1")
            assert job is not None and job.schedule is not None and job.schedule.name == "tick"
            assert (job.tags, job.metadata) == (["nightly"], {"owner": "ops"})
            assert [j.id for j in await aq.list(schedule="tick")] == [job.id]
            assert [j.id for j in await aq.list(tag="nightly")] == [job.id]
            with pytest.raises(InvalidArgumentError):
                await aq.schedule_put("bad", "every 0s", kind="k")
            await aq.schedule_delete("tick")
            with pytest.raises(NotFoundError):
                await aq.schedule_get("tick")

    asyncio.run(main())
