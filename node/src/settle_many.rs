//! `failMany` and `releaseMany` on a `NativeQueue`: the batch forms of
//! `fail` and `release`, each one atomic write through the core's
//! `JobStore` (over a remote queue: one round trip), answered per job as
//! `completeMany` is: null when every job settled, else per job null or
//! the code of why not.

use napi::bindgen_prelude::{AsyncTask, Env, Float64Array};
use napi_derive::napi;

use telha_jobs::{Failure as Fail, Result as CoreResult};

use crate::args::tokens;
use crate::errors::{code, Failure};
use crate::queue::{NativeQueue, Outcomes};
use crate::task::{guard, Op};

/// None when every item settled, else each item's code (None: settled).
fn outcomes(answers: Vec<CoreResult<()>>) -> Option<Outcomes> {
    let n = answers.len();
    let mut out: Option<Outcomes> = None;
    for (i, a) in answers.into_iter().enumerate() {
        if let Err(e) = a {
            out.get_or_insert_with(|| vec![None; n])[i] = Some(code(e.kind()).to_string());
        }
    }
    out
}

/// A batch argument's length against the jobs'.
fn same_len(what: &str, len: usize, n: usize) -> Result<(), Failure> {
    if len == n {
        return Ok(());
    }
    Err(Failure::Invalid(format!(
        "failMany: {what} has {len} entries for {n} jobs"
    )))
}

#[napi]
impl NativeQueue {
    /// Fail many leased jobs in one atomic write (`ids` joined with `,`),
    /// each with its reason, `retryable` and retry delay in ms (null: the
    /// backoff schedule's). A delay over the limit is that job's
    /// `INVALID_ARGUMENT`. Resolves as `completeMany`.
    #[napi(
        ts_args_type = "ids: string, generations: Float64Array, reasons: string[], retryable: boolean[], retryInMs: Array<number | null>",
        ts_return_type = "Promise<Array<string | null> | null>"
    )]
    pub fn fail_many(
        &self,
        env: Env,
        ids: String,
        generations: Float64Array,
        reasons: Vec<String>,
        retryable: Vec<bool>,
        retry_in_ms: Vec<Option<f64>>,
    ) -> napi::Result<AsyncTask<Op<Option<Outcomes>, Option<Outcomes>>>> {
        guard(&env, "failMany", || {
            let tokens = tokens(&ids, &generations)?;
            let n = tokens.len();
            same_len("reasons", reasons.len(), n)?;
            same_len("retryable", retryable.len(), n)?;
            same_len("retryInMs", retry_in_ms.len(), n)?;
            let mut items = Vec::with_capacity(n);
            for (i, ((t, reason), (r, ms))) in tokens
                .into_iter()
                .zip(reasons)
                .zip(retryable.into_iter().zip(retry_in_ms))
                .enumerate()
            {
                let mut f = Fail::new(t, reason);
                f.retryable = r;
                if let Some(ms) = ms {
                    if !(ms.is_finite() && ms >= 0.0) {
                        return Err(Failure::Range(format!(
                            "retryInMs[{i}] must be a number of milliseconds from 0, got {ms}"
                        )));
                    }
                    // Over the limit: the core answers this item INVALID_ARGUMENT.
                    f.retry_in = Some(std::time::Duration::from_millis(ms as u64));
                }
                items.push(f);
            }
            let q = self.store().clone();
            Ok(AsyncTask::new(Op::new(
                "failMany",
                move || Ok(outcomes(q.fail_many(items)?)),
                |v| v,
            )))
        })
    }

    /// Release many leased jobs in one atomic write (`ids` joined with
    /// `,`): pending again at their old place, no attempt spent. Resolves
    /// as `completeMany`.
    #[napi(ts_return_type = "Promise<Array<string | null> | null>")]
    pub fn release_many(
        &self,
        env: Env,
        ids: String,
        generations: Float64Array,
    ) -> napi::Result<AsyncTask<Op<Option<Outcomes>, Option<Outcomes>>>> {
        guard(&env, "releaseMany", || {
            let tokens = tokens(&ids, &generations)?;
            let q = self.store().clone();
            Ok(AsyncTask::new(Op::new(
                "releaseMany",
                move || Ok(outcomes(q.release_many(&tokens)?)),
                |v| v,
            )))
        })
    }
}
