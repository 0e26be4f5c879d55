//! The settling RPCs' bodies: `Submit`, `SubmitMany` (complete, fail and
//! release outcomes, each kind in one atomic write) and `Heartbeat` (the
//! `Jobs` trait's methods in `service.rs` call these), and how a settle
//! frees its `PollJobs` stream's capacity.

use telha_jobs::{Error, ErrorKind, Failure, LeaseToken, Queue, Result};
use telha_jobs_proto::convert as cv;
use telha_jobs_proto::status::item_error;
use telha_jobs_proto::v1 as pb;
use tonic::Status;

use crate::service::{bad, check_batch, check_worker, invalid, JobsService, INLINE_MAX_ITEMS};

/// One item of a `SubmitMany`.
enum Item {
    Complete(telha_jobs::Completion),
    Fail(Failure),
    Release(LeaseToken),
}

impl Item {
    fn token(&self) -> LeaseToken {
        match self {
            Item::Complete(c) => c.token,
            Item::Fail(f) => f.token,
            Item::Release(t) => *t,
        }
    }
}

fn failure(token: LeaseToken, f: pb::Fail) -> Failure {
    Failure {
        token,
        reason: f.reason,
        retryable: f.retryable,
        retry_in: f.retry_in_ms.map(std::time::Duration::from_millis),
    }
}

fn item_invalid(i: usize, e: &Error) -> Status {
    invalid(format!(
        "item {i}: {}",
        telha_jobs_proto::status::message_of(e)
    ))
}

/// A `SubmitMany`'s items settled: the completions in one
/// `complete_many`, the failures in one `fail_many`, the releases in one
/// `release_many` (each one atomic write); the answers in item order.
fn settle_items(q: &Queue, items: Vec<Item>) -> Result<Vec<Result<()>>> {
    let n = items.len();
    let (mut completes, mut fails, mut releases) = (Vec::new(), Vec::new(), Vec::new());
    let (mut c_at, mut f_at, mut r_at) = (Vec::new(), Vec::new(), Vec::new());
    for (i, it) in items.into_iter().enumerate() {
        match it {
            Item::Complete(c) => {
                completes.push(c);
                c_at.push(i);
            }
            Item::Fail(f) => {
                fails.push(f);
                f_at.push(i);
            }
            Item::Release(t) => {
                releases.push(t);
                r_at.push(i);
            }
        }
    }
    let mut out: Vec<Option<Result<()>>> = (0..n).map(|_| None).collect();
    if !completes.is_empty() {
        for (i, r) in c_at.into_iter().zip(q.complete_many(completes)?) {
            out[i] = Some(r);
        }
    }
    if !fails.is_empty() {
        for (i, r) in f_at.into_iter().zip(q.fail_many(fails)?) {
            out[i] = Some(r);
        }
    }
    if !releases.is_empty() {
        for (i, r) in r_at.into_iter().zip(q.release_many(&releases)?) {
            out[i] = Some(r);
        }
    }
    Ok(out
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(Error::Storage("no answer".into()))))
        .collect())
}

impl JobsService {
    pub(crate) async fn submit_one(&self, r: pb::SubmitRequest) -> Result<(), Status> {
        let token = cv::token_from_pb(r.token.as_ref()).map_err(bad)?;
        let outcome = r
            .outcome
            .ok_or_else(|| invalid("submit needs an outcome: complete, fail or release"))?;
        let res = self
            .shared
            .quick(move |q| match outcome {
                pb::submit_request::Outcome::Complete(c) => {
                    q.complete_with(telha_jobs_proto::flow::complete_from_pb(token, c)?)
                }
                pb::submit_request::Outcome::Fail(f) => q.fail_with(failure(token, f)),
                pb::submit_request::Outcome::Release(_) => q.release(&token),
            })
            .await;
        self.after_settle(&token, &res);
        res
    }

    /// A lease stops counting against its stream once settled, or when the
    /// core says it is gone (ABORTED — CANCELLED travels as ABORTED: the
    /// cancelled settle took effect — or NOT_FOUND).
    pub(crate) fn after_settle<T>(&self, token: &LeaseToken, res: &Result<T, Status>) {
        let gone = match res {
            Ok(_) => true,
            Err(s) => matches!(s.code(), tonic::Code::Aborted | tonic::Code::NotFound),
        };
        if gone {
            self.shared.settled(token);
        }
    }

