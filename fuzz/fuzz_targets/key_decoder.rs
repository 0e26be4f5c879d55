//! The key decoders (`store::keys`: jobs keys, kind-index keys, positions,
//! hex cursors; `store::decode_counters`) on arbitrary bytes: each answers
//! a value or `Corruption` / `None`, never panics, and what it accepts
//! encodes back to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use telha_jobs::store::keys::{self, JobKey, KindKey, JOB_KEY_LEN};
use telha_jobs::store::{decode_counters, encode_counters};
use telha_jobs::ErrorKind;

fuzz_target!(|data: &[u8]| {
    match JobKey::decode(data) {
        Ok(k) => {
            assert_eq!(data.len(), JOB_KEY_LEN);
            assert_eq!(&k.encode()[..], data);
        }
        Err(e) => assert_eq!(e.kind(), ErrorKind::Corruption),
    }
    match KindKey::decode(data) {
        Ok(k) => assert_eq!(keys::kind_key(&k.scope, &k.kind, k.priority, k.pos), data),
        Err(e) => assert_eq!(e.kind(), ErrorKind::Corruption),
    }
    if let Some(p) = keys::decode_pos(data) {
        assert_eq!(&p.encode()[..], data);
    }
    if let Some(c) = decode_counters(data) {
        assert_eq!(&encode_counters(&c)[..], data);
    }
    if let Ok(s) = std::str::from_utf8(data) {
        if let Some(b) = keys::unhex(s) {
            assert_eq!(keys::hex(&b), s.to_ascii_lowercase());
        }
    }
});
