//! `NativeQueue`: the core's `Queue` for JS. Every call that touches the
//! store returns a Promise: arguments are converted to owned Rust values on
//! the JS thread, the core runs on libuv's thread pool (`AsyncTask`), and
//! the answer is converted back on the JS thread. A lease that may wait
//! runs on a thread of its own instead, so waiting pollers never occupy the
//! pool that completes and heartbeats need.
//!
//! The public, documented API is the `Queue` class of `lib/telha.js`,
//! which checks argument types and wraps this one.

use std::fmt::Write;
use std::marker::PhantomData;
use std::time::Duration;

use napi::bindgen_prelude::{
    AsyncTask, Either, Env, Float64Array, Object, Status, ToNapiValue, TypeName, Uint8Array,
    Undefined, Unknown,
};
use napi::{sys, JsValue, Task};
use napi_derive::napi;
use std::sync::Arc;

use telha_jobs::{
    CancelWait, EnqueueOptions, JobId, JobStore, KindPattern, LeaseOptions, LeaseToken, ListQuery,
    NewJob, Queue, Scope, State,
};

use crate::config::{self, OpenOptions};
use crate::errors::{core_to_js, to_js, Failure};
use crate::job::{CorruptRecord, Enqueued, JobInfo, LeasedBatch, ListPage, ReapReport, Stats};
use crate::payload;

type Work<T> = Box<dyn FnOnce() -> Result<T, Failure> + Send>;

/// Per job of a batch: `None` when done, else the error code.
type Outcomes = Vec<Option<String>>;

/// One call into the core on libuv's thread pool: `work` runs there, `done`
/// converts its answer on the JS thread; a failure becomes a coded JS error.
pub struct Op<T: Send + 'static, J> {
    work: Option<Work<T>>,
    done: fn(T) -> J,
    failure: Option<Failure>,
    _js: PhantomData<fn() -> J>,
}

impl<T: Send + 'static, J> Op<T, J> {
    pub(crate) fn task(
        work: impl FnOnce() -> Result<T, Failure> + Send + 'static,
        done: fn(T) -> J,
    ) -> AsyncTask<Self>
    where
        J: ToNapiValue + TypeName,
    {
        AsyncTask::new(Op {
            work: Some(Box::new(work)),
            done,
            failure: None,
            _js: PhantomData,
        })
    }
}

impl<T: Send + 'static, J: ToNapiValue + TypeName> Task for Op<T, J> {
    type Output = T;
    type JsValue = J;

    fn compute(&mut self) -> napi::Result<T> {
        let work = self
            .work
            .take()
            .ok_or_else(|| napi::Error::new(Status::GenericFailure, "task ran twice"))?;
        // A panic in the core must not unwind into libuv.
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)) {
            Ok(Ok(t)) => Ok(t),
            Ok(Err(f)) => {
                self.failure = Some(f);
                Err(napi::Error::new(Status::GenericFailure, "failed"))
            }
            Err(_) => {
                self.failure = Some(Failure::Core(telha_jobs::Error::Storage(
                    "internal error: the core panicked (a bug; please report it)".into(),
                )));
                Err(napi::Error::new(Status::GenericFailure, "panicked"))
            }
        }
    }

    fn resolve(&mut self, _env: Env, output: T) -> napi::Result<J> {
        Ok((self.done)(output))
    }

    fn reject(&mut self, env: Env, err: napi::Error) -> napi::Result<J> {
        match self.failure.take() {
            Some(f) => Err(to_js(&env, f)),
            None => Err(err),
        }
    }
}

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

/// Options of one enqueue (see `Queue.enqueue` in lib/telha.d.ts).
#[napi(object)]
pub struct NativeEnqueueOptions {
    pub scope: Option<String>,
    pub priority: Option<u32>,
    pub delay_ms: Option<f64>,
    pub run_at: Option<f64>,
    pub idempotency_key: Option<String>,
    pub max_attempts: Option<u32>,
}

/// Filters of `list`.
#[napi(object)]
pub struct NativeListOptions {
    pub state: Option<String>,
    pub scope: Option<String>,
    pub kind: Option<String>,
    pub limit: Option<u32>,
    pub after: Option<String>,
}

