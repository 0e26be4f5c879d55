//! `telha jobs find TEXT` (issue 42): the text looked up exactly as a job
//! id, an idempotency key and a tag (the core's `find`), locally or
//! through `--server`; every kind that matched is printed.

use clap::Args;
use serde_json::json;
use telha_jobs::{FindQuery, JobInfo, Scope};

use crate::args::parse_scope;
use crate::commands::Output;
use crate::render;
use crate::store::{self, Failure, Target};

#[derive(Debug, Args)]
pub struct FindArgs {
    /// What to look for: a job id, an idempotency key or a tag, matched
    /// exactly (1 to 512 bytes, no control characters).
    #[arg(allow_hyphen_values = true)]
    pub text: String,
    /// Only this scope (tenant UUID). Without it an id and a tag match in
    /// every scope and a key is looked up in the system scope (keys are
    /// per scope).
    #[arg(long, value_parser = parse_scope)]
    pub scope: Option<Scope>,
    /// At most this many of the tag's jobs (1 to 10000); the rest with
    /// `jobs ls --tag TEXT --after CURSOR`.
    #[arg(long, default_value_t = 50)]
    pub limit: u64,
}

/// `jobs find TEXT`.
pub fn find(db: &Target, a: &FindArgs, json: bool) -> Result<Output, Failure> {
    let q = store::open_read(db)?;
    let query = FindQuery {
        text: a.text.clone(),
        scope: a.scope,
        limit: usize::try_from(a.limit).unwrap_or(usize::MAX),
    };
    let r = q.find(&query)?;
    if json {
        let one = |j: &Option<JobInfo>| j.as_ref().map(|j| render::job_json(j, false));
        return Ok(Output::Json(json!({
            "text": a.text,
            "matched": r.matched(),
            "by_id": one(&r.by_id),
            "by_key": one(&r.by_key),
            "by_tag": {
                "jobs": r.by_tag.jobs.iter().map(|j| render::job_json(j, false)).collect::<Vec<_>>(),
                "next": r.by_tag.next,
                "corrupt": r.by_tag.corrupt.len(),
            },
        })));
    }
    if r.is_empty() {
        return Ok(Output::Text(format!(
            "no match: no job has {:?} as its id, idempotency key or tag\n",
            a.text
        )));
    }
    let row = |j: &JobInfo| {
        vec![
            j.id.to_string(),
            j.state.to_string(),
            j.kind.clone(),
            render::time(j.state_ts),
            j.scope.to_string(),
        ]
    };
    let header = ["ID", "STATE", "KIND", "SINCE/DUE", "SCOPE"];
    let mut out = String::new();
    if let Some(j) = &r.by_id {
        out += "job id:\n";
        out += &render::table(&header, &[row(j)]);
    }
    if let Some(j) = &r.by_key {
        out += "idempotency key:\n";
        out += &render::table(&header, &[row(j)]);
    }
    if !r.by_tag.jobs.is_empty() {
        out += "tag:\n";
        let rows: Vec<Vec<String>> = r.by_tag.jobs.iter().map(row).collect();
        out += &render::table(&header, &rows);
        if let Some(n) = &r.by_tag.next {
            out += &format!("more: telha jobs ls --tag {:?} --after {n}\n", a.text);
        }
    }
    Ok(Output::Text(out))
}
