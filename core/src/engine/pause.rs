//! Pause and resume: kinds (exact or `family:*`) and scopes, durable in the
//! `meta` column family (`pause/<label>` → empty), mirrored in memory.
//!
//! A paused kind is skipped by the claim path without a seek (an
//! unfiltered poller switches to the kind index and passes over the paused
//! kinds' cursors); a paused scope leaves the active set, so pollers
//! without a scope filter never look at it. `pause_gate` makes a pause
//! exact: claims and their commits hold it shared, a pause takes it
//! exclusively, so once `pause` returns no lease of paused work is in
//! flight or to come.

use std::sync::Arc;

use crate::control::{PauseTarget, Paused};
use crate::error::{Error, Result};
use crate::store::{self as st};

use super::Engine;

const PREFIX: &[u8] = b"pause/";

impl Engine {
    /// Read the durable pauses (at open, before the scopes are activated).
    pub(super) fn load_pauses(&self) -> Result<()> {
        let Ok(cf) = self.cf(st::CF_META) else {
            return Ok(()); // a format-1 store opened read-only
        };
        let mut it = self.db().raw_iterator_cf(cf);
        it.seek(PREFIX);
        let mut p = Paused::default();
        while let Some(k) = it.key() {
            let Some(label) = k.strip_prefix(PREFIX) else {
                break;
            };
            match std::str::from_utf8(label)
                .map_err(|_| Error::Corruption("pause entry is not UTF-8".into()))
                .and_then(PauseTarget::parse)
            {
                Ok(PauseTarget::Kind(k)) => p.kinds.push(k),
                Ok(PauseTarget::Scope(s)) => {
                    self.bands.pause(s);
                    p.scopes.push(s)
                }
                Err(e) => {
                    self.report_corrupt(k, None, &e);
                }
            }
            it.next();
        }
        it.status()?;
        self.set_paused(p);
        Ok(())
    }

    fn set_paused(&self, mut p: Paused) {
        p.kinds.sort_by_key(|k| k.to_string());
        p.kinds.dedup();
        p.scopes.sort();
        p.scopes.dedup();
        *self.paused.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(p);
    }

    /// What is paused now.
    pub fn paused(&self) -> Arc<Paused> {
        self.paused
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Pause `t`; false when it was paused already (nothing changed).
    pub fn pause(&self, t: &PauseTarget) -> Result<bool> {
        let _gate = self.pause_gate.write().unwrap_or_else(|e| e.into_inner());
        let mut p = (*self.paused()).clone();
        let fresh = match t {
            PauseTarget::Kind(k) if !p.kinds.contains(k) => {
                p.kinds.push(k.clone());
                true
            }
            PauseTarget::Scope(s) if !p.scopes.contains(s) => {
                p.scopes.push(*s);
                true
            }
            _ => false,
        };
        if !fresh {
            return Ok(false);
        }
        self.write_pause(t, true)?;
        if let PauseTarget::Scope(s) = t {
            self.bands.pause(*s);
        }
        self.set_paused(p);
        Ok(true)
    }

    /// Resume `t`; false when it was not paused. Waiting pollers wake.
    pub fn resume(&self, t: &PauseTarget) -> Result<bool> {
        let _gate = self.pause_gate.write().unwrap_or_else(|e| e.into_inner());
        let mut p = (*self.paused()).clone();
        let before = p.kinds.len() + p.scopes.len();
        match t {
            PauseTarget::Kind(k) => p.kinds.retain(|x| x != k),
            PauseTarget::Scope(s) => p.scopes.retain(|x| x != s),
        }
        if p.kinds.len() + p.scopes.len() == before {
            return Ok(false);
        }
        self.write_pause(t, false)?;
        self.set_paused(p);
        if let PauseTarget::Scope(s) = t {
            self.bands.resume(*s);
        }
        self.notifier.bump_always();
        Ok(true)
    }

    fn write_pause(&self, t: &PauseTarget, on: bool) -> Result<()> {
        let mut key = PREFIX.to_vec();
        key.extend_from_slice(t.label().as_bytes());
        let mut b = rocksdb::WriteBatch::default();
        let cf = self.cf(st::CF_META)?;
        if on {
            b.put_cf(cf, key, []);
        } else {
            b.delete_cf(cf, key);
        }
        self.write(b)
    }
}
