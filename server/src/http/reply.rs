//! Answers: every one carries the same security headers (a CSP that allows
//! only the page's own script and style files, no framing, no sniffing, no
//! referrer); API answers are never cached.

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use serde_json::{json, Value as Json};
use telha_jobs::{Error, ErrorKind};

pub(crate) type Body = Full<Bytes>;

/// No inline script or style, nothing from another origin: a value that
/// slipped through unescaped still could not run.
pub(crate) const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; \
     frame-ancestors 'none'";

pub(crate) fn with_type(status: u16, ctype: &str, body: Bytes) -> Response<Body> {
    let mut r = Response::new(Full::new(body));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let h = r.headers_mut();
    if let Ok(v) = HeaderValue::from_str(ctype) {
        h.insert(CONTENT_TYPE, v);
    }
    h.insert("content-security-policy", HeaderValue::from_static(CSP));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    h.insert(
        "cross-origin-resource-policy",
        HeaderValue::from_static("same-origin"),
    );
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

pub(crate) fn text(status: u16, body: &str) -> Response<Body> {
    with_type(
        status,
        "text/plain; charset=utf-8",
        Bytes::copy_from_slice(body.as_bytes()),
    )
}

pub(crate) fn json(status: u16, v: &Json) -> Response<Body> {
    with_type(status, "application/json", Bytes::from(v.to_string()))
}

pub(crate) fn ok(v: &Json) -> Response<Body> {
    json(200, v)
}

/// `{"error": {"code", "message"}}`.
pub(crate) fn error(status: u16, code: &str, message: &str) -> Response<Body> {
    json(
        status,
        &json!({"error": {"code": code, "message": message}}),
    )
}

/// A core error with its stable code and the HTTP status that fits it.
pub(crate) fn core_error(e: &Error) -> Response<Body> {
    let k = e.kind();
    let status = match k {
        ErrorKind::InvalidArgument => 400,
        ErrorKind::NotFound => 404,
        ErrorKind::Aborted | ErrorKind::WrongState => 409,
        ErrorKind::Closed
        | ErrorKind::Storage
        | ErrorKind::StoreLocked
        | ErrorKind::Unavailable => 503,
        ErrorKind::Cancelled => 409,
        _ => 500,
    };
    error(status, k.code(), &e.to_string())
}

pub(crate) fn bad(message: impl AsRef<str>) -> Response<Body> {
    error(400, "INVALID_ARGUMENT", message.as_ref())
}
