//! Flow control and follow-up jobs on a `NativeQueue` (issue 20):
//! `setLimit`, `removeLimit`, `limits`, and the follow-up jobs of
//! `complete` / `completeMany` (`then`), read here with the same code as
//! `enqueueMany`'s items ([`new_jobs`]). Every call goes through the core's
//! `JobStore`, so an embedded queue and a client of a server answer alike.

use napi::bindgen_prelude::{AsyncTask, Env, Undefined, Unknown};
use napi::sys;
use napi_derive::napi;

use telha_jobs::flow::{MAX_LIMIT, MAX_WEIGHT};
use telha_jobs::{Limit, LimitTarget, NewJob};

use crate::args::{enqueue_options, js_num, whole, Arg, NativeEnqueueOptions};
use crate::errors::Failure;
use crate::job::count;
use crate::payload::{self, OrNull};
use crate::queue::NativeQueue;
use crate::task::{guard, Op};

/// The settings of `setLimit`, as lib/telha.js passes them (types checked
/// there, ranges here and in the core).
#[napi(object)]
pub struct NativeLimit {
    pub concurrency: Option<f64>,
    pub rate: Option<f64>,
    pub burst: Option<f64>,
    pub weight: Option<f64>,
    /// FIFO per key (a key target with concurrency 1 only).
    pub ordered: Option<bool>,
}

/// One limit and how it is used now (`limits()`), sorted by target.
#[napi(object, object_from_js = false)]
pub struct LimitStatus {
    /// What it applies to: `kind:<kind or family:*>`, `scope:<uuid>`,
    /// `scope:*`, `scope:<uuid>/kind:<pattern>`, `scope:*/kind:<pattern>`,
    /// `key:<key>` or `key:*`.
    pub target: String,
    /// At most this many leased at once, or null.
    #[napi(ts_type = "number | null")]
    pub concurrency: OrNull<u32>,
    /// At most this many leases a second (a token bucket), or null.
    #[napi(ts_type = "number | null")]
    pub rate: OrNull<f64>,
    /// The bucket size as given, or null (then the rate rounded up).
    #[napi(ts_type = "number | null")]
    pub burst: OrNull<u32>,
    /// A scope's share of leases while others have work, or null (1).
    #[napi(ts_type = "number | null")]
    pub weight: OrNull<u32>,
    /// Jobs leased now that it counts (summed over scopes for `scope:*`).
    pub leased: f64,
    /// How many of its instances are at their cap or out of tokens now
    /// (0 or 1; for `scope:*` targets the scopes held back).
    pub held: f64,
    /// How often the cap held work back since the store was opened.
    pub throttled_concurrency: f64,
    /// How often the rate held work back since the store was opened.
    pub throttled_rate: f64,
    /// A key target's jobs lease one at a time, in enqueue order.
    pub ordered: bool,
}

impl LimitStatus {
    fn from_core(s: telha_jobs::LimitStatus) -> Self {
        LimitStatus {
            target: s.target.label(),
            concurrency: OrNull(s.limit.concurrency),
            rate: OrNull(s.limit.rate),
            burst: OrNull(s.limit.burst),
            weight: OrNull(s.limit.weight),
            leased: count(s.leased),
            held: count(s.held),
            throttled_concurrency: count(s.throttled_concurrency),
            throttled_rate: count(s.throttled_rate),
            ordered: s.limit.ordered,
        }
    }
}

/// The core's limit from the JS settings: whole numbers in their ranges
/// (a `RangeError` otherwise); the core checks what fits the target.
fn limit(o: NativeLimit) -> Result<Limit, Failure> {
    let max = u64::from(MAX_LIMIT);
    let int = |v: Option<f64>, what: &str, hi: u64| {
        v.map(|v| whole(v, what, 1, hi).map(|n| n as u32))
            .transpose()
    };
    if let Some(r) = o.rate {
        if !(r.is_finite() && r > 0.0 && r <= MAX_LIMIT as f64) {
            return Err(Failure::Range(format!(
                "rate must be a number of leases per second over 0 and at most {MAX_LIMIT}, got {}",
                js_num(r)
            )));
        }
    }
    Ok(Limit {
        concurrency: int(o.concurrency, "concurrency", max)?,
        rate: o.rate,
        burst: int(o.burst, "burst", max)?,
        weight: int(o.weight, "weight", u64::from(MAX_WEIGHT))?,
        ordered: o.ordered.unwrap_or(false),
    })
}

