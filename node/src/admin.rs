//! The operator's calls on a `NativeQueue`: get, list, retry, reap,
//! purge, stats, metrics, and the effective settings.

use napi::bindgen_prelude::{AsyncTask, Env, Undefined};
use napi_derive::napi;

use telha_jobs::limits::MAX_SCOPE_LIMIT;
use telha_jobs::{JobId, KindPattern, ListQuery, Scope, ScopeOrder, State, StatsQuery};

use crate::args::{instant_ms, list_limit, whole};
use crate::config;
use crate::errors::Failure;
use crate::job::{CorruptRecord, JobInfo, ListPage, ReapReport, ScopeCounts, Stats};
use crate::payload::Plain;
use crate::queue::NativeQueue;
use crate::task::{guard, Guarded, Op};

/// Filters of `list`.
#[napi(object)]
pub struct NativeListOptions {
    pub state: Option<String>,
    pub scope: Option<String>,
    pub kind: Option<String>,
    pub limit: Option<f64>,
    pub after: Option<String>,
    pub schedule: Option<String>,
    pub parent: Option<String>,
    pub tag: Option<String>,
}

fn list_query(o: Option<NativeListOptions>) -> Result<ListQuery, Failure> {
    let mut q = ListQuery::default();
    if let Some(o) = o {
        q.state = o.state.map(|s| s.parse::<State>()).transpose()?;
        q.scope = o.scope.map(|s| s.parse::<Scope>()).transpose()?;
        q.kind = o.kind.map(|s| s.parse::<KindPattern>()).transpose()?;
        if let Some(l) = o.limit {
            q.limit = list_limit(l, "limit")?;
        }
        q.after = o.after;
        q.schedule = o.schedule;
        q.parent = o.parent.map(|p| p.parse::<JobId>()).transpose()?;
        q.tag = o.tag;
    }
    Ok(q)
}

/// The per-scope page of `stats`.
#[napi(object)]
pub struct NativeStatsOptions {
    pub scope_order: Option<String>,
    pub scope_limit: Option<f64>,
    pub scopes_after: Option<String>,
    pub scope_prefix: Option<String>,
    /// Fill `oldestReadyMs` (O(scopes with ready work), so off by default).
    pub oldest_ready: Option<bool>,
}

fn stats_query(o: Option<NativeStatsOptions>) -> Result<StatsQuery, Failure> {
    let mut q = StatsQuery::default();
    if let Some(o) = o {
        if let Some(s) = o.scope_order {
            q.scope_order = s.parse::<ScopeOrder>()?;
        }
        if let Some(l) = o.scope_limit {
            q.scope_limit = whole(l, "scopeLimit", 0, MAX_SCOPE_LIMIT as u64)? as usize;
        }
        q.scopes_after = o.scopes_after;
        q.scope_prefix = o.scope_prefix;
        q.oldest_ready = o.oldest_ready.unwrap_or(false);
    }
    Ok(q)
}

