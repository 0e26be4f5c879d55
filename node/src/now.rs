//! Short calls on the JS thread: `enqueueNow`, `leaseNow`, `completeNow`,
//! `completeManyNow`. A trip to libuv's pool and back costs more than the
//! core's work of one enqueue, lease or complete (tens of µs against a few),
//! so on an embedded store without `sync_writes` these run where they are
//! called and answer at once, as better-sqlite3 does; `lib/telha.js` wraps
//! the answer in an already-settled Promise and bounds how long the JS
//! thread spends in them per turn of the event loop (docs/node.md,
//! "Calls on the event loop").
//!
//! Each answers `false` without doing anything when the call must go to the
//! pool instead: a remote queue (a network round trip), `sync_writes` (an
//! fsync per write), a write that could wait on RocksDB (a stall, a
//! flush, a memtable near full: `Queue::write_pressure`, cached by
//! `stall.rs`), another thread's heavy write running (`Queue::write_busy`),
//! or a batch over [`NOW_MAX_BATCH`]. The
//! caller then makes the pool call (`enqueue`, `leaseMany`, ...), which
//! takes the same arguments. Errors are the pool call's, thrown here and
//! turned into a rejection by the wrapper's `async` method.
//!
//! The arguments are converted by the same `*_op` builders as the pool
//! calls, and the work runs inside the same panic boundaries (`Op::now`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use napi::bindgen_prelude::{
    Either, Env, Float64Array, Uint32Array, Uint8Array, Undefined, Unknown,
};
use napi::{sys, JsValue};
use napi_derive::napi;

use telha_jobs::{Completion, Encoding, JobStore, NewJob};

use crate::args::{self, batch_max, enqueue_options, lease_options, tokens, Arg};
use crate::batch::LeasedBatch;
use crate::errors::{code, Failure};
use crate::flow::{follow_ups, split_follow_ups};
use crate::job::Enqueued;
use crate::payload;
use crate::queue::{NativeEnqueueOptions, NativeQueue, Outcomes};
use crate::stall::Decline;
use crate::task::{guard, Guarded, Op};

/// The most jobs a batch call (`leaseNow`, `completeManyNow`) takes on the
/// JS thread; larger batches go to the pool.
pub const NOW_MAX_BATCH: usize = 64;

/// A queue's store, counting the calls of this handle in flight on the
/// pool: every clone (what a pool call's work holds) counts until it is
/// dropped, when the work is done. RocksDB runs one write at a time, so a
/// call on the JS thread while one of the pool's writes (an `enqueueMany`
/// of 10,000) runs would wait for it: while any is in flight, calls go to
/// the pool too. Lease waits hold an uncounted handle (`arc()`): a wait
/// writes nothing until it claims.
pub(crate) struct Store {
    q: Arc<dyn JobStore>,
    calls: Arc<AtomicUsize>,
}

impl Store {
    pub(crate) fn new(q: Arc<dyn JobStore>) -> Self {
        Store {
            q,
            calls: Arc::new(AtomicUsize::new(1)),
        }
    }

    /// The store without counting.
    pub(crate) fn arc(&self) -> &Arc<dyn JobStore> {
        &self.q
    }

    /// Clones alive besides the handle's own.
    pub(crate) fn in_flight(&self) -> usize {
        self.calls.load(Ordering::SeqCst).saturating_sub(1)
    }
}

impl Clone for Store {
    fn clone(&self) -> Self {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Store {
            q: self.q.clone(),
            calls: self.calls.clone(),
        }
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        self.calls.fetch_sub(1, Ordering::SeqCst);
    }
}

impl std::ops::Deref for Store {
    type Target = dyn JobStore;
    fn deref(&self) -> &(dyn JobStore + 'static) {
        &*self.q
    }
}

/// An answer of a `*Now` call: the call's answer, or `false` when it did
/// nothing and the pool call must be made instead.
type Now<J> = Either<Guarded<J>, bool>;

const DECLINED: bool = false;

/// A payload or result of this call (`v` one of its live handles).
fn bytes_of(
    env: &Env,
    v: sys::napi_value,
    what: impl FnOnce() -> String,
) -> Result<(Vec<u8>, Encoding), Failure> {
    // SAFETY: live handles of this call.
    unsafe { payload::bytes_from_js(env.raw(), v, what) }
}

/// The calls' work, shared by the pool form (`queue.rs`) and the JS-thread
/// form (below).
impl NativeQueue {
    /// Why a short call may not run on the JS thread now; `None` when it
    /// may. Never while a write could wait on RocksDB (`stall.rs`: an
    /// atomic, refreshed off this thread) or behind another thread's heavy
    /// write (`Queue::write_busy`: one atomic load).
    fn decline(&self) -> Option<Decline> {
        if !self.fast {
            Some(Decline::Never)
        } else if self.store().in_flight() > 0 || self.serving.load(Ordering::Relaxed) {
            Some(Decline::Pool)
        } else if let Some(why) = self.stall.decline() {
            Some(why)
        } else if self.store().as_local().is_some_and(|q| q.write_busy()) {
            Some(Decline::Busy)
        } else {
            None
        }
    }

