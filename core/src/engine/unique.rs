//! Unique windows (issue 44): `unique_for` on a keyed enqueue. A second
//! enqueue with the key inside the window answers the job that opened it
//! (`created: false`); after it, a new job opens a new window. The window
//! outlives the job's record (a job pruned within the hour still holds
//! "at most once an hour"), so it lives in rows of its own, in the `meta`
//! family:
//!
//! | key | value |
//! |---|---|
//! | `uwin/` scope(16) idempotency key bytes | job id(16) until(8, BE ms) states(1: `*` any, `a` active) |
//! | `uexp/` until(8, BE ms) scope(16) idempotency key bytes | empty |
//!
//! Both are written in the enqueue's batch (under the key's idempotency
//! stripe, so a window is exact under concurrent producers); the `uexp/`
//! index orders windows by their end, so the reaper deletes the expired
//! ones in bounded passes (`prune_batch` rows at most), each under its
//! key's stripe (a window renewed meanwhile is kept).

use std::time::Duration;

use rocksdb::{Direction, IteratorMode, WriteBatch};

use crate::error::{Error, Result};
use crate::job::{JobId, Scope, State, UniqueStates};
use crate::limits;
use crate::store as st;

use super::transition::Tx;
use super::Engine;

/// The window rows' prefix.
pub(crate) const WINDOW_PREFIX: &[u8] = b"uwin/";
/// The expiry index's prefix.
pub(crate) const EXPIRY_PREFIX: &[u8] = b"uexp/";

/// A window row: the job that opened it, when it ends, what holds it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Window {
    pub job: JobId,
    pub until: u64,
    pub states: UniqueStates,
}

fn window_key(scope: &Scope, key: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(WINDOW_PREFIX.len() + 16 + key.len());
    k.extend_from_slice(WINDOW_PREFIX);
    k.extend_from_slice(scope.as_bytes());
    k.extend_from_slice(key.as_bytes());
    k
}

fn expiry_key(until: u64, scope: &Scope, key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(EXPIRY_PREFIX.len() + 24 + key.len());
    k.extend_from_slice(EXPIRY_PREFIX);
    k.extend_from_slice(&until.to_be_bytes());
    k.extend_from_slice(scope.as_bytes());
    k.extend_from_slice(key);
    k
}

fn encode(w: &Window) -> [u8; 25] {
    let mut v = [0u8; 25];
    v[..16].copy_from_slice(w.job.as_bytes());
    v[16..24].copy_from_slice(&w.until.to_be_bytes());
    v[24] = match w.states {
        UniqueStates::Active => b'a',
        _ => b'*',
    };
    v
}

fn decode(v: &[u8]) -> Result<Window> {
    let bad = || Error::Corruption(format!("unique window row is {} bytes, not 25", v.len()));
    if v.len() != 25 {
        return Err(bad());
    }
    let id: [u8; 16] = v[..16].try_into().map_err(|_| bad())?;
    let until = u64::from_be_bytes(v[16..24].try_into().map_err(|_| bad())?);
    let states = match v[24] {
        b'a' => UniqueStates::Active,
        b'*' => UniqueStates::Any,
        b => {
            return Err(Error::Corruption(format!(
                "unique window row has states byte {b:#x}"
            )))
        }
    };
    Ok(Window {
        job: JobId::from_bytes(id),
        until,
        states,
    })
}

/// `InvalidArgument` unless `unique_for` (with its states) is usable on a
/// job with `key` at `now`: over zero, within the longest duration, its end
/// within the latest instant, and with a key.
pub(crate) fn check(
    unique_for: Option<Duration>,
    states: Option<UniqueStates>,
    key: Option<&String>,
    now: u64,
) -> Result<()> {
    let Some(d) = unique_for else {
        if states.is_some() {
            return Err(Error::invalid(
                "unique_states needs unique_for (it says which states hold the window)",
            ));
        }
        return Ok(());
    };
    if key.is_none() {
        return Err(Error::invalid(
            "unique_for needs an idempotency_key: the window is the key's",
        ));
    }
    if d.as_millis() == 0 {
        return Err(Error::invalid(format!(
            "unique_for must be at least 1ms, got {d:?}"
        )));
    }
    limits::check_duration("unique_for", d)?;
    limits::instant_after("unique_for", now, d)?;
    Ok(())
}

