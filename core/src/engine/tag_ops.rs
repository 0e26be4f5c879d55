//! Operations through the tag index (issue 42, slice 2): `cancel_many`
//! with a tag, a page of rows per atomic batch.

use crate::control::{CancelFilter, CancelOutcome, CancelReport};
use crate::error::{Error, Result};
use crate::job::State;
use crate::store::codec;
use crate::store::keys::JobKey;
use crate::store::{self as st};

use super::control::BATCH;
use super::Engine;

impl Engine {
    /// `cancel_many` of the jobs carrying `tag` (and matching the rest of
    /// `f`) in one of `states`: the tag's index rows are read a page of
    /// [`BATCH`] at a time at a snapshot; the page's pending and failed
    /// jobs are cancelled in one atomic batch, its leased ones get a cancel
    /// request each (as `cancel_many` by kind does). O(jobs carrying the
    /// tag), never a walk of other jobs.
    pub(super) fn cancel_tagged(
        &self,
        tag: &str,
        f: &CancelFilter,
        states: &[State],
        reason: &str,
    ) -> Result<CancelReport> {
        crate::tags::validate_tag(tag)?;
        let jobs = self.cf(st::CF_JOBS)?;
        let mut report = CancelReport::default();
        let mut after: Option<Vec<u8>> = None;
        loop {
            let (mut ready, mut leased) = (Vec::<JobKey>::new(), Vec::<JobKey>::new());
            let snap = self.db().snapshot();
            let (last, more) =
                self.walk_tag(&snap, tag, f.scope, after.as_deref(), BATCH, |(k, hit)| {
                    let jk = match hit {
                        Ok(jk) => jk,
                        Err((id, e)) => {
                            self.report_corrupt(&k, id, &e);
                            report.corrupt += 1;
                            return Ok(true);
                        }
                    };
                    if !states.contains(&jk.state) {
                        return Ok(true);
                    }
                    if let Some(p) = &f.kind {
                        match snap
                            .get_pinned_cf(jobs, jk.encode())?
                            .map(|v| codec::decode(&v))
                        {
                            Some(Ok(rec)) if p.matches(&rec.kind) => {}
                            Some(Ok(_)) | None => return Ok(true),
                            Some(Err(e)) => {
                                self.report_corrupt(&k, Some(jk.id), &e);
                                report.corrupt += 1;
                                return Ok(true);
                            }
                        }
                    }
                    if matches!(jk.state, State::Leased | State::Waiting) {
                        leased.push(jk);
                    } else {
                        ready.push(jk);
                    }
                    Ok(true)
                })?;
            drop(snap);
            if !ready.is_empty() {
                self.cancel_ready_batch(&ready, reason, &mut report)?;
            }
            for key in &leased {
                match self.cancel(&key.id, reason) {
                    Ok(CancelOutcome::Requested) => report.requested += 1,
                    Ok(_) => report.cancelled += 1,
                    // Settled since the read: nothing left to cancel.
                    Err(e) if e.kind() == crate::ErrorKind::WrongState => {}
                    Err(Error::NotFound(_)) => {}
                    Err(e) => return Err(e),
                }
            }
            match (more, last) {
                (true, Some(l)) => after = Some(l),
                _ => return Ok(report),
            }
        }
    }
}
