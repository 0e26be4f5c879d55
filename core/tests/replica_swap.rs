//! A replica store's snapshot pieces (core/src/replica/swap.rs): a
//! checkpoint opens read-only with what was applied before it; `close`
//! waits for the last handle and gives its handle back when others hold
//! on; `swap_in` puts a checkpoint in the store's place; a swap cut
//! between its renames is repaired by the next open.

mod common;

use std::time::Duration;

use common::expect_err;
use telha_jobs::replica::ReplicaStore;
use telha_jobs::ErrorKind;

const APPLIED: &[u8] = b"raft/applied";

fn applied(s: &ReplicaStore) -> Option<Vec<u8>> {
    s.meta_get(APPLIED).unwrap()
}

#[test]
fn a_checkpoint_opens_read_only_with_what_was_applied_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = ReplicaStore::open(&dir.path().join("store")).unwrap();
    store.apply(&[], &[(APPLIED, b"1")]).unwrap();
    let cp = dir.path().join("cp");
    let info = store.checkpoint(&cp).unwrap();
    assert!(info.files > 0, "{info:?}");
    store.apply(&[], &[(APPLIED, b"2")]).unwrap();

    let copy = ReplicaStore::open_read_only(&cp).unwrap();
    assert_eq!(applied(&copy).as_deref(), Some(&b"1"[..]));
    assert_eq!(copy.cf_table_digest(), store.cf_table_digest());
    assert_eq!(copy.check(Default::default()).unwrap().problems.len(), 0);
    // Read-only: an apply is refused, and takes no lock (the store is open).
    assert!(copy.apply(&[], &[(APPLIED, b"3")]).is_err());
    assert!(!cp.join("telha.pid").exists());
    expect_err(
        ReplicaStore::open_read_only(&dir.path().join("none")),
        ErrorKind::NotFound,
    );
}

#[test]
fn close_waits_for_the_last_handle_and_swap_in_puts_a_checkpoint_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let store = ReplicaStore::open(&path).unwrap();
    store.apply(&[], &[(APPLIED, b"1")]).unwrap();
    let cp = dir.path().join("cp");
    store.checkpoint(&cp).unwrap();
    store.apply(&[], &[(APPLIED, b"2")]).unwrap();

    // Another handle holds on past the wait: the handle comes back.
    let other = store.clone();
    let (e, store) = store.close(Duration::from_millis(50)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable);
    assert!(e.to_string().contains("still in use"), "{e}");
    // Let go during the wait: closed.
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        drop(other);
    });
    store
        .close(Duration::from_secs(10))
        .map_err(|(e, _)| e)
        .unwrap();
    t.join().unwrap();

    let swapped = ReplicaStore::swap_in(&path, &cp).unwrap();
    assert_eq!(applied(&swapped).as_deref(), Some(&b"1"[..]));
    assert!(!cp.exists(), "the checkpoint was renamed in");
    assert!(!dir.path().join(".store.telha-replaced").exists());
    // It is the store now: written, closed, reopened.
    swapped.apply(&[], &[(APPLIED, b"3")]).unwrap();
    drop(swapped);
    let again = ReplicaStore::open(&path).unwrap();
    assert_eq!(applied(&again).as_deref(), Some(&b"3"[..]));
    // No store to swap in: refused, nothing moved.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    drop(again);
    let e = expect_err(
        ReplicaStore::swap_in(&path, &empty),
        ErrorKind::InvalidArgument,
    );
    assert!(e.to_string().contains("holds no store"), "{e}");
    let again = ReplicaStore::open(&path).unwrap();
    assert_eq!(applied(&again).as_deref(), Some(&b"3"[..]));
}

#[test]
fn a_swap_cut_between_its_renames_is_repaired_by_the_next_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let aside = dir.path().join(".store.telha-replaced");
    let store = ReplicaStore::open(&path).unwrap();
    store.apply(&[], &[(APPLIED, b"old")]).unwrap();
    let cp = dir.path().join("cp");
    store.checkpoint(&cp).unwrap();
    drop(store);

    // Cut after the first rename: only the old store, aside. Put back.
    std::fs::rename(&path, &aside).unwrap();
    let store = ReplicaStore::open(&path).unwrap();
    assert_eq!(applied(&store).as_deref(), Some(&b"old"[..]));
    assert!(!aside.exists());
    store.apply(&[], &[(APPLIED, b"old2")]).unwrap();
    drop(store);

    // Cut after the second rename: the new store in place, the old aside.
    // The new one stays, the old one goes.
    std::fs::rename(&path, &aside).unwrap();
    std::fs::rename(&cp, &path).unwrap();
    let store = ReplicaStore::open(&path).unwrap();
    assert_eq!(applied(&store).as_deref(), Some(&b"old"[..]));
    assert!(!aside.exists());
}
