//! The command line, as clap derive types. Values are parsed into core types
//! here (ids, scopes, states, kind patterns, durations), so a malformed
//! argument is a usage error (exit 2) before any store is opened.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use telha_jobs::limits::MAX_LIST_LIMIT;
use telha_jobs::{JobId, KindPattern, Scope, State};

/// Operate a telha-jobs store: list, inspect and repair jobs, read counts
/// and metrics, enqueue.
///
/// Read commands (ls, show, stats, metrics, check) open the store read-only: they
/// work while a worker process owns it and never create a store. Write
/// commands (retry, purge, enqueue, cancel, delete, pause, resume) need the store to themselves: while a
/// worker holds it they exit 3 ("store locked by pid N").
///
/// With --server URL (or TELHA_SERVER) every jobs command goes through
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

    /// Run `jobs` commands through the telha server at URL
    /// (http://host:port or https://...) instead of opening a store
    /// [default: $TELHA_SERVER]. Works while that server holds the store.
    #[arg(long, global = true, value_name = "URL")]
    pub server: Option<String>,

    /// The bearer token, read from this file (`--server` clients and
    /// `serve`) [default: $TELHA_TOKEN].
    #[arg(long, global = true, value_name = "FILE")]
    pub token_file: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Top,
}

#[derive(Debug, Subcommand)]
pub enum Top {
    /// Inspect and repair jobs.
    #[command(subcommand)]
    Jobs(Jobs),
    /// Own the store and serve it over gRPC to workers in other processes
    /// and on other machines (prints `listening on http://ADDR` when
    /// ready; SIGTERM or SIGINT shuts it down gracefully).
    Serve(ServeArgs),
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
    /// Also serve the Prometheus text at http://ADDR/metrics.
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// How long a shutdown waits for calls in flight.
    #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "DURATION")]
    pub grace: Duration,
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
    /// Exact job counts per kind and state.
    Stats,
    /// The Prometheus text exposition (with the dead-letter gauge).
    Metrics,
    /// The store's format, and a full scan cross-checking every row, index
    /// and counter (exit 4 when it finds a problem). Reads the store
    /// read-only, beside a worker that owns it; not through --server.
    Check,
    /// Enqueue one job (for operators and scripts); creates the store if
    /// there is none.
    Enqueue(EnqueueArgs),
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
    /// The jobs to cancel. Give ids, or filters (--kind, --state, --scope).
    #[arg(value_parser = parse_id, conflicts_with_all = ["kind", "state", "scope", "yes"])]
    pub ids: Vec<JobId>,
    /// Filter: only jobs of this kind (exact or `family:*`).
    #[arg(long, value_parser = parse_kind)]
    pub kind: Option<KindPattern>,
    /// Filter: only jobs in this state: pending, failed or leased [default: all three].
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

#[derive(Debug, Args)]
pub struct PurgeArgs {
    /// completed, dead or cancelled.
    #[arg(long, value_parser = parse_state)]
    pub state: State,
    /// Only jobs that reached the state longer ago than this ("7d", "12h", "90m").
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    pub older_than: Duration,
}

#[derive(Debug, Args)]
pub struct EnqueueArgs {
    /// The job's kind: 1-64 bytes of lowercase letters, digits and _ - . :
    pub kind: String,
    /// The payload as JSON, stored in the cross-language convention
    /// (version byte + msgpack), so it reads as a dict in Python and an
    /// object in Node. Without it the payload is empty.
    #[arg(long, value_name = "JSON")]
    pub payload_json: Option<String>,
    /// Tenant scope (UUID) [default: the system scope].
    #[arg(long, value_parser = parse_scope)]
    pub scope: Option<Scope>,
    /// 0 most urgent ... 255 least [default: 128].
    #[arg(long)]
    pub priority: Option<u8>,
    /// Not leasable before now + this ("30s", "2h").
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    pub delay: Option<Duration>,
    /// Deduplicate within the scope: a repeat returns the existing job.
    #[arg(long, value_name = "KEY")]
    pub idempotency_key: Option<String>,
    /// Dead after this many failed attempts (over the kind's and the global).
    #[arg(long, value_name = "N")]
    pub max_attempts: Option<u32>,
}

// Parsers: the core's own `FromStr` does the checking, so the CLI accepts
// exactly what the library accepts, with the library's messages.

fn parse_id(s: &str) -> Result<JobId, String> {
    s.parse().map_err(|e: telha_jobs::Error| reason(e))
}

fn parse_scope(s: &str) -> Result<Scope, String> {
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

fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s).map_err(|e| {
        format!(
            "{s:?} is not a duration ({e}); write it like \"7d\", \"12h\", \"90m\" or \"1h 30m\""
        )
    })
}

/// The error's message without the kind prefix ("invalid argument: ").
fn reason(e: telha_jobs::Error) -> String {
    match e {
        telha_jobs::Error::InvalidArgument(m) => m,
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn the_limit_is_the_cores_list_limit_and_its_help_says_so() {
        let max = MAX_LIST_LIMIT.to_string();
        let over = (MAX_LIST_LIMIT + 1).to_string();
        assert!(Cli::try_parse_from(["telha", "jobs", "ls", "--limit", &max]).is_ok());
        assert!(Cli::try_parse_from(["telha", "jobs", "ls", "--limit", &over]).is_err());
        assert!(Cli::try_parse_from(["telha", "jobs", "ls", "--limit", "0"]).is_err());
        let mut cmd = Cli::command();
        let ls = cmd
            .find_subcommand_mut("jobs")
            .and_then(|j| j.find_subcommand_mut("ls"))
            .expect("jobs ls");
        let help = ls
            .get_arguments()
            .find(|a| a.get_id() == "limit")
            .and_then(|a| a.get_help())
            .map(ToString::to_string)
            .unwrap_or_default();
        assert!(help.contains(&format!("1 to {max}")), "{help}");
    }
}
