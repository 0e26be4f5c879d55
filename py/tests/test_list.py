"""``list`` answers a full page through the core's one paging rule, as a
``JobList`` (a list) with ``.next`` and ``.corrupt``; ``after`` takes a
JobInfo, a cursor or a job id."""

from __future__ import annotations

import uuid

import pytest

import telha_jobs
from telha_jobs import limits


def test_a_page_is_a_list_with_next_and_corrupt(queue: telha_jobs.Queue) -> None:
    ids = queue.enqueue_many([("embed", i) for i in range(7)])
    page = queue.list(limit=3)
    assert isinstance(page, list) and isinstance(page, telha_jobs.JobList)
    assert [i.id for i in page] == ids[:3] and page.corrupt == []
    assert page.next is not None and page.next == page[-1].cursor
    # Old code that treats the answer as a plain list keeps working.
    assert page == list(page) and page[1:] == list(page)[1:] and len(page) == 3
    assert "next=" in repr(page)


def test_following_next_reads_every_job_once_and_ends_with_none(queue: telha_jobs.Queue) -> None:
    ids = queue.enqueue_many([("embed", i) for i in range(7)])
    seen: list[str] = []
    page = queue.list(limit=3)
    pages = 1
    while page.next is not None:
        seen += [i.id for i in page]
        page = queue.list(limit=3, after=page.next)
        pages += 1
    seen += [i.id for i in page]
    assert seen == ids and pages == 3 and len(page) == 1


def test_after_takes_a_job_info_its_cursor_or_a_job_id(queue: telha_jobs.Queue) -> None:
    ids = queue.enqueue_many([("embed", i) for i in range(5)])
    info = queue.get(ids[1])
    assert info is not None and info.cursor
    for after in (info, info.cursor, ids[1], uuid.UUID(ids[1])):
        assert [i.id for i in queue.list(after=after)] == ids[2:], after
    with pytest.raises(telha_jobs.NotFoundError):
        queue.list(after=str(uuid.uuid4()))
    with pytest.raises(telha_jobs.InvalidArgumentError):
        queue.list(after="not a cursor")
    with pytest.raises(TypeError, match="after must be a JobInfo"):
        queue.list(after=5)  # type: ignore[arg-type]


def test_a_filtered_page_fills_across_the_cores_scan_budget(local_queue: telha_jobs.Queue) -> None:
    # More non-matching rows before the matches than one core call reads:
    # one core call answers a short page; the binding's list fills it.
    q = local_queue
    for _ in range(limits.LIST_SCAN_BUDGET // 10_000 + 1):
        q.enqueue_many([("other", None)] * 10_000)
    wanted = q.enqueue_many([("embed", i) for i in range(3)])
    page = q.list(kind="embed", limit=3)
    assert [i.id for i in page] == wanted and page.corrupt == []
