use super::*;
use crate::event::{Event, LogEntry};

fn rec() -> JobRecord {
    JobRecord {
        kind: "embed".into(),
        payload: vec![1, 2, 3],
        created_at: 1,
        ready_at: 1,
        ..JobRecord::default()
    }
}

/// Today's rows as the earlier serde encoder wrote them: a 14-element array.
fn serde_row(r: &JobRecord, with_max: bool) -> Vec<u8> {
    let mut b = vec![FORMAT_V1];
    let head = (
        &r.kind,
        serde_bytes::Bytes::new(&r.payload),
        r.attempts,
        &r.worker_id,
        r.lease_deadline,
        r.generation,
        &r.idempotency_key,
        r.created_at,
        r.ready_at,
        r.result.as_deref().map(serde_bytes::Bytes::new),
        &r.last_error,
        &r.events,
        r.dropped_events,
    );
    if with_max {
        let row = (
            head.0,
            head.1,
            head.2,
            head.3,
            head.4,
            head.5,
            head.6,
            head.7,
            head.8,
            head.9,
            head.10,
            head.11,
            head.12,
            r.max_attempts,
        );
        rmp_serde::encode::write(&mut b, &row).unwrap();
    } else {
        rmp_serde::encode::write(&mut b, &head).unwrap();
    }
    b
}

#[test]
fn records_round_trip() {
    let mut r = rec();
    r.result = Some(vec![9]);
    r.worker_id = Some("w".into());
    r.lease_deadline = Some(u64::MAX);
    r.max_attempts = Some(3);
    r.log(5, Event::Enqueued, "");
    r.ext.payload_encoding = Encoding::Value;
    r.ext.ceiling = Some(3);
    assert_eq!(decode(&encode(&r).unwrap()).unwrap(), r);
}

#[test]
fn the_job_control_fields_round_trip_one_by_one_and_together() {
    let base = rec();
    let mut all = rec();
    for set in [
        (|r: &mut JobRecord| r.ext.cancel_requested = Some("stop: ünïcode".into()))
            as fn(&mut JobRecord),
        |r| r.ext.snoozes = u32::MAX,
        |r| r.ext.expires_at = Some(253_402_300_799_999),
        |r| r.ext.leased_at = Some(1),
    ] {
        let mut r = base.clone();
        set(&mut r);
        set(&mut all);
        let bytes = encode(&r).unwrap();
        assert_ne!(bytes, encode(&base).unwrap(), "the field is written");
        assert_eq!(decode(&bytes).unwrap(), r);
    }
    assert_eq!(decode(&encode(&all).unwrap()).unwrap(), all);
    // Back at their defaults they leave no trace: format-1 bytes again.
    let mut cleared = all.clone();
    cleared.ext.cancel_requested = None;
    cleared.ext.snoozes = 0;
    cleared.ext.expires_at = None;
    cleared.ext.leased_at = None;
    assert_eq!(encode(&cleared).unwrap(), encode(&base).unwrap());
}

#[test]
fn rows_of_the_serde_encoder_decode_the_same() {
    let mut r = rec();
    r.attempts = 2;
    r.result = Some(b"ok".to_vec());
    r.log(5, Event::Enqueued, "x");
    r.max_attempts = Some(4);
    assert_eq!(decode(&serde_row(&r, true)).unwrap(), r);
    // A record using no extension is written exactly as format-1 readers expect.
    assert_eq!(encode(&r).unwrap(), serde_row(&r, true));
}

#[test]
fn a_v01_array_row_without_max_attempts_decodes_with_none() {
    let mut r = rec();
    r.attempts = 2;
    r.log(5, Event::Enqueued, "");
    let d = decode(&serde_row(&r, false)).unwrap();
    assert_eq!(d.max_attempts, None);
    assert_eq!(d, r);
}

