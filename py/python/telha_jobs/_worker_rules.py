"""The rules both Workers (threads and asyncio) share: argument checks,
how a handler's outcome and a settle's error are read, heartbeat
bookkeeping, and their defaults."""

from __future__ import annotations

import datetime
import logging
import os
import socket
import threading
import time
from collections.abc import Sequence
from typing import Any

from ._errors import CancelledError, InvalidArgumentError, LeaseLostError, QueueClosedError, StorageError
from ._lease import Lease, PermanentError, Retry, Snooze
from ._native import MAX_BATCH, Job

log = logging.getLogger("telha_jobs")

_worker_seq = 0
_seq_lock = threading.Lock()


def default_worker_id() -> str:
    """``<host>-<pid>-<n>``: unique per Worker in this process."""
    global _worker_seq
    with _seq_lock:
        _worker_seq += 1
        n = _worker_seq
    return f"{socket.gethostname()}-{os.getpid()}-{n}"


def seconds(value: object, what: str) -> float:
    """A worker's ``poll_wait`` / ``stop_timeout``: an int, a float or a
    ``timedelta``, >= 0 (``math.inf``: no limit); a wrong type is TypeError,
    NaN or a negative InvalidArgumentError."""
    if isinstance(value, datetime.timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a number of seconds, got {type(value).__name__}")
    try:
        s = float(value)
    except OverflowError:  # an int too large for a float: past every limit
        s = float("inf") if value > 0 else float("-inf")
    if not s >= 0.0:  # NaN fails this too
        raise InvalidArgumentError(f"{what} must be a number of seconds >= 0, got {value!r}")
    return s


def join_timeout(seconds: float) -> float:
    """A timeout ``threading`` accepts (it refuses more than TIMEOUT_MAX)."""
    return min(max(seconds, 0.0), threading.TIMEOUT_MAX)


def failure_reason(e: BaseException) -> str:
    try:
        text = str(e)
    except Exception:  # noqa: BLE001 - a broken __str__ must not end a Worker thread
        text = "(its str() raised)"
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


# The reasons a job is failed for good with when what its handler produced
# cannot be stored (the Node Worker's words, so both read the same).
UNSTORABLE = "Permanent: the handler's result or follow-up jobs cannot be stored: "
UNSTORABLE_PROGRESS = "Permanent: the handler's progress value cannot be stored: "


# What encoding a value raises (py/src/payload.rs): TypeError for a type it
# cannot encode, InvalidArgumentError (a ValueError) past a limit,
# UnicodeEncodeError (a ValueError) for a str it cannot carry.
UNENCODABLE = (TypeError, ValueError, OverflowError, RecursionError)


def refusal(how: str, err: BaseException) -> str:
    """What a settle's error means, for both Workers: "cancelled" (the
    settle recorded the job cancelled), "lost", "closed" (the queue is
    closed: the Worker cannot go on), "unstorable" (a completion whose
    result or follow-ups do not encode or are refused as arguments: the
    same values would be refused on every retry, so the job fails for
    good), or "error" (anything else: the store or the network)."""
    if isinstance(err, CancelledError):
        return "cancelled"
    if isinstance(err, LeaseLostError):
        return "lost"
    if isinstance(err, QueueClosedError):
        return "closed"
    if how == "complete" and isinstance(err, UNENCODABLE):
        return "unstorable"
    return "error"


def refused(
    worker_id: str, lease: Lease, how: str, err: BaseException, remote: bool
) -> tuple[str | None, str | None, tuple[str, bool] | None]:
    """What a Worker does with a settle the queue refused (both Workers, a
    single call's answer or a batch's, alike): ``(count, report, fail)`` —
    the count to bump, the "what failed" to log and count as the Worker's
    own error (``_error``), and ``(reason, retryable)`` to fail the job
    with. The lease is marked and the answer logged here."""
    why = refusal(how, err)
    job = lease.job
    if why == "cancelled":
        # The settle recorded the job cancelled (what a cancel asks for).
        lease._mark_lost("cancelled")
        return "cancelled", None, None
    if why == "lost":
        lease._mark_lost()
        log.warning(
            "worker %s: lease of %s (generation %d) was lost before it settled",
            worker_id, job.id, job.generation,
        )
        return "lost", None, None
    if why == "closed":
        return None, f"settling {job.id}", None
    if why == "unstorable":
        # The same values would be refused on every retry: fail it for good.
        reason = UNSTORABLE + failure_reason(err)
        log.error("worker %s: job %s: %s", worker_id, job.id, reason)
        return None, None, (reason, False)
    # No answer from a remote queue: it may have landed, and failing it now
    # could undo a completion (see `unanswered`); unsettled, it expires.
    if how == "fail" or (remote and isinstance(err, StorageError)):
        return None, f"settling {job.id} ({how})", None
    return None, f"settling {job.id} ({how})", (f"could not {how}: {failure_reason(err)}", True)


def raised_by_progress(lease: Lease, e: BaseException) -> bool:
    """Whether a handler's exception is (or was raised from) the error its
    ``progress()`` call met encoding a value."""
    bad = lease._unstorable
    seen = 0
    cur: BaseException | None = e
    while cur is not None and bad is not None and seen < 16:
        if cur is bad:
            return True
        cur = cur.__cause__ or cur.__context__
        seen += 1
    return False


def after_heartbeat(
    worker_id: str, due: Sequence[Lease], answers: Sequence[str], failed: bool, sent: float
) -> float:
    """Book one heartbeat's answers (shared by `Worker` and `AsyncWorker`,
    one per lease: ``extend_answers``' "renewed" / "lost" / "cancelled"): a
    renewed lease beats again a third of its TTL later and now expires a TTL
    after `sent`; when the call itself `failed`, a lease still inside its
    deadline is retried soon; a lease not renewed is flagged lost, or
    cancelled (its handler is told; the worker still settles it when the
    handler returns, which records the job cancelled). Returns the time it
    finished."""
    now = time.time()
    for lease, answer in zip(due, answers):
        if answer == "renewed" and failed:
            lease.next_beat = now + 0.1  # try again soon
        elif answer == "renewed":
            lease.next_beat = now + lease.ttl / 3
            lease.expires = sent + lease.ttl
        elif answer == "cancelled":
            lease._mark_lost("cancelled")
            lease.next_beat = float("inf")
            log.info("worker %s: job %s was cancelled: its handler is told", worker_id, lease.job.id)
        else:
            lease._mark_lost()
            lease.next_beat = float("inf")
            log.warning(
                "worker %s: lease of %s (generation %d) lost", worker_id, lease.job.id, lease.job.generation
            )
    return now


def take_progress(due: Sequence[Lease]) -> list[bytes | None] | None:
    """The progress reports a heartbeat of ``due`` carries (shared by
    ``Worker`` and ``AsyncWorker``): each lease's latest unsent report, or
    None when no lease has one (then the heartbeat is a plain ``extend``)."""
    reports = [lease._take_progress() for lease in due]
    return reports if any(r is not None for r in reports) else None


def restore_progress(due: Sequence[Lease], reports: Sequence[bytes | None] | None) -> None:
    """A heartbeat failed: its reports go out with the next one."""
    for lease, r in zip(due, reports or ()):
        lease._restore_progress(r)


def timed_out(leases: Sequence[Lease], now: float) -> list[Lease]:
    """The leases whose handlers ran past their kind's ``timeout``."""
    return [l for l in leases if l.timeout_at <= now and not l.lost]


def timeout_reason(lease: Lease) -> str:
    return f"timed out after {lease.job.timeout:g}s (the kind's timeout)"


def outcome(e: Exception, lease: Lease | None = None) -> tuple[str, Any, Any]:
    """How a handler's exception settles its job: ``(how, arg, extra)``
    for ``_settle``: Snooze → snooze; Retry → fail retryably after its
    delay; PermanentError, or the error of a progress value that cannot be
    stored, → fail for good; anything else → fail retryably."""
    if lease is not None and raised_by_progress(lease, e):
        assert lease._unstorable is not None
        return "fail", UNSTORABLE_PROGRESS + failure_reason(lease._unstorable), False
    if isinstance(e, Snooze):
        return "snooze", e.seconds, None
    if isinstance(e, Retry):
        return "retry", e.reason, e.after
    if isinstance(e, PermanentError):
        return "fail", failure_reason(e), False
    return "fail", failure_reason(e), True


def settle_batch_size(n: object) -> int:
    """A Worker's ``settle_batch``: an int, 1 to ``limits.MAX_BATCH``."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError("settle_batch must be an int")
    if not 1 <= n <= MAX_BATCH:
        raise InvalidArgumentError(f"settle_batch must be 1 to {MAX_BATCH}, got {n}")
    return n


# How long `stop` waits past its timeout to settle and release (milliseconds
# when the queue answers): a silent server holds it no longer.
STOP_GRACE = 0.5

NEW_COUNTS = (
    "completed", "failed", "lost", "released", "cancelled", "snoozed", "timed_out", "prefetch_released",
    "errors",
)


# The least a remote Worker leases ahead by default: the leases that cover
# one round trip (a settle reaching the server, the next lease coming back,
# a few milliseconds on a loaded host) at the rate fast handlers take them,
# in messages large enough that the per-message cost (a PollJobs message, a
# SubmitMany call, their lease_many / complete_many on the server, the
# thread wake-ups on both sides) is small beside the per-job cost. A stream
# sends about one message per settle call, each about half its capacity.
# With 4 leases ahead, one process of Worker(concurrency=1) idled between
# small batches; 32 gave about three times that rate; 256 (messages of ~130
# jobs instead of ~17) cut the CPU per job of 4 such processes and their
# server from ~43 to ~24 µs (issue 37, `make bench-fleet`'s CPU columns;
# 128: ~27 µs, 512: no better than 256). The
# stream's capacity is fixed when it opens, so this is a floor, not a window
# that follows the rate; what waits past a quarter of its TTL is released
# back (see _remote.PREFETCH_FRACTION), and slow handlers should pass a
# small ``prefetch``.
PREFETCH_FLOOR = 256

# A remote Worker's completions per complete_many by default: at least
# this, and enough for everything its stream can hold (concurrency +
# prefetch), so a batch gathered while the previous call ran never splits
# in two calls.
SETTLE_BATCH_REMOTE = 64


def settle_batch_default(concurrency: int, prefetch: int, remote: bool, embedded: int = 64) -> int:
    """A Worker's ``settle_batch`` when none is given: on a remote queue
    what its stream can hold (``concurrency + prefetch``, at least 64, at
    most ``MAX_BATCH``); ``embedded`` on an embedded one."""
    if not remote:
        return embedded
    return min(MAX_BATCH, max(SETTLE_BATCH_REMOTE, concurrency + prefetch))


def prefetch_size(prefetch: object, concurrency: int, remote: bool) -> int:
    """A Worker's ``prefetch``: None is ``max(4 * concurrency, 256)`` on a
    remote queue (within ``MAX_BATCH`` with the running ones), 0 on an
    embedded one (whose Workers lease ahead on their own, a few jobs per
    handler: see ``LeaseAhead``)."""
    if prefetch is None:
        return max(0, min(max(4 * concurrency, PREFETCH_FLOOR), MAX_BATCH - concurrency)) if remote else 0
    if isinstance(prefetch, bool) or not isinstance(prefetch, int):
        raise TypeError("prefetch must be an int")
    if prefetch < 0 or prefetch + concurrency > MAX_BATCH:
        raise InvalidArgumentError(
            f"prefetch must be >= 0 and prefetch + concurrency <= {MAX_BATCH}, got {prefetch}"
        )
    return prefetch if remote else 0


def min_prefetch_size(min_prefetch: object, prefetch: int, remote: bool) -> int:
    """A Worker's ``min_prefetch``: how many of its ``prefetch`` leases the
    server keeps ahead even while the handlers are slow (0 to ``prefetch``;
    the stream's floor is ``concurrency + min_prefetch``). Over an embedded
    queue (no prefetch, whatever ``prefetch`` said) it is 0."""
    if isinstance(min_prefetch, bool) or not isinstance(min_prefetch, int):
        raise TypeError("min_prefetch must be an int")
    if min_prefetch < 0 or (remote and min_prefetch > prefetch):
        raise InvalidArgumentError(
            f"min_prefetch must be 0 to prefetch ({prefetch}), got {min_prefetch}"
        )
    return min_prefetch if remote else 0


# An embedded queue's handler thread leases ahead as many jobs as its
# handler runs in about this long (and at most AHEAD_MAX): a fast handler
# then costs one lease_many per handful of jobs, while a job leased ahead
# waits in that thread only a few milliseconds (never past the prefetch
# fraction of its TTL: it is released instead) and a slow handler leases
# one job at a time, leaving the rest to other workers.
AHEAD_BUDGET = 0.005
AHEAD_MAX = 16


class LeaseAhead:
    """How many jobs one handler thread leases at once, sized by time: the
    handler's recent run time (a moving average) into ``AHEAD_BUDGET``."""

    __slots__ = ("size", "_avg")

    def __init__(self) -> None:
        self.size = 1
        self._avg: float | None = None

    def ran(self, took: float) -> None:
        """One handler run took ``took`` seconds."""
        avg = took if self._avg is None else self._avg + (took - self._avg) / 8
        self._avg = avg
        self.size = max(1, min(AHEAD_MAX, int(AHEAD_BUDGET / avg) if avg > 0 else AHEAD_MAX))