    pub(crate) async fn submit_many(
        &self,
        r: pb::SubmitManyRequest,
    ) -> Result<pb::SubmitManyResponse, Status> {
        check_batch("submit", r.items.len())?;
        let mut items = Vec::with_capacity(r.items.len());
        for (i, it) in r.items.into_iter().enumerate() {
            let token = cv::token_from_pb(it.token.as_ref()).map_err(|e| item_invalid(i, &e))?;
            items.push(match it.outcome {
                Some(pb::submit_request::Outcome::Complete(c)) => Item::Complete(
                    telha_jobs_proto::flow::complete_from_pb(token, c)
                        .map_err(|e| item_invalid(i, &e))?,
                ),
                Some(pb::submit_request::Outcome::Fail(f)) => Item::Fail(failure(token, f)),
                Some(pb::submit_request::Outcome::Release(_)) => Item::Release(token),
                None => {
                    return Err(invalid(format!(
                        "item {i}: needs an outcome: complete, fail or release"
                    )))
                }
            });
        }
        let tokens: Vec<LeaseToken> = items.iter().map(Item::token).collect();
        let settle = move |q: &Queue| settle_items(q, items);
        let results = if tokens.len() <= INLINE_MAX_ITEMS {
            self.shared.quick(settle).await?
        } else {
            self.shared.run(settle).await?
        };
        for (t, r) in tokens.iter().zip(&results) {
            let gone = match r {
                Ok(()) => true,
                // A cancelled lease's settle took effect (the job is cancelled).
                Err(e) => matches!(
                    e.kind(),
                    ErrorKind::Aborted | ErrorKind::NotFound | ErrorKind::Cancelled
                ),
            };
            if gone {
                self.shared.settled(t);
            }
        }
        Ok(pb::SubmitManyResponse {
            results: results
                .iter()
                .map(|r| pb::SubmitResult {
                    error: r.as_ref().err().map(item_error),
                })
                .collect(),
        })
    }

    pub(crate) async fn heartbeat(
        &self,
        r: pb::HeartbeatRequest,
    ) -> Result<pb::HeartbeatResponse, Status> {
        check_worker(&r.worker_id)?;
        check_batch("heartbeat tokens", r.tokens.len())?;
        let tokens = r
            .tokens
            .iter()
            .map(|t| cv::token_from_pb(Some(t)))
            .collect::<Result<Vec<_>>>()
            .map_err(bad)?;
        if r.progress.len() > tokens.len() {
            return Err(bad(telha_jobs::Error::InvalidArgument(format!(
                "{} progress reports for {} tokens",
                r.progress.len(),
                tokens.len()
            ))));
        }
        let progress: Vec<Option<Vec<u8>>> = r
            .progress
            .into_iter()
            .map(|p| (!p.is_empty()).then_some(p))
            .collect();
        let t2 = tokens.clone();
        let worker = r.worker_id;
        let beat = move |q: &Queue| q.heartbeat(&t2, &progress, &worker);
        let results = if tokens.len() <= INLINE_MAX_ITEMS {
            self.shared.quick(beat).await?
        } else {
            self.shared.run(beat).await?
        };
        let mut out = Vec::with_capacity(results.len());
        for (t, r) in tokens.iter().zip(results) {
            out.push(match r {
                Ok(d) => {
                    self.shared.renewed(t, d);
                    pb::HeartbeatResult {
                        outcome: Some(pb::heartbeat_result::Outcome::DeadlineMs(d)),
                    }
                }
                Err(e) => {
                    if matches!(e.kind(), ErrorKind::Aborted | ErrorKind::NotFound) {
                        self.shared.settled(t);
                    }
                    pb::HeartbeatResult {
                        outcome: Some(pb::heartbeat_result::Outcome::Error(item_error(&e))),
                    }
                }
            });
        }
        Ok(pb::HeartbeatResponse { results: out })
    }
}
