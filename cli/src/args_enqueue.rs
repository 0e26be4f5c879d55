//! `jobs enqueue` and `jobs count` arguments (split from `args.rs`).

use std::time::Duration;

use clap::Args;
use telha_jobs::{JobId, Scope};

use crate::args::{parse_duration, parse_scope};

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
    /// This job's first retry delay ("30s", at least 1ms), over the kind's
    /// and the global backoff base (the kind's factor and jitter apply).
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    pub backoff_base: Option<Duration>,
    /// With --idempotency-key: a repeat of the key within this long ("1h")
    /// answers the job that opened the window; after it, a new job.
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    pub unique_for: Option<Duration>,
    /// Which states of the window's job hold it: any (default) or active
    /// (only while pending, leased or waiting for a retry).
    #[arg(long, value_name = "STATES", requires = "unique_for")]
    pub unique_states: Option<String>,
    /// Tag the job (repeatable; at most 16, each 1-64 bytes): find it
    /// with `jobs ls --tag` and `jobs count --tag`.
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// The job key (1-128 bytes, e.g. a customer id): limits on `key:K`
    /// and `key:*` count the key's leased jobs (`limits set key:* ...`).
    #[arg(long, value_name = "KEY")]
    pub key: Option<String>,
    /// Metadata KEY=VALUE kept with the job (repeatable; at most 4 KiB
    /// in all; never indexed).
    #[arg(long = "meta", value_parser = parse_meta, value_name = "KEY=VALUE")]
    pub meta: Vec<(String, String)>,
    /// With --idempotency-key: the job runs this long ("30s") after the
    /// latest enqueue of the key; while it is pending, a repeat replaces
    /// its payload and moves its run time (once leased, a new job).
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    pub debounce: Option<Duration>,
    /// With --debounce: never run later than the first enqueue + this
    /// (at least --debounce; not given: no bound).
    #[arg(long, value_parser = parse_duration, value_name = "DURATION", requires = "debounce")]
    pub debounce_max: Option<Duration>,
    /// Wait for job ID to finish first (repeatable; fan-in): the job is
    /// `waiting` until every one has finished, then pending.
    #[arg(long = "after", value_name = "ID")]
    pub after: Vec<JobId>,
    /// With --after: what a child that did not complete does to this job:
    /// fail (default: it goes dead), cancel_rest, ignore.
    #[arg(long, value_name = "POLICY", requires = "after")]
    pub on_child_dead: Option<String>,
}

#[derive(Debug, Args)]
pub struct CountArgs {
    /// The tag.
    #[arg(long, value_name = "TAG")]
    pub tag: String,
    /// Only this scope (tenant UUID) [default: every scope].
    #[arg(long, value_parser = parse_scope)]
    pub scope: Option<Scope>,
}

/// `KEY=VALUE`, split at the first `=`.
pub(crate) fn parse_meta(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) => Ok((k.to_string(), v.to_string())),
        None => Err(format!("expected KEY=VALUE, got {s:?}")),
    }
}
