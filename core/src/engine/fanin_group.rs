//! `enqueue_group`: children and their parent in one atomic batch.

use rustc_hash::FxHashMap as HashMap;

use crate::error::{Error, Result};
use crate::job::{Enqueued, JobId, NewJob, Scope};
use crate::limits::MAX_BATCH;

use super::debounce::Claims;
use super::enqueue::Origin;
use super::fanin::AfterGuard;
use super::transition::Tx;
use super::Engine;

impl Engine {
    /// Enqueue `children` and `parent` in one batch: the parent waits on
    /// every child (and on its own `after`). Answers the children in input
    /// order, then the parent.
    pub fn enqueue_group(
        &self,
        children: Vec<NewJob>,
        parent: NewJob,
    ) -> Result<(Vec<Enqueued>, Enqueued)> {
        if children.is_empty() || children.len() > MAX_BATCH {
            return Err(Error::invalid(format!(
                "a group has 1 to {MAX_BATCH} children, got {}",
                children.len()
            )));
        }
        let o = &parent.options;
        if o.idempotency_key.is_some() || o.unique_for.is_some() || o.debounce.is_some() {
            return Err(Error::invalid(
                "a group's parent takes no idempotency_key, unique_for or debounce (its children may)",
            ));
        }
        let mut all = children;
        all.push(parent);
        self.check_new(&all[..all.len() - 1])?;
        self.validate_new(&all[all.len() - 1])?;
        let _guards = self.idem_guards(self.stripes_of(all.iter()));
        let Some(mut parent) = all.pop() else {
            return Err(Error::invalid("a group needs a parent"));
        };
        let now = self.now();
        let mut tx = Tx::new(self);
        tx.after = Some(AfterGuard::new(self.fan.write()?));
        let mut in_batch: HashMap<(Scope, String), JobId> = HashMap::default();
        let mut claims = Claims::new();
        let mut out = Vec::with_capacity(all.len());
        let staged = (|| {
            for j in all {
                let enq = self.stage_caller(&mut tx, j, now, &mut in_batch, &mut claims)?;
                if enq.created {
                    if let Some(a) = tx.after.as_mut() {
                        a.fresh.insert(enq.id);
                    }
                }
                parent.options.after.push(enq.id);
                out.push(enq);
            }
            self.stage_new(&mut tx, parent, now, &mut in_batch, Origin::Caller)
        })();
        let res = staged.and_then(|p| tx.commit().map(|()| p));
        self.release_claims(claims, res.is_ok());
        res.map(|p| (out, p))
    }
}