    /// Whether a short call may run on the JS thread now; a decline is
    /// counted by its reason (`loopDeclines`).
    fn may_run_now(&self) -> bool {
        match self.decline() {
            None => true,
            Some(why) => {
                why.count();
                false
            }
        }
    }

    pub(crate) fn enqueue_op(
        &self,
        env: &Env,
        kind: String,
        payload: &Unknown,
        options: Option<NativeEnqueueOptions>,
    ) -> Result<Op<telha_jobs::Enqueued, Enqueued>, Failure> {
        let (bytes, encoding) = bytes_of(env, payload.raw(), || "payload".into())?;
        let mut opts = enqueue_options(options, "options")?;
        opts.encoding = encoding;
        let q = self.store().clone();
        Ok(Op::new(
            "enqueue",
            move || Ok(q.enqueue(&kind, &bytes, opts)?),
            |e| Enqueued {
                id: e.id.to_string(),
                created: e.created,
                debounced: e.debounced,
            },
        ))
    }

    pub(crate) fn lease_op(
        &self,
        worker_id: String,
        max: f64,
        kinds: Option<Vec<String>>,
        scopes: Option<Vec<String>>,
    ) -> Result<Op<LeasedBatch, LeasedBatch>, Failure> {
        let max = batch_max(max, "max")?;
        let opts = lease_options(kinds, scopes)?;
        let q = self.store().clone();
        Ok(Op::new(
            "leaseMany",
            move || {
                Ok(LeasedBatch::from_core(
                    q.lease_many(&worker_id, max, &opts)?,
                ))
            },
            |v| v,
        ))
    }

    pub(crate) fn complete_op(
        &self,
        env: &Env,
        id: &str,
        generation: f64,
        result: &Unknown,
        then: Vec<NewJob>,
    ) -> Result<Op<(), Undefined>, Failure> {
        let token = args::token(id, generation)?;
        let mut c = Completion::new(token, None).then(then);
        if Arg::new(env, result).ty() != napi::ValueType::Undefined {
            let (bytes, encoding) = bytes_of(env, result.raw(), || "result".into())?;
            c.result = Some(bytes);
            c.encoding = encoding;
        }
        let q = self.store().clone();
        Ok(Op::new("complete", move || Ok(q.complete_with(c)?), |_| ()))
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn complete_many_op(
        &self,
        env: &Env,
        ids: &str,
        generations: &Float64Array,
        results: Option<&Unknown>,
        nulls: Option<&Uint8Array>,
        then: Vec<NewJob>,
        then_counts: Option<&[u32]>,
    ) -> Result<Op<Option<Outcomes>, Option<Outcomes>>, Failure> {
        let tokens = tokens(ids, generations)?;
        let results = results.map(|r| Arg::new(env, r));
        let then = split_follow_ups(then, then_counts, tokens.len())?;
        let mut items: Vec<Completion> = tokens
            .iter()
            .zip(then)
            .map(|(t, then)| Completion::new(*t, None).then(then))
            .collect();
        match results.filter(|r| !r.is_nullish()) {
            Some(r) => {
                let values = r.items("results")?;
                if values.len() != items.len() {
                    return Err(Failure::Invalid(
                        "completeMany: as many results as jobs".into(),
                    ));
                }
                for (i, (c, v)) in items.iter_mut().zip(values).enumerate() {
                    let mut t = 0;
                    // SAFETY: live handles of this call.
                    unsafe { sys::napi_typeof(env.raw(), v, &mut t) };
                    if t != sys::ValueType::napi_undefined {
                        let (bytes, encoding) = bytes_of(env, v, || format!("results[{i}]"))?;
                        c.result = Some(bytes);
                        c.encoding = encoding;
                    }
                }
            }
            None => {
                if let Some(n) = nulls {
                    if n.len() != items.len() {
                        return Err(Failure::Invalid(
                            "completeMany: as many null marks as jobs".into(),
                        ));
                    }
                    let nil = payload::nil();
                    for (c, _) in items.iter_mut().zip(n.iter()).filter(|(_, &b)| b != 0) {
                        c.result = Some(nil.clone());
                        c.encoding = Encoding::Value;
                    }
                }
            }
        }
        let q = self.store().clone();
        Ok(Op::new(
            "completeMany",
            move || {
                let n = items.len();
                // One atomic write for the whole batch (the core's complete_many).
                let answers = q.complete_many(items)?;
                let mut out: Option<Outcomes> = None;
                for (i, a) in answers.into_iter().enumerate() {
                    if let Err(e) = a {
                        let codes = out.get_or_insert_with(|| vec![None; n]);
                        codes[i] = Some(code(e.kind()).to_string());
                    }
                }
                Ok(out)
            },
            |v| v,
        ))
    }
}

#[napi]
impl NativeQueue {
    /// `enqueue` on the JS thread; `false` when it must go to the pool.
    #[napi(ts_return_type = "Enqueued | false")]
    pub fn enqueue_now(
        &self,
        env: Env,
        kind: String,
        payload: Unknown,
        options: Option<NativeEnqueueOptions>,
    ) -> napi::Result<Now<Enqueued>> {
        if !self.may_run_now() {
            return Ok(Either::B(DECLINED));
        }
        let op = guard(&env, "enqueue", || {
            self.enqueue_op(&env, kind, &payload, options)
        })?;
        op.now(&env).map(Either::A)
    }

