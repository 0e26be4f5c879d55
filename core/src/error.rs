//! The one error type of the core.
//!
//! Every binding maps [`ErrorKind`] through one table (C status codes, Python
//! exception classes, Node `code` strings), so the kinds are stable: a kind is
//! never renamed or removed, only added.

use std::path::PathBuf;

/// A stable classification of [`Error`], mapped one-to-one by every binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Bad input from the caller: kind syntax, sizes, ids, options, config.
    InvalidArgument,
    /// No job (or no store, for read-only opens) with that identity.
    NotFound,
    /// The lease token is stale: the job was reaped, released or settled since.
    /// Its stable name is `ABORTED`; the caller must stop working on the job.
    Aborted,
    /// Another process owns the store.
    StoreLocked,
    /// RocksDB or the filesystem failed.
    Storage,
    /// Bytes on disk do not decode.
    Corruption,
    /// The queue handle was closed.
    Closed,
    /// The store was written in a format this build cannot open (a newer
    /// build's); nothing in it was changed.
    UnsupportedFormat,
    /// The job was cancelled while this lease held it: stop working on it.
    /// Answered per token by `extend` (renewed, lost, or cancelled), and by
    /// the holder's settle, which records the job as cancelled. A lease
    /// that is cancelled is also lost: bindings make it a subclass (Python)
    /// or a code beside `ABORTED` (Node's `CANCELLED`).
    Cancelled,
    /// The job exists but is in a state the operation does not apply to
    /// (cancel of a finished job, delete of a leased one); nothing changed.
    WrongState,
    /// The call could not be answered now and may succeed if repeated,
    /// later or at another endpoint: no server reachable, a server closing,
    /// not the leader, or a write whose outcome is unknown (which fences the
    /// engine that made it). Retryable by definition: the remote client
    /// retries it within the call's deadline; the answer may carry the URL
    /// of the endpoint to try ([`Error::leader_hint`]).
    Unavailable,
}

impl ErrorKind {
    /// The stable `SCREAMING_SNAKE` name used by the Node binding's `code` and in docs.
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::InvalidArgument => "INVALID_ARGUMENT",
            ErrorKind::NotFound => "NOT_FOUND",
            ErrorKind::Aborted => "ABORTED",
            ErrorKind::StoreLocked => "STORE_LOCKED",
            ErrorKind::Storage => "STORAGE",
            ErrorKind::Corruption => "CORRUPTION",
            ErrorKind::Closed => "CLOSED",
            ErrorKind::UnsupportedFormat => "UNSUPPORTED_FORMAT",
            ErrorKind::Cancelled => "CANCELLED",
            ErrorKind::WrongState => "WRONG_STATE",
            ErrorKind::Unavailable => "UNAVAILABLE",
        }
    }

    /// Every kind, in the order of their stable numbering (C status `index + 1`).
    pub const ALL: [ErrorKind; 11] = [
        ErrorKind::InvalidArgument,
        ErrorKind::NotFound,
        ErrorKind::Aborted,
        ErrorKind::StoreLocked,
        ErrorKind::Storage,
        ErrorKind::Corruption,
        ErrorKind::Closed,
        ErrorKind::UnsupportedFormat,
        ErrorKind::Cancelled,
        ErrorKind::WrongState,
        ErrorKind::Unavailable,
    ];

    /// Whether repeating the same call (with the same token or idempotency
    /// key) may succeed: only [`ErrorKind::Unavailable`].
    pub fn is_retryable(self) -> bool {
        self == ErrorKind::Unavailable
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.code())
    }
}

/// Everything that can go wrong in the core.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Bad input from the caller; the message names the argument and the rule.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// No job with that id (or no store at that path, for read-only opens).
    #[error("not found: {0}")]
    NotFound(String),

    /// The lease is lost (stale generation, another worker's lease, or the
    /// job is no longer leased) and nothing was changed: stop working on the job.
    #[error("lease lost: {0}")]
    Aborted(String),

    /// Another process has the store open.
    #[error("store {path} is locked by {owner}; a store has exactly one owning process")]
    StoreLocked {
        /// The store directory.
        path: PathBuf,
        /// `pid N` when the owner's pid file could be read, else `another process`.
        owner: String,
    },

    /// RocksDB or the filesystem failed; the message carries its reason.
    #[error("storage error: {0}")]
    Storage(String),

    /// Bytes on disk (a key, a record, an index entry) do not decode.
    #[error("corrupt record: {0}")]
    Corruption(String),

    /// This handle was closed (before or during the call).
    #[error("queue is closed")]
    Closed,

    /// The store's format marker names a format this build cannot open;
    /// the message names the store, its format and what this build supports.
    #[error("unsupported store format: {0}")]
    UnsupportedFormat(String),

    /// The job was cancelled while this lease held it (see
    /// [`ErrorKind::Cancelled`]); the message carries the cancel's reason.
    #[error("cancelled: {0}")]
    Cancelled(String),

    /// The job is in a state the operation does not apply to; nothing
    /// changed. The message names the job, its state and what to do.
    #[error("wrong state: {0}")]
    WrongState(String),

    /// The call could not be answered now (see [`ErrorKind::Unavailable`]);
    /// repeating it may succeed. `leader`, when known, is the URL of the
    /// endpoint that can answer (a remote server's `telha-leader` hint).
    #[error("unavailable: {reason}")]
    Unavailable {
        /// Why: no server reachable, server closing, not the leader,
        /// outcome unknown; names the endpoint when there is one.
        reason: String,
        /// The endpoint to try instead, when the answer named one.
        leader: Option<String>,
    },
}

impl Error {
    /// The stable kind of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::InvalidArgument(_) => ErrorKind::InvalidArgument,
            Error::NotFound(_) => ErrorKind::NotFound,
            Error::Aborted(_) => ErrorKind::Aborted,
            Error::StoreLocked { .. } => ErrorKind::StoreLocked,
            Error::Storage(_) => ErrorKind::Storage,
            Error::Corruption(_) => ErrorKind::Corruption,
            Error::Closed => ErrorKind::Closed,
            Error::UnsupportedFormat(_) => ErrorKind::UnsupportedFormat,
            Error::Cancelled(_) => ErrorKind::Cancelled,
            Error::WrongState(_) => ErrorKind::WrongState,
            Error::Unavailable { .. } => ErrorKind::Unavailable,
        }
    }

    /// An [`Error::Unavailable`] without a leader hint.
    pub fn unavailable(reason: impl Into<String>) -> Self {
        Error::Unavailable {
            reason: reason.into(),
            leader: None,
        }
    }

    /// The endpoint an [`Error::Unavailable`] answer named, if any.
    pub fn leader_hint(&self) -> Option<&str> {
        match self {
            Error::Unavailable { leader, .. } => leader.as_deref(),
            _ => None,
        }
    }

    pub(crate) fn invalid(msg: impl Into<String>) -> Self {
        Error::InvalidArgument(msg.into())
    }
}

#[cfg(feature = "rocksdb")]
impl From<rocksdb::Error> for Error {
    fn from(e: rocksdb::Error) -> Self {
        match e.kind() {
            rocksdb::ErrorKind::Corruption => Error::Corruption(e.into_string()),
            _ => Error::Storage(e.into_string()),
        }
    }
}

/// The core's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
