//! Failpoints (cargo feature `failpoints`, tests only): named instants in
//! the group-commit flusher and the state machine at which a node
//! "crashes". One point is armed at a time, for one node's directory, to
//! fire at its `skip + 1`-th hit there. When it fires, the armed callback
//! runs first (the harness takes the node off the network: nothing more
//! leaves or arrives), then the site stops doing work as a killed process
//! would:
//!
//! - [`Point::BeforeLogFlush`]: the flusher syncs nothing more and
//!   completes no append (each completion answers an error, which stops
//!   openraft);
//! - [`Point::AfterLogFlush`]: the same, after one last sync of the group;
//! - [`Point::BeforeApply`]: the entry is not applied, openraft is stopped
//!   by a storage error;
//! - [`Point::AfterApply`]: the entry is applied (its batches and applied
//!   id on the store), then openraft is stopped the same way, so no reply
//!   leaves for it.
//! - [`Point::InstallBeforeSwap`]: a received snapshot is staged and
//!   verified, the store not yet swapped: the install answers an error
//!   (openraft stops) and leaves the staging directory as a killed
//!   process would;
//! - [`Point::InstallAfterSwap`]: the snapshot is swapped in for the
//!   store, its applied id not yet visible to openraft (nor retained as
//!   the node's snapshot): the same.
//!
//! The harness then drops the node's Raft and stores (`TestCluster::crash`):
//! what reached the log's and the store's files is what a restart finds, as
//! after a process kill.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Point {
    BeforeLogFlush,
    AfterLogFlush,
    BeforeApply,
    AfterApply,
    InstallBeforeSwap,
    InstallAfterSwap,
}

impl Point {
    pub const ALL: [Point; 4] = [
        Point::BeforeLogFlush,
        Point::AfterLogFlush,
        Point::BeforeApply,
        Point::AfterApply,
    ];

    /// The points inside a snapshot install (not in [`Point::ALL`]: a
    /// run without installs never hits them).
    pub const INSTALL: [Point; 2] = [Point::InstallBeforeSwap, Point::InstallAfterSwap];

    pub fn is_install(self) -> bool {
        Point::INSTALL.contains(&self)
    }
}

type OnFire = Box<dyn FnOnce() + Send>;

struct Armed {
    point: Point,
    /// The node's directory, as given and canonical: the point fires only
    /// for stores under it (the replica store opens a canonical path).
    dir: PathBuf,
    canonical: PathBuf,
    skip: u64,
    on_fire: Option<OnFire>,
}

static ARMED: Mutex<Option<Armed>> = Mutex::new(None);
/// (point, directory) of the last point that fired, until taken.
static FIRED: Mutex<Option<(Point, PathBuf)>> = Mutex::new(None);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Arm `point` for the node whose directories are under `dir`: it fires at
/// its `skip + 1`-th hit there, calling `on_fire` first. Replaces whatever
/// was armed.
pub fn arm(point: Point, dir: &Path, skip: u64, on_fire: impl FnOnce() + Send + 'static) {
    *lock(&FIRED) = None;
    *lock(&ARMED) = Some(Armed {
        point,
        dir: dir.to_path_buf(),
        canonical: std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf()),
        skip,
        on_fire: Some(Box::new(on_fire)),
    });
}

/// Disarm without firing.
pub fn disarm() {
    *lock(&ARMED) = None;
}

/// The point that fired since [`arm`], if any.
pub fn fired() -> Option<(Point, PathBuf)> {
    lock(&FIRED).clone()
}

/// Called by a site: true when `point` fires now for the store at `path`.
pub(crate) fn hit(point: Point, path: &Path) -> bool {
    let on_fire = {
        let mut armed = lock(&ARMED);
        let Some(a) = armed.as_mut() else {
            return false;
        };
        if a.point != point || !(path.starts_with(&a.dir) || path.starts_with(&a.canonical)) {
            return false;
        }
        if a.skip > 0 {
            a.skip -= 1;
            return false;
        }
        let a = armed.take().unwrap();
        *lock(&FIRED) = Some((point, a.dir));
        a.on_fire
    };
    if let Some(f) = on_fire {
        f();
    }
    true
}

/// Where a hold stops work (not a crash: nothing stops for good).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HoldAt {
    /// The proposer, right after its fence check, before `client_write_ff`
    /// — the window in which a fence and the next engine's opening can
    /// overtake an entry already past the check.
    Propose,
    /// The state machine, before it applies an entry (the apply task
    /// waits, so later entries wait behind it).
    Apply,
}

/// A hold on work of the node under a directory: the next `count` entries
/// reaching [`HoldAt`] there wait until [`release`]; later ones pass.
struct Hold {
    dir: PathBuf,
    canonical: PathBuf,
    /// Entries still to catch.
    count: usize,
    /// Entries waiting at the hold now.
    waiting: usize,
    /// Bumped by each hold and release: a waiter goes on once it changed.
    generation: u64,
}

static HOLDS: Mutex<[Option<Hold>; 2]> = Mutex::new([None, None]);
static HOLD_GENERATION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Hold the next `count` entries of the node whose directories are under
/// `dir` at `at` (replaces an earlier hold there, releasing what it held).
pub fn hold(at: HoldAt, dir: &Path, count: usize) {
    let generation = HOLD_GENERATION.fetch_add(1, std::sync::atomic::Ordering::AcqRel) + 1;
    lock(&HOLDS)[at as usize] = Some(Hold {
        dir: dir.to_path_buf(),
        canonical: std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf()),
        count,
        waiting: 0,
        generation,
    });
}

/// How many entries wait at the hold at `at` now.
pub fn held(at: HoldAt) -> usize {
    lock(&HOLDS)[at as usize].as_ref().map_or(0, |h| h.waiting)
}

/// Let everything held go on; hold no more.
pub fn release() {
    HOLD_GENERATION.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    *lock(&HOLDS) = [None, None];
}

/// Called at `at` for the store at `path`: waits if the hold catches it.
pub(crate) async fn hold_point(at: HoldAt, path: &Path) {
    let generation = {
        let mut holds = lock(&HOLDS);
        let Some(h) = holds[at as usize].as_mut() else {
            return;
        };
        if h.count == 0 || !(path.starts_with(&h.dir) || path.starts_with(&h.canonical)) {
            return;
        }
        h.count -= 1;
        h.waiting += 1;
        h.generation
    };
    while HOLD_GENERATION.load(std::sync::atomic::Ordering::Acquire) == generation {
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
}
