//! The command line, as clap derive types. Values are parsed into core types
//! here (ids, scopes, states, kind patterns, durations), so a malformed
//! argument is a usage error (exit 2) before any store is opened.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use telha_jobs::limits::{MAX_LIST_LIMIT, MAX_SCOPE_LIMIT};
use telha_jobs::{CatchUp, JobId, KindPattern, Scope, ScopeOrder, State};

pub use crate::args_enqueue::{CountArgs, EnqueueArgs};
pub use crate::args_schedule::{NextArgs, PutArgs};

/// Operate a telha-jobs store: list, inspect and repair jobs, read counts
/// and metrics, enqueue.
///
/// Read commands (ls, show, find, count, stats, metrics, check) open the store read-only: they
/// work while a worker process owns it and never create a store. Write
/// commands (retry, purge, enqueue, cancel, delete, pause, resume) need the store to themselves: while a
/// worker holds it they exit 3 ("store locked by pid N").
///
/// With --server URL (or TELHA_SERVER) every jobs and schedules command goes through
/// that server instead, writes included, while it holds the store.
///
/// Exit codes: 0 ok, 1 not found (job or store), 2 usage (bad arguments, or
/// a change the job's state does not allow; a missing or wrong token), 3
/// store locked by another process, 4 storage error or corruption (or the
/// server cannot be reached, or check found a problem), 5 a store written
/// by a newer version (its format marker; nothing changed).
#[derive(Debug, Parser)]
#[command(name = "telha", version, propagate_version = true)]
pub struct Cli {
    /// The store directory [default: $TELHA_DB, else ./telha-data]
    #[arg(long, global = true, value_name = "PATH")]
    pub db: Option<PathBuf>,

    /// Print JSON (one document on stdout) instead of human tables.
    #[arg(long, global = true)]
    pub json: bool,

    /// Run `jobs` and `schedules` commands through the telha server at URL
    /// (http://host:port or https://...) instead of opening a store
    /// [default: $TELHA_SERVER]. Works while that server holds the store.
    /// Several servers: repeat it, or give a comma list
    /// (http://a:7450,http://b:7450): the first that answers is used, and a
    /// call whose server fails moves to the next.
    #[arg(long, global = true, value_name = "URL")]
    pub server: Vec<String>,

    /// The bearer token, read from this file (`--server` clients and
    /// `serve`) [default: $TELHA_TOKEN].
    #[arg(long, global = true, value_name = "FILE")]
    pub token_file: Option<PathBuf>,

    /// With --server: the deadline of connecting and of each call ("2s",
    /// "500ms"; a long wait gets its own length on top); a silent server
    /// is then also dropped within twice this (between 1 s and 10 s each)
    /// [default: $TELHA_TIMEOUT, else 10 s to connect and no per-call
    /// deadline, a silent server dropped within 20 s].
    #[arg(long, global = true, value_parser = parse_duration, value_name = "DURATION")]
    pub timeout: Option<Duration>,

    #[command(subcommand)]
    pub command: Top,
}

