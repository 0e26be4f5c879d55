//! Core error kinds ⇄ gRPC status codes: the one table both sides use.
//!
//! | core kind | gRPC code |
//! |---|---|
//! | `InvalidArgument` | `INVALID_ARGUMENT` |
//! | `NotFound` | `NOT_FOUND` |
//! | `Aborted` (a lost lease) | `ABORTED` |
//! | `StoreLocked` | `FAILED_PRECONDITION` |
//! | `Storage` | `INTERNAL` |
//! | `Corruption` | `DATA_LOSS` |
//! | `Closed` (the store or server is closing) | `UNAVAILABLE` |
//! | `UnsupportedFormat` (a store of a newer format) | `FAILED_PRECONDITION` |
//! | `Cancelled` (the lease's job was cancelled) | `ABORTED` |
//! | `WrongState` | `FAILED_PRECONDITION` |
//! | `Unavailable` (retryable; may carry a [`LEADER_TRAILER`]) | `UNAVAILABLE` |
//!
//! A server answers the core's `Closed` (its store closed under it: the
//! server is shutting down) as `Unavailable`, since for a remote caller
//! that is retryable: a restarted server, or another endpoint, answers.
//! A client's own closed handle stays `Closed`.
//!
//! Back on the client, a status that carries the [`ERROR_KIND_TRAILER`]
//! maps to exactly that kind; one that does not came from the transport or
//! from tonic itself: `UNAVAILABLE` (no server, connection lost) is
//! `Unavailable`, `UNAUTHENTICATED` (missing or wrong token) and
//! `RESOURCE_EXHAUSTED`/`OUT_OF_RANGE` (a message over the size limit) are
//! `InvalidArgument`, anything else `Storage`. The message is the server's.

use std::path::PathBuf;

use telha_jobs::{Error, ErrorKind};
use tonic::{Code, Status};

use crate::v1;

/// The metadata key carrying the core kind's stable code (`ABORTED`, ...).
pub const ERROR_KIND_TRAILER: &str = "telha-error-kind";

/// The metadata key of an `Unavailable` answer's hint: the URL of the
/// endpoint that can answer (the leader, in a cluster).
pub const LEADER_TRAILER: &str = "telha-leader";

/// The gRPC code of a core error kind.
pub fn code_of(kind: ErrorKind) -> Code {
    match kind {
        ErrorKind::InvalidArgument => Code::InvalidArgument,
        ErrorKind::NotFound => Code::NotFound,
        ErrorKind::Aborted => Code::Aborted,
        ErrorKind::StoreLocked => Code::FailedPrecondition,
        ErrorKind::Storage => Code::Internal,
        ErrorKind::Corruption => Code::DataLoss,
        ErrorKind::Closed => Code::Unavailable,
        ErrorKind::UnsupportedFormat => Code::FailedPrecondition,
        ErrorKind::Cancelled => Code::Aborted,
        ErrorKind::WrongState => Code::FailedPrecondition,
        ErrorKind::Unavailable => Code::Unavailable,
        _ => Code::Unknown,
    }
}

/// The error's own text, without the kind's prefix that `Display` adds
/// (the kind travels separately).
pub fn message_of(e: &Error) -> String {
    match e {
        Error::InvalidArgument(m)
        | Error::NotFound(m)
        | Error::Aborted(m)
        | Error::Storage(m)
        | Error::Corruption(m)
        | Error::UnsupportedFormat(m)
        | Error::Cancelled(m)
        | Error::WrongState(m) => m.clone(),
        Error::Unavailable { reason, .. } => reason.clone(),
        other => other.to_string(),
    }
}

/// A core kind by its stable code string.
pub fn kind_from_code(code: &str) -> Option<ErrorKind> {
    ErrorKind::ALL.into_iter().find(|k| k.code() == code)
}

/// A core error of `kind` with message `msg`, as the client hands it back.
pub fn error_of(kind: ErrorKind, msg: String, location: &str) -> Error {
    match kind {
        ErrorKind::InvalidArgument => Error::InvalidArgument(msg),
        ErrorKind::NotFound => Error::NotFound(msg),
        ErrorKind::Aborted => Error::Aborted(msg),
        ErrorKind::StoreLocked => Error::StoreLocked {
            path: PathBuf::from(location),
            owner: msg,
        },
        ErrorKind::Corruption => Error::Corruption(msg),
        ErrorKind::Closed => Error::Closed,
        ErrorKind::UnsupportedFormat => Error::UnsupportedFormat(msg),
        ErrorKind::Cancelled => Error::Cancelled(msg),
        ErrorKind::WrongState => Error::WrongState(msg),
        ErrorKind::Unavailable => Error::unavailable(msg),
        _ => Error::Storage(msg),
    }
}

