//! The jobs-row value decoder (`store::codec::decode`, the hand-written
//! MessagePack of `store/msgpack.rs`) on arbitrary bytes. It must answer a
//! record or `Corruption`, never panic; and for a record it accepts:
//!
//! - `encode(decode(x))` decodes to the same record (unknown extension
//!   tags and trailing array elements are kept as their exact bytes and
//!   written back byte-for-byte, so they survive the trip);
//! - re-encoding is a fixed point: `encode(decode(encode(r))) == encode(r)`;
//! - what a transition does to a row read from disk (log an event, which
//!   folds and bounds the log; hand the payload to a front end) does not
//!   panic, and the result still round-trips.
#![no_main]

use libfuzzer_sys::fuzz_target;
use telha_jobs::payload;
use telha_jobs::store::codec::{self, JobRecord};
use telha_jobs::{ErrorKind, Event};

fn round_trip(r: &JobRecord) -> Vec<u8> {
    let once = codec::encode(r).expect("a decoded record encodes");
    let again = codec::decode(&once).expect("an encoded record decodes");
    assert_eq!(&again, r, "encode(decode(x)) decodes to another record");
    let twice = codec::encode(&again).expect("re-encode");
    assert_eq!(twice, once, "re-encoding is not a fixed point");
    once
}

fn kept_bytes_are_in(r: &JobRecord, enc: &[u8]) {
    // Each kept value appears verbatim in the re-encoding.
    for v in r.ext.unknown.iter().map(|(_, v)| v).chain(&r.ext.tail) {
        assert!(!v.is_empty(), "a kept value with no bytes");
        assert!(
            enc.windows(v.len()).any(|w| w == &v[..]),
            "a kept value is not written back byte-for-byte"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    match codec::decode(data) {
        Ok(r) => {
            let enc = round_trip(&r);
            kept_bytes_are_in(&r, &enc);
            let _ = payload::read(&r.payload, r.ext.payload_encoding);
            if let Some(res) = &r.result {
                let _ = payload::read(res, r.ext.result_encoding);
            }
            let _ = r.events();
            let mut logged = r.clone();
            logged.log(r.created_at, Event::Failed, "fuzz");
            logged.log(r.ready_at, Event::Leased, "x".repeat(5000));
            round_trip(&logged);
        }
        Err(e) => assert_eq!(e.kind(), ErrorKind::Corruption, "{e}"),
    }
});
