//! `NativeQueue`: the core's `JobStore` for JS, and the calls of a worker
//! (enqueue, lease, extend, settle). Every call that touches the store
//! returns a Promise: arguments are converted to owned Rust values on the
//! JS thread (`args.rs`), the core runs on libuv's thread pool, and the
//! answer is converted back on the JS thread (`task.rs`). The operator's
//! calls (get, list, retry, reap, stats, settings) are in `admin.rs`, the
//! remote ones in `remote.rs`.
//!
//! The public, documented API is the `Queue` class of `lib/telha.js`,
//! which checks argument types and wraps this one.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use napi::bindgen_prelude::{
    AsyncTask, Either, Env, Float64Array, Object, Uint32Array, Uint8Array, Undefined, Unknown,
};
use napi::sys;
use napi_derive::napi;

use telha_jobs::{CancelWait, Encoding, ErrorKind, JobStore, Queue};

use crate::args::{self, batch_max, lease_options, tokens, Arg};
use crate::batch::{Copied, EnqueuedBatch, LeasedBatch};
use crate::config;
use crate::errors::Failure;
use crate::flow::{follow_ups, new_jobs};
use crate::job::Enqueued;
use crate::now::Store;
use crate::payload;
use crate::task::{guard, on_thread, Op};

pub use crate::args::NativeEnqueueOptions;

/// `extend`'s answer for a renewed lease.
pub const EXTEND_RENEWED: u8 = 0;
/// `extend`'s answer for a lost lease (reaped, or leased again).
pub const EXTEND_LOST: u8 = 1;
/// `extend`'s answer for a lease whose job has a cancel request.
pub const EXTEND_CANCELLED: u8 = 2;

/// Per job of a batch: `None` when done, else the error code.
pub(crate) type Outcomes = Vec<Option<String>>;

/// Cancels the waits of the `leaseWait` calls it is passed to (the
/// `AbortSignal` glue calls `cancel()` on 'abort'). Once cancelled it stays
/// cancelled.
#[napi]
#[derive(Default)]
pub struct CancelToken {
    inner: CancelWait,
}

#[napi]
impl CancelToken {
    /// A token that is not cancelled.
    #[napi(constructor)]
    pub fn new() -> Self {
        Self::default()
    }

    /// End every wait using this token: each resolves with what it has
    /// (usually nothing) at once. Idempotent; never blocks.
    #[napi]
    pub fn cancel(&self) {
        self.inner.cancel();
    }

    /// Whether `cancel()` was called.
    #[napi(getter)]
    pub fn cancelled(&self) -> bool {
        self.inner.is_cancelled()
    }
}

/// A payload or result of this call (`v` one of its live handles): its
/// bytes and how they were made.
fn bytes_of(
    env: &Env,
    v: sys::napi_value,
    what: impl FnOnce() -> String,
) -> Result<(Vec<u8>, Encoding), Failure> {
    // SAFETY: live handles of this call.
    unsafe { payload::bytes_from_js(env.raw(), v, what) }
}

/// `extend`'s progress reports: per element, `None` for `null` /
/// `undefined`, else its bytes (a `Buffer` untouched, a value encoded).
fn progress_reports(env: &Env, p: Arg) -> Result<Vec<Option<Vec<u8>>>, Failure> {
    p.items("progress")?
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            if Arg::from_raw(env, v).is_nullish() {
                return Ok(None);
            }
            Ok(Some(bytes_of(env, v, || format!("progress[{i}]"))?.0))
        })
        .collect()
}

/// An open store: an embedded one (`NativeQueue.open`) or a client of a
/// server (`NativeQueue.connect`), one `JobStore` either way. Closed by
/// `close()`.
#[napi]
pub struct NativeQueue {
    /// Counts this handle's calls in flight on the pool (`now.rs`).
    q: Store,
    /// An embedded store without `sync_writes`: its short calls may run on
    /// the JS thread (`now.rs`).
    pub(crate) fast: bool,
    /// Whether a write could wait on RocksDB now (`stall.rs`).
    pub(crate) stall: crate::stall::StallWatch,
    /// Set by `serve`: the server's threads write to the store too.
    pub(crate) serving: AtomicBool,
}

