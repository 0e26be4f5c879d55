"""Type stubs for the PyO3 extension ``telha_jobs._native``."""

import builtins
import datetime
import os
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, TypedDict, final

from ._errors import TelhaError
from ._types import ChildPage, Enqueued, FanIn, FindResult, JobList, LimitInfo

__all__ = [
    "CancelWait",
    "ConfigKey",
    "DEFAULT_EVENT_BUFFER",
    "DEFAULT_MAX_CATCH_UP",
    "Event",
    "Job",
    "JobInfo",
    "JobStream",
    "JobWaiter",
    "LIST_SCAN_BUDGET",
    "MAX_BATCH",
    "MAX_CATCH_UP_LIMIT",
    "MAX_DURATION",
    "MAX_EVENT_BUFFER",
    "MAX_IDEMPOTENCY_KEY_LEN",
    "MAX_INSTANT",
    "MAX_INSTANT_MS",
    "MAX_KIND_LEN",
    "MAX_LIST_LIMIT",
    "MAX_NEXT_TIMES",
    "MAX_PAYLOAD_BYTES_LIMIT",
    "MAX_PROGRESS_BYTES",
    "MAX_SCHEDULE_NAME_LEN",
    "MAX_WORKER_ID_LEN",
    "PRIORITY_DEFAULT",
    "Queue",
    "RunReport",
    "ScheduleInfo",
    "ScheduleRef",
    "Server",
    "Subscription",
    "__version__",
    "_call_cost",
    "_complete_then_lease",
    "_encode_progress",
    "_notify_shutdown",
    "_panic_for_tests",
    "config_keys",
    "connect",
    "decode_payload",
    "default_store_path",
    "encode_payload",
    "schedule_next_times",
]

__version__: str

# The core's limits (re-exported by ``telha_jobs.limits``, documented there).
MAX_KIND_LEN: int
MAX_IDEMPOTENCY_KEY_LEN: int
MAX_WORKER_ID_LEN: int
MAX_BATCH: int
MAX_LIST_LIMIT: int
LIST_SCAN_BUDGET: int
MAX_PAYLOAD_BYTES_LIMIT: int
MAX_INSTANT_MS: int
MAX_INSTANT: float
MAX_DURATION: float
PRIORITY_DEFAULT: int
MAX_PROGRESS_BYTES: int
DEFAULT_EVENT_BUFFER: int
MAX_EVENT_BUFFER: int
MAX_SCHEDULE_NAME_LEN: int
MAX_NEXT_TIMES: int
MAX_CATCH_UP_LIMIT: int
DEFAULT_MAX_CATCH_UP: int

_State = Literal["pending", "leased", "completed", "failed", "dead", "cancelled", "waiting"]
_ChildDead = Literal["fail", "cancel_rest", "ignore"]
_ScopeOrder = Literal["pending", "leased", "dead", "name"]
_ExtendAnswer = Literal["renewed", "lost", "cancelled"]
_Encoding = Literal["unknown", "bytes", "value"]
_CatchUp = Literal["skip", "one", "all"]
_KeyType = Literal["duration", "retention", "count", "factor", "fraction", "flag"]
_Seconds = float | int | datetime.timedelta
# A retention: seconds or a timedelta, or False / math.inf to keep forever.
_Retention = float | int | datetime.timedelta | Literal[False]
_Instant = float | int | datetime.datetime
_ScopeArg = str | uuid.UUID
_IdArg = str | uuid.UUID
# What ``wait`` takes: a leased Job, a JobInfo, or an id.
_JobArg = Job | JobInfo | str | uuid.UUID
# An enqueue_many item (and a follow-up of complete's ``then``).
_Item = tuple[str, Any] | Mapping[str, Any]
_Transition = Literal[
    "enqueued", "leased", "extended", "completed", "failed", "dead", "lease_expired", "released",
    "retried", "pruned", "purged", "cancelled", "cancel_requested", "deleted", "snoozed",
    "expired", "progress", "promoted", "rescheduled", "reprioritized", "debounced",
    "child_settled", "children_done",
]

class _BackupInfo(TypedDict):
    """What :meth:`Queue.backup` answers."""

    path: str
    """Where the backup is (canonical; the server's path when connected)."""
    bytes: int
    """The size of its files (hard-linked ones count in full)."""
    files: int
    took: float
    """Seconds."""
    sequence: int
    """RocksDB's latest sequence number in the backup: the point it holds."""

