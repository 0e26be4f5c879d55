//! The flow-control steps: set_limit, remove_limit, limits; and complete
//! and complete_many with follow-up jobs (`then`).

use serde_json::{json, Value as Json};
use telha_jobs::{Completion, Error, Limit, LimitTarget, NewJob};

use super::args::{bytes_arg, new_job_args, uint};
use super::Run;

fn target(s: &Json) -> Result<LimitTarget, Error> {
    s.get("target").and_then(Json::as_str).unwrap_or("").parse()
}

fn opt_u32(s: &Json, k: &str) -> Result<Option<u32>, Error> {
    s.get(k)
        .map(|v| {
            uint(v)
                .map_err(Error::Storage)
                .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
        })
        .transpose()
}

impl Run {
    pub(crate) fn set_limit(&self, s: &Json) -> Result<Json, Error> {
        let t = target(s)?;
        let limit = Limit {
            concurrency: opt_u32(s, "concurrency")?,
            rate: s.get("rate").and_then(Json::as_f64),
            burst: opt_u32(s, "burst")?,
            weight: opt_u32(s, "weight")?,
            ordered: s.get("ordered").and_then(Json::as_bool).unwrap_or(false),
        };
        self.q().map_err(Error::Storage)?.set_limit(&t, limit)?;
        Ok(Json::Null)
    }

    pub(crate) fn remove_limit(&self, s: &Json) -> Result<Json, Error> {
        let t = target(s)?;
        let removed = self.q().map_err(Error::Storage)?.remove_limit(&t)?;
        Ok(json!({ "removed": removed }))
    }

    pub(crate) fn limits(&self) -> Result<Json, Error> {
        let all = self.q().map_err(Error::Storage)?.limits()?;
        let rows: Vec<Json> = all
            .iter()
            .map(|l| {
                json!({
                    "target": l.target.label(),
                    "concurrency": l.limit.concurrency, "rate": l.limit.rate,
                    "burst": l.limit.burst, "weight": l.limit.weight,
                    "leased": l.leased, "held": l.held,
                    "throttled_concurrency": l.throttled_concurrency,
                    "throttled_rate": l.throttled_rate,
                    "ordered": l.limit.ordered,
                })
            })
            .collect();
        Ok(json!({ "limits": rows }))
    }

    /// A `complete` step's (or a `complete_many` item's) completion.
    fn completion(&self, s: &Json) -> Result<Completion, Error> {
        let t = self.token(s.get("lease")).map_err(Error::Storage)?;
        let result = bytes_arg(s, "result", "result_size").map_err(Error::Storage)?;
        let then = match s.get("then").and_then(Json::as_array) {
            Some(items) => items
                .iter()
                .map(|i| {
                    let (kind, payload, options) = new_job_args(i)?;
                    Ok(NewJob::new(kind, payload).with(options))
                })
                .collect::<Result<Vec<_>, Error>>()?,
            None => Vec::new(),
        };
        Ok(Completion::new(t, result).then(then))
    }

    pub(crate) fn complete(&self, s: &Json) -> Result<Json, Error> {
        let c = self.completion(s)?;
        self.q().map_err(Error::Storage)?.complete_with(c)?;
        Ok(Json::Null)
    }

    /// `items`, each as `complete`'s arguments: `{"answers": ["ok" | CODE, …]}`.
    pub(crate) fn complete_many(&self, s: &Json) -> Result<Json, Error> {
        let items = s
            .get("items")
            .and_then(Json::as_array)
            .ok_or_else(|| Error::Storage("complete_many needs items".into()))?;
        let cs = items
            .iter()
            .map(|i| self.completion(i))
            .collect::<Result<Vec<_>, Error>>()?;
        let answers = self.q().map_err(Error::Storage)?.complete_many(cs)?;
        let answers: Vec<&str> = answers
            .iter()
            .map(|a| a.as_ref().map_or_else(|e| e.kind().code(), |()| "ok"))
            .collect();
        Ok(json!({ "answers": answers }))
    }
}
