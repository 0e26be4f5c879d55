//! The `find` step (issue 42): a text (`text`, `text_size` that many `x`,
//! or `text_of` a named job's id) answered as a job id, an idempotency key
//! and a tag.

use serde_json::{json, Value as Json};
use telha_jobs::{Error, FindQuery};

use super::args::uint;
use super::Run;

impl Run {
    pub(crate) fn find(&self, s: &Json) -> Result<Json, Error> {
        let text = if let Some(n) = s.get("text_size") {
            "x".repeat(uint(n).map_err(Error::Storage)? as usize)
        } else if let Some(name) = s.get("text_of") {
            self.job_id(&json!({ "job": name }))?.to_string()
        } else {
            s.get("text")
                .and_then(Json::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let mut q = FindQuery::new(text);
        q.scope = s
            .get("scope")
            .and_then(Json::as_str)
            .map(str::parse)
            .transpose()?;
        if let Some(l) = s.get("limit") {
            q.limit = uint(l).map_err(Error::Storage)? as usize;
        }
        let r = self.q().map_err(Error::Storage)?.find(&q)?;
        let name = |j: &Option<telha_jobs::JobInfo>| j.as_ref().map(|j| self.name_of(&j.id));
        Ok(json!({
            "matched": r.matched(),
            "by_id": name(&r.by_id),
            "by_key": name(&r.by_key),
            "by_tag": r.by_tag.jobs.iter().map(|j| self.name_of(&j.id)).collect::<Vec<_>>(),
            "more": r.by_tag.next.is_some(),
        }))
    }
}