impl NativeQueue {
    pub(crate) fn from_store(q: Arc<dyn JobStore>) -> Self {
        let fast = q
            .as_local()
            .and_then(|l| l.config().ok())
            .is_some_and(|c| !c.sync_writes);
        NativeQueue {
            stall: crate::stall::StallWatch::new(&q, fast),
            q: Store::new(q),
            fast,
            serving: AtomicBool::new(false),
        }
    }

    /// The store; each clone counts as a call in flight until dropped.
    pub(crate) fn store(&self) -> &Store {
        &self.q
    }
}

#[napi]
impl NativeQueue {
    /// Open (or create) the store at `path`. `options` are read through the
    /// core's key table (see `configKeys()`).
    #[napi(
        ts_args_type = "path: string, options?: Record<string, unknown> | undefined | null",
        ts_return_type = "Promise<NativeQueue>"
    )]
    pub fn open(
        env: Env,
        path: String,
        options: Option<Unknown>,
    ) -> napi::Result<AsyncTask<Op<Queue, NativeQueue>>> {
        guard(&env, "open", || {
            let cfg = config::build(options.as_ref().map(|o| Arg::new(&env, o)))?;
            Ok(Op::task(
                "open",
                move || Ok(Queue::open(&path, cfg)?),
                |q| NativeQueue::from_store(Arc::new(q)),
            ))
        })
    }

    /// Close this handle; waits in progress end with `CLOSED`.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close(&self) -> AsyncTask<Op<(), Undefined>> {
        let q = self.q.clone();
        Op::task(
            "close",
            move || {
                q.close();
                Ok(())
            },
            |_| (),
        )
    }

    /// Whether `close()` was called.
    #[napi(getter)]
    pub fn closed(&self) -> bool {
        self.q.is_closed()
    }

    /// The store directory of an embedded queue; null for a remote one.
    #[napi(getter)]
    pub fn path(&self, env: Env) -> napi::Result<Option<String>> {
        guard(&env, "path", || match self.q.as_local() {
            Some(q) => Ok(Some(q.path()?.display().to_string())),
            None => Ok(None),
        })
    }

    /// The store directory, or the server URL of a remote queue.
    #[napi(getter)]
    pub fn location(&self, env: Env) -> napi::Result<String> {
        guard(&env, "location", || Ok(self.q.location()?))
    }

    /// Whether this is a client of a server.
    #[napi(getter)]
    pub fn remote(&self) -> bool {
        self.q.as_local().is_none()
    }

    /// Enqueue one job: its id, and whether it was created (false when an
    /// idempotency key matched an existing job).
    #[napi(ts_return_type = "Promise<Enqueued>")]
    pub fn enqueue(
        &self,
        env: Env,
        kind: String,
        payload: Unknown,
        options: Option<NativeEnqueueOptions>,
    ) -> napi::Result<AsyncTask<Op<telha_jobs::Enqueued, Enqueued>>> {
        guard(&env, "enqueue", || {
            Ok(AsyncTask::new(
                self.enqueue_op(&env, kind, &payload, options)?,
            ))
        })
    }

    /// Enqueue many jobs in one atomic batch: `kinds[i]` (or one kind for
    /// all), `payloads[i]`, `options[i]` (optional). Resolves with their ids,
    /// in order, joined with `,`, and per job whether it was created.
    #[napi(
        ts_args_type = "kinds: string | string[], payloads: unknown[], options?: Array<NativeEnqueueOptions | undefined | null>",
        ts_return_type = "Promise<EnqueuedBatch>"
    )]
    pub fn enqueue_many(
        &self,
        env: Env,
        kinds: Either<String, Vec<String>>,
        payloads: Unknown,
        options: Option<Vec<Option<NativeEnqueueOptions>>>,
    ) -> napi::Result<AsyncTask<Op<EnqueuedBatch, EnqueuedBatch>>> {
        guard(&env, "enqueueMany", || {
            let payloads = Arg::new(&env, &payloads).items("payloads")?;
            // One kind for the whole batch saves reading it per job.
            let kinds = match kinds {
                Either::A(k) => vec![k; payloads.len()],
                Either::B(v) => v,
            };
            let jobs = new_jobs(&env, kinds, payloads, options, "items")?;
            let q = self.q.clone();
            Ok(Op::task(
                "enqueueMany",
                move || Ok(EnqueuedBatch::from_core(q.enqueue_many(jobs)?)),
                |v| v,
            ))
        })
    }

    /// Lease up to `max` ready jobs without waiting.
    #[napi(ts_return_type = "Promise<LeasedBatch>")]
    pub fn lease_many(
        &self,
        env: Env,
        worker_id: String,
        max: f64,
        kinds: Option<Vec<String>>,
        scopes: Option<Vec<String>>,
    ) -> napi::Result<AsyncTask<Op<LeasedBatch, LeasedBatch>>> {
        guard(&env, "leaseMany", || {
            Ok(AsyncTask::new(
                self.lease_op(worker_id, max, kinds, scopes)?,
            ))
        })
    }

    /// Lease up to `max` jobs, waiting up to `waitMs` for the first (more
    /// than 100 years, or `Infinity`, waits for good), on a thread of its
    /// own; `cancel` ends the wait early.
    #[napi(ts_return_type = "Promise<LeasedBatch>")]
    #[allow(clippy::too_many_arguments)]
    pub fn lease_wait<'env>(
        &self,
        env: &'env Env,
        worker_id: String,
        max: f64,
        kinds: Option<Vec<String>>,
        scopes: Option<Vec<String>>,
        wait_ms: f64,
        cancel: Option<&CancelToken>,
    ) -> napi::Result<Object<'env>> {
        let (max, opts) = guard(env, "leaseWait", || {
            let max = batch_max(max, "max")?;
            let mut opts = lease_options(kinds, scopes)?;
            opts.wait = Some(args::wait_ms(wait_ms, "waitMs")?);
            opts.cancel = cancel.map(|c| c.inner.clone());
            Ok((max, opts))
        })?;
        // A wait holds no write: it does not keep calls off the loop.
        let q = self.q.arc().clone();
        on_thread(
            env,
            "leaseWait",
            "telha-lease-wait",
            move || Ok(q.lease_many(&worker_id, max, &opts)?),
            LeasedBatch::from_core,
        )
    }

    /// Renew leases (`ids` joined with `,`): per lease, one byte:
    /// [`EXTEND_RENEWED`], [`EXTEND_LOST`] (reaped, or leased again) or
    /// [`EXTEND_CANCELLED`] (a cancel was requested: not renewed, stop).
    /// `progress` (a heartbeat): per lease, a report (a `Buffer` stored
    /// untouched, or a plain value encoded with the payload convention), or
    /// `null` / `undefined` for none; a report over
    /// `limits.maxProgressBytes`, or more reports than leases, is
    /// `INVALID_ARGUMENT` for the whole call.
    #[napi(
        ts_args_type = "ids: string, generations: Float64Array, workerId: string, progress?: unknown[] | null",
        ts_return_type = "Promise<Uint8Array>"
    )]
    pub fn extend(
        &self,
        env: Env,
        ids: String,
        generations: Float64Array,
        worker_id: String,
        progress: Option<Unknown>,
    ) -> napi::Result<AsyncTask<Op<Vec<u8>, Copied<u8>>>> {
        guard(&env, "extend", || {
            let tokens = tokens(&ids, &generations)?;
            let reports = match progress.as_ref().map(|p| Arg::new(&env, p)) {
                Some(p) if !p.is_nullish() => Some(progress_reports(&env, p)?),
                _ => None,
            };
            let q = self.q.clone();
            Ok(Op::task(
                "extend",
                move || {
                    let r = match &reports {
                        Some(p) => q.heartbeat(&tokens, p, &worker_id)?,
                        None => q.extend(&tokens, &worker_id)?,
                    };
                    Ok(r.into_iter()
                        .map(|r| match r {
                            Ok(_) => EXTEND_RENEWED,
                            Err(e) if e.kind() == ErrorKind::Cancelled => EXTEND_CANCELLED,
                            Err(_) => EXTEND_LOST,
                        })
                        .collect())
                },
                Copied,
            ))
        })
    }

    /// Complete a leased job with an optional result (`undefined`: none)
    /// and follow-up jobs (`then*`: parallel arrays as `enqueueMany`
    /// takes them), enqueued in the completion's atomic batch.
    #[napi(
        ts_args_type = "id: string, generation: number, result: unknown, thenKinds?: string[] | null, thenPayloads?: unknown[] | null, thenOptions?: Array<NativeEnqueueOptions | undefined | null> | null",
        ts_return_type = "Promise<void>"
    )]
    #[allow(clippy::too_many_arguments)]
    pub fn complete(
        &self,
        env: Env,
        id: String,
        generation: f64,
        result: Unknown,
        then_kinds: Option<Vec<String>>,
        then_payloads: Option<Unknown>,
        then_options: Option<Vec<Option<NativeEnqueueOptions>>>,
    ) -> napi::Result<AsyncTask<Op<(), Undefined>>> {
        guard(&env, "complete", || {
            let then = follow_ups(&env, then_kinds, then_payloads.as_ref(), then_options)?;
            Ok(AsyncTask::new(
                self.complete_op(&env, &id, generation, &result, then)?,
            ))
        })
    }

    /// Complete many leased jobs in one call and one atomic write (`ids`
    /// joined with `,`). `results[i]` is job i's
    /// result (`undefined`: none). Without `results`, `nulls` (one byte per
    /// job) marks the jobs whose result is `null` (1) or none (0): results
    /// that are all null or undefined, the Worker's common case, then cross
    /// without a napi call per job. Follow-up jobs (`then*`, as for
    /// `complete`) are flattened over the batch, `thenCounts[i]` of them
    /// job i's. Resolves with null when every job was
    /// completed, else per job: null when completed, or the code of why not
    /// (`ABORTED` for a lost lease, `NOT_FOUND`, `INVALID_ARGUMENT` for a
    /// result over the size limit or a bad follow-up). `CLOSED` or
    /// `STORAGE` rejects the call, and then none was completed.
    #[napi(
        ts_args_type = "ids: string, generations: Float64Array, results?: unknown[] | null, nulls?: Uint8Array | null, thenKinds?: string[] | null, thenPayloads?: unknown[] | null, thenOptions?: Array<NativeEnqueueOptions | undefined | null> | null, thenCounts?: Uint32Array | null",
        ts_return_type = "Promise<Array<string | null> | null>"
    )]
    #[allow(clippy::too_many_arguments)]
    pub fn complete_many(
        &self,
        env: Env,
        ids: String,
        generations: Float64Array,
        results: Option<Unknown>,
        nulls: Option<Uint8Array>,
        then_kinds: Option<Vec<String>>,
        then_payloads: Option<Unknown>,
        then_options: Option<Vec<Option<NativeEnqueueOptions>>>,
        then_counts: Option<Uint32Array>,
    ) -> napi::Result<AsyncTask<Op<Option<Outcomes>, Option<Outcomes>>>> {
        guard(&env, "completeMany", || {
            let then = follow_ups(&env, then_kinds, then_payloads.as_ref(), then_options)?;
            Ok(AsyncTask::new(self.complete_many_op(
                &env,
                &ids,
                &generations,
                results.as_ref(),
                nulls.as_ref(),
                then,
                then_counts.as_deref(),
            )?))
        })
    }

    /// Fail a leased job (retried after backoff, or after `retryInMs` when
    /// given, unless not `retryable` or out of attempts).
    #[napi(ts_return_type = "Promise<void>")]
    pub fn fail(
        &self,
        env: Env,
        id: String,
        generation: f64,
        reason: String,
        retryable: bool,
        retry_in_ms: Option<f64>,
    ) -> napi::Result<AsyncTask<Op<(), Undefined>>> {
        guard(&env, "fail", || {
            let mut f = telha_jobs::Failure::new(args::token(&id, generation)?, reason);
            f.retryable = retryable;
            f.retry_in = retry_in_ms
                .map(|ms| args::setting_ms(ms, "retryInMs"))
                .transpose()?;
            let q = self.q.clone();
            Ok(Op::task("fail", move || Ok(q.fail_with(f)?), |_| ()))
        })
    }

    /// Hand a leased job back without spending an attempt.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn release(
        &self,
        env: Env,
        id: String,
        generation: f64,
    ) -> napi::Result<AsyncTask<Op<(), Undefined>>> {
        guard(&env, "release", || {
            let t = args::token(&id, generation)?;
            let q = self.q.clone();
            Ok(Op::task("release", move || Ok(q.release(&t)?), |_| ()))
        })
    }
}
