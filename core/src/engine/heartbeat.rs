//! Heartbeats: `extend` and `heartbeat` renew live leases, each token
//! checked under its lease entry's lock, a progress report written into
//! the record in the same write.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::event::Event;
use crate::job::{validate_worker_id, JobId, LeaseToken};
use crate::limits;
use crate::store::keys::JobKey;

use super::leases::{self, Entry};
use super::settle::cancelled_answer;
use super::transition::Tx;
use super::Engine;

impl Engine {
    /// Renew each lease whose generation and worker still match. Per token:
    /// the new deadline, or `Aborted` (lease lost) / `NotFound`. A token that
    /// appears twice gets the same answer twice.
    pub fn extend(&self, tokens: &[LeaseToken], worker: &str) -> Result<Vec<Result<u64>>> {
        self.heartbeat(tokens, &[], worker)
    }

    /// [`Engine::extend`], each token with an optional progress report
    /// (`progress[i]` for `tokens[i]`; shorter, or empty bytes, means
    /// none). A renewal that
    /// carries progress writes it into the record in the same write (an
    /// `progress` move instead of `extended`), even when the deadline does
    /// not move. A report over `MAX_PROGRESS_BYTES`, or more reports than
    /// tokens, is `InvalidArgument` for the whole call (nothing renewed).
    pub fn heartbeat(
        &self,
        tokens: &[LeaseToken],
        progress: &[Option<Vec<u8>>],
        worker: &str,
    ) -> Result<Vec<Result<u64>>> {
        validate_worker_id(worker)?;
        validate_progress(tokens.len(), progress)?;
        let now = self.now();
        // Each job once, in id order, so overlapping extends cannot deadlock.
        let mut by_job: BTreeMap<JobId, Vec<usize>> = BTreeMap::new();
        for (i, t) in tokens.iter().enumerate() {
            by_job.entry(t.id).or_default().push(i);
        }
        let mut answers: Vec<Option<Result<u64>>> = (0..tokens.len()).map(|_| None).collect();
        let mut held: Vec<(Entry, Vec<usize>)> = Vec::new();
        for (id, idx) in by_job {
            match self.leases.get(&id) {
                Some(e) => held.push((e, idx)),
                None => {
                    for i in idx {
                        answers[i] = Some(Err(self.not_leased(&id)?));
                    }
                }
            }
        }
        let mut guards: Vec<_> = held.iter().map(|(e, idx)| (leases::lock(e), idx)).collect();
        let mut tx = Tx::new(self);
        let mut moved = Vec::new();
        for (gi, (g, idx)) in guards.iter().enumerate() {
            let mut renew = Vec::new();
            for &i in idx.iter() {
                let token = &tokens[i];
                let verdict = Self::check_token(g, token).and_then(|()| {
                    if g.record.worker_id.as_deref() == Some(worker) {
                        Ok(())
                    } else {
                        Err(Error::Aborted(format!(
                            "job {} is leased by worker {:?}, not {worker:?}",
                            token.id,
                            g.record.worker_id.as_deref().unwrap_or("")
                        )))
                    }
                });
                match verdict {
                    Ok(()) => renew.push(i),
                    Err(err) => answers[i] = Some(Err(err)),
                }
            }
            let report = renew.iter().rev().find_map(|&i| {
                progress
                    .get(i)
                    .and_then(Option::as_ref)
                    .filter(|p| !p.is_empty())
            });
            if renew.is_empty() {
                continue;
            }
            if let Some(reason) = &g.record.ext.cancel_requested {
                // Not renewed: the holder stops, and a holder that does
                // not loses the job at its deadline all the same.
                for i in renew {
                    answers[i] = Some(Err(cancelled_answer(reason, &tokens[i].id)));
                }
                continue;
            }
            let ttl = limits::ms(self.cfg.lease_ttl_for(&g.record.kind));
            let mut deadline = now.saturating_add(ttl).min(limits::MAX_INSTANT_MS);
            if let (Some(max), Some(at)) = (
                self.cfg.max_lease_total_for(&g.record.kind),
                g.record.ext.leased_at,
            ) {
                let end = at.saturating_add(limits::ms(max));
                if now >= end {
                    for i in renew {
                        answers[i] = Some(Err(Error::Aborted(format!(
                            "job {} has been leased for {} ms, past max_lease_total ({} ms): not renewed",
                            tokens[i].id,
                            now - at,
                            limits::ms(max)
                        ))));
                    }
                    continue;
                }
                deadline = deadline.min(end);
            }
            let deadline = deadline.max(g.key.ts);
            if deadline == g.key.ts && report.is_none() {
                for i in renew {
                    answers[i] = Some(Ok(deadline));
                }
                continue;
            }
            let mut rec = g.record.clone();
            rec.lease_deadline = Some(deadline);
            let event = match report {
                Some(p) => {
                    rec.ext.progress = Some(p.clone());
                    Event::Progress
                }
                None => Event::Extended,
            };
            let new = JobKey {
                ts: deadline,
                ..g.key
            };
            tx.stage(event, Some(&g.key), Some(&new), &rec)?;
            moved.push((gi, new, rec, renew));
        }
        tx.commit()?;
        for (gi, new, rec, renew) in moved {
            let g = &mut guards[gi].0;
            g.key = new;
            g.record = rec;
            for i in renew {
                answers[i] = Some(Ok(new.ts));
            }
        }
        drop(guards);
        Ok(answers
            .into_iter()
            .map(|a| {
                a.unwrap_or_else(|| Err(Error::Storage("extend left a token unanswered".into())))
            })
            .collect())
    }
}

/// Progress reports are checked before any lease is touched, so a bad one
/// renews nothing (a Worker checks each report when its handler makes it).
fn validate_progress(tokens: usize, progress: &[Option<Vec<u8>>]) -> Result<()> {
    if progress.len() > tokens {
        return Err(Error::invalid(format!(
            "{} progress reports for {tokens} leases; at most one per lease",
            progress.len()
        )));
    }
    for (i, p) in progress.iter().enumerate() {
        if let Some(p) = p.as_ref().filter(|p| p.len() > limits::MAX_PROGRESS_BYTES) {
            return Err(Error::invalid(format!(
                "progress for lease {i} is {} bytes; at most {} (a small number, string or map)",
                p.len(),
                limits::MAX_PROGRESS_BYTES
            )));
        }
    }
    Ok(())
}