/// The status a core error is answered with. The core's `Closed` (the
/// server's store is closing) is answered `Unavailable`; an
/// `Unavailable` with a leader hint carries it in [`LEADER_TRAILER`].
pub fn to_status(e: &Error) -> Status {
    if matches!(e, Error::Closed) {
        return to_status(&Error::unavailable("the telha server is closing"));
    }
    let mut s = Status::new(code_of(e.kind()), message_of(e));
    if let Ok(v) = e.kind().code().parse() {
        s.metadata_mut().insert(ERROR_KIND_TRAILER, v);
    }
    if let Some(v) = e.leader_hint().and_then(|l| l.parse().ok()) {
        s.metadata_mut().insert(LEADER_TRAILER, v);
    }
    s
}

/// The core error for a status the client received from the server at
/// `location` (its URL, for messages).
pub fn from_status(s: &Status, location: &str) -> Error {
    let msg = s.message().to_string();
    if let Some(kind) = s
        .metadata()
        .get(ERROR_KIND_TRAILER)
        .and_then(|v| v.to_str().ok())
        .and_then(kind_from_code)
    {
        let leader = s
            .metadata()
            .get(LEADER_TRAILER)
            .and_then(|v| v.to_str().ok())
            .filter(|l| !l.is_empty())
            .map(str::to_string);
        return match error_of(kind, msg, location) {
            Error::Unavailable { reason, .. } => Error::Unavailable { reason, leader },
            e => e,
        };
    }
    match s.code() {
        Code::InvalidArgument => Error::InvalidArgument(msg),
        Code::NotFound => Error::NotFound(msg),
        Code::Aborted => Error::Aborted(msg),
        Code::FailedPrecondition => error_of(ErrorKind::StoreLocked, msg, location),
        Code::DataLoss => Error::Corruption(msg),
        Code::Unauthenticated => {
            Error::InvalidArgument(format!("unauthenticated by {location}: {msg}"))
        }
        Code::ResourceExhausted | Code::OutOfRange => {
            Error::InvalidArgument(format!("request refused by {location}: {msg}"))
        }
        Code::Unavailable => {
            Error::unavailable(format!("telha server {location} unavailable: {msg}"))
        }
        code => Error::Storage(format!("telha server {location}: {code:?}: {msg}")),
    }
}

/// The wire form of a core kind.
pub fn kind_to_pb(kind: ErrorKind) -> v1::ErrorKind {
    match kind {
        ErrorKind::InvalidArgument => v1::ErrorKind::InvalidArgument,
        ErrorKind::NotFound => v1::ErrorKind::NotFound,
        ErrorKind::Aborted => v1::ErrorKind::Aborted,
        ErrorKind::StoreLocked => v1::ErrorKind::StoreLocked,
        ErrorKind::Storage => v1::ErrorKind::Storage,
        ErrorKind::Corruption => v1::ErrorKind::Corruption,
        ErrorKind::Closed => v1::ErrorKind::Closed,
        ErrorKind::UnsupportedFormat => v1::ErrorKind::UnsupportedFormat,
        ErrorKind::Cancelled => v1::ErrorKind::Cancelled,
        ErrorKind::WrongState => v1::ErrorKind::WrongState,
        ErrorKind::Unavailable => v1::ErrorKind::Unavailable,
        _ => v1::ErrorKind::Unspecified,
    }
}

/// The core kind of a wire kind (unknown or unspecified: `Storage`).
pub fn kind_from_pb(kind: i32) -> ErrorKind {
    match v1::ErrorKind::try_from(kind) {
        Ok(v1::ErrorKind::InvalidArgument) => ErrorKind::InvalidArgument,
        Ok(v1::ErrorKind::NotFound) => ErrorKind::NotFound,
        Ok(v1::ErrorKind::Aborted) => ErrorKind::Aborted,
        Ok(v1::ErrorKind::StoreLocked) => ErrorKind::StoreLocked,
        Ok(v1::ErrorKind::Corruption) => ErrorKind::Corruption,
        Ok(v1::ErrorKind::Closed) => ErrorKind::Closed,
        Ok(v1::ErrorKind::UnsupportedFormat) => ErrorKind::UnsupportedFormat,
        Ok(v1::ErrorKind::Cancelled) => ErrorKind::Cancelled,
        Ok(v1::ErrorKind::WrongState) => ErrorKind::WrongState,
        Ok(v1::ErrorKind::Unavailable) => ErrorKind::Unavailable,
        _ => ErrorKind::Storage,
    }
}

