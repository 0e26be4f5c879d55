//! The cross-language payload convention decoder (`payload::decode`) on
//! arbitrary bytes: `Some(value)` or `None`, never a panic or a stack
//! overflow; a decoded value re-encodes to bytes that decode to the same
//! encoding (compared as bytes: NaN is not equal to itself).
#![no_main]

use libfuzzer_sys::fuzz_target;
use telha_jobs::payload;

fuzz_target!(|data: &[u8]| {
    if let Some(v) = payload::decode(data) {
        let once = payload::encode(&v).expect("a decoded value encodes");
        let back = payload::decode(&once).expect("an encoded value decodes");
        assert_eq!(payload::encode(&back).expect("re-encode"), once);
    }
});
