//! One table from the core's `ErrorKind` to JS errors with a stable `code`.
//!
//! Failures are plain Rust data (`Failure`) until they reach the JS thread,
//! where `to_js` builds the error object. The rule (docs/node.md, "Errors"):
//! every error carries the core's stable `code`; a value of the wrong JS
//! type is a `TypeError`, a number outside its range (a duration, a time, a
//! count, a priority, a limit) a `RangeError`, every other refusal an
//! `Error`, the last three with code `INVALID_ARGUMENT`. A panic that
//! escapes the core or this binding becomes an `Error` with code `STORAGE`.

use std::any::Any;

use napi::bindgen_prelude::{Env, JsError, JsRangeError, JsTypeError};
use telha_jobs::{Error as CoreError, ErrorKind};

/// Why a call failed, before it is turned into a JS error.
#[derive(Debug)]
pub enum Failure {
    /// The core said no.
    Core(CoreError),
    /// A JS value of the wrong type (a `TypeError`, code `INVALID_ARGUMENT`).
    Type(String),
    /// A number outside its range (a `RangeError`, code `INVALID_ARGUMENT`).
    Range(String),
    /// A value of the right type that the binding refuses (code `INVALID_ARGUMENT`).
    Invalid(String),
}

impl From<CoreError> for Failure {
    fn from(e: CoreError) -> Self {
        Failure::Core(e)
    }
}

impl Failure {
    /// The core's `InvalidArgument` from a range check, as a `RangeError`
    /// with the same message (other errors stay as they are).
    pub fn range(e: CoreError) -> Failure {
        match e {
            CoreError::InvalidArgument(m) => Failure::Range(m),
            other => Failure::Core(other),
        }
    }

    /// What a caught panic becomes: the typed storage error, naming the call.
    pub fn panicked(call: &str, payload: Box<dyn Any + Send>) -> Failure {
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a non-string panic".to_string());
        // Dropping a panic payload can itself panic; leak it instead.
        std::mem::forget(payload);
        Failure::Core(CoreError::Storage(format!(
            "internal error: {call} panicked (a bug; please report it): {what}"
        )))
    }
}

/// The stable `code` of a core error kind. `ErrorKind::code` is the single
/// source; this wrapper exists so the table has one home in the binding.
pub fn code(kind: ErrorKind) -> &'static str {
    kind.code()
}

/// The JS error for `f`, created on the JS thread. The returned
/// `napi::Error` keeps a reference to that object, so napi throws (or
/// rejects with) exactly it, `code` and class included.
pub fn to_js(env: &Env, f: Failure) -> napi::Error {
    enum Class {
        Error,
        Type,
        Range,
    }
    let invalid = code(ErrorKind::InvalidArgument);
    let (code, message, class) = match f {
        Failure::Core(e) => (code(e.kind()), e.to_string(), Class::Error),
        Failure::Type(m) => (invalid, m, Class::Type),
        Failure::Range(m) => (invalid, m, Class::Range),
        Failure::Invalid(m) => (invalid, m, Class::Error),
    };
    let raw = napi::Error::new(code, message);
    let value = match class {
        Class::Type => JsTypeError::from(raw).into_unknown(*env),
        Class::Range => JsRangeError::from(raw).into_unknown(*env),
        Class::Error => JsError::from(raw).into_unknown(*env),
    };
    napi::Error::from(value)
}

/// Every code, in the core's stable order (exported to JS as `ErrorCode`).
pub fn all_codes() -> Vec<&'static str> {
    ErrorKind::ALL.iter().map(|k| code(*k)).collect()
}