fn enqueue_options(o: Option<NativeEnqueueOptions>) -> Result<EnqueueOptions, Failure> {
    let Some(o) = o else {
        return Ok(EnqueueOptions::default());
    };
    let mut e = EnqueueOptions::default();
    if let Some(s) = o.scope {
        e.scope = Some(s.parse::<Scope>()?);
    }
    if let Some(p) = o.priority {
        e.priority = Some(u8::try_from(p).map_err(|_| {
            Failure::Invalid(format!("priority must be 0 (most urgent) to 255, got {p}"))
        })?);
    }
    if let Some(d) = o.delay_ms {
        if !(d.is_finite() && d >= 0.0) {
            return Err(Failure::Invalid(format!(
                "delayMs must be a finite number ≥ 0, got {d}"
            )));
        }
        e.delay = Some(Duration::from_micros((d * 1000.0) as u64));
    }
    if let Some(t) = o.run_at {
        if !(t.is_finite() && t >= 0.0) {
            return Err(Failure::Invalid(format!(
                "runAt must be a time in ms since the epoch, got {t}"
            )));
        }
        e.run_at = Some(t as u64);
    }
    e.idempotency_key = o.idempotency_key;
    e.max_attempts = o.max_attempts;
    Ok(e)
}

fn lease_options(
    kinds: Option<Vec<String>>,
    scopes: Option<Vec<String>>,
) -> Result<LeaseOptions, Failure> {
    let mut o = LeaseOptions::default();
    for k in kinds.unwrap_or_default() {
        o.kinds.push(k.parse::<KindPattern>()?);
    }
    for s in scopes.unwrap_or_default() {
        o.scopes.push(s.parse::<Scope>()?);
    }
    Ok(o)
}

fn token(id: &str, generation: i64) -> Result<LeaseToken, Failure> {
    let generation = u64::try_from(generation).map_err(|_| {
        Failure::Invalid(format!(
            "malformed lease: generation {generation} is negative"
        ))
    })?;
    Ok(LeaseToken {
        id: id.parse::<JobId>()?,
        generation,
    })
}

/// Lease tokens sent as two values instead of 2n: the ids joined with `,`
/// and the generations as a `Float64Array` (one napi call each, not one
/// per element: JS-thread time is what batch calls spend most).
fn tokens(ids: &str, generations: &[f64]) -> Result<Vec<LeaseToken>, Failure> {
    if ids.is_empty() && generations.is_empty() {
        return Ok(Vec::new());
    }
    let parts: Vec<&str> = ids.split(',').collect();
    if parts.len() != generations.len() {
        return Err(Failure::Invalid(format!(
            "malformed lease tokens: {} ids for {} generations (an id with a comma?)",
            parts.len(),
            generations.len()
        )));
    }
    parts
        .into_iter()
        .zip(generations)
        .map(|(id, g)| {
            if g.fract() != 0.0 || !g.is_finite() {
                return Err(Failure::Invalid(format!(
                    "malformed lease: generation {g} is not an integer"
                )));
            }
            token(id, *g as i64)
        })
        .collect()
}

fn items(env: &Env, v: &Unknown, what: &str) -> Result<Vec<sys::napi_value>, Failure> {
    let (env, raw) = (env.raw(), v.raw());
    let mut is = false;
    // SAFETY: live handles of this call.
    unsafe { sys::napi_is_array(env, raw, &mut is) };
    if !is {
        return Err(Failure::Type(format!("{what} must be an array")));
    }
    let mut len = 0u32;
    unsafe { sys::napi_get_array_length(env, raw, &mut len) };
    (0..len)
        .map(|i| {
            let mut e = std::ptr::null_mut();
            match unsafe { sys::napi_get_element(env, raw, i, &mut e) } {
                sys::Status::napi_ok => Ok(e),
                _ => Err(Failure::Invalid(format!("cannot read {what}[{i}]"))),
            }
        })
        .collect()
}

/// An open store: an embedded one (`NativeQueue.open`) or a client of a
/// server (`NativeQueue.connect`), one `JobStore` either way. Closed by
/// `close()`.
#[napi]
pub struct NativeQueue {
    q: Arc<dyn JobStore>,
}

impl NativeQueue {
    pub(crate) fn from_store(q: Arc<dyn JobStore>) -> Self {
        NativeQueue { q }
    }

