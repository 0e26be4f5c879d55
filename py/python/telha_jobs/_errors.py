"""The exception classes, one per core error kind (see ``TelhaError.code``)."""

from __future__ import annotations

__all__ = [
    "TelhaError",
    "InvalidArgument",
    "NotFound",
    "LeaseLost",
    "StoreLocked",
    "StorageError",
    "CorruptionError",
    "QueueClosed",
]


class TelhaError(Exception):
    """Root of every error the queue raises. ``code`` is the core's stable
    error-kind name (the same string Node's ``err.code`` carries)."""

    code: str = "TELHA_ERROR"


class InvalidArgument(TelhaError, ValueError):
    """Bad input: kind syntax, sizes, ids, options, config. Also a ValueError."""

    code = "INVALID_ARGUMENT"


class NotFound(TelhaError):
    """No job (or no store, for read-only opens) with that identity."""

    code = "NOT_FOUND"


class LeaseLost(TelhaError):
    """The lease is stale (the spec's ABORTED): the job was reaped, released,
    settled or leased again since. Nothing was changed; stop working on it."""

    code = "ABORTED"


class StoreLocked(TelhaError):
    """Another process owns the store. ``path`` names the store directory."""

    code = "STORE_LOCKED"
    path: str | None = None


class StorageError(TelhaError):
    """RocksDB or the filesystem failed."""

    code = "STORAGE"


class CorruptionError(StorageError):
    """Bytes on disk do not decode."""

    code = "CORRUPTION"


class QueueClosed(TelhaError):
    """The queue handle was closed (before or during the call)."""

    code = "CLOSED"


for _cls in (TelhaError, InvalidArgument, NotFound, LeaseLost, StoreLocked, StorageError,
             CorruptionError, QueueClosed):
    _cls.__module__ = "telha_jobs"
del _cls
