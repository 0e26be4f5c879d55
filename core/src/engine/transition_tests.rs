//! `transition.rs`'s tests (split from it).

use super::*;

#[test]
fn the_cached_handles_are_the_dbs_own() {
    let d = tempfile::tempdir().unwrap();
    let clock = std::sync::Arc::new(crate::clock::SystemClock);
    let e = Engine::open(d.path(), crate::Config::default(), clock).unwrap();
    for name in st::ALL_CFS {
        let cached: *const rocksdb::ColumnFamily = e.cf(name).unwrap();
        let looked_up: *const rocksdb::ColumnFamily = e.db().cf_handle(name).unwrap();
        assert_eq!(cached, looked_up, "{name}");
    }
    assert!(matches!(e.cf("nope"), Err(Error::Corruption(_))));
}

#[test]
fn every_event_has_a_rule_and_only_deletes_leave_no_row() {
    for ev in Event::ALL {
        let (from, to) = rule(ev);
        assert!(!from.is_empty() && !to.is_empty(), "{ev}");
        let deletes = matches!(ev, Event::Pruned | Event::Purged | Event::Deleted);
        assert_eq!(to.contains(&None), deletes, "{ev}");
        assert_eq!(from.contains(&None), ev == Event::Enqueued, "{ev}");
    }
}

#[test]
fn every_state_is_reached_and_left_by_some_rule() {
    for s in State::ALL {
        let reached = Event::ALL.iter().any(|e| rule(*e).1.contains(&Some(s)));
        let left = Event::ALL.iter().any(|e| rule(*e).0.contains(&Some(s)));
        assert!(reached && left, "{s}");
    }
}
