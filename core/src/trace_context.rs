//! W3C Trace Context in a job's metadata (issue 45): the keys the Python
//! and Node front ends write at enqueue and their Workers read to link a
//! handler's span to its producer, and the `traceparent` syntax check the C
//! setter (`tj_enqueue_options_set_traceparent`) applies.
//!
//! With the crate's `otel` feature, enqueue writes them from the current
//! OpenTelemetry context ([`crate::otel`]); without it (the default, no
//! OpenTelemetry dependency) a Rust caller sets them by hand:
//! `EnqueueOptions::default().meta(TRACEPARENT, header)`, with the value an
//! OpenTelemetry propagator injected.

use crate::error::{Error, Result};
use crate::job::NewJob;
use std::collections::BTreeMap;

/// The metadata key of the W3C `traceparent` header value.
pub const TRACEPARENT: &str = "traceparent";
/// The metadata key of the W3C `tracestate` header value.
pub const TRACESTATE: &str = "tracestate";

/// What every enqueue path does to a job's metadata (`Queue`'s, and
/// `telha-jobs-client`'s `RemoteQueue`'s): with the `otel` feature,
/// `otel::inject_current` (the current OpenTelemetry context's
/// `traceparent`/`tracestate`, unless either key is set); without it,
/// nothing.
#[inline]
pub fn inject_current(meta: &mut BTreeMap<String, String>) {
    #[cfg(feature = "otel")]
    crate::otel::inject_current(meta);
    #[cfg(not(feature = "otel"))]
    let _ = meta;
}

/// [`inject_current`] on each job's metadata (one context for the batch).
#[inline]
pub fn inject_current_all(jobs: &mut [NewJob]) {
    #[cfg(feature = "otel")]
    for j in jobs {
        crate::otel::inject_current(&mut j.options.metadata);
    }
    #[cfg(not(feature = "otel"))]
    let _ = jobs;
}

/// Check `v` against W3C Trace Context's `traceparent` syntax:
/// `version-traceid-parentid-flags` in lowercase hex (2, 32, 16 and 2
/// digits), version not `ff`, neither id all zeros; version `00` exactly
/// 55 bytes, a later version may append `-` and more (the spec's rule for
/// versions a parser does not know). `InvalidArgument` naming the rule.
pub fn validate_traceparent(v: &str) -> Result<()> {
    let bad = |why: &str| {
        let mut shown = v.to_string();
        crate::store::codec::truncate_utf8(&mut shown, 80);
        Err(Error::invalid(format!(
            "traceparent {shown:?} is not W3C Trace Context syntax (version-traceid-parentid-flags, lowercase hex 2-32-16-2): {why}"
        )))
    };
    let b = v.as_bytes();
    if b.len() < 55 {
        return bad("too short");
    }
    let hex = |r: std::ops::Range<usize>| {
        b[r].iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
    };
    if b[2] != b'-' || b[35] != b'-' || b[52] != b'-' {
        return bad("fields are not separated by '-' at bytes 2, 35 and 52");
    }
    if !(hex(0..2) && hex(3..35) && hex(36..52) && hex(53..55)) {
        return bad("a field is not lowercase hex");
    }
    match &b[0..2] {
        b"ff" => return bad("version ff is invalid"),
        b"00" if b.len() != 55 => return bad("version 00 is exactly 55 bytes"),
        _ if b.len() > 55 && b[55] != b'-' => return bad("a longer value must continue with '-'"),
        _ => {}
    }
    if b[3..35].iter().all(|&c| c == b'0') {
        return bad("the trace id is all zeros");
    }
    if b[36..52].iter().all(|&c| c == b'0') {
        return bad("the parent id is all zeros");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    #[test]
    fn a_w3c_traceparent_is_taken() {
        validate_traceparent(GOOD).unwrap();
        validate_traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00").unwrap();
        validate_traceparent("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-what-comes")
            .unwrap();
    }

    #[test]
    fn anything_else_is_invalid_argument_naming_the_rule() {
        let zeros = format!("00-{}-b7ad6b7169203331-01", "0".repeat(32));
        let zero_parent = "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01";
        for (v, why) in [
            ("", "too short"),
            (&GOOD[..54], "too short"),
            (&format!("{GOOD}-x"), "exactly 55"),
            (&GOOD.to_uppercase(), "lowercase hex"),
            (&GOOD.replace("-b7", "_b7"), "separated"),
            (&format!("ff{}", &GOOD[2..]), "version ff"),
            (&format!("01{}x", &GOOD[2..]), "continue with '-'"),
            (&zeros, "trace id is all zeros"),
            (zero_parent, "parent id is all zeros"),
            (
                "00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333g-01",
                "lowercase hex",
            ),
        ] {
            let e = validate_traceparent(v).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument, "{v}");
            assert!(e.to_string().contains(why), "{v}: {e}");
        }
    }
}