/// A per-item error as sent in batch answers.
pub fn item_error(e: &Error) -> v1::ItemError {
    v1::ItemError {
        kind: kind_to_pb(e.kind()) as i32,
        message: message_of(e),
    }
}

/// The core error of a per-item answer.
pub fn from_item_error(e: &v1::ItemError, location: &str) -> Error {
    error_of(kind_from_pb(e.kind), e.message.clone(), location)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_survives_the_status_round_trip_with_its_message() {
        for kind in ErrorKind::ALL {
            let e = error_of(kind, "the reason".into(), "http://h:1");
            let back = from_status(&to_status(&e), "http://h:1");
            if kind == ErrorKind::Closed {
                // A server's closing store is retryable for its callers.
                assert_eq!(back.kind(), ErrorKind::Unavailable);
                continue;
            }
            assert_eq!(back.kind(), kind);
            if kind != ErrorKind::Closed && kind != ErrorKind::StoreLocked {
                assert_eq!(message_of(&back), "the reason");
            }
            let item = from_item_error(&item_error(&e), "http://h:1");
            assert_eq!(item.kind(), kind);
        }
    }

    #[test]
    fn an_unsupported_format_travels_as_failed_precondition_and_comes_back_as_itself() {
        let e = Error::UnsupportedFormat("store format 9 (compatible from 9)".into());
        let s = to_status(&e);
        assert_eq!(s.code(), Code::FailedPrecondition);
        assert_eq!(
            s.metadata().get(ERROR_KIND_TRAILER).unwrap(),
            "UNSUPPORTED_FORMAT"
        );
        let back = from_status(&s, "http://h:1");
        assert_eq!(back.kind(), ErrorKind::UnsupportedFormat);
        assert_eq!(message_of(&back), "store format 9 (compatible from 9)");
        // Not a locked store, although both are FAILED_PRECONDITION: the
        // kind travels in the metadata, and in a per-item answer.
        assert_ne!(back.kind(), ErrorKind::StoreLocked);
        let item = item_error(&e);
        assert_eq!(item.kind, v1::ErrorKind::UnsupportedFormat as i32);
        assert_eq!(
            from_item_error(&item, "u").kind(),
            ErrorKind::UnsupportedFormat
        );
    }

    #[test]
    fn transport_statuses_map_to_documented_kinds() {
        let k = |c| from_status(&Status::new(c, "x"), "u").kind();
        assert_eq!(k(Code::Unavailable), ErrorKind::Unavailable);
        assert_eq!(k(Code::Internal), ErrorKind::Storage);
        assert_eq!(k(Code::Unauthenticated), ErrorKind::InvalidArgument);
        assert_eq!(k(Code::ResourceExhausted), ErrorKind::InvalidArgument);
        assert_eq!(k(Code::Aborted), ErrorKind::Aborted);
        assert_eq!(k(Code::DataLoss), ErrorKind::Corruption);
    }

    #[test]
    fn an_unavailable_answer_carries_its_leader_hint_and_a_bare_one_none() {
        let e = Error::Unavailable {
            reason: "not the leader".into(),
            leader: Some("http://b:7450".into()),
        };
        let s = to_status(&e);
        assert_eq!(s.code(), Code::Unavailable);
        assert_eq!(s.metadata().get(LEADER_TRAILER).unwrap(), "http://b:7450");
        let back = from_status(&s, "http://a:7450");
        assert_eq!(back.kind(), ErrorKind::Unavailable);
        assert!(back.kind().is_retryable());
        assert_eq!(back.leader_hint(), Some("http://b:7450"));
        assert_eq!(message_of(&back), "not the leader");
        let bare = from_status(&to_status(&Error::unavailable("closing")), "u");
        assert_eq!(bare.leader_hint(), None);
        let closing = from_status(&to_status(&Error::Closed), "u");
        assert_eq!(closing.kind(), ErrorKind::Unavailable);
        assert!(message_of(&closing).contains("closing"), "{closing}");
    }
}
