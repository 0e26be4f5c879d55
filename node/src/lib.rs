//! The Node binding of telha-jobs (npm package `telha-jobs`), built with
//! napi-rs. This crate is the native layer (`NativeQueue`, `CancelToken`,
//! the payload convention); `lib/telha.js` is the documented public API on
//! top of it (argument checks, `AbortSignal`, the `Worker`).
//!
//! Layout mirrors the Python crate: `queue.rs` (the calls), `job.rs` (what
//! comes back), `errors.rs` (one table from `ErrorKind` to JS `code`s),
//! `payload.rs` (JS values <-> `telha_jobs::payload`), `config.rs` (open
//! options).

#![deny(clippy::all)]

mod config;
mod errors;
mod job;
mod payload;
mod queue;
mod remote;

use napi::bindgen_prelude::{Buffer, Env, Unknown};
use napi::JsValue;
use napi_derive::napi;

/// The stable error codes, in the core's order: `INVALID_ARGUMENT`,
/// `NOT_FOUND`, `ABORTED`, `STORE_LOCKED`, `STORAGE`, `CORRUPTION`, `CLOSED`.
#[napi]
pub fn error_codes() -> Vec<&'static str> {
    errors::all_codes()
}

/// Encode a plain value with the cross-language payload convention (a
/// version byte, then msgpack): the bytes `enqueue` stores for it.
#[napi(ts_args_type = "value: unknown")]
pub fn encode_payload(env: Env, value: Unknown) -> napi::Result<Buffer> {
    // SAFETY: live handles of this call.
    unsafe { payload::bytes_from_js(env.raw(), value.raw(), || "value".into()) }
        .map(Buffer::from)
        .map_err(|f| errors::to_js(&env, f))
}

/// Decode payload bytes: the value when they follow the convention, else
/// the same bytes as a `Buffer`.
#[napi(ts_return_type = "unknown")]
pub fn decode_payload(bytes: Buffer) -> payload::Payload {
    payload::Payload::new(bytes.to_vec())
}