impl Engine {
    /// The window of `(scope, key)`, if it has a row.
    pub(crate) fn window(&self, scope: &Scope, key: &str) -> Result<Option<Window>> {
        let v = self
            .db()
            .get_pinned_cf(self.cf(st::CF_META)?, window_key(scope, key))?;
        v.map(|v| decode(&v)).transpose()
    }

    /// The job a new `unique_for` enqueue of `(scope, key)` answers at
    /// `now`: the window's job while the window is open and holds (`Any`:
    /// whatever became of the job; `Active`: while it is pending, leased
    /// or waiting for a retry). Also the window row found, open or not.
    /// The caller holds the key's stripe.
    pub(crate) fn window_match(
        &self,
        scope: &Scope,
        key: &str,
        now: u64,
    ) -> Result<(Option<JobId>, Option<Window>)> {
        let Some(w) = self.window(scope, key)? else {
            return Ok((None, None));
        };
        if now >= w.until {
            return Ok((None, Some(w)));
        }
        let holds = match w.states {
            UniqueStates::Active => self
                .key_of(&w.job)?
                .is_some_and(|k| matches!(k.state, State::Pending | State::Leased | State::Failed)),
            _ => true,
        };
        Ok((holds.then_some(w.job), Some(w)))
    }

    /// Stage the window job `job` opens for `(scope, key)` at `now`,
    /// replacing `old` (its expiry index row goes with it).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn stage_window(
        &self,
        tx: &mut Tx<'_>,
        scope: &Scope,
        key: &str,
        job: JobId,
        now: u64,
        unique_for: Duration,
        states: UniqueStates,
        old: Option<Window>,
    ) -> Result<()> {
        let until = limits::instant_after("unique_for", now, unique_for)?;
        let w = Window { job, until, states };
        tx.put_raw(st::CF_META, &window_key(scope, key), &encode(&w))?;
        if let Some(o) = old {
            if o.until != until {
                tx.delete_raw(st::CF_META, &expiry_key(o.until, scope, key.as_bytes()))?;
            }
        }
        tx.put_raw(st::CF_META, &expiry_key(until, scope, key.as_bytes()), &[])?;
        Ok(())
    }

    /// Delete up to `budget` windows that ended by `now`, oldest end first:
    /// the reaper's bounded pass. A window renewed since its index row was
    /// read keeps its row. Returns how many windows were deleted.
    pub(crate) fn prune_windows(&self, now: u64, budget: usize) -> Result<usize> {
        let cf = self.cf(st::CF_META)?;
        let mut due: Vec<(Vec<u8>, u64, Scope, String)> = Vec::new();
        let start = self
            .window_cursor
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .unwrap_or_else(|| EXPIRY_PREFIX.to_vec());
        let it = self
            .db()
            .iterator_cf(cf, IteratorMode::From(&start, Direction::Forward));
        for item in it {
            let (k, _) = item?;
            if !k.starts_with(EXPIRY_PREFIX) || due.len() >= budget {
                break;
            }
            let rest = &k[EXPIRY_PREFIX.len()..];
            if rest.len() < 24 {
                continue; // not a row this build wrote: leave it
            }
            let until = u64::from_be_bytes(rest[..8].try_into().unwrap_or_default());
            if until > now {
                break;
            }
            let scope = Scope::from_bytes(rest[8..24].try_into().unwrap_or_default());
            let Ok(key) = std::str::from_utf8(&rest[24..]) else {
                continue;
            };
            due.push((k.to_vec(), until, scope, key.to_string()));
        }
        if due.is_empty() {
            return Ok(0);
        }
        // Every key's stripe, held until the batch is written, so an
        // enqueue renewing a window waits (and is not undone).
        let stripes = due
            .iter()
            .map(|(_, _, scope, key)| self.idem_stripe(scope, key))
            .collect();
        let _guards = self.idem_guards(stripes);
        let mut b = WriteBatch::default();
        let mut pruned = 0;
        let mut last = None;
        for (xk, until, scope, key) in &due {
            if let Some(w) = self.window(scope, key)? {
                if w.until == *until {
                    b.delete_cf(cf, window_key(scope, key));
                    pruned += 1;
                }
            }
            b.delete_cf(cf, xk);
            last = Some(xk.clone());
        }
        self.write(b)?;
        // New windows end after now, so the next pass starts where this
        // one stopped (past the tombstones it left).
        *self.window_cursor.lock().unwrap_or_else(|p| p.into_inner()) = last;
        self.metrics
            .windows_pruned
            .fetch_add(pruned as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(pruned)
    }
}