    pub(crate) fn store(&self) -> &Arc<dyn JobStore> {
        &self.q
    }
}

#[napi]
impl NativeQueue {
    /// Open (or create) the store at `path`.
    #[napi(ts_return_type = "Promise<NativeQueue>")]
    pub fn open(
        env: Env,
        path: String,
        options: Option<OpenOptions>,
    ) -> napi::Result<AsyncTask<Op<Queue, NativeQueue>>> {
        let cfg = match options {
            Some(o) => config::build(o),
            None => config::build(OpenOptions {
                lease_ttl_ms: None,
                reaper_interval_ms: None,
                max_attempts: None,
                backoff: None,
                completed_retention_ms: None,
                sync_writes: None,
                max_payload_bytes: None,
                kinds: None,
                config_file: None,
            }),
        }
        .map_err(|f| to_js(&env, f))?;
        Ok(Op::task(
            move || Ok(Queue::open(&path, cfg)?),
            |q| NativeQueue::from_store(Arc::new(q)),
        ))
    }

    /// Close this handle; waits in progress end with `CLOSED`.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close(&self) -> AsyncTask<Op<(), Undefined>> {
        let q = self.q.clone();
        Op::task(
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
        match self.q.as_local() {
            Some(q) => q
                .path()
                .map(|p| Some(p.display().to_string()))
                .map_err(|e| core_to_js(&env, e)),
            None => Ok(None),
        }
    }

    /// The store directory, or the server URL of a remote queue.
    #[napi(getter)]
    pub fn location(&self, env: Env) -> napi::Result<String> {
        self.q.location().map_err(|e| core_to_js(&env, e))
    }

    /// Whether this is a client of a server.
    #[napi(getter)]
    pub fn remote(&self) -> bool {
        self.q.as_local().is_none()
    }

    /// Enqueue one job.
    #[napi(ts_return_type = "Promise<Enqueued>")]
    pub fn enqueue(
        &self,
        env: Env,
        kind: String,
        payload: Unknown,
        options: Option<NativeEnqueueOptions>,
    ) -> napi::Result<AsyncTask<Op<telha_jobs::Enqueued, Enqueued>>> {
        // SAFETY: live handles of this call.
        let bytes =
            unsafe { payload::bytes_from_js(env.raw(), payload.raw(), || "payload".into()) }
                .map_err(|f| to_js(&env, f))?;
        let opts = enqueue_options(options).map_err(|f| to_js(&env, f))?;
        let q = self.q.clone();
        Ok(Op::task(
            move || Ok(q.enqueue(&kind, &bytes, opts)?),
            |e| Enqueued {
                id: e.id.to_string(),
                created: e.created,
            },
        ))
    }

