//! One table from the core's `ErrorKind` to JS errors with a stable `code`.
//!
//! Failures are plain Rust data (`Failure`) until they reach the JS thread,
//! where `to_js` builds the error object: an `Error` whose `code` is the
//! core's stable name (`INVALID_ARGUMENT`, `ABORTED`, …), or a `TypeError`
//! with code `INVALID_ARGUMENT` for a value of the wrong JS type.

use napi::bindgen_prelude::{Env, JsError, JsTypeError};
use telha_jobs::{Error as CoreError, ErrorKind};

/// Why a call failed, before it is turned into a JS error.
#[derive(Debug)]
pub enum Failure {
    /// The core said no.
    Core(CoreError),
    /// A JS value of the wrong type (a `TypeError`, code `INVALID_ARGUMENT`).
    Type(String),
    /// A value of the right type that the binding refuses (code `INVALID_ARGUMENT`).
    Invalid(String),
}

impl From<CoreError> for Failure {
    fn from(e: CoreError) -> Self {
        Failure::Core(e)
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
    let (code, message, type_error) = match f {
        Failure::Core(e) => (code(e.kind()), e.to_string(), false),
        Failure::Type(m) => (code(ErrorKind::InvalidArgument), m, true),
        Failure::Invalid(m) => (code(ErrorKind::InvalidArgument), m, false),
    };
    let raw = napi::Error::new(code, message);
    let value = if type_error {
        JsTypeError::from(raw).into_unknown(*env)
    } else {
        JsError::from(raw).into_unknown(*env)
    };
    napi::Error::from(value)
}

/// `to_js` for a core error.
pub fn core_to_js(env: &Env, e: CoreError) -> napi::Error {
    to_js(env, Failure::Core(e))
}

/// Every code, in the core's stable order (exported to JS as `ErrorCode`).
pub fn all_codes() -> Vec<&'static str> {
    ErrorKind::ALL.iter().map(|k| code(*k)).collect()
}
