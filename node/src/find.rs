//! `find` on a `NativeQueue` (issue 42): a text looked up exactly as a
//! job id, an idempotency key and a tag (the core's `Queue::find`).

use napi::bindgen_prelude::{AsyncTask, Env};
use napi_derive::napi;

use telha_jobs::{FindQuery, Scope};

use crate::args::whole;
use crate::job::{CorruptRecord, JobInfo, ListPage};
use crate::queue::NativeQueue;
use crate::task::{guard, Op};

/// What `find` found: every kind the text matched, side by side.
#[napi(object, object_from_js = false)]
pub struct FindResult {
    /// The job whose id the text is (null: none, in the scope asked).
    #[napi(ts_type = "JobInfo | null")]
    pub by_id: Option<JobInfo>,
    /// The job holding the text as its idempotency key in the scope asked
    /// (the system scope when none was given), or null.
    #[napi(ts_type = "JobInfo | null")]
    pub by_key: Option<JobInfo>,
    /// The first page of the jobs carrying the text as a tag: pass `next`
    /// as `after` to `list({ tag: text })` for the rest.
    pub by_tag: ListPage,
    /// The kinds that matched, in this order: `id`, `key`, `tag`.
    pub matched: Vec<String>,
}

impl FindResult {
    fn from_core(r: telha_jobs::FindResult) -> Self {
        let matched = r.matched().iter().map(|m| m.to_string()).collect();
        FindResult {
            by_id: r.by_id.map(JobInfo::from_core),
            by_key: r.by_key.map(JobInfo::from_core),
            by_tag: ListPage {
                jobs: r.by_tag.jobs.into_iter().map(JobInfo::from_core).collect(),
                next: r.by_tag.next,
                corrupt: r
                    .by_tag
                    .corrupt
                    .into_iter()
                    .map(CorruptRecord::from_core)
                    .collect(),
            },
            matched,
        }
    }
}

#[napi]
impl NativeQueue {
    /// The text as a job id, an idempotency key (in `scope`, else the
    /// system scope) and a tag (its first `limit` jobs, default 50), each
    /// from its own index: O(page), never a scan.
    #[napi(ts_return_type = "Promise<FindResult>")]
    pub fn find(
        &self,
        env: Env,
        text: String,
        scope: Option<String>,
        limit: Option<f64>,
    ) -> napi::Result<AsyncTask<Op<telha_jobs::FindResult, FindResult>>> {
        guard(&env, "find", || {
            let scope = scope.map(|s| s.parse::<Scope>()).transpose()?;
            // The range is the core's (its message names the find limit).
            let limit = match limit {
                Some(l) => whole(l, "limit", 0, u64::MAX)? as usize,
                None => telha_jobs::find::DEFAULT_FIND_LIMIT,
            };
            let query = FindQuery { text, scope, limit };
            let q = self.store().clone();
            Ok(Op::task(
                "find",
                move || Ok(q.find(&query)?),
                FindResult::from_core,
            ))
        })
    }
}
