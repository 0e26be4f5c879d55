//! Fan-in (issue 43) on a `NativeQueue`: `enqueueGroup` (children and
//! their waiting parent in one atomic batch) and `resultsOfChildren` (a
//! parent's children with their states and results, paged), and the
//! `fanIn` summary of `JobInfo`. The `after` and `onChildDead` enqueue
//! options are read with the others (`args.rs`). Every call goes through
//! the core's `JobStore`, so an embedded queue and a client of a server
//! answer alike.

use napi::bindgen_prelude::{AsyncTask, Env, Unknown};
use napi::JsValue;
use napi_derive::napi;

use telha_jobs::fanin::MAX_CHILDREN_PAGE;
use telha_jobs::{JobId, NewJob};

use crate::args::{whole, Arg, NativeEnqueueOptions};
use crate::errors::Failure;
use crate::flow::new_jobs;
use crate::job::{count, encoding};
use crate::payload::{Bytes, OrNull, Payload};
use crate::queue::NativeQueue;
use crate::task::{guard, Op};

/// A fan-in parent's children (`JobInfo.fanIn`).
#[napi(object, object_from_js = false)]
pub struct FanIn {
    /// Children not finished yet (0 once the parent was released).
    pub unfinished: f64,
    /// Every child it waits on.
    pub total: f64,
    /// What a child that did not complete does to it.
    #[napi(ts_type = "'fail' | 'cancel_rest' | 'ignore'")]
    pub policy: String,
}

impl FanIn {
    pub fn from_core(f: &telha_jobs::FanInInfo) -> Self {
        FanIn {
            unfinished: count(f.unfinished),
            total: count(f.total),
            policy: f.policy.as_str().to_string(),
        }
    }
}

/// One child of a fan-in parent (`resultsOfChildren`).
#[napi(object, object_from_js = false)]
pub struct ChildResult {
    /// The child's id.
    pub id: String,
    /// Its state now; null when it was pruned, purged or deleted.
    #[napi(
        ts_type = "'pending' | 'leased' | 'failed' | 'completed' | 'dead' | 'cancelled' | 'waiting' | null"
    )]
    pub state: OrNull<String>,
    /// What its `complete` was given (read like a payload), or null.
    #[napi(ts_type = "unknown")]
    pub result: OrNull<Payload>,
    /// The stored result bytes, or null.
    #[napi(ts_type = "Buffer | null")]
    pub result_bytes: OrNull<Bytes>,
    /// How the result was given.
    #[napi(ts_type = "'unknown' | 'bytes' | 'value'")]
    pub result_encoding: String,
    /// Its latest failure (a dead child's error), or null.
    #[napi(ts_type = "string | null")]
    pub last_error: OrNull<String>,
}

/// A page of `resultsOfChildren`.
#[napi(object, object_from_js = false)]
pub struct ChildPage {
    /// The children of this page, in enqueue order.
    pub children: Vec<ChildResult>,
    /// Pass as `cursor` for the next page; null after the last one.
    #[napi(ts_type = "string | null")]
    pub next: OrNull<String>,
}

impl ChildPage {
    /// Convert a core page (call off the JS thread: results are decoded).
    fn from_core(p: telha_jobs::ChildPage) -> Self {
        ChildPage {
            children: p
                .children
                .into_iter()
                .map(|c| ChildResult {
                    id: c.id.to_string(),
                    state: OrNull(c.state.map(|s| s.as_str().to_string())),
                    result_bytes: OrNull(c.result.clone().map(Bytes)),
                    result: OrNull(c.result.map(|r| Payload::new(r, c.result_encoding))),
                    result_encoding: encoding(c.result_encoding),
                    last_error: OrNull(c.last_error),
                })
                .collect(),
            next: OrNull(p.next),
        }
    }
}

/// What `enqueueGroup` did: the children's ids in order, and the parent's.
#[napi(object, object_from_js = false)]
pub struct EnqueuedGroup {
    pub children: Vec<String>,
    pub parent: String,
}

#[napi]
impl NativeQueue {
    /// Enqueue children (parallel arrays as `enqueueMany` takes them) and
    /// their parent in one atomic batch: the parent waits (`waiting`) until
    /// every child finished.
    #[napi(
        ts_args_type = "kinds: string[], payloads: unknown[], options: Array<NativeEnqueueOptions | undefined | null> | undefined | null, parentKind: string, parentPayload: unknown, parentOptions?: NativeEnqueueOptions | undefined | null",
        ts_return_type = "Promise<EnqueuedGroup>"
    )]
    #[allow(clippy::too_many_arguments)]
    pub fn enqueue_group(
        &self,
        env: Env,
        kinds: Vec<String>,
        payloads: Unknown,
        options: Option<Vec<Option<NativeEnqueueOptions>>>,
        parent_kind: String,
        parent_payload: Unknown,
        parent_options: Option<NativeEnqueueOptions>,
    ) -> napi::Result<AsyncTask<Op<EnqueuedGroup, EnqueuedGroup>>> {
        guard(&env, "enqueueGroup", || {
            let payloads = Arg::new(&env, &payloads).items("children payloads")?;
            let children = new_jobs(&env, kinds, payloads, options, "children")?;
            let parent = new_jobs(
                &env,
                vec![parent_kind],
                vec![parent_payload.raw()],
                Some(vec![parent_options]),
                "parent",
            )?;
            let parent: NewJob = parent
                .into_iter()
                .next()
                .ok_or_else(|| Failure::Invalid("enqueueGroup: the parent is missing".into()))?;
            let q = self.store().clone();
            Ok(Op::task(
                "enqueueGroup",
                move || {
                    let (kids, p) = q.enqueue_group(children, parent)?;
                    Ok(EnqueuedGroup {
                        children: kids.iter().map(|e| e.id.to_string()).collect(),
                        parent: p.id.to_string(),
                    })
                },
                |v| v,
            ))
        })
    }

    /// A page of `parent`'s children in enqueue order, with their states,
    /// results and last errors; `limit` 1 to 1,000.
    #[napi(ts_return_type = "Promise<ChildPage>")]
    pub fn results_of_children(
        &self,
        env: Env,
        parent: String,
        cursor: Option<String>,
        limit: Option<f64>,
    ) -> napi::Result<AsyncTask<Op<ChildPage, ChildPage>>> {
        guard(&env, "resultsOfChildren", || {
            let id = parent.parse::<JobId>()?;
            let limit = match limit {
                Some(l) => whole(l, "limit", 1, MAX_CHILDREN_PAGE as u64)? as usize,
                None => 100,
            };
            let q = self.store().clone();
            Ok(Op::task(
                "resultsOfChildren",
                move || {
                    Ok(ChildPage::from_core(q.results_of_children(
                        &id,
                        cursor.as_deref(),
                        limit,
                    )?))
                },
                |v| v,
            ))
        })
    }
}
