//! The limiter's unit tests (caps, rates, recounts, weights).
use super::*;

fn scope(n: u8) -> Scope {
    Scope::from_bytes([n; 16])
}

#[test]
fn a_cap_holds_until_a_lease_settles() {
    let (l, b) = (Limiter::default(), Bands::default());
    l.install(vec![(LimitTarget::EachScope, Limit::concurrency(2))], 0, &b);
    let s = scope(1);
    b.activate(s);
    assert_eq!(l.reserve(s, None, 0, &b), Reserve::Granted(None));
    l.note_leased(s, "a");
    assert_eq!(l.reserve(s, None, 0, &b), Reserve::Granted(Some(u64::MAX)));
    assert!(b.rotated(0).is_empty(), "a scope at its cap is not visited");
    l.note_leased(s, "a");
    assert_eq!(l.reserve(s, None, 0, &b), Reserve::Refused);
    assert_eq!(l.reserve(scope(2), None, 0, &b), Reserve::Granted(None));
    assert!(l.unleased(&[(s, "a".into())], &b));
    assert_eq!(b.rotated(0).len(), 1, "a settle frees the scope");
    assert_eq!(l.reserve(s, None, 0, &b), Reserve::Granted(Some(u64::MAX)));
    let st = l.status(0);
    assert_eq!((st[0].leased, st[0].held), (3, 1));
}

#[test]
fn a_rate_refills_with_the_clock() {
    let (l, b) = (Limiter::default(), Bands::default());
    let k = LimitTarget::Kind("embed".parse().unwrap());
    l.install(vec![(k, Limit::rate(50.0, 2))], 1000, &b);
    let s = scope(1);
    assert!(matches!(
        l.reserve(s, Some("embed"), 1000, &b),
        Reserve::Granted(_)
    ));
    assert!(matches!(
        l.reserve(s, Some("embed"), 1000, &b),
        Reserve::Granted(_)
    ));
    assert_eq!(l.reserve(s, Some("embed"), 1000, &b), Reserve::Refused);
    assert_eq!(
        l.reserve(s, Some("other"), 1000, &b),
        Reserve::Granted(None)
    );
    let (blocked, wake) = l.blocked_kinds(s, 1010);
    assert_eq!((blocked.len(), wake), (1, Some(1020)));
    assert!(matches!(
        l.reserve(s, Some("embed"), 1020, &b),
        Reserve::Granted(_)
    ));
    assert_eq!(l.reserve(s, Some("embed"), 1039, &b), Reserve::Refused);
}

#[test]
fn new_rules_count_the_leases_that_exist() {
    let (l, b) = (Limiter::default(), Bands::default());
    let s = scope(3);
    for _ in 0..3 {
        l.note_leased(s, "embed");
    }
    let t = LimitTarget::ScopeKind(s, "embed".parse().unwrap());
    l.install(vec![(t, Limit::concurrency(3))], 0, &b);
    assert_eq!(l.reserve(s, Some("embed"), 0, &b), Reserve::Refused);
    assert_eq!(l.reserve(s, Some("ingest"), 0, &b), Reserve::Granted(None));
    assert_eq!(l.status(0)[0].leased, 3);
}

#[test]
fn a_scope_weight_prefers_its_own_rule() {
    let l = Limiter::default();
    l.install(
        vec![
            (LimitTarget::EachScope, Limit::weight(2)),
            (LimitTarget::Scope(scope(1)), Limit::weight(5)),
        ],
        0,
        &Bands::default(),
    );
    assert_eq!((l.weight(&scope(1)), l.weight(&scope(2))), (5, 2));
    assert!(l.weighted());
}

#[test]
fn a_sweep_forgets_idle_tenants_once_their_buckets_refill() {
    let (l, b) = (Limiter::default(), Bands::default());
    l.install(vec![(LimitTarget::EachScope, Limit::rate(10.0, 1))], 0, &b);
    for i in 1..=50 {
        assert!(matches!(
            l.reserve(scope(i), None, 0, &b),
            Reserve::Granted(_)
        ));
        l.note_leased(scope(i), "a");
    }
    let done: Vec<(Scope, String)> = (1..=49).map(|i| (scope(i), "a".to_string())).collect();
    l.unleased(&done, &b);
    assert_eq!(l.instances(), 50, "their buckets are still empty");
    l.sweep(50);
    assert_eq!(l.instances(), 50, "half a token later, still refilling");
    l.sweep(100);
    assert_eq!(
        l.instances(),
        1,
        "only the tenant that holds a lease is kept"
    );
    assert_eq!(l.status(100)[0].leased, 1);
}