    /// `enqueueNow` answering only the new job's id (what `Queue.enqueue`
    /// returns: one string instead of an object); `false` as `enqueueNow`.
    #[napi(ts_return_type = "string | false")]
    pub fn enqueue_id_now(
        &self,
        env: Env,
        kind: String,
        payload: Unknown,
        options: Option<NativeEnqueueOptions>,
    ) -> napi::Result<Either<String, bool>> {
        if !self.may_run_now() {
            return Ok(Either::B(DECLINED));
        }
        let op = guard(&env, "enqueue", || {
            self.enqueue_op(&env, kind, &payload, options)
        })?;
        op.now(&env).map(|Guarded(_, e)| Either::A(e.id))
    }

    /// `leaseMany` (no wait) on the JS thread; `false` when it must go to
    /// the pool (also when `max` is over [`NOW_MAX_BATCH`]).
    #[napi(ts_return_type = "LeasedBatch | false")]
    pub fn lease_now(
        &self,
        env: Env,
        worker_id: String,
        max: f64,
        kinds: Option<Vec<String>>,
        scopes: Option<Vec<String>>,
    ) -> napi::Result<Now<LeasedBatch>> {
        if max > NOW_MAX_BATCH as f64 || !self.may_run_now() {
            return Ok(Either::B(DECLINED));
        }
        let op = guard(&env, "leaseMany", || {
            self.lease_op(worker_id, max, kinds, scopes)
        })?;
        op.now(&env).map(Either::A)
    }

    /// `complete` on the JS thread (`undefined` when done); `false` when it
    /// must go to the pool (also for more than [`NOW_MAX_BATCH`] follow-ups).
    #[napi(
        ts_args_type = "id: string, generation: number, result: unknown, thenKinds?: string[] | null, thenPayloads?: unknown[] | null, thenOptions?: Array<NativeEnqueueOptions | undefined | null> | null",
        ts_return_type = "undefined | false"
    )]
    #[allow(clippy::too_many_arguments)]
    pub fn complete_now(
        &self,
        env: Env,
        id: String,
        generation: f64,
        result: Unknown,
        then_kinds: Option<Vec<String>>,
        then_payloads: Option<Unknown>,
        then_options: Option<Vec<Option<NativeEnqueueOptions>>>,
    ) -> napi::Result<Now<Undefined>> {
        let many = then_kinds.as_ref().is_some_and(|k| k.len() > NOW_MAX_BATCH);
        if many || !self.may_run_now() {
            return Ok(Either::B(DECLINED));
        }
        let op = guard(&env, "complete", || {
            let then = follow_ups(&env, then_kinds, then_payloads.as_ref(), then_options)?;
            self.complete_op(&env, &id, generation, &result, then)
        })?;
        op.now(&env).map(Either::A)
    }

    /// `completeMany` on the JS thread; `false` when it must go to the pool
    /// (also for more than [`NOW_MAX_BATCH`] jobs or follow-ups).
    #[napi(
        ts_args_type = "ids: string, generations: Float64Array, results?: unknown[] | null, nulls?: Uint8Array | null, thenKinds?: string[] | null, thenPayloads?: unknown[] | null, thenOptions?: Array<NativeEnqueueOptions | undefined | null> | null, thenCounts?: Uint32Array | null",
        ts_return_type = "Array<string | null> | null | false"
    )]
    #[allow(clippy::too_many_arguments)]
    pub fn complete_many_now(
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
    ) -> napi::Result<Now<Option<Outcomes>>> {
        let many = then_kinds.as_ref().is_some_and(|k| k.len() > NOW_MAX_BATCH);
        if many || generations.len() > NOW_MAX_BATCH || !self.may_run_now() {
            return Ok(Either::B(DECLINED));
        }
        let op = guard(&env, "completeMany", || {
            let then = follow_ups(&env, then_kinds, then_payloads.as_ref(), then_options)?;
            self.complete_many_op(
                &env,
                &ids,
                &generations,
                results.as_ref(),
                nulls.as_ref(),
                then,
                then_counts.as_deref(),
            )
        })?;
        op.now(&env).map(Either::A)
    }
}

/// Whether the next short call would run on the JS thread (`false` for a
/// remote queue, `sync_writes`, or a write stall now): for tests and the
/// wrapper's documentation; the `*Now` calls decide for themselves.
#[napi]
impl NativeQueue {
    #[napi(getter)]
    pub fn runs_now(&self) -> bool {
        self.decline().is_none()
    }
}