#[napi]
impl NativeQueue {
    /// Operator action: a dead or failed job back to pending, attempts reset.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn retry(&self, env: Env, id: String) -> napi::Result<AsyncTask<Op<(), Undefined>>> {
        guard(&env, "retry", || {
            let id = id.parse::<JobId>()?;
            let q = self.store().clone();
            Ok(Op::task("retry", move || Ok(q.retry(&id)?), |_| ()))
        })
    }

    /// A job with its event log, or null.
    #[napi(ts_return_type = "Promise<JobInfo | null>")]
    pub fn get(
        &self,
        env: Env,
        id: String,
    ) -> napi::Result<AsyncTask<Op<Option<JobInfo>, Option<JobInfo>>>> {
        guard(&env, "get", || {
            let id = id.parse::<JobId>()?;
            let q = self.store().clone();
            Ok(Op::task(
                "get",
                move || Ok(q.get(&id)?.map(JobInfo::from_core)),
                |v| v,
            ))
        })
    }

    /// A full page of jobs in key order (the core's `list_full`: short
    /// only at the end of the range, or after reading 1,000,000 rows, with
    /// `next` set).
    #[napi(ts_return_type = "Promise<ListPage>")]
    pub fn list(
        &self,
        env: Env,
        options: Option<NativeListOptions>,
    ) -> napi::Result<AsyncTask<Op<ListPage, ListPage>>> {
        guard(&env, "list", || {
            let query = list_query(options)?;
            let q = self.store().clone();
            Ok(Op::task(
                "list",
                move || {
                    let p = q.list_full(&query)?;
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
        })
    }

    /// How many jobs carry `tag`, per state (the tag index).
    #[napi(ts_return_type = "Promise<StateCounts>")]
    pub fn count_tag(
        &self,
        env: Env,
        tag: String,
        scope: Option<String>,
    ) -> napi::Result<AsyncTask<Op<telha_jobs::StateCounts, crate::job::StateCounts>>> {
        guard(&env, "countTag", || {
            let scope = scope.map(|s| s.parse::<Scope>()).transpose()?;
            let q = self.store().clone();
            Ok(Op::task(
                "countTag",
                move || Ok(q.count_tag(&tag, scope)?),
                crate::job::StateCounts::from,
            ))
        })
    }

    /// A consistent copy of the live store at `dir` (`Queue::backup`); on a
    /// connected queue, `dir` is on the server's filesystem.
    #[napi(ts_return_type = "Promise<BackupInfo>")]
    pub fn backup(
        &self,
        env: Env,
        dir: String,
    ) -> napi::Result<AsyncTask<Op<telha_jobs::BackupInfo, BackupInfo>>> {
        guard(&env, "backup", || {
            let q = self.store().clone();
            Ok(Op::task(
                "backup",
                move || Ok(q.backup(std::path::Path::new(&dir))?),
                BackupInfo::from,
            ))
        })
    }

    /// One reaper pass now.
    #[napi(ts_return_type = "Promise<ReapReport>")]
    pub fn reap(&self) -> AsyncTask<Op<ReapReport, ReapReport>> {
        let q = self.store().clone();
        Op::task(
            "reap",
            move || {
                let r = q.reap()?;
                Ok(ReapReport {
                    expired: r.expired as u32,
                    dead: r.dead as u32,
                    pruned: r.pruned as u32,
                    expired_unstarted: r.expired_unstarted as u32,
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

    /// Operator action: delete the `state` jobs (completed, dead or
    /// cancelled) that got there before `beforeMs` (ms since the epoch),
    /// with their indexes, idempotency keys and counts; how many.
    #[napi(ts_return_type = "Promise<number>")]
    pub fn purge(
        &self,
        env: Env,
        state: String,
        before_ms: f64,
    ) -> napi::Result<AsyncTask<Op<f64, f64>>> {
        guard(&env, "purge", || {
            let state = state.parse::<State>()?;
            let cutoff = instant_ms(before_ms, "before")?;
            let q = self.store().clone();
            Ok(Op::task(
                "purge",
                move || Ok(crate::job::count(q.purge(state, cutoff)?.purged as u64)),
                |v| v,
            ))
        })
    }

    /// Exact counts per kind and state, and one page of per-scope counts.
    #[napi(ts_return_type = "Promise<Stats>")]
    pub fn stats(
        &self,
        env: Env,
        options: Option<NativeStatsOptions>,
    ) -> napi::Result<AsyncTask<Op<Stats, Stats>>> {
        guard(&env, "stats", || {
            let query = stats_query(options)?;
            let q = self.store().clone();
            Ok(Op::task(
                "stats",
                move || {
                    let s = q.stats_with(&query)?;
                    let ranked = s.scopes_ranked();
                    Ok(Stats {
                        total: s.total.into(),
                        by_kind: s.by_kind.into_iter().map(|(k, c)| (k, c.into())).collect(),
                        by_scope: ranked
                            .iter()
                            .map(|(sc, c)| (sc.to_string(), (*c).into()))
                            .collect(),
                        scopes: ranked
                            .into_iter()
                            .map(|(sc, c)| ScopeCounts {
                                scope: sc.to_string(),
                                counts: c.into(),
                            })
                            .collect(),
                        scope_order: s.scope_order.as_str().to_string(),
                        scopes_next: s.scopes_next,
                        paused: crate::control::Paused::from_core(s.paused),
                        oldest_ready_ms: s
                            .oldest_ready_ms
                            .into_iter()
                            .map(|(k, ms)| (k, ms as f64))
                            .collect(),
                    })
                },
                |v| v,
            ))
        })
    }

    /// Prometheus text exposition.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn metrics(&self) -> AsyncTask<Op<String, String>> {
        let q = self.store().clone();
        Op::task("metrics", move || Ok(q.metrics()?), |v| v)
    }

    /// The settings in force, named as `open` takes them (every key of the
    /// table, and `kinds`); null for a remote queue (its server's config
    /// is not visible to clients).
    #[napi(ts_return_type = "Record<string, unknown> | null")]
    pub fn settings(&self, env: Env) -> napi::Result<Option<Guarded<Plain>>> {
        guard(&env, "settings", || match self.store().as_local() {
            Some(q) => Ok(Some(Guarded("settings", config::settings(&q.config()?)?))),
            None => Ok(None),
        })
    }
}

/// What a finished backup reports.
#[napi(object, object_from_js = false)]
pub struct BackupInfo {
    /// Where the backup is (canonical; the server's path when connected).
    pub path: String,
    /// The total size of its files in bytes (hard-linked ones count in full).
    pub bytes: f64,
    /// How many files it holds.
    pub files: f64,
    /// How long it took, in milliseconds.
    pub took_ms: f64,
    /// RocksDB's latest sequence number in the backup: the point it holds
    /// (exact up to 2^53).
    pub sequence: f64,
}

impl From<telha_jobs::BackupInfo> for BackupInfo {
    fn from(b: telha_jobs::BackupInfo) -> Self {
        BackupInfo {
            path: b.path.to_string_lossy().into_owned(),
            bytes: b.bytes as f64,
            files: b.files as f64,
            took_ms: b.took.as_secs_f64() * 1e3,
            sequence: b.sequence as f64,
        }
    }
}