class _KindSettings(TypedDict, total=False):
    """The per-kind keys of ``config_keys()`` (``kinds={kind: {...}}``).
    Kept equal to the table by the test suite."""

    lease_ttl: _Seconds
    max_attempts: int
    backoff_base: _Seconds
    backoff_factor: float
    backoff_cap: _Seconds
    backoff_jitter: float
    timeout: _Retention
    max_lease_total: _Retention
    max_snoozes: int

@final
class ConfigKey:
    """One settable key of the core's table: ``Queue(...)`` takes it as a
    keyword of the same ``name`` (and per kind when ``per_kind``)."""

    @property
    def name(self) -> str: ...
    @property
    def type(self) -> _KeyType:
        """duration: seconds or a timedelta; retention: also False /
        math.inf (forever); count: int; factor: float; fraction: float from 0 to 1; flag: bool."""
    @property
    def unit(self) -> str: ...
    @property
    def default(self) -> str:
        """The default in the config file's syntax (``"300s"``, ``"5"``)."""
    @property
    def per_kind(self) -> bool: ...
    @property
    def doc(self) -> str: ...
    @property
    def toml(self) -> str:
        """Its path under ``[jobs]`` in the TOML file."""
    @property
    def env(self) -> str | None:
        """The ``TELHA_JOBS_*`` variable that overrides it."""
    @property
    def min(self) -> float | int | None:
        """The smallest value allowed (seconds for durations)."""
    @property
    def max(self) -> float | int | None:
        """The largest value allowed (seconds for durations)."""

def config_keys() -> list[ConfigKey]:
    """Every key ``Queue(...)`` accepts, from the core's table."""

def connect(
    url: str | Sequence[str],
    token: str | None = None,
    *,
    timeout: _Seconds | None = None,
    ca_cert: str | os.PathLike[str] | None = None,
    auto_idempotency_key: bool = True,
) -> Queue:
    """A :class:`Queue` over a ``telha serve`` server at ``url``
    (``http://host:port``, ``https://`` for TLS; ``ca_cert``: a PEM CA to
    trust), or over the first of several that answers (a list of URLs, or
    one comma-separated string): a call whose server fails moves to the
    next, and a call whose reply was lost is repeated where that is safe
    (settles, leases, reads; enqueues with an idempotency key, which
    ``auto_idempotency_key`` adds with two or more servers). A bad list
    (an empty item, a bad scheme, a repeat, more than 64) raises
    :class:`InvalidArgumentError` naming the item. ``token`` defaults to
    ``$TELHA_TOKEN``. ``timeout`` is the deadline of connecting and of each
    call, retries included (a waiting call gets its wait on top): past it
    the call raises the transport's error ("timed out after ...").
    Default: 10 s to connect, 60 s per call."""

def _call_cost(payload: Any = None, detach: bool = False) -> int:
    """Benchmark only: a call with no store work (payload conversion, GIL hand-off)."""
def _panic_for_tests(stage: Literal["core", "call"], message: str) -> None:
    """For the test suite: a panic inside a core call (``"core"``) or in the
    binding's code around it (``"call"``), through the same boundaries as
    every other call (it raises StorageError)."""

def _complete_then_lease(
    queue: Queue,
    jobs: Sequence[Job],
    results: Sequence[Any] | None,
    then: Sequence[Any] | None,
    worker_id: str,
    max: int,
    *,
    kinds: str | Sequence[str] | None = None,
    scope: _ScopeArg | Sequence[_ScopeArg] | None = None,
) -> tuple[list[object] | BaseException, list[Job] | BaseException]:
    """AsyncWorker only: ``complete_many(jobs, results, then=then)``, then
    ``lease_many(worker_id, max, kinds=kinds, scope=scope)`` with no wait,
    the GIL released once around both; each part's answer, or the exception
    it raised (both parts run whatever the other answered)."""
def _encode_progress(value: Any) -> bytes:
    """A progress report as a heartbeat carries it (bytes as they are, a
    value by the payload convention); InvalidArgumentError over
    ``limits.MAX_PROGRESS_BYTES``."""
def _notify_shutdown() -> None:
    """Registered with atexit: the notifier thread stops taking the GIL."""

def default_store_path() -> str:
    """``$TELHA_DB`` when set, else ``./telha-data``."""

def encode_payload(value: Any) -> bytes:
    """Encode by the cross-language payload convention (0x01 + msgpack)."""

def decode_payload(data: bytes) -> Any:
    """The value when ``data`` follows the convention, else ``data``
    (how a row that recorded no encoding is read)."""

def schedule_next_times(
    spec: str,
    *,
    timezone: str | None = None,
    anchor: _Instant | None = None,
    after: _Instant | None = None,
    n: int = 5,
) -> list[float]:
    """The next ``n`` (0 to 1,000) fire times of ``spec`` strictly after
    ``after`` (default now), in seconds since the epoch; fewer when the spec
    stops firing. No store. InvalidArgumentError for a bad spec, an unknown
    ``timezone``, a zone on an interval or ``n`` over 1,000."""

