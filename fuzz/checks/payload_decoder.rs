//! The cross-language payload convention decoder (`payload::decode`, and
//! `payload::read` for each recorded encoding) on arbitrary bytes:
//! `Some(value)` or `None`, never a panic, a stack overflow or a huge
//! allocation; a decoded value re-encodes to bytes that decode to the same
//! encoding (compared as bytes: NaN is not equal to itself).

use telha_jobs::payload::{self, Encoding};

/// The target's whole check on one input: panics on a finding.
pub fn check(data: &[u8]) {
    assert_eq!(payload::read(data, Encoding::Bytes), None);
    let v = payload::decode(data);
    assert_eq!(
        payload::read(data, Encoding::Value).is_some(),
        v.is_some(),
        "read(Value) and decode disagree"
    );
    if let Some(v) = v {
        let once = payload::encode(&v).expect("a decoded value encodes");
        let back = payload::decode(&once).expect("an encoded value decodes");
        assert_eq!(payload::encode(&back).expect("re-encode"), once);
    }
}
