"""Unique windows (``unique_for`` on a keyed enqueue, issue 44), embedded
and through a server; the behaviour in depth is the core's
(core/tests/behaviour/unique.rs) and conformance case 096."""

from __future__ import annotations

import datetime
import math
from typing import Any

import pytest

import telha_jobs

from .conftest import Target


def test_a_window_answers_its_job_after_it_completed(target: Target) -> None:
    q = target.open(reaper_interval=0)
    first = q.enqueue("digest", {"n": 1}, idempotency_key="user-1", unique_for=3600)
    assert first.created
    job = q.lease_next("w", kinds="digest")
    assert job is not None
    q.complete(job)
    again = q.enqueue("digest", {"n": 2}, idempotency_key="user-1",
                      unique_for=datetime.timedelta(hours=1))
    assert (again, again.created) == (first, False)
    # "active": a finished job frees the key inside the window.
    a = q.enqueue("digest", 1, idempotency_key="user-2", unique_for=3600, unique_states="active")
    job = q.lease_next("w", kinds="digest")
    assert job is not None and job.id == a
    q.complete(job)
    b = q.enqueue("digest", 2, idempotency_key="user-2", unique_for=3600, unique_states="active")
    assert b.created and b != a


@pytest.mark.parametrize(
    "options,error,message",
    [
        ({"unique_for": 60}, telha_jobs.InvalidArgumentError, "needs an idempotency_key"),
        ({"idempotency_key": "k", "unique_for": 0}, telha_jobs.InvalidArgumentError, "at least 1ms"),
        ({"idempotency_key": "k", "unique_for": -1}, telha_jobs.InvalidArgumentError, "unique_for"),
        ({"idempotency_key": "k", "unique_for": math.nan}, telha_jobs.InvalidArgumentError, "unique_for"),
        ({"idempotency_key": "k", "unique_for": 1e12}, telha_jobs.InvalidArgumentError, "unique_for"),
        ({"idempotency_key": "k", "unique_for": 60, "unique_states": "done"},
         telha_jobs.InvalidArgumentError, 'unique_states must be "any" or "active"'),
        ({"idempotency_key": "k", "unique_for": 60, "unique_states": 1}, TypeError, "unique_states must be"),
        ({"idempotency_key": "k", "unique_states": "any"}, telha_jobs.InvalidArgumentError, "needs unique_for"),
    ],
)
def test_bad_windows_are_refused_and_write_nothing(
    target: Target, options: dict[str, Any], error: type[Exception], message: str
) -> None:
    q = target.open(reaper_interval=0)
    with pytest.raises(error, match=message):
        q.enqueue("digest", b"x", **options)
    assert q.stats()["total"]["pending"] == 0