@final
class ScheduleRef:
    """Which schedule enqueued a job, for which slot (``Job.schedule``,
    ``JobInfo.schedule``)."""

    @property
    def name(self) -> str: ...
    @property
    def slot(self) -> float:
        """The slot, seconds since the epoch."""
    @property
    def missed(self) -> int:
        """How many earlier missed slots this job stands for (catch-up "one")."""

@final
class RunReport:
    """What one scheduler pass did (``Queue.run_schedules``)."""

    @property
    def schedules(self) -> int:
        """Schedules that had due slots."""
    @property
    def enqueued(self) -> int:
        """Jobs enqueued."""
    @property
    def skipped(self) -> int:
        """Slots skipped by catch-up."""
    @property
    def failed(self) -> int:
        """Slots whose job could not be enqueued (see ``ScheduleInfo.last_error``)."""

@final
class ScheduleInfo:
    """A schedule as the store holds it: what was put, and what it has
    done. Instants are float seconds since the epoch."""

    @property
    def name(self) -> str: ...
    @property
    def spec(self) -> str: ...
    @property
    def timezone(self) -> str | None:
        """The IANA zone a cron spec is read in; None is UTC."""
    @property
    def anchor(self) -> float | None:
        """An interval's grid origin; None is the epoch."""
    @property
    def kind(self) -> str: ...
    @property
    def payload(self) -> Any:
        """Each job's payload as given (as ``JobInfo.payload``)."""
    @property
    def raw_payload(self) -> bytes: ...
    @property
    def payload_encoding(self) -> _Encoding: ...
    @property
    def scope(self) -> str | None:
        """Each job's scope; None is the system scope."""
    @property
    def priority(self) -> int | None: ...
    @property
    def max_attempts(self) -> int | None: ...
    @property
    def expires_in(self) -> float | None:
        """Each job expires this many seconds after its slot if not started."""
    @property
    def catch_up(self) -> _CatchUp: ...
    @property
    def max_catch_up(self) -> int | None:
        """The most jobs "all" enqueues for missed slots; None is 100."""
    @property
    def paused(self) -> bool: ...
    @property
    def tags(self) -> list[str]:
        """Each job's tags (duplicates removed)."""
    @property
    def metadata(self) -> dict[str, str]:
        """Each job's metadata."""
    @property
    def created_at(self) -> float: ...
    @property
    def updated_at(self) -> float: ...
    @property
    def cursor(self) -> float:
        """Every slot at or before this instant has been dealt with."""
    @property
    def last_slot(self) -> float | None:
        """The latest slot a job was enqueued for."""
    @property
    def last_job(self) -> str | None:
        """That job's id."""
    @property
    def last_fired_at(self) -> float | None:
        """When that job was enqueued."""
    @property
    def next_slot(self) -> float | None:
        """The next slot it will enqueue; None: never again, or paused."""
    @property
    def enqueued(self) -> int: ...
    @property
    def skipped(self) -> int:
        """Slots that got no job of their own (catch-up)."""
    @property
    def last_error(self) -> str | None:
        """Why the latest slot could not be enqueued, if it could not."""

@final
class CancelWait:
    """Ends the wait of the lease calls it is passed to, from any thread."""

    def __new__(cls) -> CancelWait: ...
    def cancel(self) -> None: ...
    @property
    def cancelled(self) -> bool: ...

