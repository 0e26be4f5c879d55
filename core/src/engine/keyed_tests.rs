use super::*;
use crate::store::keys::Pos;

fn row(id: JobId, ts: u64) -> Parked {
    Parked {
        state: State::Pending,
        prio: 128,
        pos: Pos { ts, id },
        kind: "k".into(),
    }
}

fn id(n: u8) -> JobId {
    JobId::from_bytes([n; 16])
}

#[test]
fn a_full_key_parks_and_each_freed_slot_hands_back_one_row() {
    let g = KeyGate::default();
    assert!(g
        .install(vec![(LimitTarget::EachKey, Limit::concurrency(1))], 0)
        .is_empty());
    let k: KeyOf = (Scope::SYSTEM, "a".into());
    assert_eq!(g.reserve(&k, id(1), row(id(1), 1), 0), KeyReserve::Granted);
    assert_eq!(g.reserve(&k, id(2), row(id(2), 2), 0), KeyReserve::Parked);
    assert_eq!(g.reserve(&k, id(3), row(id(3), 3), 0), KeyReserve::Parked);
    // Parked again at a new position: one entry, the new one.
    assert_eq!(g.reserve(&k, id(3), row(id(3), 4), 0), KeyReserve::Parked);
    assert_eq!(g.parked_len(), 2);
    let back = g.committed(&[], std::slice::from_ref(&k), 0);
    assert_eq!(back.len(), 1);
    assert_eq!(back[0].2.pos.id, id(2), "the most urgent first");
    // Another key is not held by this one.
    let other: KeyOf = (Scope::SYSTEM, "b".into());
    assert_eq!(
        g.reserve(&other, id(9), row(id(9), 9), 0),
        KeyReserve::Granted
    );
    // Removing the rule hands back every parked row.
    let back = g.install(Vec::new(), 0);
    assert_eq!(back.len(), 1);
    assert_eq!(g.parked_len(), 0);
}

#[test]
fn ordered_keys_let_only_their_oldest_unfinished_job_go() {
    let g = KeyGate::default();
    let k: KeyOf = (Scope::SYSTEM, "a".into());
    let live: Vec<_> = (1..=3).map(|n| (k.0, k.1.clone(), id(n), true)).collect();
    assert!(g.committed(&live, &[], 0).is_empty());
    g.install(vec![(LimitTarget::EachKey, Limit::ordered())], 0);
    assert_eq!(g.reserve(&k, id(2), row(id(2), 1), 0), KeyReserve::Parked);
    assert_eq!(g.reserve(&k, id(1), row(id(1), 2), 0), KeyReserve::Granted);
    // id(1) fails and is retried: it leaves leased but is unfinished, so
    // id(2) stays parked.
    assert!(g.committed(&[], std::slice::from_ref(&k), 0).is_empty());
    assert_eq!(g.reserve(&k, id(3), row(id(3), 3), 0), KeyReserve::Parked);
    // id(1) ends: the oldest is id(2), which goes back.
    let back = g.committed(&[(k.0, k.1.clone(), id(1), false)], &[], 0);
    assert_eq!(back.len(), 1);
    assert_eq!(back[0].2.pos.id, id(2));
}
