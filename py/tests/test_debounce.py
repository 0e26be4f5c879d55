"""Debounce (``debounce`` / ``debounce_max`` on a keyed enqueue, issue 44),
embedded and through a server; the behaviour in depth is the core's
(core/tests/behaviour/debounce.rs) and conformance case 097."""

from __future__ import annotations

import datetime
import math
import pickle
import time
from typing import Any

import pytest

import telha_jobs

from .conftest import Target


def test_a_repeat_replaces_the_pending_jobs_payload(target: Target) -> None:
    q = target.open(reaper_interval=0)
    first = q.enqueue("digest", {"n": 1}, idempotency_key="doc-1", debounce=3600)
    assert first.created and not first.debounced
    assert q.lease_next("w", kinds="digest") is None
    again = q.enqueue("digest", {"n": 2}, idempotency_key="doc-1",
                      debounce=datetime.timedelta(hours=1), debounce_max=7200)
    assert (again, again.created, again.debounced) == (first, False, True)
    assert pickle.loads(pickle.dumps(again)).debounced
    info = q.get(first)
    assert info is not None and info.payload == {"n": 2}
    assert [e[1] for e in info.events] == ["enqueued", "debounced"]
    plain = q.enqueue("digest", {"n": 3}, idempotency_key="doc-1")
    assert (plain, plain.created, plain.debounced) == (first, False, False)
    # The first enqueue's bound has passed: a repeat of an hour leaves the
    # job due, with its payload.
    b = q.enqueue("digest", "b1", idempotency_key="doc-2", debounce=0.005, debounce_max=0.005)
    time.sleep(0.02)
    assert q.enqueue("digest", "b2", idempotency_key="doc-2", debounce=3600).debounced
    job = q.lease_next("w", kinds="digest")
    assert job is not None and (job.id, job.payload) == (b, "b2")
    # Leased: a repeat makes a new job.
    c = q.enqueue("digest", "b3", idempotency_key="doc-2", debounce=3600)
    assert c.created and c != b


@pytest.mark.parametrize(
    "options,message",
    [
        ({"debounce": 60}, "debounce needs an idempotency_key"),
        ({"idempotency_key": "k", "debounce": 0}, "debounce must be at least 1ms"),
        ({"idempotency_key": "k", "debounce": -1}, "debounce"),
        ({"idempotency_key": "k", "debounce": math.nan}, "debounce"),
        ({"idempotency_key": "k", "debounce": 60, "debounce_max": 30}, "debounce_max .* must be at least debounce"),
        ({"idempotency_key": "k", "debounce_max": 30}, "debounce_max needs debounce"),
        ({"idempotency_key": "k", "debounce": 60, "unique_for": 60}, "combined with unique_for"),
        ({"idempotency_key": "k", "debounce": 60, "delay": 60}, "combined with delay"),
    ],
)
def test_bad_debounces_are_refused_and_write_nothing(
    target: Target, options: dict[str, Any], message: str
) -> None:
    q = target.open(reaper_interval=0)
    with pytest.raises(telha_jobs.InvalidArgumentError, match=message):
        q.enqueue("digest", b"x", **options)
    assert q.stats()["total"]["pending"] == 0
