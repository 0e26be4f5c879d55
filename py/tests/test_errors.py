"""Wrong types get TypeError, wrong values InvalidArgumentError (a ValueError),
with a clear message; nothing crashes the interpreter; the store stays usable."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, Callable

import pytest

import telha_jobs

from .conftest import Target


def test_the_exception_hierarchy_maps_every_core_kind() -> None:
    pairs = {
        telha_jobs.InvalidArgumentError: "INVALID_ARGUMENT",
        telha_jobs.NotFoundError: "NOT_FOUND",
        telha_jobs.LeaseLostError: "ABORTED",
        telha_jobs.StoreLockedError: "STORE_LOCKED",
        telha_jobs.StorageError: "STORAGE",
        telha_jobs.CorruptionError: "CORRUPTION",
        telha_jobs.QueueClosedError: "CLOSED",
        telha_jobs.UnsupportedFormatError: "UNSUPPORTED_FORMAT",
        telha_jobs.CancelledError: "CANCELLED",
        telha_jobs.WrongStateError: "WRONG_STATE",
        telha_jobs.UnavailableError: "UNAVAILABLE",
    }
    for cls, code in pairs.items():
        assert issubclass(cls, telha_jobs.TelhaError) and cls.code == code
    assert issubclass(telha_jobs.InvalidArgumentError, ValueError)
    assert issubclass(telha_jobs.CorruptionError, telha_jobs.StorageError)
    assert not issubclass(telha_jobs.LeaseLostError, ValueError)
    # A handler that stops on a lost lease stops on a cancel too.
    assert issubclass(telha_jobs.CancelledError, telha_jobs.LeaseLostError)
    assert not issubclass(telha_jobs.WrongStateError, telha_jobs.LeaseLostError)
    # Retryable, so never mistaken for a storage failure or a lost lease.
    assert not issubclass(telha_jobs.UnavailableError, telha_jobs.StorageError)
    assert not issubclass(telha_jobs.UnavailableError, telha_jobs.LeaseLostError)
    assert telha_jobs.UnavailableError.leader is None


# Raised by handlers to ask the Worker for something, not errors: the names
# issue 16 gives them (as Node's `Snooze` / `Retry`).
HANDLER_SIGNALS = {"Snooze", "Retry"}


def test_every_exception_class_name_ends_in_error() -> None:
    classes = {
        name
        for name in telha_jobs.__all__
        if isinstance(getattr(telha_jobs, name), type)
        and issubclass(getattr(telha_jobs, name), BaseException)
        and getattr(telha_jobs, name).__name__ == name
        and name not in HANDLER_SIGNALS
    }
    assert classes == {
        "TelhaError",
        "InvalidArgumentError",
        "NotFoundError",
        "LeaseLostError",
        "StoreLockedError",
        "StorageError",
        "CorruptionError",
        "QueueClosedError",
        "UnsupportedFormatError",
        "CancelledError",
        "WrongStateError",
        "UnavailableError",
        "PermanentError",
    }


DEPRECATED_ALIASES = {
    "InvalidArgument": "InvalidArgumentError",
    "NotFound": "NotFoundError",
    "LeaseLost": "LeaseLostError",
    "StoreLocked": "StoreLockedError",
    "QueueClosed": "QueueClosedError",
    "Permanent": "PermanentError",
}


@pytest.mark.parametrize("old,new", DEPRECATED_ALIASES.items())
def test_the_deprecated_names_are_the_same_classes(old: str, new: str) -> None:
    assert getattr(telha_jobs, old) is getattr(telha_jobs, new)
    assert old in telha_jobs.__all__ and new in telha_jobs.__all__
    assert "deprecated alias" in (getattr(telha_jobs, new).__doc__ or "")


def test_the_deprecated_names_still_catch_what_the_queue_raises(
    queue: telha_jobs.Queue,
) -> None:
    queue.enqueue("embed", b"x")
    job = queue.lease_next("w1")
    assert job is not None
    queue.complete(job)
    try:
        queue.fail(job, "late")  # a different settle of a completed lease
    except telha_jobs.LeaseLost as e:  # the old name
        assert isinstance(e, telha_jobs.LeaseLostError)
        assert type(e) is telha_jobs.LeaseLostError and e.code == "ABORTED"
    else:
        pytest.fail("a fail after complete with the same token did not raise")
    with pytest.raises(telha_jobs.InvalidArgument) as exc:  # the old name
        queue.enqueue("Not A Kind")
    assert type(exc.value) is telha_jobs.InvalidArgumentError
    with pytest.raises(telha_jobs.NotFound):
        queue.retry(str(uuid.uuid4()))


BAD_TYPES: list[tuple[str, Callable[[telha_jobs.Queue], Any], str]] = [
    ("kind int", lambda q: q.enqueue(5), "str"),  # type: ignore[arg-type]
    ("payload object", lambda q: q.enqueue("embed", object()), "cannot encode a object"),
    ("payload set", lambda q: q.enqueue("embed", {"a": {1, 2}}), "cannot encode a set"),
    ("dict key int", lambda q: q.enqueue("embed", {1: "x"}), "dict keys must be str"),
    ("priority str", lambda q: q.enqueue("embed", priority="high"), "priority must be an int"),
    ("priority bool", lambda q: q.enqueue("embed", priority=True), "priority must be an int"),
    ("delay str", lambda q: q.enqueue("embed", delay="5s"), "delay must be a number of seconds"),
    ("scope int", lambda q: q.enqueue("embed", scope=7), "scope must be a UUID"),
    ("idem int", lambda q: q.enqueue("embed", idempotency_key=7), "idempotency_key must be a str"),
    ("items str", lambda q: q.enqueue_many("embed"), "enqueue_many takes a list"),
    ("item int", lambda q: q.enqueue_many([7]), "item 0 must be a (kind, payload) tuple or a dict"),
    ("kinds int", lambda q: q.lease_next("w", kinds=5), "kinds must be a str or a list"),
    ("wait str", lambda q: q.lease_next("w", wait="1"), "wait must be a number"),
    ("worker int", lambda q: q.lease_next(5), "str"),  # type: ignore[arg-type]
    ("complete int", lambda q: q.complete(5), "expected a Job"),
    ("extend one job", lambda q: q.extend(5, "w"), "extend takes a list"),
    ("state int", lambda q: q.list(state=1), "state must be a str"),
    ("get float", lambda q: q.get(1.5), "job_id must be a UUID"),
]


@pytest.mark.parametrize("name,call,message", BAD_TYPES, ids=[b[0] for b in BAD_TYPES])
def test_wrong_types_raise_type_error(
    queue: telha_jobs.Queue, name: str, call: Callable[[telha_jobs.Queue], Any], message: str
) -> None:
    with pytest.raises(TypeError) as exc:
        call(queue)
    assert message in str(exc.value)
    assert not isinstance(exc.value, telha_jobs.TelhaError)


BAD_VALUES: list[tuple[str, Callable[[telha_jobs.Queue], Any], str]] = [
    ("kind syntax", lambda q: q.enqueue("Ingest PDF"), "kinds use lowercase ASCII"),
    ("kind empty", lambda q: q.enqueue(""), "kind must be 1 to 64 bytes"),
    ("kind too long", lambda q: q.enqueue("a" * 65), "kind must be 1 to 64 bytes"),
    ("system kind in a tenant", lambda q: q.enqueue("system:vacuum", scope=str(uuid.uuid4())), "system"),
    ("priority 256", lambda q: q.enqueue("embed", priority=256), "priority must be 0 to 255"),
    ("priority -1", lambda q: q.enqueue("embed", priority=-1), "priority must be 0 to 255"),
    ("huge int", lambda q: q.enqueue("embed", 2**70), "does not fit in 64 bits"),
    ("delay negative", lambda q: q.enqueue("embed", delay=-1), "delay must be a finite number"),
    ("delay nan", lambda q: q.enqueue("embed", delay=float("nan")), "delay must be a finite number"),
    ("run_at negative", lambda q: q.enqueue("embed", run_at=-5), "run_at must be seconds"),
    ("scope not a uuid", lambda q: q.enqueue("embed", scope="tenant-1"), "malformed scope"),
    ("empty idempotency key", lambda q: q.enqueue("embed", idempotency_key=""), "idempotency"),
    ("max_attempts 0", lambda q: q.enqueue("embed", max_attempts=0), "max_attempts must be 1"),
    ("oversized payload", lambda q: q.enqueue("embed", b"x" * 2048), "payload"),
    ("unknown item key", lambda q: q.enqueue_many([{"kind": "embed", "prio": 1}]), "unknown option \"prio\""),
    ("unknown enqueue option", lambda q: q.enqueue("embed", prio=1), "unknown option \"prio\"; one of scope, priority"),
    ("item without kind", lambda q: q.enqueue_many([{"payload": 1}]), "has no \"kind\""),
    ("bad kind pattern", lambda q: q.lease_next("w", kinds="ingest:pdf:*"), "kind pattern"),
    ("empty worker id", lambda q: q.lease_next(""), "worker id"),
    ("wait negative", lambda q: q.lease_next("w", wait=-1.0), "wait must be"),
    ("lease_many 0", lambda q: q.lease_many("w", 0), "max must be 1 to 10000"),
    ("malformed job id", lambda q: q.get("not-a-uuid"), "malformed job id"),
    ("malformed token", lambda q: q.complete("garbage"), "malformed lease token"),
    ("unknown state", lambda q: q.list(state="running"), "unknown state"),
    ("list limit", lambda q: q.list(limit=0), "limit must be 1 to 10000"),
    ("purge pending", lambda q: q.purge("pending", 0), "purge"),
    ("deep payload", lambda q: q.enqueue("embed", _nested(300)), "deeper than 256"),
]


def _nested(depth: int) -> list[Any]:
    v: list[Any] = []
    for _ in range(depth):
        v = [v]
    return v


@pytest.mark.parametrize("name,call,message", BAD_VALUES, ids=[b[0] for b in BAD_VALUES])
def test_wrong_values_raise_invalid_argument(
    target: Target, name: str, call: Callable[[telha_jobs.Queue], Any], message: str
) -> None:
    with target.open(reaper_interval=0, max_payload_bytes=1024) as q:
        with pytest.raises(telha_jobs.InvalidArgumentError) as exc:
            call(q)
        assert isinstance(exc.value, ValueError)
        assert message.lower() in str(exc.value).lower()
        # The store is still usable after the error.
        job_id = q.enqueue("embed", {"ok": True})
        job = q.lease_next("w")
        assert job is not None and job.id == job_id
        q.complete(job)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"lease_ttl": 0}, "lease_ttl"),
        ({"max_attempts": 0}, "max_attempts"),
        ({"backoff_factor": 0.5}, "backoff_factor"),
        ({"backoff_base": 10, "backoff_cap": 5}, "backoff.cap"),
        ({"kinds": {"embed": {"bogus": 1}}}, "unknown per-kind setting"),
        ({"kinds": {"Bad Kind": {"max_attempts": 1}}}, "jobs.kinds key"),
        ({"lease_ttl": -3}, "lease_ttl must be a finite number"),
    ],
)
def test_bad_settings_raise_invalid_argument(store: Path, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(telha_jobs.InvalidArgumentError) as exc:
        telha_jobs.Queue(store, **kwargs)
    assert message in str(exc.value)


def test_a_bad_config_file_is_invalid_argument_naming_it(tmp_path: Path) -> None:
    cfg = tmp_path / "jobs.toml"
    cfg.write_text("[jobs]\nlease_tll = 5\n")
    with pytest.raises(telha_jobs.InvalidArgumentError) as exc:
        telha_jobs.Queue(tmp_path / "s", config_file=cfg)
    assert "lease_tll" in str(exc.value)


def test_a_store_path_that_is_a_file_is_a_storage_error(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("not a directory")
    with pytest.raises(telha_jobs.StorageError):
        telha_jobs.Queue(f)


def test_settling_an_unknown_job_is_not_found(queue: telha_jobs.Queue) -> None:
    with pytest.raises(telha_jobs.NotFoundError):
        queue.complete(f"{uuid.uuid4()}:1")
    assert queue.get(str(uuid.uuid4())) is None
    with pytest.raises(telha_jobs.NotFoundError):
        queue.list(after=str(uuid.uuid4()))


def test_a_handler_error_type_never_escapes_as_a_crash(queue: telha_jobs.Queue) -> None:
    # Job and JobInfo cannot be forged from Python.
    with pytest.raises(TypeError):
        telha_jobs.Job()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        telha_jobs.JobInfo()  # type: ignore[call-arg]


def test_a_store_of_a_newer_format_is_refused_untouched(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with telha_jobs.Queue(store, reaper_interval=0) as q:
        q.enqueue("embed", {"n": 1})
    (store / "telha.format").write_text("format = 9\ncompatible_from = 9\n")
    before = {p.name: p.read_bytes() for p in sorted(store.iterdir()) if p.is_file()}
    with pytest.raises(telha_jobs.UnsupportedFormatError) as exc:
        telha_jobs.Queue(store, reaper_interval=0)
    assert exc.value.code == "UNSUPPORTED_FORMAT" and isinstance(exc.value, telha_jobs.TelhaError)
    assert not isinstance(exc.value, telha_jobs.StorageError), "not a Corruption / Storage error"
    assert "9" in str(exc.value)
    after = {p.name: p.read_bytes() for p in sorted(store.iterdir()) if p.is_file()}
    assert after == before, "the store was changed"