#[derive(Debug, Subcommand)]
pub enum Top {
    /// Inspect and repair jobs.
    #[command(subcommand)]
    Jobs(Jobs),
    /// Cron and interval schedules: each enqueues one job per slot, exactly
    /// once, whatever crashes or restarts happen (the owning process's
    /// scheduler fires them; `run` does one pass now).
    #[command(subcommand)]
    Schedules(Schedules),
    /// Own the store and serve it over gRPC to workers in other processes
    /// and on other machines (prints `listening on http://ADDR` when
    /// ready; SIGTERM or SIGINT shuts it down gracefully).
    Serve(ServeArgs),
    /// A cluster's membership through one of its nodes (`telha serve
    /// --cluster`): init, status, add, promote, remove, replace, finish.
    Cluster(crate::args_cluster::ClusterArgs),
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// host:port to listen on (port 0 picks one), or unix:PATH for a
    /// Unix-domain socket; repeat it to listen on several at once. A
    /// non-loopback address needs a token (--token-file or TELHA_TOKEN)
    /// [default: $TELHA_LISTEN (comma-separated), else 127.0.0.1:7450].
    #[arg(long, value_name = "ADDR")]
    pub listen: Vec<String>,
    /// The permission bits (octal) of the Unix sockets it creates.
    #[arg(long, default_value = "600", value_parser = parse_mode, value_name = "MODE")]
    pub socket_mode: u32,
    /// Serve TLS with this certificate chain (PEM); needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The TLS private key (PEM); needs --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Serve plain HTTP on host:port: the Prometheus text at /metrics and,
    /// with --ui, the operator page at / [default with --ui: 127.0.0.1:7451].
    #[arg(
        long = "http-listen",
        visible_alias = "metrics-listen",
        value_name = "ADDR"
    )]
    pub metrics_listen: Option<String>,
    /// Serve the operator web page and its JSON API (/api/v1/) on the HTTP
    /// listener; with a token, the page asks for it (prints `ui on URL`).
    #[arg(long)]
    pub ui: bool,
    /// The page and API show everything but refuse every action.
    #[arg(long, requires = "ui")]
    pub ui_read_only: bool,
    /// Answer the Backup RPC (`telha jobs backup --server`) over any
    /// connection, not only a Unix socket or loopback: it writes to this
    /// server's filesystem.
    #[arg(long)]
    pub allow_remote_backup: bool,
    /// How long a shutdown waits for calls in flight.
    #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "DURATION")]
    pub grace: Duration,
    #[command(flatten)]
    pub cluster: crate::cluster_args::ClusterFlags,
}

#[derive(Debug, Subcommand)]
pub enum Jobs {
    /// List jobs in key order (scope, state, priority, time), one page.
    Ls(LsArgs),
    /// One job with its whole event log.
    Show {
        /// The job id (a UUID).
        #[arg(value_parser = parse_id)]
        id: JobId,
    },
    /// Send a dead (or failed) job back to pending with attempts reset; or,
    /// with --state, every matching job (asks for --yes).
    Retry(RetryArgs),
    /// Delete completed, dead or cancelled jobs older than a duration.
    Purge(PurgeArgs),
    /// Exact job counts per kind and state, and the scopes with the most
    /// pending jobs (--scopes all for every scope).
    Stats(StatsArgs),
    /// The Prometheus text exposition (with the dead-letter gauge).
    Metrics,
    /// The store's format, and a full scan cross-checking every row, index
    /// and counter (exit 4 when it finds a problem). Reads the store
    /// read-only, beside a worker that owns it; not through --server.
    Check,
    /// Enqueue one job (for operators and scripts); creates the store if
    /// there is none.
    Enqueue(EnqueueArgs),
    /// How many jobs carry a tag, per state (from the tag index).
    Count(CountArgs),
    /// Find jobs by a text, matched exactly: the job with that id, the job
    /// holding that idempotency key (in --scope, else the system scope) and
    /// the first page of the jobs carrying that tag, each from its index.
    Find(crate::find::FindArgs),
    /// Write a consistent copy of the live store to DIR (a RocksDB
    /// checkpoint: SST files hard-linked where the filesystem allows) that
    /// opens as a store; workers go on meanwhile. DIR must not exist, or be
    /// empty. With --server, DIR is on the SERVER's filesystem (answered
    /// over a Unix socket or loopback only, unless the server runs with
    /// --allow-remote-backup).
    Backup {
        /// The backup directory.
        dir: std::path::PathBuf,
    },
    /// Cancel jobs by id, or every unfinished job matching --kind/--state/
    /// --scope (asks first; --yes to skip). Pending, scheduled and failed
    /// jobs are cancelled at once; a leased job gets a cancel request its
    /// worker sees at its next heartbeat.
    Cancel(CancelArgs),
    /// Delete jobs (any state but leased: cancel a leased job first) with
    /// their event logs.
    Delete {
        /// The job ids (UUIDs).
        #[arg(value_parser = parse_id, required = true, num_args = 1..)]
        ids: Vec<JobId>,
    },
    /// Make delayed or retry-waiting jobs ready now (their state is kept).
    Promote(crate::steer::PromoteArgs),
    /// Give pending or failed jobs a new run time (--at or --in); a time in
    /// the future makes a ready job delayed.
    Reschedule(crate::steer::RescheduleArgs),
    /// Give pending or failed jobs a new priority (--to, 0 most urgent).
    Priority(crate::steer::PriorityArgs),
    /// Stop leasing a kind (exact or `family:*`) or a scope; running leases
    /// carry on. Durable until `resume`.
    Pause(PauseArgs),
    /// Follow the queue: one line per transition the owning server commits
    /// (a `tail -f` for jobs), filtered; needs --server (events are a live
    /// view of the process that owns the store). Runs until interrupted,
    /// --count events or --for a duration. With --json, one JSON object
    /// per line.
    Watch(WatchArgs),
    /// Lease a paused kind or scope again.
    Resume(PauseArgs),
    /// Flow-control limits: concurrency caps, rates and scope weights.
    #[command(subcommand)]
    Limits(LimitsCmd),
}

