//! Fan-in steps (issue 43): `after` (job names), `after_ids` (literal id
//! text) and `on_child_dead` on an enqueue or an `enqueue_many` item,
//! `enqueue_group` (`children`: items as for `enqueue`, `parent`: one
//! item), and `results_of_children` (`job` or `job_id`, `cursor` naming an
//! earlier page's `as`, `limit`; `as` names this page's cursor), answering
//! `{"children": [{"job", "state", "result", "last_error"}, …], "has_next"}`.

use serde_json::{json, Value as Json};
use telha_jobs::{EnqueueOptions, Error, JobId, NewJob};

use super::args::{new_job_args, put_bytes, strs, uint};
use super::Run;

impl Run {
    /// The fan-in options of an enqueue step over `o`.
    pub(crate) fn fan_options(
        &self,
        s: &Json,
        mut o: EnqueueOptions,
    ) -> Result<EnqueueOptions, Error> {
        for name in strs(s.get("after")) {
            o.after.push(self.job_id(&json!({ "job": name }))?);
        }
        for id in strs(s.get("after_ids")) {
            o.after.push(id.parse::<JobId>()?);
        }
        if let Some(p) = s.get("on_child_dead").and_then(Json::as_str) {
            o.on_child_dead = Some(p.parse()?);
        }
        Ok(o)
    }

    /// A job of an enqueue step: its kind, payload and options, fan-in included.
    pub(crate) fn new_job(&self, s: &Json) -> Result<NewJob, Error> {
        let (kind, payload, opts) = new_job_args(s)?;
        Ok(NewJob::new(kind, payload).with(self.fan_options(s, opts)?))
    }

    pub(crate) fn enqueue_group(&mut self, s: &Json) -> Result<Json, Error> {
        let items = s
            .get("children")
            .and_then(Json::as_array)
            .cloned()
            .unwrap_or_default();
        let parent = s.get("parent").cloned().unwrap_or(Json::Null);
        let kids = items
            .iter()
            .map(|j| self.new_job(j))
            .collect::<Result<Vec<_>, Error>>()?;
        let p = self.new_job(&parent)?;
        let (ids, pid) = self.q().map_err(Error::Storage)?.enqueue_group(kids, p)?;
        for (j, e) in items.iter().zip(&ids) {
            self.bind(j, e.id);
        }
        self.bind(&parent, pid.id);
        Ok(Json::Null)
    }

    pub(crate) fn results_of_children(&mut self, s: &Json) -> Result<Json, Error> {
        let id = self.job_id(s)?;
        let cursor = match s.get("cursor").and_then(Json::as_str) {
            Some(c) => Some(
                self.cursors
                    .get(c)
                    .cloned()
                    .ok_or_else(|| Error::Storage(format!("no cursor {c:?}")))?,
            ),
            None => None,
        };
        let limit = match s.get("limit") {
            Some(l) => uint(l).map_err(Error::Storage)? as usize,
            None => 100,
        };
        let page =
            self.q()
                .map_err(Error::Storage)?
                .results_of_children(&id, cursor.as_deref(), limit)?;
        let children: Vec<Json> = page
            .children
            .iter()
            .map(|c| {
                let mut o = json!({
                    "job": self.name_of(&c.id),
                    "state": c.state.map(|st| st.as_str()),
                    "last_error": c.last_error,
                });
                put_bytes(&mut o, "result", c.result.as_deref());
                o
            })
            .collect();
        if let (Some(name), Some(next)) = (s.get("as").and_then(Json::as_str), &page.next) {
            self.cursors.insert(name.to_string(), next.clone());
        }
        Ok(json!({ "children": children, "has_next": page.next.is_some() }))
    }
}

/// `get`'s `fan_in`: `{"unfinished", "total", "policy"}`, or null.
pub(crate) fn fan_in_json(f: Option<&telha_jobs::FanInInfo>) -> Json {
    f.map_or(
        Json::Null,
        |f| json!({"unfinished": f.unfinished, "total": f.total, "policy": f.policy.as_str()}),
    )
}