#[test]
fn a_named_row_decodes_and_ignores_names_it_does_not_know() {
    #[derive(serde::Serialize)]
    struct V01 {
        kind: String,
        #[serde(with = "serde_bytes")]
        payload: Vec<u8>,
        attempts: u32,
        created_at: u64,
        colour: &'static str,
    }
    let mut b = vec![FORMAT_V1];
    rmp_serde::encode::write_named(
        &mut b,
        &V01 {
            kind: "embed".into(),
            payload: vec![1],
            attempts: 2,
            created_at: 3,
            colour: "blue",
        },
    )
    .unwrap();
    let r = decode(&b).unwrap();
    assert_eq!(
        (r.max_attempts, r.attempts, r.kind.as_str(), r.created_at),
        (None, 2, "embed", 3)
    );
}

/// A row as a newer build might write it: two extension tags this build
/// does not know, and two array elements after the extension map.
fn future_row(r: &JobRecord) -> Vec<u8> {
    let mut b = encode(r).unwrap();
    // Rewrite the array header (14 known + ext + 2 tail) and append.
    assert_eq!(b[1], 0x9e, "a 14-element fixarray");
    b.splice(1..2, [0xdc, 0x00, 17]);
    let mut w = Writer(&mut b);
    w.map(3);
    w.uint(tag::PAYLOAD_ENCODING);
    w.uint(Encoding::Bytes.code() as u64);
    w.uint(40);
    w.str("a field from the future");
    w.uint(41);
    w.array(2);
    w.uint(7);
    w.nil();
    w.str("tail one");
    w.map(1);
    w.str("k");
    w.bin(&[0xff; 3]);
    b
}

#[test]
fn fields_of_a_newer_build_are_ignored_and_kept_when_the_row_is_rewritten() {
    let mut r = rec();
    r.log(5, Event::Enqueued, "");
    let row = future_row(&r);
    let mut d = decode(&row).unwrap();
    assert_eq!(d.kind, "embed");
    assert_eq!(
        d.ext.payload_encoding,
        Encoding::Bytes,
        "a known tag is read"
    );
    assert_eq!(d.ext.unknown.len(), 2);
    assert_eq!(d.ext.tail.len(), 2);
    // Untouched, the row is written back byte for byte.
    assert_eq!(encode(&d).unwrap(), row);
    // Changed (as a lease does), the unknown fields are still there.
    d.generation = 1;
    d.log(6, Event::Leased, "w");
    let again = decode(&encode(&d).unwrap()).unwrap();
    assert_eq!(again.ext.unknown, d.ext.unknown);
    assert_eq!(again.ext.tail, d.ext.tail);
    assert_eq!(again.generation, 1);
}

#[test]
fn garbage_is_corruption() {
    for b in [
        &b""[..],
        &[0u8][..],
        &[1, 0xc1][..],
        &[1, 0x92, 0x01][..],
        &[7, 1, 2][..],
        &[1, 0x91, 0xa1, b'x'][..],
        &[1, 0x92, 0xa1, b'x', 0xc4, 0x00, 0x00][..],
    ] {
        assert!(matches!(decode(b), Err(Error::Corruption(_))), "{b:?}");
    }
}

#[test]
fn the_event_log_is_bounded_and_counts_what_it_dropped() {
    let mut r = rec();
    for i in 0..(MAX_EVENTS as u64 + 10) {
        r.log(i, Event::Released, "w");
    }
    assert_eq!(r.events.len(), MAX_EVENTS);
    assert_eq!(r.dropped_events, 10);
    assert_eq!(r.events[0].0, 10);
}

