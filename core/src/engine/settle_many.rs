//! Settling many leases in one atomic write: `complete_many`, `fail_many`
//! and `release_many`. Each item is checked on its own and answers on its
//! own (a lost lease answers its own error, the rest commit); every move of
//! the batch goes in one write, so a failed write moves nothing.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;

use crate::control::Failure;
use crate::error::{Error, Result};
use crate::job::{Completion, JobId, LeaseToken, NewJob, Scope, State};

use super::leases::{self, Entry};
use super::settle::{cancelled_answer, Outcome};
use super::transition::Tx;
use super::Engine;

/// One item of a batch settle that passed its own checks.
struct Item {
    token: LeaseToken,
    /// Taken by the item that settles the lease.
    outcome: Option<Outcome>,
    /// Follow-up jobs, enqueued when the item completes its job.
    then: Vec<NewJob>,
}

impl Item {
    fn new(token: LeaseToken, outcome: Outcome) -> Item {
        Item {
            token,
            outcome: Some(outcome),
            then: Vec::new(),
        }
    }
}

/// The answer of an item the batch did not reach (never expected).
fn no_answer(what: &str) -> Error {
    Error::Storage(format!("{what}: no answer"))
}

impl Engine {
    /// Complete many leased jobs in one atomic batch. Per item, in order:
    /// `Ok`, or why that item changed nothing (`Aborted`, `NotFound`, or
    /// `InvalidArgument` for an oversized result). Each token is checked on
    /// its own: when a job is named more than once, the first item holding
    /// its live lease completes it, a repeat of that token answers what it
    /// answered (as a second `complete` would), and a stale generation
    /// answers `Aborted`. The outer error (a failed write) means nothing
    /// was completed.
    pub fn complete_many(&self, items: Vec<Completion>) -> Result<Vec<Result<()>>> {
        let items = items
            .into_iter()
            .map(|c| {
                self.check_result(c.result.as_ref())?;
                Self::check_then(&c.then)?;
                self.check_new(&c.then)?;
                let mut it = Item::new(c.token, Outcome::Completed(c.result, c.encoding));
                it.then = c.then;
                Ok(it)
            })
            .collect();
        self.settle_many("complete_many", items)
    }

    /// Fail many leased jobs in one atomic batch: per item what
    /// [`Engine::fail`] does and answers (`InvalidArgument` for an item's
    /// `retry_in` over the limit), the rest as [`Engine::complete_many`].
    pub fn fail_many(&self, items: Vec<Failure>) -> Result<Vec<Result<()>>> {
        let items = items
            .into_iter()
            .map(|f| {
                let token = f.token;
                Ok(Item::new(token, Outcome::failure(f)?))
            })
            .collect();
        self.settle_many("fail_many", items)
    }

    /// Release many leased jobs in one atomic batch: per item what
    /// [`Engine::release`] does and answers, the rest as
    /// [`Engine::complete_many`].
    pub fn release_many(&self, tokens: &[LeaseToken]) -> Result<Vec<Result<()>>> {
        let items = tokens
            .iter()
            .map(|t| Ok(Item::new(*t, Outcome::Released)))
            .collect();
        self.settle_many("release_many", items)
    }

    /// Settle the items that passed their checks (an `Err` is that item's
    /// answer) in one write.
    fn settle_many(&self, what: &str, mut items: Vec<Result<Item>>) -> Result<Vec<Result<()>>> {
        let mut answers: Vec<Option<Result<()>>> = (0..items.len()).map(|_| None).collect();
        // Each job once, in id order (the lock order `extend` uses), with
        // every item that names it.
        let mut by_job: BTreeMap<JobId, Vec<usize>> = BTreeMap::new();
        let mut ok: Vec<Item> = Vec::with_capacity(items.len());
        let mut at: Vec<usize> = Vec::with_capacity(items.len());
        for (i, it) in items.drain(..).enumerate() {
            match it {
                Err(e) => answers[i] = Some(Err(e)),
                Ok(it) => {
                    by_job.entry(it.token.id).or_default().push(ok.len());
                    ok.push(it);
                    at.push(i);
                }
            }
        }
        let mut items = ok;
        // Every follow-up's idempotency stripe, before the lease entries.
        let stripes = self.stripes_of(items.iter().flat_map(|it| it.then.iter()));
        let _stripes = self.idem_guards(stripes);
        // Answers of the checked items, by their index in `items`.
        let mut out: Vec<Option<Result<()>>> = (0..items.len()).map(|_| None).collect();
        let op_of = |it: &Item| it.outcome.as_ref().and_then(Outcome::op);
        let mut held: Vec<(Entry, Vec<usize>)> = Vec::with_capacity(by_job.len());
        for (id, idx) in by_job {
            match self.leases.get(&id) {
                Some(e) => held.push((e, idx)),
                None => {
                    for i in idx {
                        let why = self.not_leased(&id)?;
                        out[i] = Some(self.settled_before(&items[i].token, op_of(&items[i]), why));
                    }
                }
            }
        }
        let mut guards: Vec<_> = held.iter().map(|(e, idx)| (leases::lock(e), idx)).collect();
        let now = self.now();
        let mut tx = Tx::new(self);
        let mut moved = Vec::new();
        let mut in_batch: HashMap<(Scope, String), JobId> = HashMap::default();
        let mut repeats = Vec::new();
        for (gi, (g, idx)) in guards.iter().enumerate() {
            let mut winner = None;
            for &i in idx.iter() {
                let verdict = match (Self::check_token(g, &items[i].token), winner) {
                    (Ok(()), None) => {
                        winner = Some(i);
                        continue;
                    }
                    (Ok(()), Some(w)) => {
                        repeats.push((w, i));
                        continue;
                    }
                    (Err(e), _) if !g.live => {
                        self.settled_before(&items[i].token, op_of(&items[i]), e)
                    }
                    (Err(e), _) => Err(e),
                };
                out[i] = Some(verdict);
            }
            let Some(i) = winner else { continue };
            let outcome = items[i].outcome.take().ok_or_else(|| no_answer(what))?;
            let cancel = g.record.ext.cancel_requested.clone();
            if self.stage_settle(&mut tx, g, outcome, now)? == State::Completed {
                let then = std::mem::take(&mut items[i].then);
                self.stage_then(&mut tx, items[i].token.id, then, now, &mut in_batch)?;
            }
            moved.push((gi, i, cancel));
        }
        tx.commit()?;
        for (gi, _, _) in &moved {
            guards[*gi].0.live = false;
        }
        drop(guards);
        for (gi, i, cancel) in moved {
            let (entry, _) = &held[gi];
            let id = items[i].token.id;
            self.leases.remove(&id, entry);
            out[i] = Some(match cancel {
                Some(reason) => Err(cancelled_answer(&reason, &id)),
                None => Ok(()),
            });
        }
        for (w, i) in repeats {
            out[i] = Some(match &out[w] {
                Some(Ok(())) => Ok(()),
                Some(Err(Error::Cancelled(m))) => Err(Error::Cancelled(m.clone())),
                _ => Err(no_answer(what)),
            });
        }
        for (k, a) in out.into_iter().enumerate() {
            answers[at[k]] = a;
        }
        Ok(answers
            .into_iter()
            .map(|a| a.unwrap_or_else(|| Err(no_answer(what))))
            .collect())
    }
}