#[derive(Debug, Subcommand)]
pub enum LimitsCmd {
    /// Every limit with its use now: leased, held back, and how often it
    /// held work back since the store's owner opened it.
    Ls,
    /// Set (or replace) the limit on a target: `kind:<kind or family:*>`,
    /// `scope:<uuid>`, `scope:*` (each scope), `scope:<uuid>/kind:<pattern>`,
    /// `scope:*/kind:<pattern>`, `key:<job key>` or `key:*` (each job key).
    /// Durable.
    Set(LimitSetArgs),
    /// Remove the limit on a target.
    Rm {
        /// The target, as for `set`.
        #[arg(value_parser = parse_limit_target)]
        target: telha_jobs::LimitTarget,
    },
}

#[derive(Debug, Args)]
pub struct LimitSetArgs {
    /// The target (see `telha jobs limits set --help`).
    #[arg(value_parser = parse_limit_target)]
    pub target: telha_jobs::LimitTarget,
    /// At most this many leased at once.
    #[arg(long)]
    pub concurrency: Option<u32>,
    /// At most this many leases per second (a decimal: 0.5 is one every 2 s).
    #[arg(long)]
    pub rate: Option<f64>,
    /// With --rate: how many may go at once after a quiet spell [default: the rate, rounded up].
    #[arg(long, requires = "rate")]
    pub burst: Option<u32>,
    /// A scope's share of leases while others have work (scope targets only) [default: 1].
    #[arg(long)]
    pub weight: Option<u32>,
    /// FIFO per key: lease each key's jobs in enqueue order, one at a time
    /// (key targets only, with --concurrency 1).
    #[arg(long)]
    pub ordered: bool,
}

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Only events of this kind (exact or `family:*`); repeatable.
    #[arg(long, value_parser = parse_kind)]
    pub kind: Vec<KindPattern>,
    /// Only events of this scope; repeatable.
    #[arg(long, value_parser = parse_scope)]
    pub scope: Vec<Scope>,
    /// Only these transitions (enqueued, leased, completed, failed, dead,
    /// progress, …); repeatable.
    #[arg(long, value_parser = parse_event)]
    pub transition: Vec<telha_jobs::Event>,
    /// Stop after this many events.
    #[arg(long)]
    pub count: Option<u64>,
    /// Stop after this long (e.g. `30s`, `5m`).
    #[arg(long = "for", value_parser = parse_duration, value_name = "DURATION")]
    pub duration: Option<Duration>,
}

#[derive(Debug, Args)]
pub struct CancelArgs {
    /// The jobs to cancel. Give ids, or filters (--kind, --tag, --state, --scope).
    #[arg(value_parser = parse_id, conflicts_with_all = ["kind", "tag", "state", "scope", "yes"])]
    pub ids: Vec<JobId>,
    /// Filter: only jobs of this kind (exact or `family:*`).
    #[arg(long, value_parser = parse_kind)]
    pub kind: Option<KindPattern>,
    /// Filter: only jobs carrying this tag (walked through the tag index).
    #[arg(long)]
    pub tag: Option<String>,
    /// Filter: only jobs in this state: pending, failed, leased or waiting [default: all four].
    #[arg(long, value_parser = parse_state)]
    pub state: Option<State>,
    /// Filter: only jobs of this scope.
    #[arg(long, value_parser = parse_scope)]
    pub scope: Option<Scope>,
    /// Recorded with each job's cancel event.
    #[arg(long, default_value = "cancelled by an operator")]
    pub reason: String,
    /// Filter: cancel without asking. Without it you are asked on a
    /// terminal; with no terminal nothing changes and the command exits 2.
    #[arg(long, short = 'y')]
    pub yes: bool,
}

