"""Queue.backup (issue 39), embedded and through a server (the server
writes on its own filesystem: the same machine here), sync and asyncio;
the behaviour under load is the core's (core/tests/backup.rs)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import telha_jobs
from telha_jobs.aio import AsyncQueue

from .conftest import Target


def test_a_backup_opens_as_a_store_with_the_jobs(target: Target, tmp_path: Path) -> None:
    q = target.open(reaper_interval=0)
    a = q.enqueue("mail", {"n": 1}, tags=["t"])
    b = q.enqueue("mail", {"n": 2})
    job = q.lease_next("w", kinds="mail")
    assert job is not None and job.id == a
    to = tmp_path / "b1"
    info = q.backup(to)
    assert info["path"] == str(to.resolve())
    assert info["files"] >= 4 and info["bytes"] > 0 and info["sequence"] > 0
    assert isinstance(info["took"], float)
    with pytest.raises(telha_jobs.InvalidArgumentError, match="not empty"):
        q.backup(str(to))
    q.complete(job)  # after the backup: not in it
    c = telha_jobs.Queue(to, reaper_interval=0)
    try:
        a_info, b_info = c.get(a), c.get(b)
        assert a_info is not None and a_info.state == "leased"
        assert b_info is not None and b_info.state == "pending"
        assert c.count_tag("t")["leased"] == 1
    finally:
        c.close()


def test_asyncio_backup_and_a_closed_queue(target: Target, tmp_path: Path) -> None:
    q = target.open(reaper_interval=0)
    q.enqueue("mail", 1)

    async def main() -> Any:
        return await AsyncQueue(q).backup(tmp_path / "b")

    info = asyncio.run(main())
    assert info["path"] == str((tmp_path / "b").resolve())
    q.close()
    with pytest.raises(telha_jobs.QueueClosedError):
        q.backup(tmp_path / "c")
    assert not (tmp_path / "c").exists()
