//! Engines over a store that something else owns (telha-jobs-cluster's
//! state machine, through [`crate::replica::ReplicaStore`]): one that
//! writes through consensus, and a read-only one for `check`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::commit::Local;
use super::{CheckReport, Commit, Engine};
use crate::clock::{Clock, SystemClock};
use crate::config::Config;
use crate::error::Result;
use crate::limits;
use crate::store::Store;

impl Engine {
    /// An engine over `store` whose writes go to `commit`, with memory
    /// rebuilt from the store (`recover`) and every rebuilt lease held
    /// until `now + grace` (`Leases::hold_until`). Outside the process
    /// registry: the caller holds it, and dropping it closes nothing (the
    /// store lives as long as its other owners). `recover` may write (the
    /// per-scope counters' rebuild on a store that has none), through
    /// `commit` like any other write.
    pub(crate) fn open_replica(
        store: Arc<Store>,
        path: &Path,
        cfg: Config,
        clock: Arc<dyn Clock>,
        commit: Box<dyn Commit>,
        grace: Duration,
    ) -> Result<Arc<Engine>> {
        cfg.validate()?;
        let e = Engine::with_store(store, commit, path, cfg, clock);
        e.recover()?;
        if !grace.is_zero() {
            let until = e
                .now()
                .saturating_add(limits::ms(grace))
                .min(limits::MAX_INSTANT_MS);
            // Before the reaper starts: no pass sees a lease unheld.
            e.leases.hold_until(until);
        }
        let e = Arc::new(e);
        e.start_threads();
        Ok(e)
    }

    /// `check()` by a read-only engine borrowing `store`: memory rebuilt
    /// from the store, no reaper, no write (a store without per-scope
    /// counters gets them counted in memory, as a read-only open does).
    /// Its comparisons of memory with disk are exact while nothing is
    /// applied to the store in between, as `Queue::check`'s are on a quiet
    /// store.
    pub(crate) fn check_over(store: Arc<Store>, path: &Path, cfg: Config) -> Result<CheckReport> {
        cfg.validate()?;
        let cfg = Config {
            reaper_interval: Duration::ZERO,
            ..cfg
        };
        // Never called: `write` refuses a read-only engine first.
        let commit = Box::new(Local::new(store.clone(), false));
        let mut e = Engine::with_store(store, commit, path, cfg, Arc::new(SystemClock));
        e.read_only = true;
        e.recover()?;
        e.check()
    }
}