#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub struct PauseArgs {
    /// A kind: exact (`embed`) or a family (`ingest:*`).
    #[arg(long, value_parser = parse_kind)]
    pub kind: Option<KindPattern>,
    /// A tenant scope (UUID).
    #[arg(long, value_parser = parse_scope)]
    pub scope: Option<Scope>,
}

#[derive(Debug, Args)]
pub struct LsArgs {
    /// Only jobs in this state: pending, leased, failed, completed, dead, cancelled.
    #[arg(long, value_parser = parse_state)]
    pub state: Option<State>,
    /// Only jobs of this scope (tenant UUID; the nil UUID is the system scope).
    #[arg(long, value_parser = parse_scope)]
    pub scope: Option<Scope>,
    /// Only jobs of this kind: exact (`embed`) or a family (`ingest:*`).
    #[arg(long, value_parser = parse_kind)]
    pub kind: Option<KindPattern>,
    /// At most this many jobs (1 to 10000, the core's list limit).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=MAX_LIST_LIMIT as u64))]
    pub limit: u64,
    /// Start after this cursor (the `next` of the previous page).
    #[arg(long, value_name = "CURSOR")]
    pub after: Option<String>,
    /// Only the jobs this schedule enqueued.
    #[arg(long, value_name = "NAME")]
    pub schedule: Option<String>,
    /// Only the follow-up jobs this job's completion enqueued.
    #[arg(long, value_parser = parse_id, value_name = "JOB_ID")]
    pub parent: Option<JobId>,
    /// Only jobs carrying this tag, read from the tag index (in scope,
    /// state, enqueue order; O(page) at any store size).
    #[arg(long, value_name = "TAG")]
    pub tag: Option<String>,
    /// Only the unfinished jobs (pending, leased, failed, waiting) enqueued
    /// with this job key, read from the key index (in scope, enqueue
    /// order; O(page) at any store size). Not with --tag.
    #[arg(long, value_name = "KEY", conflicts_with = "tag")]
    pub key: Option<String>,
}

#[derive(Debug, Args)]
pub struct RetryArgs {
    /// The job to retry. Give either an id or --state.
    #[arg(value_parser = parse_id, required_unless_present = "state", conflicts_with = "state")]
    pub id: Option<JobId>,
    /// Bulk: retry every job in this state (dead or failed).
    #[arg(long, value_parser = parse_state)]
    pub state: Option<State>,
    /// Bulk: only jobs of this kind (exact or `family:*`).
    #[arg(long, value_parser = parse_kind)]
    pub kind: Option<KindPattern>,
    /// Bulk: only jobs of this scope.
    #[arg(long, value_parser = parse_scope)]
    pub scope: Option<Scope>,
    /// Bulk: retry without asking. Without it, the count that would move is
    /// printed and nothing changes (or, on a terminal, you are asked).
    #[arg(long, short = 'y')]
    pub yes: bool,
}

/// How many scopes `stats` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScopeCount {
    /// At most this many (the first page).
    Top(usize),
    /// Every scope (paged through).
    All,
}

#[derive(Debug, Args)]
pub struct StatsArgs {
    /// How many scopes to show (0 for none), or "all".
    #[arg(long, value_parser = parse_scope_count, default_value = "20", value_name = "N|all")]
    pub scopes: ScopeCount,
    /// Which scopes first: pending, leased, dead (the most first) or name.
    #[arg(long, value_parser = parse_scope_order, default_value = "pending", value_name = "ORDER")]
    pub scope_order: ScopeOrder,
    /// Only scopes whose id starts with this (hex digits and dashes).
    #[arg(long, value_name = "PREFIX")]
    pub scope_prefix: Option<String>,
}

#[derive(Debug, Args)]
pub struct PurgeArgs {
    /// completed, dead or cancelled.
    #[arg(long, value_parser = parse_state)]
    pub state: State,
    /// Only jobs that reached the state longer ago than this ("7d", "12h", "90m").
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    pub older_than: Duration,
}

