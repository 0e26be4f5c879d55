//! The payload convention shared by every binding: one version byte
//! ([`PAYLOAD_MSGPACK_V1`]) followed by exactly one msgpack value.
//!
//! The core stores payloads and results as opaque bytes. The Python and Node
//! bindings encode native values (dict / plain object, list / array, str,
//! numbers, bool, None / null, bytes / Buffer inside a structure) with
//! [`encode`] and read them back with [`decode`], so a job enqueued from Node
//! reads as a dict in Python. Raw bytes passed by a caller are stored as
//! they are; on read, bytes that happen to follow the convention decode as a
//! value (the bindings also expose the raw bytes).
//!
//! The value model is [`rmpv::Value`]: maps with string keys, arrays,
//! strings, integers (i64 / u64), float64, booleans, nil and binary.

use crate::error::{Error, Result};

/// The version byte that starts a convention payload.
pub const PAYLOAD_MSGPACK_V1: u8 = 0x01;

/// Deepest nesting accepted when decoding (a hostile payload cannot blow the stack).
pub const MAX_DEPTH: usize = 256;

pub use rmpv::Value;

/// How the bytes of a payload or result were made, recorded with them so
/// every front end hands back exactly what it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Encoding {
    /// Not recorded (rows written before encodings were, and callers that
    /// do not say, such as C and Rust by default): read by looking, as
    /// before: bytes that follow the convention decode as a value.
    #[default]
    Unknown,
    /// The caller's own bytes (a Python `bytes`, a Node `Buffer`): always
    /// read back as bytes, even when they happen to look like the
    /// convention.
    Bytes,
    /// A value encoded by [`encode`] (a dict, a plain object, …): read back
    /// as that value.
    Value,
}

impl Encoding {
    /// The stable number stored in a record (`0` is never stored).
    pub fn code(self) -> u8 {
        match self {
            Encoding::Unknown => 0,
            Encoding::Bytes => 1,
            Encoding::Value => 2,
        }
    }

    /// The encoding stored as `code`; an unknown number reads as
    /// [`Encoding::Unknown`] (look at the bytes).
    pub fn from_code(code: u64) -> Encoding {
        match code {
            1 => Encoding::Bytes,
            2 => Encoding::Value,
            _ => Encoding::Unknown,
        }
    }

    /// The lowercase name: `unknown`, `bytes`, `value`.
    pub fn as_str(self) -> &'static str {
        match self {
            Encoding::Unknown => "unknown",
            Encoding::Bytes => "bytes",
            Encoding::Value => "value",
        }
    }
}

/// What a front end should hand back for `bytes` written with `encoding`:
/// `Some(value)` to return a decoded value, `None` to return the bytes.
pub fn read(bytes: &[u8], encoding: Encoding) -> Option<Value> {
    match encoding {
        Encoding::Bytes => None,
        Encoding::Value | Encoding::Unknown => decode(bytes),
    }
}

/// Encode `v` as a convention payload: the version byte, then msgpack.
pub fn encode(v: &Value) -> Result<Vec<u8>> {
    let mut out = vec![PAYLOAD_MSGPACK_V1];
    rmpv::encode::write_value(&mut out, v)
        .map_err(|e| Error::invalid(format!("cannot encode payload as msgpack: {e}")))?;
    Ok(out)
}

/// Decode a convention payload: `Some(value)` when `bytes` is the version
/// byte followed by exactly one msgpack value (nothing after it), else
/// `None` (the bytes are someone's own format: hand them over as bytes).
pub fn decode(bytes: &[u8]) -> Option<Value> {
    let (&first, mut rest) = bytes.split_first()?;
    if first != PAYLOAD_MSGPACK_V1 {
        return None;
    }
    let v = rmpv::decode::read_value_with_max_depth(&mut rest, MAX_DEPTH).ok()?;
    rest.is_empty().then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_round_trips_through_the_convention() {
        let v = Value::Map(vec![
            (Value::from("doc"), Value::from("s3://b/k.pdf")),
            (Value::from("pages"), Value::from(12)),
            (
                Value::from("tags"),
                Value::Array(vec![Value::from("a"), Value::Nil]),
            ),
            (Value::from("blob"), Value::Binary(vec![0, 1, 2])),
            (Value::from("score"), Value::F64(0.5)),
        ]);
        let b = encode(&v).unwrap();
        assert_eq!(b[0], PAYLOAD_MSGPACK_V1);
        assert_eq!(decode(&b), Some(v));
    }

    #[test]
    fn foreign_bytes_do_not_decode() {
        assert_eq!(decode(b""), None);
        assert_eq!(decode(b"plain text"), None);
        assert_eq!(decode(&[PAYLOAD_MSGPACK_V1]), None);
        // A valid value followed by trailing bytes is not the convention.
        let mut b = encode(&Value::from(1)).unwrap();
        b.push(0);
        assert_eq!(decode(&b), None);
        // Truncated.
        let b = encode(&Value::from("hello")).unwrap();
        assert_eq!(decode(&b[..b.len() - 1]), None);
    }

    #[test]
    fn deep_nesting_is_refused_not_a_stack_overflow() {
        let mut b = vec![PAYLOAD_MSGPACK_V1];
        b.extend(std::iter::repeat_n(0x91u8, 100_000)); // fixarray of 1, nested
        b.push(0xc0);
        assert_eq!(decode(&b), None);
    }
}
