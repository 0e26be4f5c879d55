"""``enqueue`` returns the id as before, as an ``Enqueued`` (a ``str``) that
also tells an idempotency hit (``.created``); one rule for option names:
unknown is InvalidArgumentError listing the valid ones, a wrong type is
TypeError."""

from __future__ import annotations

import json
import pickle
import uuid

import pytest

import telha_jobs


def test_enqueue_returns_the_id_and_whether_it_was_created(queue: telha_jobs.Queue) -> None:
    first = queue.enqueue("ingest:pdf", {"doc": 1}, idempotency_key="doc-1")
    again = queue.enqueue("ingest:pdf", {"doc": 2}, idempotency_key="doc-1")
    assert isinstance(first, str) and isinstance(first, telha_jobs.Enqueued)
    assert first.created is True and again.created is False
    assert again == first and hash(again) == hash(first) and str(again) == first
    assert uuid.UUID(first)  # still the job id
    other = queue.enqueue("ingest:pdf", {"doc": 1}, idempotency_key="doc-1", scope=str(uuid.uuid4()))
    assert other.created and other != first
    assert queue.get(first).payload == {"doc": 1}  # type: ignore[union-attr]


def test_enqueue_many_tells_each_item_apart(queue: telha_jobs.Queue) -> None:
    old = queue.enqueue("embed", idempotency_key="k1")
    out = queue.enqueue_many(
        [
            {"kind": "embed", "idempotency_key": "k1"},
            ("embed", 2),
            {"kind": "embed", "idempotency_key": "k2"},
            {"kind": "embed", "idempotency_key": "k2"},  # the same batch: one job
        ]
    )
    assert [e.created for e in out] == [False, True, True, False]
    assert out[0] == old and out[2] == out[3]
    assert all(isinstance(e, telha_jobs.Enqueued) for e in out)


def test_an_enqueued_id_behaves_as_a_plain_string() -> None:
    e = telha_jobs.Enqueued("0190a000-0000-7000-8000-000000000001", False)
    assert json.dumps({"id": e}) == '{"id": "0190a000-0000-7000-8000-000000000001"}'
    back = pickle.loads(pickle.dumps(e))
    assert back == e and back.created is False and type(back) is telha_jobs.Enqueued
    assert f"{e}" == str(e) and e.upper() == str(e).upper()


def test_an_unknown_option_is_invalid_argument_naming_the_valid_ones(queue: telha_jobs.Queue) -> None:
    with pytest.raises(telha_jobs.InvalidArgumentError) as exc:
        queue.enqueue("embed", priorty=3)  # type: ignore[call-arg]
    msg = str(exc.value)
    assert '"priorty"' in msg
    for name in ("scope", "priority", "delay", "run_at", "idempotency_key", "max_attempts"):
        assert name in msg
    with pytest.raises(telha_jobs.InvalidArgumentError, match='item 1: unknown option "prio"'):
        queue.enqueue_many([("embed", 1), {"kind": "embed", "prio": 1}])
    assert queue.stats()["total"]["pending"] == 0, "nothing was enqueued"


def test_a_wrong_option_type_is_type_error(queue: telha_jobs.Queue) -> None:
    for kw in ({"priority": "high"}, {"delay": "5s"}, {"scope": 7}, {"max_attempts": 1.5}):
        with pytest.raises(TypeError):
            queue.enqueue("embed", **kw)
    with pytest.raises(TypeError):
        queue.enqueue_many([{"kind": "embed", "priority": "high"}])
