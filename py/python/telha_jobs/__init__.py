"""telha_jobs: an embedded, durable job queue with leases, on RocksDB.

No job is processed by two workers at once (every lease is fenced by a
generation that complete / fail / extend / release check) and no job is lost
when a worker dies (an expired lease goes back to pending with backoff; a
poison job is dead-lettered after ``max_attempts``).

    import telha_jobs
    with telha_jobs.Queue("./telha-data") as q:
        q.enqueue("embed", {"doc": 42})
        job = q.lease_next("worker-1", wait=5.0)
        if job is not None:
            q.complete(job, {"ok": True})

Workers in other processes (or on other machines) share one queue through a
server: ``server = q.serve("127.0.0.1:7450")`` in the process that owns the
store (or ``telha serve --db PATH``), then ``telha_jobs.connect(url)`` gives
a :class:`Queue` with the same methods, types and errors.

Times are float seconds (durations) or seconds since the epoch (instants),
range-checked against :mod:`telha_jobs.limits` (the core's own limits).
``Queue(...)`` takes every key of :func:`config_keys` by name.

Producers wait for their jobs (``q.wait(job_id, timeout=30)``,
``q.enqueue_and_wait(...)``), services watch the queue
(``for event in q.subscribe(kinds="mail")``), and handlers report progress
(``current_lease().progress({"page": 3})``, carried by the next heartbeat).

Schedules enqueue a job for every slot of a cron or interval spec, exactly
once per slot: ``q.schedule_put("nightly", "0 3 * * *", kind="compact")``.

Flow control caps what is leased at once or per second, per kind or scope
(``q.set_limit("kind:embed", concurrency=4, rate=10)``, ``q.limits()``),
and a completion can enqueue follow-up jobs in its own atomic batch
(``q.complete(job, result, then=[{"kind": "index", "payload": ...}])``).

Every exception class name ends in ``Error`` (``LeaseLostError``,
``NotFoundError``, ...). The old names ``InvalidArgument``, ``NotFound``,
``LeaseLost``, ``StoreLocked``, ``QueueClosed`` and ``Permanent`` are
deprecated aliases of the same classes, kept for one release.
"""

from ._errors import (
    CancelledError,
    CorruptionError,
    InvalidArgument,
    InvalidArgumentError,
    LeaseLost,
    LeaseLostError,
    NotFound,
    NotFoundError,
    QueueClosed,
    QueueClosedError,
    StorageError,
    StoreLocked,
    StoreLockedError,
    TelhaError,
    UnavailableError,
    UnsupportedFormatError,
    WrongStateError,
)
from ._lease import Lease, Permanent, PermanentError, Retry, Snooze, current_lease
from . import limits
from ._native import (
    CancelWait,
    ConfigKey,
    Event,
    Job,
    JobInfo,
    Queue,
    RunReport,
    ScheduleInfo,
    ScheduleRef,
    Server,
    Subscription,
    __version__,
    config_keys,
    connect,
    decode_payload,
    default_store_path,
    encode_payload,
    schedule_next_times,
)
from ._types import ChildPage, ChildResult, CorruptRecord, Enqueued, FanIn, FindResult, JobList, LimitInfo
from .worker import Worker

__all__ = [
    "CancelWait",
    "CancelledError",
    "ChildPage",
    "ChildResult",
    "ConfigKey",
    "CorruptRecord",
    "CorruptionError",
    "Enqueued",
    "Event",
    "FanIn",
    "FindResult",
    "InvalidArgumentError",
    "Job",
    "JobInfo",
    "JobList",
    "Lease",
    "LeaseLostError",
    "LimitInfo",
    "NotFoundError",
    "PermanentError",
    "Queue",
    "QueueClosedError",
    "Retry",
    "RunReport",
    "ScheduleInfo",
    "ScheduleRef",
    "Server",
    "Snooze",
    "StorageError",
    "StoreLockedError",
    "Subscription",
    "TelhaError",
    "UnavailableError",
    "UnsupportedFormatError",
    "Worker",
    "WrongStateError",
    "__version__",
    "config_keys",
    "connect",
    "current_lease",
    "decode_payload",
    "default_store_path",
    "encode_payload",
    "limits",
    "schedule_next_times",
    # Deprecated aliases of the ...Error classes above (removed in the next release).
    "InvalidArgument",
    "LeaseLost",
    "NotFound",
    "Permanent",
    "QueueClosed",
    "StoreLocked",
]
