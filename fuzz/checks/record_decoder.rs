//! The jobs-row value decoder (`store::codec::decode`, the hand-written
//! MessagePack of `store/msgpack.rs`) on arbitrary bytes. It must answer a
//! record or `Corruption`, never panic; and for a record it accepts:
//!
//! - `encode(decode(x))` decodes to the same record (unknown extension
//!   tags and trailing array elements are kept as their exact bytes and
//!   written back byte-for-byte, so they survive the trip);
//! - re-encoding is a fixed point: `encode(decode(encode(r))) == encode(r)`;
//! - against rmpv, an independent MessagePack reader: the bytes after the
//!   format byte are exactly one MessagePack value, every kept value is
//!   exactly one value, and the re-encoding is one array whose elements
//!   are the record's fields in order;
//! - what a transition does to a row read from disk (log an event, which
//!   folds and bounds the log; hand the payload to a front end) does not
//!   panic, and the result still round-trips.

use rmpv::Value;
use telha_jobs::payload;
use telha_jobs::store::codec::{self, JobRecord};
use telha_jobs::{ErrorKind, Event};

/// `b` is exactly one MessagePack value, read by rmpv.
fn one_value(b: &[u8]) -> Option<Value> {
    let mut rest = b;
    let v = rmpv::decode::read_value_with_max_depth(&mut rest, 1024).ok()?;
    rest.is_empty().then_some(v)
}

/// `v` as rmpv writes it: values compare by their bytes, since `Value`'s
/// equality is float equality and a NaN is not equal to itself.
fn bytes_of(v: &Value) -> Vec<u8> {
    let mut b = Vec::new();
    rmpv::encode::write_value(&mut b, v).expect("write to a Vec");
    b
}

/// What rmpv reads in an encoding made by `codec::encode`.
fn check_encoding(r: &JobRecord, enc: &[u8]) {
    assert_eq!(enc[0], codec::FORMAT_V1);
    let Some(Value::Array(a)) = one_value(&enc[1..]) else {
        panic!("an encoded record is not one MessagePack array");
    };
    let with_ext = a.len() > 14;
    assert_eq!(a.len(), 14 + usize::from(with_ext) + r.ext.tail.len());
    assert_eq!(a[0].as_str(), Some(r.kind.as_str()));
    assert_eq!(a[1], Value::Binary(r.payload.clone()));
    assert_eq!(a[2].as_u64(), Some(r.attempts as u64));
    assert_eq!(a[5].as_u64(), Some(r.generation));
    assert_eq!(a[7].as_u64(), Some(r.created_at));
    assert_eq!(a[8].as_u64(), Some(r.ready_at));
    assert_eq!(a[11].as_array().map(Vec::len), Some(r.events.len()));
    assert_eq!(a[12].as_u64(), Some(r.dropped_events as u64));
    if with_ext {
        let m = a[14].as_map().expect("element 14 is the extension map");
        let tag = |t: u64| m.iter().find(|(k, _)| k.as_u64() == Some(t));
        assert_eq!(
            tag(3).and_then(|(_, v)| v.as_u64()),
            r.ext.ceiling.map(u64::from),
            "the ceiling tag"
        );
        assert_eq!(
            tag(4).and_then(|(_, v)| v.as_u64()),
            r.ext.payload_len,
            "the payload length tag"
        );
        assert_eq!(
            tag(5).and_then(|(_, v)| v.as_str()),
            r.ext.cancel_requested.as_deref(),
            "the cancel request tag"
        );
        assert_eq!(
            tag(6).and_then(|(_, v)| v.as_u64()).unwrap_or(0),
            r.ext.snoozes as u64,
            "the snoozes tag"
        );
        assert_eq!(
            tag(7).and_then(|(_, v)| v.as_u64()),
            r.ext.expires_at,
            "the expiry tag"
        );
        assert_eq!(
            tag(8).and_then(|(_, v)| v.as_u64()),
            r.ext.leased_at,
            "the lease start tag"
        );
        let schedule = tag(10).map(|(_, v)| {
            let a = v.as_array().expect("the schedule tag is an array");
            (
                a[0].as_str().map(str::to_string),
                a[1].as_u64(),
                a[2].as_u64(),
            )
        });
        assert_eq!(
            schedule,
            r.ext
                .schedule
                .as_ref()
                .map(|s| (Some(s.name.clone()), Some(s.slot), Some(s.missed))),
            "the schedule tag"
        );
        for (tag, v) in &r.ext.unknown {
            let want = bytes_of(&one_value(v).expect("a kept value is one value"));
            assert!(
                m.iter()
                    .any(|(k, x)| k.as_u64() == Some(*tag) && bytes_of(x) == want),
                "unknown tag {tag} lost"
            );
        }
        for (i, v) in r.ext.tail.iter().enumerate() {
            let kept = bytes_of(&one_value(v).expect("a kept value is one value"));
            assert_eq!(bytes_of(&a[15 + i]), kept, "tail {i} moved");
        }
    }
}

fn round_trip(r: &JobRecord) -> Vec<u8> {
    let once = codec::encode(r).expect("a decoded record encodes");
    check_encoding(r, &once);
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

/// The target's whole check on one input: panics on a finding.
pub fn check(data: &[u8]) {
    match codec::decode(data) {
        Ok(r) => {
            assert!(
                one_value(&data[1..]).is_some(),
                "accepted bytes that are not one MessagePack value"
            );
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
}