#[derive(Debug, Subcommand)]
pub enum Schedules {
    /// Every schedule, by name: its spec, next and last slot, counts.
    Ls,
    /// One schedule in full.
    Show {
        /// The schedule's name.
        name: String,
    },
    /// Create a schedule, or replace the one of that name (a slot already
    /// dealt with is never enqueued again; a changed spec starts from
    /// now). Creates the store if there is none.
    Put(PutArgs),
    /// Delete a schedule (the jobs it enqueued stay).
    #[command(alias = "delete")]
    Rm {
        /// The schedule's name.
        name: String,
    },
    /// Stop enqueueing; the slots that pass meanwhile are not caught up.
    Pause {
        /// The schedule's name.
        name: String,
    },
    /// Enqueue again, from the next slot on.
    Resume {
        /// The schedule's name.
        name: String,
    },
    /// The next times a spec fires, to check it before saving it (no
    /// store is opened; with --server the server computes them).
    Next(NextArgs),
    /// One scheduler pass now: enqueue every due slot (a store's owner
    /// does this by itself; this is for stores no process runs).
    Run,
}

// Parsers: the core's own `FromStr` does the checking, so the CLI accepts
// exactly what the library accepts, with the library's messages.

pub(crate) fn parse_id(s: &str) -> Result<JobId, String> {
    s.parse().map_err(|e: telha_jobs::Error| reason(e))
}

fn parse_limit_target(s: &str) -> Result<telha_jobs::LimitTarget, String> {
    s.parse().map_err(|e: telha_jobs::Error| reason(e))
}

pub(crate) fn parse_scope(s: &str) -> Result<Scope, String> {
    s.parse().map_err(|e: telha_jobs::Error| reason(e))
}

fn parse_scope_count(s: &str) -> Result<ScopeCount, String> {
    if s == "all" {
        return Ok(ScopeCount::All);
    }
    match s.parse::<usize>() {
        Ok(n) if n <= MAX_SCOPE_LIMIT => Ok(ScopeCount::Top(n)),
        _ => Err(format!(
            "{s:?} is not \"all\" or a number from 0 to {MAX_SCOPE_LIMIT}"
        )),
    }
}

fn parse_scope_order(s: &str) -> Result<ScopeOrder, String> {
    s.parse().map_err(|e: telha_jobs::Error| reason(e))
}

fn parse_state(s: &str) -> Result<State, String> {
    s.parse().map_err(|e: telha_jobs::Error| reason(e))
}

fn parse_event(s: &str) -> Result<telha_jobs::Event, String> {
    telha_jobs::Event::from_name(s).ok_or_else(|| {
        let names: Vec<_> = telha_jobs::Event::ALL.iter().map(|e| e.name()).collect();
        format!("unknown transition {s:?}; one of {}", names.join(", "))
    })
}

fn parse_kind(s: &str) -> Result<KindPattern, String> {
    s.parse().map_err(|e: telha_jobs::Error| reason(e))
}

fn parse_mode(s: &str) -> Result<u32, String> {
    let digits = s.strip_prefix("0o").unwrap_or(s);
    match u32::from_str_radix(digits, 8) {
        Ok(m) if m <= 0o777 => Ok(m),
        _ => Err(format!(
            "{s:?} is not a permission mode; write it in octal, 0 to 777 (\"600\", \"660\")"
        )),
    }
}

pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s).map_err(|e| {
        format!(
            "{s:?} is not a duration ({e}); write it like \"7d\", \"12h\", \"90m\" or \"1h 30m\""
        )
    })
}

pub(crate) fn parse_catch_up(s: &str) -> Result<CatchUp, String> {
    CatchUp::parse(s).map_err(reason)
}

/// An instant: ms since the epoch, or an RFC 3339 time (UTC `Z` or an
/// offset-free time read as UTC).
pub(crate) fn parse_instant(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let ms = if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        t.parse::<u64>().map_err(|e| format!("{s:?}: {e}"))?
    } else {
        let at = humantime::parse_rfc3339_weak(t).map_err(|e| {
            format!("{s:?} is not a time ({e}); write it like \"2026-01-01T03:00:00Z\" or as ms since the epoch")
        })?;
        let d = at
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|_| format!("{s:?} is before 1970"))?;
        u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
    };
    telha_jobs::limits::check_instant("time", ms).map_err(reason)
}

/// The error's message without the kind prefix ("invalid argument: ").
fn reason(e: telha_jobs::Error) -> String {
    match e {
        telha_jobs::Error::InvalidArgument(m) => m,
        other => other.to_string(),
    }
}

#[cfg(test)]
#[path = "args_tests.rs"]
mod tests;