@final
class Job:
    """A leased job. Pass it to complete / fail / release / extend."""

    @property
    def id(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def scope(self) -> str: ...
    @property
    def payload(self) -> Any:
        """As given: bytes for bytes, the value for a value."""
    @property
    def raw_payload(self) -> bytes: ...
    @property
    def payload_encoding(self) -> _Encoding: ...
    @property
    def attempts(self) -> int: ...
    @property
    def max_attempts(self) -> int: ...
    @property
    def generation(self) -> int: ...
    @property
    def deadline(self) -> float:
        """By the granting store's clock (a server's, over ``connect``)."""
    @property
    def lease_ttl(self) -> float:
        """The TTL the lease was granted with, in seconds: schedule
        heartbeats from this, not from the deadline."""
    @property
    def timeout(self) -> float | None:
        """The kind's run-time limit in seconds (its ``timeout`` setting), or None."""
    @property
    def priority(self) -> int: ...
    @property
    def worker_id(self) -> str: ...
    @property
    def schedule(self) -> ScheduleRef | None:
        """The schedule and slot that enqueued it, or None."""
    @property
    def parent(self) -> str | None:
        """The id of the job whose completion enqueued it (``then=``), or None."""
    @property
    def tags(self) -> list[str]:
        """Its tags, as enqueued (duplicates removed)."""
    @property
    def metadata(self) -> dict[str, str]:
        """Its metadata, as enqueued."""
    @property
    def key(self) -> str | None:
        """Its job key (flow control by key), as enqueued, or None."""
    @property
    def token(self) -> str: ...

@final
class JobInfo:
    """Everything known about a job (``get``, ``list``)."""

    @property
    def id(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def scope(self) -> str: ...
    @property
    def state(self) -> _State: ...
    @property
    def payload(self) -> Any: ...
    @property
    def raw_payload(self) -> bytes: ...
    @property
    def payload_encoding(self) -> _Encoding: ...
    @property
    def result(self) -> Any: ...
    @property
    def raw_result(self) -> bytes | None: ...
    @property
    def result_encoding(self) -> _Encoding: ...
    @property
    def cursor(self) -> str:
        """Pass as ``list(after=...)`` to list the jobs after this one."""
    @property
    def attempts(self) -> int: ...
    @property
    def max_attempts(self) -> int: ...
    @property
    def generation(self) -> int: ...
    @property
    def deadline(self) -> float | None: ...
    @property
    def priority(self) -> int: ...
    @property
    def worker_id(self) -> str | None: ...
    @property
    def last_error(self) -> str | None: ...
    @property
    def idempotency_key(self) -> str | None: ...
    @property
    def created_at(self) -> float: ...
    @property
    def state_at(self) -> float: ...
    @property
    def events(self) -> list[tuple[float, str, str]]: ...
    @property
    def dropped_events(self) -> int: ...
    @property
    def cancel_requested(self) -> str | None:
        """The reason of a cancel requested while leased, else None."""
    @property
    def snoozes(self) -> int: ...
    @property
    def expires_at(self) -> float | None:
        """When it expires if not started (seconds since the epoch), or None."""
    @property
    def paused(self) -> bool:
        """Whether its kind (or family) or its scope is paused."""
    @property
    def progress(self) -> Any:
        """The latest progress report of its current or last lease
        (decoded by the payload convention), or None."""
    @property
    def raw_progress(self) -> bytes | None: ...
    @property
    def schedule(self) -> ScheduleRef | None:
        """The schedule and slot that enqueued it, or None."""
    @property
    def parent(self) -> str | None:
        """The id of the job whose completion enqueued it (``then=``), or None."""
    @property
    def tags(self) -> list[str]:
        """Its tags, as enqueued (duplicates removed)."""
    @property
    def metadata(self) -> dict[str, str]:
        """Its metadata, as enqueued."""
    @property
    def key(self) -> str | None:
        """Its job key (flow control by key), as enqueued, or None."""
    @property
    def fan_in(self) -> FanIn | None:
        """A fan-in parent's children (``after=``, ``enqueue_group``), else None."""

@final
class Event:
    """One committed transition, as a subscription delivers it."""

    @property
    def seq(self) -> int:
        """This subscription's count (1, 2, 3 … in commit order, delivered
        or missed): it rises by exactly 1 + ``missed``."""
    @property
    def ts(self) -> int:
        """Commit time, ms since the epoch (the owner's clock)."""
    @property
    def time(self) -> float:
        """``ts`` in seconds since the epoch."""
    @property
    def job_id(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def scope(self) -> str: ...
    @property
    def transition(self) -> _Transition: ...
    @property
    def attempt(self) -> int:
        """A lease's transition: that lease's attempt (from 1); else the failed attempts so far."""
    @property
    def worker_id(self) -> str | None: ...
    @property
    def progress(self) -> Any:
        """A ``progress`` event's report (decoded), else None."""
    @property
    def raw_progress(self) -> bytes | None: ...
    @property
    def missed(self) -> int:
        """Events dropped just before this one (the buffer was full)."""

@final
class Subscription:
    """A live stream of committed transitions (``Queue.subscribe``): a
    blocking iterator (Ctrl-C ends a wait); ends once closed or the queue
    closes."""

    def next(self, timeout: _Seconds | None = None) -> Event | None:
        """The next event within ``timeout`` (None: no limit), or None;
        QueueClosedError once it has ended and its buffer is drained."""
    def try_next(self) -> Event | None:
        """The next buffered event without waiting, or None."""
    def __iter__(self) -> Subscription: ...
    def __next__(self) -> Event: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def buffered(self) -> int: ...
    def _set_notify(self, callback: Callable[[], object]) -> None:
        """For asyncio: ``callback()`` on the notifier thread when events arrive or it ends."""
    def __enter__(self) -> Subscription: ...
    def __exit__(self, *_exc: object) -> bool: ...

@final
class JobWaiter:
    """A watch of one job for asyncio (``Queue._watch``)."""

    @property
    def job_id(self) -> str: ...
    @property
    def done(self) -> bool: ...
    def on_done(self, callback: Callable[[], object]) -> None:
        """``callback()`` on the notifier thread once the job is terminal."""
    def job(self) -> JobInfo:
        """The job now (NotFoundError when gone, QueueClosedError when closed)."""
    def close(self) -> None: ...


@final
class Queue:
    """A durable job queue: a local store directory, or a client of a
    ``telha serve`` server (:func:`telha_jobs.connect`)."""

    def __new__(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        config_file: str | os.PathLike[str] | None = None,
        kinds: Mapping[str, _KindSettings] | None = None,
        # One keyword per key of config_keys(), by name and type (the test
        # suite keeps this list equal to the core's table).
        lease_ttl: _Seconds | None = None,
        reaper_interval: _Seconds | None = None,
        max_attempts: int | None = None,
        backoff_base: _Seconds | None = None,
        backoff_factor: float | None = None,
        backoff_cap: _Seconds | None = None,
        backoff_jitter: float | None = None,
        completed_retention: _Retention | None = None,
        sync_writes: bool | None = None,
        max_payload_bytes: int | None = None,
        prune_batch: int | None = None,
        dead_retention: _Retention | None = None,
        cancelled_retention: _Retention | None = None,
        timeout: _Retention | None = None,
        max_lease_total: _Retention | None = None,
        max_snoozes: int | None = None,
    ) -> Queue:
        """Open (or create) an embedded store; an unknown setting is
        InvalidArgumentError listing the valid ones."""
    def settings(self) -> dict[str, Any]:
        """The settings in force by key name, and ``"kinds"``; valid input
        for ``Queue(path, **settings)``. Embedded queues only."""
    @property
    def path(self) -> str | None:
        """The store directory; None for a remote queue."""
    @property
    def location(self) -> str:
        """The store directory, or the server URL of a remote queue."""
    @property
    def remote(self) -> bool:
        """Whether this queue is a client of a server."""
    @property
    def closed(self) -> bool: ...
    def close(self) -> None: ...
    def __enter__(self) -> Queue: ...
    def __exit__(self, *_exc: object) -> bool: ...
    def enqueue(
        self,
        kind: str,
        payload: Any = None,
        *,
        scope: _ScopeArg | None = None,
        priority: int = 128,
        delay: _Seconds | None = None,
        run_at: _Instant | None = None,
        idempotency_key: str | None = None,
        max_attempts: int | None = None,
        expires_in: _Seconds | None = None,
        expires_at: _Instant | None = None,
        backoff_base: _Seconds | None = None,
        unique_for: _Seconds | None = None,
        unique_states: Literal["any", "active"] | None = None,
        tags: Sequence[str] | None = None,
        metadata: Mapping[str, str] | None = None,
        debounce: _Seconds | None = None,
        debounce_max: _Seconds | None = None,
        after: Iterable[_IdArg] | None = None,
        on_child_dead: _ChildDead | None = None,
        key: str | None = None,
    ) -> Enqueued:
        """The job id (``.created`` False on an idempotency hit). An unknown
        option is InvalidArgumentError listing the valid ones."""
    def enqueue_many(self, items: Iterable[_Item]) -> list[Enqueued]: ...
    def enqueue_group(
        self, children: Iterable[_Item], parent: _Item
    ) -> tuple[list[Enqueued], Enqueued]:
        """The children and their parent (waiting until every child
        finished) in one atomic batch: ``(children_ids, parent_id)``."""
    def results_of_children(
        self, parent: _JobArg, cursor: str | None = None, limit: int = 100
    ) -> ChildPage:
        """A page of ``parent``'s children in enqueue order, with their
        states, results and last errors; ``.next`` the next page's cursor."""
    def lease_next(
        self,
        worker_id: str,
        *,
        kinds: str | Sequence[str] | None = None,
        scope: _ScopeArg | Sequence[_ScopeArg] | None = None,
        wait: _Seconds = 0.0,
        cancel: CancelWait | None = None,
    ) -> Job | None:
        """``wait=math.inf`` waits until a job comes, ``cancel`` or ``close``."""
    def lease_many(
        self,
        worker_id: str,
        max: int,
        *,
        kinds: str | Sequence[str] | None = None,
        scope: _ScopeArg | Sequence[_ScopeArg] | None = None,
        wait: _Seconds = 0.0,
        cancel: CancelWait | None = None,
    ) -> list[Job]:
        """``max``: 1 to ``limits.MAX_BATCH`` (10,000)."""
    def _poll_jobs(
        self,
        worker_id: str,
        capacity: int,
        *,
        kinds: str | Sequence[str] | None = None,
        scope: _ScopeArg | Sequence[_ScopeArg] | None = None,
        floor: int | None = None,
    ) -> JobStream:
        """Remote queues only: leases pushed as they become ready, never
        more than ``capacity`` unsettled at once; with ``floor`` (1 to
        ``capacity``) the server keeps about 100 ms of the handlers' work
        unsettled, at least ``floor``."""
    def extend(
        self, jobs: Iterable[Job | str], worker_id: str, progress: Sequence[Any] | None = None
    ) -> list[bool]:
        """``progress``: one report per job (None: none for that job), each
        encoded like a payload, at most ``limits.MAX_PROGRESS_BYTES``."""
    def extend_answers(
        self, jobs: Iterable[Job | str], worker_id: str, progress: Sequence[Any] | None = None
    ) -> list[_ExtendAnswer]:
        """One answer per job: "renewed", "lost" or "cancelled"."""
    def wait(self, job: _JobArg, timeout: _Seconds | None = None) -> JobInfo:
        """The job once terminal (at once if it is), else as it is when
        ``timeout`` ran out (None: no limit). Ctrl-C ends it; NotFoundError
        for no such job."""
    def enqueue_and_wait(
        self,
        kind: str,
        payload: Any = None,
        timeout: _Seconds | None = None,
        *,
        scope: _ScopeArg | None = None,
        priority: int = 128,
        delay: _Seconds | None = None,
        run_at: _Instant | None = None,
        idempotency_key: str | None = None,
        max_attempts: int | None = None,
        expires_in: _Seconds | None = None,
        expires_at: _Instant | None = None,
        backoff_base: _Seconds | None = None,
        unique_for: _Seconds | None = None,
        unique_states: Literal["any", "active"] | None = None,
        tags: Sequence[str] | None = None,
        metadata: Mapping[str, str] | None = None,
        debounce: _Seconds | None = None,
        debounce_max: _Seconds | None = None,
        after: Iterable[_IdArg] | None = None,
        on_child_dead: _ChildDead | None = None,
        key: str | None = None,
    ) -> JobInfo:
        """``enqueue`` (the same options), then ``wait``."""
    def _watch(self, job: _JobArg) -> JobWaiter: ...
    def subscribe(
        self,
        kinds: str | Sequence[str] | None = None,
        scopes: _ScopeArg | Sequence[_ScopeArg] | None = None,
        transitions: _Transition | Sequence[_Transition] | None = None,
        buffer: int | None = None,
    ) -> Subscription:
        """The transitions committed from now on, in commit order; ``buffer``
        (default 10,000, at most 1,000,000) events held for a slow reader,
        the rest counted in ``Event.missed``."""
    def complete(
        self, job: Job | str, result: Any = None, *, then: Iterable[_Item] | None = None
    ) -> None:
        """``then``: follow-up jobs (``enqueue_many`` items) enqueued in the
        completion's atomic batch, each with ``parent`` this job. Repeated
        with the same lease after it took effect (a retry), it answers as
        the first call did and changes nothing (as do fail, release and
        snooze)."""
    def complete_many(
        self,
        jobs: Iterable[Job | str],
        results: Iterable[Any] | None = None,
        *,
        then: Iterable[Iterable[_Item] | None] | None = None,
    ) -> list[TelhaError | None]:
        """Complete a batch in one call and one atomic write; per job None
        (completed) or the exception saying why not (``LeaseLostError``, ...);
        a lease completed before, in this call or an earlier one, answers
        as its completion did. ``then``: one list of follow-ups (or None)
        per job."""
    def fail(
        self,
        job: Job | str,
        reason: str,
        *,
        retryable: bool = True,
        retry_in: _Seconds | None = None,
    ) -> None: ...
    def fail_many(
        self,
        jobs: Iterable[Job | str],
        reasons: str | Sequence[str],
        *,
        retryable: bool | Sequence[bool] | None = None,
        retry_in: _Seconds | Sequence[_Seconds | None] | None = None,
    ) -> list[TelhaError | None]:
        """Fail a batch in one call and one atomic write, each as ``fail``
        would (``reasons``, ``retryable``, ``retry_in``: one for every job or
        a list of one per job); per job None (failed) or the exception saying
        why not (``LeaseLostError``, ``InvalidArgumentError`` for a
        ``retry_in`` over 100 years, ``CancelledError``, ...)."""
    def release(self, job: Job | str) -> None: ...
    def release_many(self, jobs: Iterable[Job | str]) -> list[TelhaError | None]:
        """Release a batch in one call and one atomic write (pending again,
        no attempt spent); per job None or the exception saying why not."""
    def snooze(self, job: Job | str, delay: _Seconds) -> None:
        """Pending again after ``delay``, no attempt spent."""
    def cancel(self, job_id: _IdArg, reason: str = "") -> Literal["cancelled", "requested"]:
        """"cancelled" (at once) or "requested" (leased: its holder is told)."""
    def cancel_many(
        self,
        *,
        kind: str | None = None,
        scope: _ScopeArg | None = None,
        state: Literal["pending", "failed", "leased", "waiting"] | None = None,
        reason: str = "",
        tag: str | None = None,
    ) -> dict[str, int]:
        """``{"cancelled": n, "requested": n, "corrupt": n}``; ``tag``: only
        jobs carrying it, walked through the tag index."""
    def delete(self, job_id: _IdArg) -> None:
        """WrongStateError for a leased job (cancel it first)."""
    def promote(self, job_id: _IdArg) -> None:
        """A delayed or retry-waiting job ready now (state kept); WrongStateError when leased or finished."""
    def reschedule(self, job_id: _IdArg, run_at: _Instant) -> None:
        """A pending or failed job's new run time; in the future a ready job becomes delayed."""
    def set_priority(self, job_id: _IdArg, priority: int) -> None:
        """A pending or failed job's new priority, 0 (most urgent) to 255."""
    def pause(
        self, target: str | None = None, *, kind: str | None = None, scope: _ScopeArg | None = None
    ) -> bool:
        """Pause leasing of a kind, family or scope; whether it changed."""
    def resume(
        self, target: str | None = None, *, kind: str | None = None, scope: _ScopeArg | None = None
    ) -> bool:
        """Undo ``pause``; whether it changed."""
    def paused(self) -> dict[str, list[str]]:
        """``{"kinds": [...], "scopes": [...]}``, sorted."""
    def retry(self, job_id: _IdArg) -> None: ...
    def get(self, job_id: _IdArg) -> JobInfo | None: ...
    def list(
        self,
        *,
        state: _State | None = None,
        scope: _ScopeArg | None = None,
        kind: str | None = None,
        limit: int = 100,
        after: JobInfo | _IdArg | None = None,
        schedule: str | None = None,
        parent: _JobArg | None = None,
        tag: str | None = None,
    ) -> JobList:
        """Up to ``limit`` jobs, 1 to ``limits.MAX_LIST_LIMIT`` (10,000);
        ``.next`` is the cursor for ``after`` (None at the end), ``.corrupt``
        the rows skipped. ``after``: a JobInfo, a cursor or a job id;
        ``schedule``: only the jobs that schedule enqueued; ``parent``: only
        the follow-ups that job's completion enqueued; ``tag``: only the
        jobs carrying it (the tag index: by scope, state, enqueue order)."""
    def count_tag(self, tag: str, *, scope: _ScopeArg | None = None) -> dict[str, int]:
        """How many jobs carry ``tag``, per state (read from the tag index)."""
    def find(
        self, text: str, *, scope: _ScopeArg | None = None, limit: int = 50
    ) -> FindResult:
        """The job whose id ``text`` is, the job holding it as its
        idempotency key (in ``scope``, else the system scope) and the first
        ``limit`` jobs carrying it as a tag, each matched exactly from its
        own index (never a scan). ``InvalidArgumentError`` for an empty
        text, one over 512 bytes or with a control character."""
    def backup(self, dir: str | os.PathLike[str]) -> _BackupInfo:
        """Write a consistent copy of the live store to ``dir`` (must not
        exist, or be empty) that opens as a store; on a connected queue,
        ``dir`` is on the server's filesystem."""
    def reap(self) -> dict[str, int]: ...
    def serve(
        self,
        listen: str = "127.0.0.1:7450",
        *,
        token: str | None = None,
        tls_cert: str | os.PathLike[str] | None = None,
        tls_key: str | os.PathLike[str] | None = None,
        metrics_listen: str | None = None,
        ui: bool = False,
        ui_read_only: bool = False,
    ) -> Server:
        """Serve this embedded queue to other processes (gRPC) from this one.
        ``ui=True`` also serves the operator web page (on ``metrics_listen``,
        default ``127.0.0.1:7451``; see ``Server.ui_url``)."""
    def purge(self, state: _State, before: _Instant) -> int: ...
    def stats(
        self,
        *,
        scope_order: _ScopeOrder = "pending",
        scope_limit: int = 100,
        scopes_after: str | None = None,
        scope_prefix: str | None = None,
        oldest_ready: bool = False,
    ) -> dict[str, Any]:
        """Whole totals and per-kind counts; ``by_scope`` is one page (default:
        the 100 scopes with the most pending jobs), ``scopes_next`` the next
        page's cursor (None on the last page). ``oldest_ready=True`` fills
        ``oldest_ready_ms`` ({kind: ms} for kinds with a due job: how long
        the oldest has been ready; exact, read from the band heads, but
        O(scopes with ready work), so off by default)."""
    def metrics(self) -> str: ...
    def schedule_put(
        self,
        name: str,
        spec: str,
        *,
        kind: str,
        payload: Any = None,
        timezone: str | None = None,
        anchor: _Instant | None = None,
        scope: _ScopeArg | None = None,
        priority: int | None = None,
        max_attempts: int | None = None,
        expires_in: _Seconds | None = None,
        catch_up: _CatchUp = "one",
        max_catch_up: int | None = None,
        paused: bool = False,
        tags: Sequence[str] | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> ScheduleInfo:
        """Create or replace the schedule ``name``: a ``kind`` job (payload
        as ``enqueue`` takes it) for every slot of ``spec`` (``"0 3 * * *"``,
        6 fields with seconds first, ``"@daily"``, ``"every 5m"``), exactly
        one per slot. Every bad input is InvalidArgumentError, here."""
    def schedule_get(self, name: str) -> ScheduleInfo:
        """NotFoundError when there is no such schedule."""
    def schedule_list(self) -> builtins.list[ScheduleInfo]:
        """Every schedule, by name."""
    def schedule_delete(self, name: str) -> None:
        """Delete the schedule (its jobs stay); NotFoundError."""
    def schedule_pause(self, name: str) -> ScheduleInfo:
        """It enqueues nothing until resumed; NotFoundError."""
    def schedule_resume(self, name: str) -> ScheduleInfo:
        """Slots that passed while paused are not caught up; NotFoundError."""
    def run_schedules(self) -> RunReport:
        """One scheduler pass now (how slots fire with ``reaper_interval=0``)."""
    def set_limit(
        self,
        target: str,
        *,
        concurrency: int | None = None,
        rate: float | None = None,
        burst: int | None = None,
        weight: int | None = None,
        ordered: bool = False,
    ) -> None:
        """Set (or replace) the limit on ``target`` (``"kind:embed"``,
        ``"kind:ingest:*"``, ``"scope:<uuid>"``, ``"scope:*"``,
        ``"scope:<uuid or *>/kind:<pattern>"``, ``"key:<key>"``,
        ``"key:*"``), durably. ``ordered`` (a key target with concurrency 1
        only): a key's jobs lease one at a time in enqueue order. Bad input
        is InvalidArgumentError (a wrong type TypeError)."""
    def remove_limit(self, target: str) -> bool:
        """Whether there was a limit on ``target``."""
    def limits(self) -> builtins.list[LimitInfo]:
        """Every limit with its use now, sorted by target."""

@final
class JobStream:
    """A remote queue's PollJobs stream (``Queue._poll_jobs``): the feed of
    a Worker that leases ahead."""

    def next_batch(self, timeout: _Seconds) -> list[Job] | None:
        """Leases pushed since the last call, waiting up to ``timeout`` (at
        most 0.2 s); [] when none came, None once the stream ended."""
    def close(self) -> list[Job]:
        """End the stream gracefully (idempotent): the server stops leasing
        for it and ends it; the leases that arrived meanwhile are answered,
        held by the caller: settle or release them."""
    @property
    def closed(self) -> bool: ...

@final
class Server:
    """A server started by :meth:`Queue.serve`; stop it with :meth:`stop`
    or a ``with`` block."""

    @property
    def address(self) -> str:
        """``host:port`` it listens on."""
    @property
    def url(self) -> str:
        """The URL for :func:`connect`."""
    @property
    def metrics_address(self) -> str | None:
        """``host:port`` of the ``/metrics`` endpoint, if one was asked for."""
    @property
    def ui_url(self) -> str | None:
        """The operator web page's URL when served with ``ui=True``."""
    @property
    def running(self) -> bool: ...
    def stop(self, grace: _Seconds = 5.0) -> None:
        """Stop serving; calls in flight get ``grace`` seconds to finish."""
    def __enter__(self) -> Server: ...
    def __exit__(self, *_exc: object) -> bool: ...
