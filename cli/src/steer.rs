//! `telha jobs promote | reschedule | priority`: operator steering of
//! waiting jobs (issue 44), locally or through `--server`, one result per
//! id (exit code of the first failure after all were tried).

use std::time::Duration;

use clap::Args;
use telha_jobs::JobId;

use crate::args::{parse_duration, parse_id, parse_instant};
use crate::commands::Output;
use crate::control::per_id;
use crate::store::{self, Failure, Target};

#[derive(Debug, Args)]
pub struct PromoteArgs {
    /// The job ids (UUIDs). A job already due is left as it is.
    #[arg(value_parser = parse_id, required = true, num_args = 1..)]
    pub ids: Vec<JobId>,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("when").required(true).args(["at", "in"])))]
pub struct RescheduleArgs {
    /// The job ids (UUIDs).
    #[arg(value_parser = parse_id, required = true, num_args = 1..)]
    pub ids: Vec<JobId>,
    /// The new run time: RFC 3339 (`2026-01-01T03:00:00Z`) or ms since the
    /// epoch.
    #[arg(long, value_parser = parse_instant, value_name = "TIME")]
    pub at: Option<u64>,
    /// The new run time as a delay from now (`90s`, `2h`).
    #[arg(long = "in", value_parser = parse_duration, value_name = "DURATION")]
    pub r#in: Option<Duration>,
}

#[derive(Debug, Args)]
pub struct PriorityArgs {
    /// The job ids (UUIDs).
    #[arg(value_parser = parse_id, required = true, num_args = 1..)]
    pub ids: Vec<JobId>,
    /// The new priority, 0 (most urgent) to 255; the default is 128.
    #[arg(long, value_name = "PRIORITY")]
    pub to: u8,
}

pub fn promote(db: &Target, a: &PromoteArgs, json: bool) -> Result<Output, Failure> {
    let q = store::open_write(db, true)?;
    Ok(per_id(&a.ids, json, |id| {
        q.promote(id)?;
        Ok("promoted".to_string())
    }))
}

pub fn reschedule(db: &Target, a: &RescheduleArgs, json: bool) -> Result<Output, Failure> {
    let at = match (a.at, a.r#in) {
        (Some(at), _) => at,
        (None, Some(d)) => telha_jobs::limits::instant_after("--in", crate::commands::now_ms(), d)?,
        (None, None) => return Err(Failure::usage("reschedule needs --at or --in")),
    };
    let q = store::open_write(db, true)?;
    Ok(per_id(&a.ids, json, |id| {
        q.reschedule(id, at)?;
        Ok("rescheduled".to_string())
    }))
}

pub fn priority(db: &Target, a: &PriorityArgs, json: bool) -> Result<Output, Failure> {
    let q = store::open_write(db, true)?;
    Ok(per_id(&a.ids, json, |id| {
        q.set_priority(id, a.to)?;
        Ok("reprioritized".to_string())
    }))
}
