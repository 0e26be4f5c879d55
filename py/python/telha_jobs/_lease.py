"""What a handler can ask about the lease it runs under (threads and asyncio)."""

from __future__ import annotations

import contextvars
import datetime
import math
import threading
import time
from typing import TYPE_CHECKING, Any

from ._errors import CancelledError, InvalidArgumentError, LeaseLostError
from ._native import _encode_progress

if TYPE_CHECKING:
    from ._native import Job

__all__ = ["Lease", "Permanent", "PermanentError", "Retry", "Snooze", "current_lease"]


class PermanentError(Exception):
    """Raise from a handler to fail the job for good: dead now, no retry.

    ``Permanent`` is a deprecated alias of this class (removed in the next
    release)."""


# Deprecated alias, kept for one release: the same class object.
Permanent = PermanentError


def _delay(value: object, what: str) -> float:
    """Seconds (int, float) or a timedelta, finite and >= 0."""
    if isinstance(value, datetime.timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a number of seconds or a timedelta, got {type(value).__name__}")
    try:
        s = float(value)
    except OverflowError:
        s = math.inf
    if not (math.isfinite(s) and s >= 0.0):
        raise InvalidArgumentError(f"{what} must be a finite number of seconds >= 0, got {value!r}")
    return s


class Snooze(Exception):
    """Raise from a handler to snooze its job: pending again ``seconds``
    (or a timedelta) from now, no attempt spent (``JobInfo.snoozes`` counts
    it; past the kind's ``max_snoozes`` it counts as a failed attempt)."""

    def __init__(self, seconds: float | datetime.timedelta) -> None:
        self.seconds = _delay(seconds, "Snooze seconds")
        super().__init__(f"snoozed for {self.seconds:g}s")


class Retry(Exception):
    """Raise from a handler to fail its job retryably, retried ``after``
    seconds (or a timedelta) from now instead of after the backoff (still
    an attempt spent). ``error``: the reason, an exception or a text."""

    def __init__(self, error: BaseException | str | None = None, *,
                 after: float | datetime.timedelta) -> None:
        self.after = _delay(after, "Retry after")
        self.error = error
        super().__init__(str(error) if error is not None else f"retry in {self.after:g}s")

    @property
    def reason(self) -> str:
        """The failure reason recorded on the job."""
        e = self.error
        if isinstance(e, BaseException):
            text = str(e)
            return f"{type(e).__name__}: {text}" if text else type(e).__name__
        return e if e is not None else f"Retry: retry in {self.after:g}s"


class Lease:
    """A job a worker holds, as its handler sees it through
    :func:`current_lease`. The worker heartbeats it; when a heartbeat finds
    the lease lost (the job was reaped and may run elsewhere), cancelled (a
    cancel was requested: :attr:`cancelled`), past the kind's ``timeout``
    (:attr:`timed_out`), or the worker released it while stopping,
    :attr:`lost` turns True: the handler should stop, since its result
    would be refused (``LeaseLostError``, ``CancelledError``).

    :meth:`progress` reports how far along the handler is: the latest
    report rides on the worker's next heartbeat (no write of its own)."""

    __slots__ = (
        "job", "key", "ttl", "next_beat", "expires", "timeout_at", "_lost", "_why", "_event", "_progress",
        "_then", "_unstorable",
    )

    _events_lock = threading.Lock()

    def __init__(self, job: Job, since: float | None = None) -> None:
        self.job = job
        # What a worker keys this running delivery by: the job id and lease
        # generation. A lease that expired under its handler can come back
        # to the same worker as the next generation while the old handler
        # still runs or settles; keyed by id alone, the old delivery's settle
        # would remove the new one's lease (no more heartbeats, its result
        # dropped). Made once: the id getter formats the UUID on every call.
        self.key = (job.id, job.generation)
        now = time.time()
        # When the lease reached this process (`since`: earlier, for a lease
        # that waited in a remote Worker's prefetch).
        got = now if since is None else since
        # The TTL the lease was granted with. Never `deadline - now`: over
        # `connect()` the deadline is on the server's clock, and a server
        # clock ahead of ours would space heartbeats past the real expiry
        # (one behind would send them in a tight loop).
        self.ttl = max(job.lease_ttl, 0.001)
        self.next_beat = got + self.ttl / 3
        # When the lease runs out, by this process's clock, unless a
        # heartbeat renews it: if no heartbeat gets through by then (a remote
        # queue's network is down), the lease is lost as surely as if the
        # queue had said so. (Counted from when the lease reached us: a
        # little after the grant, by the call's latency.)
        self.expires = got + self.ttl
        # The kind's run-time limit, by this process's clock (inf: none).
        t = job.timeout
        self.timeout_at = now + t if t is not None else math.inf
        self._lost = False
        self._why = ""  # "cancelled", "timeout" or "" (lost)
        # Created only when someone waits: most handlers never do, and an
        # Event per job is a measurable cost at thousands of jobs a second.
        self._event: threading.Event | None = None
        # The latest progress report not yet sent, encoded.
        self._progress: bytes | None = None
        # Follow-up jobs for the completion (``follow_up``), or None.
        self._then: list[Any] | None = None
        # The error of the latest progress value that could not be encoded:
        # a handler that lets it propagate fails its job for good.
        self._unstorable: Exception | None = None

    @property
    def lost(self) -> bool:
        """True once the lease is known lost (or released by a stopping worker)."""
        return self._lost

    @property
    def cancelled(self) -> bool:
        """True once a heartbeat found a cancel requested for this job."""
        return self._lost and self._why == "cancelled"

    @property
    def timed_out(self) -> bool:
        """True once the handler ran past the kind's ``timeout`` (the worker
        failed the job, retryably)."""
        return self._lost and self._why == "timeout"

    def check(self) -> None:
        """Raise if the lease is lost: :class:`CancelledError` (a subclass of
        :class:`LeaseLostError`) when the job was cancelled, else
        :class:`LeaseLostError`; a long handler calls this between steps."""
        if self._lost:
            jid = self.job.id
            if self._why == "cancelled":
                raise CancelledError(f"job {jid} was cancelled: stop working on it")
            if self._why == "timeout":
                raise LeaseLostError(f"lease lost: job {jid} ran past its kind's timeout")
            raise LeaseLostError(f"lease lost: job {jid} is no longer held by this worker")

    def wait_lost(self, timeout: float | None = None) -> bool:
        """Block up to ``timeout`` seconds until the lease is lost; returns :attr:`lost`."""
        with Lease._events_lock:
            if self._event is None:
                self._event = threading.Event()
                if self._lost:
                    self._event.set()
            ev = self._event
        return ev.wait(timeout)

    def progress(self, value: Any) -> None:
        """Report progress: a small value (a number, a string, a dict; bytes
        are kept as bytes), encoded at once like a payload, so a value over
        ``limits.MAX_PROGRESS_BYTES`` (4096 bytes encoded) raises
        :class:`InvalidArgumentError` here. Only the latest report is kept;
        the worker's next heartbeat carries it (no extra write per report),
        and it then shows in ``JobInfo.progress`` and as a ``progress`` event.
        Empty bytes are no report. A value that cannot be encoded raises
        here (``TypeError``); a handler that lets that error propagate
        fails its job for good, with the error as its reason (the same value
        would be refused on every retry)."""
        try:
            b = _encode_progress(value)
        except Exception as e:
            self._unstorable = e
            raise
        with Lease._events_lock:
            self._progress = b or None

    def follow_up(self, jobs: Any) -> None:
        """Add follow-up jobs (``enqueue_many`` items: ``(kind, payload)``
        tuples or dicts) to this job's completion: when the handler returns,
        they are enqueued in the completion's own atomic write, so they exist
        if and only if the job completed (none when the handler raises, or
        when a cancel turns the completion into a cancel). Each records this
        job as its ``parent``. Calls add up; the items are checked when the
        completion is sent (a bad one fails the job for good, as a result
        that cannot be stored does)."""
        if isinstance(jobs, (str, bytes, dict, tuple)):
            raise TypeError("follow_up takes a list of enqueue_many items, not one item")
        items = list(jobs)
        if items:
            if self._then is None:
                self._then = []
            self._then.extend(items)

    def _take_progress(self) -> bytes | None:
        """The report for the heartbeat being sent (then none is pending)."""
        with Lease._events_lock:
            p, self._progress = self._progress, None
            return p

    def _restore_progress(self, p: bytes | None) -> None:
        """A heartbeat that failed: its report is pending again unless a
        newer one came meanwhile."""
        if p is not None:
            with Lease._events_lock:
                if self._progress is None:
                    self._progress = p

    def _mark_lost(self, why: str = "") -> None:
        with Lease._events_lock:
            if not self._lost:
                self._why = why
            self._lost = True
            if self._event is not None:
                self._event.set()

    def __repr__(self) -> str:
        return f"Lease(job={self.job!r}, lost={self.lost}, cancelled={self.cancelled})"


_current: contextvars.ContextVar[Lease | None] = contextvars.ContextVar(
    "telha_jobs_current_lease", default=None
)


def current_lease() -> Lease | None:
    """The lease of the job the calling handler is running (None outside a
    Worker or AsyncWorker handler)."""
    return _current.get()
