//! The key and counter decoders (`store::keys`: jobs keys, kind-index
//! keys, positions, hex cursors; `store::decode_counters`,
//! `state::{decode_counter_values, merge_counter_values}`) on arbitrary
//! bytes: each answers a value or `Corruption` / `None`, never panics, and
//! what it accepts encodes back to the same bytes. The counters merge (the
//! RocksDB merge operator, run on whatever values and operands are on
//! disk) is checked against a plain element-wise sum: as long as the
//! longest well-formed input, malformed ones ignored.

use telha_jobs::state::{decode_counter_values, merge_counter_values};
use telha_jobs::store::keys::{self, JobKey, KindKey, JOB_KEY_LEN};
use telha_jobs::store::{decode_counters, encode_counters};
use telha_jobs::{ErrorKind, State};

/// `data` cut into pieces, each prefixed by its length byte.
fn pieces(mut data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    while let Some((&n, rest)) = data.split_first() {
        let n = (n as usize).min(rest.len());
        out.push(&rest[..n]);
        data = &rest[n..];
    }
    out
}

fn merge_is_an_element_wise_sum(data: &[u8]) {
    let p = pieces(data);
    let (existing, ops) = match p.split_first() {
        Some((first, rest)) => (Some(*first), rest),
        None => (None, &[][..]),
    };
    let merged = merge_counter_values(existing, ops.iter().copied());
    let mut want: Vec<i64> = Vec::new();
    for v in existing.into_iter().chain(ops.iter().copied()) {
        if let Some(d) = decode_counter_values(v) {
            if d.len() > want.len() {
                want.resize(d.len(), 0);
            }
            for (a, x) in want.iter_mut().zip(d) {
                *a = a.wrapping_add(x);
            }
        }
    }
    if want.is_empty() {
        want.resize(State::COUNT, 0);
    }
    assert_eq!(decode_counter_values(&merged), Some(want));
}

/// The target's whole check on one input: panics on a finding.
pub fn check(data: &[u8]) {
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
        assert!(p.successor() >= p);
    }
    match decode_counter_values(data) {
        Some(v) => {
            assert_eq!(v.len() * 8, data.len());
            let c = decode_counters(data).expect("counters of any accepted length");
            let n = v.len().min(State::COUNT);
            assert_eq!(&encode_counters(&c)[..n * 8], &data[..n * 8]);
        }
        None => assert_eq!(decode_counters(data), None),
    }
    merge_is_an_element_wise_sum(data);
    if let Ok(s) = std::str::from_utf8(data) {
        if let Some(b) = keys::unhex(s) {
            assert_eq!(keys::hex(&b), s.to_ascii_lowercase());
        }
    }
}
