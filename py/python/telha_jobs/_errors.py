"""The exception classes, one per core error kind (see ``TelhaError.code``).

Every class name ends in ``Error``. The names without the suffix
(``InvalidArgument``, ``NotFound``, ``LeaseLost``, ``StoreLocked``,
``QueueClosed``) are deprecated aliases, kept for one release: each is the
very same class object as its ``...Error`` name, so ``except`` and
``isinstance`` work with either.
"""

from __future__ import annotations

__all__ = [
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
    # Deprecated aliases (removed in the next release).
    "InvalidArgument",
    "NotFound",
    "LeaseLost",
    "StoreLocked",
    "QueueClosed",
]


class TelhaError(Exception):
    """Root of every error the queue raises. ``code`` is the core's stable
    error-kind name (the same string Node's ``err.code`` carries)."""

    code: str = "TELHA_ERROR"


class InvalidArgumentError(TelhaError, ValueError):
    """Bad input: kind syntax, sizes, ids, options, config. Also a ValueError.

    ``InvalidArgument`` is a deprecated alias of this class (removed in the
    next release)."""

    code = "INVALID_ARGUMENT"


class NotFoundError(TelhaError):
    """No job (or no store, for read-only opens) with that identity.

    ``NotFound`` is a deprecated alias of this class (removed in the next
    release)."""

    code = "NOT_FOUND"


class LeaseLostError(TelhaError):
    """The lease is stale (error kind ``ABORTED``): the job was reaped,
    settled another way, moved by an operator or leased again since.
    Nothing was changed; stop working on it. (The same ``complete`` /
    ``fail`` / ``release`` / ``snooze`` repeated with the same lease, a
    retry, is not stale: it answers as the first call did.)

    ``LeaseLost`` is a deprecated alias of this class (removed in the next
    release)."""

    code = "ABORTED"


class StoreLockedError(TelhaError):
    """Another process owns the store. ``path`` names the store directory.

    ``StoreLocked`` is a deprecated alias of this class (removed in the next
    release)."""

    code = "STORE_LOCKED"
    path: str | None = None


class StorageError(TelhaError):
    """RocksDB or the filesystem failed."""

    code = "STORAGE"


class CorruptionError(StorageError):
    """Bytes on disk do not decode."""

    code = "CORRUPTION"


class QueueClosedError(TelhaError):
    """The queue handle was closed (before or during the call).

    ``QueueClosed`` is a deprecated alias of this class (removed in the next
    release)."""

    code = "CLOSED"


class UnsupportedFormatError(TelhaError):
    """The store was written by a newer, incompatible version of
    telha-jobs (its ``telha.format`` marker names a format this build cannot
    read). The store was left untouched: open it with that version or a
    later one."""

    code = "UNSUPPORTED_FORMAT"


class CancelledError(LeaseLostError):
    """The job was cancelled while leased (error kind ``CANCELLED``): the
    lease's heartbeat answered *cancelled*, or a settle (complete, fail,
    release, snooze) found a cancel request and recorded the job
    ``cancelled``. A subclass of ``LeaseLostError``, so a handler that stops
    on a lost lease stops on a cancel too. ``reason`` is not carried here:
    ``get(id).cancel_requested`` / ``last_error`` hold it."""

    code = "CANCELLED"


class WrongStateError(TelhaError):
    """The job is in a state the operation does not apply to (error kind
    ``WRONG_STATE``): cancelling a completed, dead or cancelled job, deleting
    a leased one (cancel it first). Nothing was changed."""

    code = "WRONG_STATE"


class UnavailableError(TelhaError):
    """The call could not be answered now and may succeed if repeated (error
    kind ``UNAVAILABLE``): no server reachable, a server shutting down or
    restarting, a call past its deadline (its outcome unknown), or a queue
    fenced by a write whose outcome is unknown. The remote client has
    already retried it within the call's deadline; ``leader`` is the URL of
    the endpoint the answer named, or ``None``."""

    code = "UNAVAILABLE"
    leader: str | None = None


# Deprecated aliases, kept for one release: the same class objects.
InvalidArgument = InvalidArgumentError
NotFound = NotFoundError
LeaseLost = LeaseLostError
StoreLocked = StoreLockedError
QueueClosed = QueueClosedError

for _cls in (TelhaError, InvalidArgumentError, NotFoundError, LeaseLostError, StoreLockedError,
             StorageError, CorruptionError, QueueClosedError, UnsupportedFormatError,
             CancelledError, WrongStateError, UnavailableError):
    _cls.__module__ = "telha_jobs"
del _cls