#[test]
fn a_poison_job_with_100_attempts_keeps_every_attempt_in_its_log() {
    let mut r = rec();
    r.log(0, Event::Enqueued, "");
    for a in 1..=100u64 {
        r.log(a * 10, Event::Leased, format!("w{a} (attempt {a})"));
        let what = if a % 2 == 0 {
            Event::LeaseExpired
        } else {
            Event::Failed
        };
        r.log(a * 10 + 3, what, format!("w{a}: boom (attempt {a} of 100)"));
    }
    r.log(1004, Event::Dead, "attempts exhausted");
    let folded: Vec<_> = r
        .events
        .iter()
        .filter(|(_, t, _)| t == LogEntry::ATTEMPT)
        .collect();
    let full_failures = r
        .events
        .iter()
        .filter(|(_, t, _)| t == "failed" || t == "lease_expired")
        .count();
    assert_eq!(folded.len() + full_failures, 100, "{:#?}", r.events);
    assert_eq!(r.dropped_events, 1, "only the enqueued entry was dropped");
    assert!(r.events.len() <= MAX_EVENTS + folded.len());
    for a in 1..=100u64 {
        let needle = format!("(attempt {a} of 100)");
        assert_eq!(
            r.events
                .iter()
                .filter(|(_, _, d)| d.contains(&needle))
                .count(),
            1,
            "attempt {a}"
        );
    }
    assert_eq!(folded[0].0, 10, "a folded attempt keeps its lease time");
    assert!(
        folded[0].2.starts_with("failed after 3 ms: w1: boom"),
        "{}",
        folded[0].2
    );
    assert_eq!(decode(&encode(&r).unwrap()).unwrap(), r);
}

#[test]
fn folded_attempts_are_bounded_too() {
    let mut r = rec();
    for a in 0..(MAX_ATTEMPT_SUMMARIES as u64 + MAX_EVENTS as u64) {
        r.log(a, Event::Leased, "w");
        r.log(a, Event::Failed, "w: x");
    }
    let folded = r.folded_len();
    assert_eq!(folded, MAX_ATTEMPT_SUMMARIES);
    assert_eq!(r.events.len() - folded, MAX_EVENTS);
    assert!(r.dropped_events > 0);
}

fn tagged() -> JobRecord {
    let mut r = rec();
    r.ext.tags = Tags::new(&["order-4711", "müller"]);
    r.ext.metadata.insert("trace".into(), "00-abc-01".into());
    r.ext.metadata.insert("actor".into(), "ops".into());
    r.log(5, Event::Enqueued, "");
    r
}

#[test]
fn tags_and_metadata_round_trip_as_tags_13_and_14() {
    let r = tagged();
    let row = encode(&r).unwrap();
    assert_eq!(decode(&row).unwrap(), r);
    assert!(encoded_len_hint(&r) >= row.len(), "the hint covers them");
    // None of them: nothing written (a format-1 reader's record).
    let mut plain = r.clone();
    plain.ext.tags = Tags::default();
    plain.ext.metadata.clear();
    let p = encode(&plain).unwrap();
    assert_eq!(p[1], 0x9e, "no extension map");
}

#[test]
fn an_older_build_keeps_tags_and_metadata_as_unknown_tags() {
    // What a build without tags 13 and 14 reads: the same record with
    // both held as unknown tags (their exact bytes), in the order read.
    let r = tagged();
    let row = encode(&r).unwrap();
    let mut old = r.clone();
    let (mut t, mut m) = (Vec::new(), Vec::new());
    {
        let mut w = Writer(&mut t);
        w.array(r.ext.tags.len());
        for x in &r.ext.tags {
            w.str(x);
        }
        let mut w = Writer(&mut m);
        w.map(r.ext.metadata.len());
        for (k, v) in &r.ext.metadata {
            w.str(k);
            w.str(v);
        }
    }
    old.ext.tags = Tags::default();
    old.ext.metadata.clear();
    old.ext.unknown = vec![(13, t), (14, m)];
    // Its rewrite of the untouched record is byte for byte this one's.
    assert_eq!(encode(&old).unwrap(), row);
    // After its lease, this build reads the tags and metadata back.
    old.generation = 1;
    old.log(6, Event::Leased, "w");
    let back = decode(&encode(&old).unwrap()).unwrap();
    assert_eq!(back.ext.tags, r.ext.tags);
    assert_eq!(back.ext.metadata, r.ext.metadata);
    assert!(back.ext.unknown.is_empty());
    assert_eq!(back.generation, 1);
}