/// Jobs to enqueue from parallel arrays of kinds, payloads (`items` of a
/// JS array) and options (each optional), named `{at}[i]` in messages:
/// `enqueueMany`'s items and `complete`'s follow-ups.
pub(crate) fn new_jobs(
    env: &Env,
    kinds: Vec<String>,
    payloads: Vec<sys::napi_value>,
    options: Option<Vec<Option<NativeEnqueueOptions>>>,
    at: &str,
) -> Result<Vec<NewJob>, Failure> {
    if payloads.len() != kinds.len() {
        return Err(Failure::Invalid(format!("{at}: as many payloads as kinds")));
    }
    let mut options = options.unwrap_or_default().into_iter();
    kinds
        .into_iter()
        .zip(payloads)
        .enumerate()
        .map(|(i, (kind, p))| {
            // SAFETY: live handles of this call.
            let (payload, encoding) =
                unsafe { payload::bytes_from_js(env.raw(), p, || format!("{at}[{i}].payload")) }?;
            let mut options = enqueue_options(options.next().flatten(), &format!("{at}[{i}]"))?;
            options.encoding = encoding;
            Ok(NewJob {
                kind,
                payload,
                options,
            })
        })
        .collect()
}

/// `complete`'s follow-up jobs (`then`), as lib/telha.js passes them:
/// parallel arrays like `enqueueMany`'s; none when `kinds` is absent.
pub(crate) fn follow_ups(
    env: &Env,
    kinds: Option<Vec<String>>,
    payloads: Option<&Unknown>,
    options: Option<Vec<Option<NativeEnqueueOptions>>>,
) -> Result<Vec<NewJob>, Failure> {
    let Some(kinds) = kinds else {
        return Ok(Vec::new());
    };
    let payloads = match payloads.map(|p| Arg::new(env, p)) {
        Some(p) if !p.is_nullish() => p.items("then payloads")?,
        _ => Vec::new(),
    };
    new_jobs(env, kinds, payloads, options, "then")
}

/// `follow_ups` for a batch: `counts[i]` follow-ups for job i, in order.
pub(crate) fn split_follow_ups(
    jobs: Vec<NewJob>,
    counts: Option<&[u32]>,
    n: usize,
) -> Result<Vec<Vec<NewJob>>, Failure> {
    let Some(counts) = counts else {
        if !jobs.is_empty() {
            return Err(Failure::Invalid(
                "completeMany: follow-ups without per-job counts".into(),
            ));
        }
        return Ok((0..n).map(|_| Vec::new()).collect());
    };
    let total: u64 = counts.iter().map(|&c| u64::from(c)).sum();
    if counts.len() != n || total != jobs.len() as u64 {
        return Err(Failure::Invalid(format!(
            "completeMany: follow-up counts for {} jobs summing to {total}, for {n} jobs and {} follow-ups",
            counts.len(),
            jobs.len()
        )));
    }
    let mut rest = jobs.into_iter();
    Ok(counts
        .iter()
        .map(|&c| rest.by_ref().take(c as usize).collect())
        .collect())
}

#[napi]
impl NativeQueue {
    /// Set (or replace) the limit on `target`.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn set_limit(
        &self,
        env: Env,
        target: String,
        settings: NativeLimit,
    ) -> napi::Result<AsyncTask<Op<(), Undefined>>> {
        guard(&env, "setLimit", || {
            let t = LimitTarget::parse(&target)?;
            let l = limit(settings)?;
            let q = self.store().clone();
            Ok(Op::task(
                "setLimit",
                move || Ok(q.set_limit(&t, l)?),
                |_| (),
            ))
        })
    }

    /// Remove the limit on `target`: whether there was one.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn remove_limit(
        &self,
        env: Env,
        target: String,
    ) -> napi::Result<AsyncTask<Op<bool, bool>>> {
        guard(&env, "removeLimit", || {
            let t = LimitTarget::parse(&target)?;
            let q = self.store().clone();
            Ok(Op::task(
                "removeLimit",
                move || Ok(q.remove_limit(&t)?),
                |v| v,
            ))
        })
    }

    /// Every limit with its use now, sorted by target.
    #[napi(ts_return_type = "Promise<LimitStatus[]>")]
    pub fn limits(&self) -> AsyncTask<Op<Vec<LimitStatus>, Vec<LimitStatus>>> {
        let q = self.store().clone();
        Op::task(
            "limits",
            move || {
                Ok(q.limits()?
                    .into_iter()
                    .map(LimitStatus::from_core)
                    .collect())
            },
            |v| v,
        )
    }
}
