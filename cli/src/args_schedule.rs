//! `schedules put` and `schedules next` arguments (split from `args.rs`).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use telha_jobs::{CatchUp, Scope};

use crate::args::{parse_catch_up, parse_duration, parse_instant, parse_scope};
use crate::args_enqueue::parse_meta;

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("spec").required(true).args(["cron", "every"])))]
#[command(group(clap::ArgGroup::new("payload").args(["payload_json", "payload_file"])))]
pub struct PutArgs {
    /// The schedule's name: 1 to 200 bytes, no control characters.
    pub name: String,
    /// A cron pattern: 5 fields ("0 3 * * *"), 6 with seconds first
    /// ("*/10 * * * * *"), or a shorthand ("@daily", "@hourly").
    #[arg(long, value_name = "PATTERN")]
    pub cron: Option<String>,
    /// A fixed interval instead ("5m", "1h 30m"; at least 1s).
    #[arg(long, value_name = "DURATION")]
    pub every: Option<String>,
    /// For --every: the grid's origin, slots at anchor + k × interval
    /// (RFC 3339, e.g. 2026-01-01T00:00:30Z, or ms since the epoch)
    /// [default: the epoch].
    #[arg(long, value_parser = parse_instant, value_name = "TIME")]
    pub anchor: Option<u64>,
    /// For --cron: the IANA time zone the pattern is read in
    /// ("Europe/Lisbon") [default: UTC].
    #[arg(long, value_name = "ZONE")]
    pub tz: Option<String>,
    /// Each job's kind.
    #[arg(long)]
    pub kind: String,
    /// Each job's payload as JSON, in the cross-language convention (as
    /// `jobs enqueue --payload-json`) [default: empty].
    #[arg(long, value_name = "JSON")]
    pub payload_json: Option<String>,
    /// Each job's payload: this file's bytes, as they are.
    #[arg(long, value_name = "FILE")]
    pub payload_file: Option<PathBuf>,
    /// Each job's tenant scope (UUID) [default: the system scope].
    #[arg(long, value_parser = parse_scope)]
    pub scope: Option<Scope>,
    /// Each job's priority, 0 most urgent ... 255 least [default: 128].
    #[arg(long)]
    pub priority: Option<u8>,
    /// Each job is dead after this many failed attempts.
    #[arg(long, value_name = "N")]
    pub max_attempts: Option<u32>,
    /// Each job expires this long after its slot if no worker started it.
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    pub expires_in: Option<Duration>,
    /// Slots missed while nothing ran the schedule: skip them, run one job
    /// for them all, or one job each (the latest --max-catch-up).
    #[arg(long, value_parser = parse_catch_up, default_value = "one", value_name = "POLICY")]
    pub catch_up: CatchUp,
    /// For --catch-up all: the most missed slots run (1 to 10000)
    /// [default: 100].
    #[arg(long, value_name = "N")]
    pub max_catch_up: Option<u32>,
    /// Create it paused (nothing enqueued until `resume`).
    #[arg(long)]
    pub paused: bool,
    /// Tag each job (repeatable; at most 16, each 1-64 bytes), as
    /// `jobs enqueue --tag`.
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// Metadata KEY=VALUE kept with each job (repeatable; at most 4 KiB in
    /// all), as `jobs enqueue --meta`.
    #[arg(long = "meta", value_parser = parse_meta, value_name = "KEY=VALUE")]
    pub meta: Vec<(String, String)>,
}

#[derive(Debug, Args)]
pub struct NextArgs {
    /// A cron pattern ("0 3 * * *", "@daily") or an interval ("every 5m").
    pub spec: String,
    /// The IANA time zone of a cron pattern [default: UTC].
    #[arg(long, value_name = "ZONE")]
    pub tz: Option<String>,
    /// An interval's grid origin (RFC 3339 or ms since the epoch).
    #[arg(long, value_parser = parse_instant, value_name = "TIME")]
    pub anchor: Option<u64>,
    /// Times after this one (RFC 3339 or ms since the epoch) [default: now].
    #[arg(long, value_parser = parse_instant, value_name = "TIME")]
    pub after: Option<u64>,
    /// How many times (at most 1000).
    #[arg(short = 'n', long = "count", default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=telha_jobs::schedule::MAX_NEXT_TIMES as u64))]
    pub n: u64,
}
