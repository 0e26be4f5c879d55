//! The steps of results, events and progress: `wait`, `extend` (with
//! `progress` / `progress_size`), `subscribe`, `events`.

use std::time::{Duration, Instant};

use serde_json::{json, Value as Json};
use telha_jobs::{Error, Event, EventFilter, SubscribeOptions};

use super::args::{put_bytes, strs, uint};
use super::Run;

/// How long an `events` step reads when the case gives no `timeout_ms`.
const EVENTS_TIMEOUT: Duration = Duration::from_millis(2000);

fn case_err(e: String) -> Error {
    Error::Storage(e)
}

impl Run {
    pub(crate) fn wait(&self, s: &Json) -> Result<Json, Error> {
        let id = self.job_id(s)?;
        let ms = uint(s.get("timeout_ms").unwrap_or(&json!(0))).map_err(case_err)?;
        let info = self
            .q()
            .map_err(case_err)?
            .wait(&id, Duration::from_millis(ms))?;
        Ok(self.info_json(&info))
    }

    /// `extend`, through `heartbeat` when the step carries progress.
    pub(crate) fn extend(&self, s: &Json) -> Result<Json, Error> {
        let tokens = s
            .get("leases")
            .and_then(Json::as_array)
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|l| self.token(Some(l)).map_err(case_err))
            .collect::<Result<Vec<_>, Error>>()?;
        let worker = s.get("worker").and_then(Json::as_str).unwrap_or("w1");
        let progress: Option<Vec<Option<Vec<u8>>>> =
            match (s.get("progress"), s.get("progress_size")) {
                (Some(Json::Array(a)), _) => Some(
                    a.iter()
                        .map(|p| p.as_str().map(|t| t.as_bytes().to_vec()))
                        .collect(),
                ),
                (_, Some(n)) => {
                    let n = uint(n).map_err(case_err)? as usize;
                    Some(vec![Some(vec![b'x'; n]); tokens.len()])
                }
                _ => None,
            };
        let q = self.q().map_err(case_err)?;
        let res = match &progress {
            Some(p) => q.heartbeat(&tokens, p, worker)?,
            None => q.extend(&tokens, worker)?,
        };
        // Per token: renewed, lost (Aborted, NotFound) or cancelled (a lost
        // lease too); anything else fails.
        let answers = res
            .into_iter()
            .map(|r| match r {
                Ok(_) => Ok("renewed"),
                Err(e) if matches!(e.kind().code(), "ABORTED" | "NOT_FOUND") => Ok("lost"),
                Err(e) if e.kind().code() == "CANCELLED" => Ok("cancelled"),
                Err(e) => Err(e),
            })
            .collect::<Result<Vec<&str>, Error>>()?;
        let renewed: Vec<bool> = answers.iter().map(|a| *a == "renewed").collect();
        Ok(json!({ "renewed": renewed, "answers": answers }))
    }

    pub(crate) fn subscribe(&mut self, s: &Json) -> Result<Json, Error> {
        let mut filter = EventFilter::default();
        for k in strs(s.get("kinds")) {
            filter = filter.kind(&k)?;
        }
        for sc in strs(s.get("scopes")) {
            filter = filter.scope(sc.parse()?);
        }
        for t in strs(s.get("transitions")) {
            let e = Event::from_name(&t)
                .ok_or_else(|| Error::InvalidArgument(format!("unknown transition {t:?}")))?;
            filter = filter.event(e);
        }
        let mut o = SubscribeOptions {
            filter,
            ..SubscribeOptions::default()
        };
        if let Some(b) = s.get("buffer") {
            o.buffer = uint(b).map_err(case_err)? as usize;
        }
        let sub = self.q().map_err(case_err)?.subscribe(o)?;
        if let Some(name) = s.get("as").and_then(Json::as_str) {
            self.subs.insert(name.to_string(), sub);
        }
        Ok(Json::Null)
    }

    /// Read up to `count` events within `timeout_ms`, checking that `seq`
    /// rises by exactly 1 + `missed` each time.
    pub(crate) fn events(&mut self, s: &Json) -> Result<Json, Error> {
        let name = s.get("sub").and_then(Json::as_str).unwrap_or("");
        let count = uint(s.get("count").unwrap_or(&json!(1))).map_err(case_err)? as usize;
        let timeout = match s.get("timeout_ms") {
            Some(v) => Duration::from_millis(uint(v).map_err(case_err)?),
            None => EVENTS_TIMEOUT,
        };
        let deadline = Instant::now() + timeout;
        let mut got = Vec::new();
        let mut missed = 0u64;
        while got.len() < count {
            let sub = self
                .subs
                .get(name)
                .ok_or_else(|| case_err(format!("the case names no subscription {name:?}")))?;
            let left = deadline.saturating_duration_since(Instant::now());
            let Some(ev) = sub.recv(Some(left))? else {
                break;
            };
            let last = self.last_seq.get(name).copied();
            if let Some(last) = last {
                if ev.seq != last + 1 + ev.missed {
                    return Err(case_err(format!(
                        "seq {} after {last} with {} missed",
                        ev.seq, ev.missed
                    )));
                }
            }
            self.last_seq.insert(name.to_string(), ev.seq);
            missed += ev.missed;
            let mut o = json!({
                "job": self.name_of(&ev.id), "kind": &*ev.kind,
                "scope": ev.scope.to_string(), "transition": ev.event.name(),
                "attempt": ev.attempt, "worker_id": ev.worker_id.as_deref(),
            });
            put_bytes(&mut o, "progress", ev.progress.as_deref());
            got.push(o);
        }
        Ok(json!({ "events": got, "missed": missed }))
    }
}
