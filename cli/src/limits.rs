//! `telha jobs limits ls | set | rm`: flow-control limits, locally or
//! through `--server` (everything goes through `JobStore`).

use serde_json::json;
use telha_jobs::{Limit, LimitStatus};
use telha_jobs_server::json::{limit_json, limit_status_json as status_json};

use crate::args::LimitsCmd;
use crate::commands::Output;
use crate::store::{self, Failure, Target};

pub fn run(db: &Target, cmd: LimitsCmd, json: bool) -> Result<Output, Failure> {
    match cmd {
        LimitsCmd::Ls => {
            let q = store::open_read(db)?;
            let all = q.limits()?;
            Ok(if json {
                Output::Json(json!({ "limits": all.iter().map(status_json).collect::<Vec<_>>() }))
            } else if all.is_empty() {
                Output::Text("no limits\n".into())
            } else {
                Output::Text(table(&all))
            })
        }
        LimitsCmd::Set(a) => {
            let limit = Limit {
                concurrency: a.concurrency,
                rate: a.rate,
                burst: a.burst,
                weight: a.weight,
                ordered: a.ordered,
            };
            let q = store::open_write(db, false)?;
            q.set_limit(&a.target, limit)?;
            Ok(if json {
                Output::Json(json!({ "target": a.target.label(), "limit": limit_json(&limit) }))
            } else {
                Output::Text(format!("set {}: {}\n", a.target, describe(&limit)))
            })
        }
        LimitsCmd::Rm { target } => {
            let q = store::open_write(db, true)?;
            let removed = q.remove_limit(&target)?;
            Ok(if json {
                Output::Json(json!({ "target": target.label(), "removed": removed }))
            } else if removed {
                Output::Text(format!("removed the limit on {target}\n"))
            } else {
                Output::Text(format!("{target} had no limit\n"))
            })
        }
    }
}

/// `concurrency 8, rate 50/s (burst 10), weight 2`.
pub fn describe(l: &Limit) -> String {
    let mut parts = Vec::new();
    if let Some(c) = l.concurrency {
        parts.push(format!("concurrency {c}"));
    }
    if let Some(r) = l.rate {
        parts.push(format!(
            "rate {r}/s (burst {})",
            l.effective_burst().unwrap_or(1)
        ));
    }
    if let Some(w) = l.weight {
        parts.push(format!("weight {w}"));
    }
    if l.ordered {
        parts.push("ordered".into());
    }
    parts.join(", ")
}

/// The limits as a table (`limits ls`, and under `stats`).
pub fn table(all: &[LimitStatus]) -> String {
    let opt = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    let rows: Vec<Vec<String>> = all
        .iter()
        .map(|s| {
            vec![
                s.target.label(),
                opt(s.limit.concurrency.map(|c| c.to_string())),
                opt(s
                    .limit
                    .rate
                    .map(|r| format!("{r}/s ({})", s.limit.effective_burst().unwrap_or(1)))),
                opt(s.limit.weight.map(|w| w.to_string())),
                s.leased.to_string(),
                s.held.to_string(),
                s.throttled_concurrency.to_string(),
                s.throttled_rate.to_string(),
            ]
        })
        .collect();
    crate::render::table(
        &[
            "TARGET",
            "CONCURRENCY",
            "RATE (BURST)",
            "WEIGHT",
            "LEASED",
            "HELD",
            "CAPPED",
            "RATED",
        ],
        &rows,
    )
}