    /// Enqueue many jobs in one atomic batch: `kinds[i]` (or one kind for
    /// all), `payloads[i]`, `options[i]` (optional). Resolves with their ids,
    /// in order, joined with `,`.
    #[napi(
        ts_args_type = "kinds: string | string[], payloads: unknown[], options?: Array<NativeEnqueueOptions | undefined | null>",
        ts_return_type = "Promise<string>"
    )]
    pub fn enqueue_many(
        &self,
        env: Env,
        kinds: Either<String, Vec<String>>,
        payloads: Unknown,
        options: Option<Vec<Option<NativeEnqueueOptions>>>,
    ) -> napi::Result<AsyncTask<Op<String, String>>> {
        let jobs = (|| {
            let payloads = items(&env, &payloads, "payloads")?;
            // One kind for the whole batch saves reading it per job.
            let kinds = match kinds {
                Either::A(k) => vec![k; payloads.len()],
                Either::B(v) => v,
            };
            if payloads.len() != kinds.len() {
                return Err(Failure::Invalid(
                    "enqueueMany: as many payloads as kinds".into(),
                ));
            }
            let mut options = options.unwrap_or_default().into_iter();
            kinds
                .into_iter()
                .zip(payloads)
                .enumerate()
                .map(|(i, (kind, p))| {
                    // SAFETY: live handles of this call.
                    let payload = unsafe {
                        payload::bytes_from_js(env.raw(), p, || format!("items[{i}].payload"))
                    }?;
                    let options = enqueue_options(options.next().flatten())?;
                    Ok(NewJob {
                        kind,
                        payload,
                        options,
                    })
                })
                .collect::<Result<Vec<_>, Failure>>()
        })()
        .map_err(|f| to_js(&env, f))?;
        let q = self.q.clone();
        Ok(Op::task(
            move || {
                let done = q.enqueue_many(jobs)?;
                // One string, split in JS: one napi value instead of one per job.
                let mut ids = String::with_capacity(done.len() * 37);
                for (i, e) in done.iter().enumerate() {
                    if i > 0 {
                        ids.push(',');
                    }
                    let _ = write!(ids, "{}", e.id);
                }
                Ok(ids)
            },
            |v| v,
        ))
    }

    /// Lease up to `max` ready jobs without waiting.
    #[napi(ts_return_type = "Promise<LeasedBatch>")]
    pub fn lease_many(
        &self,
        env: Env,
        worker_id: String,
        max: u32,
        kinds: Option<Vec<String>>,
        scopes: Option<Vec<String>>,
    ) -> napi::Result<AsyncTask<Op<LeasedBatch, LeasedBatch>>> {
        let opts = lease_options(kinds, scopes).map_err(|f| to_js(&env, f))?;
        let q = self.q.clone();
        Ok(Op::task(
            move || {
                let jobs = q.lease_many(&worker_id, max as usize, &opts)?;
                Ok(LeasedBatch::from_core(jobs))
            },
            |v| v,
        ))
    }

    /// Lease up to `max` jobs, waiting up to `waitMs` for the first, on a
    /// thread of its own; `cancel` ends the wait early.
    #[napi(ts_return_type = "Promise<LeasedBatch>")]
    #[allow(clippy::too_many_arguments)]
    pub fn lease_wait<'env>(
        &self,
        env: &'env Env,
        worker_id: String,
        max: u32,
        kinds: Option<Vec<String>>,
        scopes: Option<Vec<String>>,
        wait_ms: f64,
        cancel: Option<&CancelToken>,
    ) -> napi::Result<Object<'env>> {
        let mut opts = lease_options(kinds, scopes).map_err(|f| to_js(env, f))?;
        if !(wait_ms.is_finite() && wait_ms >= 0.0) {
            return Err(to_js(
                env,
                Failure::Invalid(format!("waitMs must be a finite number ≥ 0, got {wait_ms}")),
            ));
        }
        opts.wait = Some(Duration::from_micros((wait_ms * 1000.0) as u64));
        opts.cancel = cancel.map(|c| c.inner.clone());
        type Resolve = Box<dyn FnOnce(Env) -> napi::Result<LeasedBatch> + Send>;
        let (deferred, promise) = env.create_deferred::<LeasedBatch, Resolve>()?;
        let q = self.q.clone();
        std::thread::Builder::new()
            .name("telha-lease-wait".into())
            .spawn(move || {
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    q.lease_many(&worker_id, max as usize, &opts)
                }))
                .unwrap_or_else(|_| {
                    Err(telha_jobs::Error::Storage(
                        "internal error: the core panicked (a bug; please report it)".into(),
                    ))
                })
                .map(LeasedBatch::from_core);
                deferred.resolve(Box::new(move |env: Env| r.map_err(|e| core_to_js(&env, e))));
            })
            .map_err(|e| {
                to_js(
                    env,
                    Failure::Core(telha_jobs::Error::Storage(format!(
                        "cannot start a lease-wait thread: {e}"
                    ))),
                )
            })?;
        Ok(promise)
    }

    /// Renew leases (`ids` joined with `,`): per lease, true when renewed,
    /// false when it is lost.
    #[napi(ts_return_type = "Promise<boolean[]>")]
    pub fn extend(
        &self,
        env: Env,
        ids: String,
        generations: Float64Array,
        worker_id: String,
    ) -> napi::Result<AsyncTask<Op<Vec<bool>, Vec<bool>>>> {
        let tokens = tokens(&ids, &generations).map_err(|f| to_js(&env, f))?;
        let q = self.q.clone();
        Ok(Op::task(
            move || {
                let r = q.extend(&tokens, &worker_id)?;
                Ok(r.into_iter().map(|r| r.is_ok()).collect())
            },
            |v| v,
        ))
    }

    /// Complete a leased job with an optional result.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn complete(
        &self,
        env: Env,
        id: String,
        generation: i64,
        result: Unknown,
    ) -> napi::Result<AsyncTask<Op<(), Undefined>>> {
        let t = token(&id, generation).map_err(|f| to_js(&env, f))?;
        let result = match result.get_type()? {
            napi::ValueType::Undefined => None,
            // SAFETY: live handles of this call.
            _ => Some(
                unsafe { payload::bytes_from_js(env.raw(), result.raw(), || "result".into()) }
                    .map_err(|f| to_js(&env, f))?,
            ),
        };
        let q = self.q.clone();
        Ok(Op::task(
            move || Ok(q.complete(&t, result.as_deref())?),
            |_| (),
        ))
    }

    /// Complete many leased jobs in one call and one atomic write (`ids`
    /// joined with `,`). `results[i]` is job i's
    /// result (`undefined`: none). Without `results`, `nulls` (one byte per
    /// job) marks the jobs whose result is `null` (1) or none (0): results
    /// that are all null or undefined, the Worker's common case, then cross
    /// without a napi call per job. Resolves with null when every job was
    /// completed, else per job: null when completed, or the code of why not
    /// (`ABORTED` for a lost lease, `NOT_FOUND`, `INVALID_ARGUMENT` for a
    /// result over the size limit). `CLOSED` or `STORAGE` rejects the call,
    /// and then none was completed.
    #[napi(
        ts_args_type = "ids: string, generations: Float64Array, results?: unknown[] | null, nulls?: Uint8Array | null",
        ts_return_type = "Promise<Array<string | null> | null>"
    )]
    pub fn complete_many(
        &self,
        env: Env,
        ids: String,
        generations: Float64Array,
        results: Option<Unknown>,
        nulls: Option<Uint8Array>,
    ) -> napi::Result<AsyncTask<Op<Option<Outcomes>, Option<Outcomes>>>> {
        let work = (|| {
            let tokens = tokens(&ids, &generations)?;
            let results = match &results {
                Some(r)
                    if !matches!(
                        r.get_type(),
                        Ok(napi::ValueType::Undefined | napi::ValueType::Null)
                    ) =>
                {
                    let items = items(&env, r, "results")?;
                    if items.len() != tokens.len() {
                        return Err(Failure::Invalid(
                            "completeMany: as many results as jobs".into(),
                        ));
                    }
                    items
                        .into_iter()
                        .enumerate()
                        .map(|(i, v)| {
                            let mut t = 0;
                            // SAFETY: live handles of this call.
                            unsafe { sys::napi_typeof(env.raw(), v, &mut t) };
                            if t == sys::ValueType::napi_undefined {
                                Ok(None)
                            } else {
                                unsafe {
                                    payload::bytes_from_js(env.raw(), v, || format!("results[{i}]"))
                                }
                                .map(Some)
                            }
                        })
                        .collect::<Result<Vec<_>, Failure>>()?
                }
                _ => match &nulls {
                    Some(n) => {
                        if n.len() != tokens.len() {
                            return Err(Failure::Invalid(
                                "completeMany: as many null marks as jobs".into(),
                            ));
                        }
                        let nil = payload::nil();
                        n.iter().map(|&b| (b != 0).then(|| nil.clone())).collect()
                    }
                    None => vec![None; tokens.len()],
                },
            };
            Ok((tokens, results))
        })()
        .map_err(|f| to_js(&env, f))?;
        let q = self.q.clone();
        Ok(Op::task(
            move || {
                let (tokens, results) = work;
                let n = tokens.len();
                // One atomic write for the whole batch (the core's complete_many).
                let answers =
                    q.complete_many(tokens.into_iter().zip(results).map(Into::into).collect())?;
                let mut out: Option<Outcomes> = None;
                for (i, a) in answers.into_iter().enumerate() {
                    if let Err(e) = a {
                        let codes = out.get_or_insert_with(|| vec![None; n]);
                        codes[i] = Some(crate::errors::code(e.kind()).to_string());
                    }
                }
                Ok(out)
            },
            |v| v,
        ))
    }

    /// Fail a leased job (retried after backoff unless not `retryable` or
    /// out of attempts).
    #[napi(ts_return_type = "Promise<void>")]
    pub fn fail(
        &self,
        env: Env,
        id: String,
        generation: i64,
        reason: String,
        retryable: bool,
    ) -> napi::Result<AsyncTask<Op<(), Undefined>>> {
        let t = token(&id, generation).map_err(|f| to_js(&env, f))?;
        let q = self.q.clone();
        Ok(Op::task(
            move || Ok(q.fail(&t, &reason, retryable)?),
            |_| (),
        ))
    }

    /// Hand a leased job back without spending an attempt.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn release(
        &self,
        env: Env,
        id: String,
        generation: i64,
    ) -> napi::Result<AsyncTask<Op<(), Undefined>>> {
        let t = token(&id, generation).map_err(|f| to_js(&env, f))?;
        let q = self.q.clone();
        Ok(Op::task(move || Ok(q.release(&t)?), |_| ()))
    }

    /// Operator action: a dead or failed job back to pending, attempts reset.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn retry(&self, env: Env, id: String) -> napi::Result<AsyncTask<Op<(), Undefined>>> {
        let id = id.parse::<JobId>().map_err(|e| core_to_js(&env, e))?;
        let q = self.q.clone();
        Ok(Op::task(move || Ok(q.retry(&id)?), |_| ()))
    }

    /// A job with its event log, or null.
    #[napi(ts_return_type = "Promise<JobInfo | null>")]
    pub fn get(
        &self,
        env: Env,
        id: String,
    ) -> napi::Result<AsyncTask<Op<Option<JobInfo>, Option<JobInfo>>>> {
        let id = id.parse::<JobId>().map_err(|e| core_to_js(&env, e))?;
        let q = self.q.clone();
        Ok(Op::task(
            move || Ok(q.get(&id)?.map(JobInfo::from_core)),
            |v| v,
        ))
    }

    /// A page of jobs in key order.
    #[napi(ts_return_type = "Promise<ListPage>")]
    pub fn list(
        &self,
        env: Env,
        options: Option<NativeListOptions>,
    ) -> napi::Result<AsyncTask<Op<ListPage, ListPage>>> {
        let query = (|| {
            let mut q = ListQuery::default();
            if let Some(o) = options {
                q.state = o.state.map(|s| s.parse::<State>()).transpose()?;
                q.scope = o.scope.map(|s| s.parse::<Scope>()).transpose()?;
                q.kind = o.kind.map(|s| s.parse::<KindPattern>()).transpose()?;
                if let Some(l) = o.limit {
                    q.limit = l as usize;
                }
                q.after = o.after;
            }
            Ok::<_, Failure>(q)
        })()
        .map_err(|f| to_js(&env, f))?;
        let q = self.q.clone();
        Ok(Op::task(
            move || {
                let p = q.list(&query)?;
                Ok(ListPage {
                    jobs: p.jobs.into_iter().map(JobInfo::from_core).collect(),
                    next: p.next,
                    corrupt: p
                        .corrupt
                        .into_iter()
                        .map(CorruptRecord::from_core)
                        .collect(),
                })
            },
            |v| v,
        ))
    }

    /// One reaper pass now.
    #[napi(ts_return_type = "Promise<ReapReport>")]
    pub fn reap(&self) -> AsyncTask<Op<ReapReport, ReapReport>> {
        let q = self.q.clone();
        Op::task(
            move || {
                let r = q.reap()?;
                Ok(ReapReport {
                    expired: r.expired as u32,
                    dead: r.dead as u32,
                    pruned: r.pruned as u32,
                    corrupt: r
                        .corrupt
                        .into_iter()
                        .map(CorruptRecord::from_core)
                        .collect(),
                })
            },
            |v| v,
        )
    }

    /// Exact counts per kind and state.
    #[napi(ts_return_type = "Promise<Stats>")]
    pub fn stats(&self) -> AsyncTask<Op<Stats, Stats>> {
        let q = self.q.clone();
        Op::task(
            move || {
                let s = q.stats()?;
                Ok(Stats {
                    total: s.total.into(),
                    by_kind: s.by_kind.into_iter().map(|(k, c)| (k, c.into())).collect(),
                })
            },
            |v| v,
        )
    }

    /// Prometheus text exposition.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn metrics(&self) -> AsyncTask<Op<String, String>> {
        let q = self.q.clone();
        Op::task(move || Ok(q.metrics()?), |v| v)
    }
}
