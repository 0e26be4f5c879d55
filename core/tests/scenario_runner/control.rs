//! The job-control steps: fail with `retry_in_ms`, fail_many, release_many,
//! snooze, cancel,
//! cancel_many, purge, delete, promote, reschedule, set_priority, pause,
//! resume, paused.

use std::time::Duration;

use serde_json::{json, Value as Json};
use telha_jobs::{CancelFilter, Error, Failure, PauseTarget};

use super::args::uint;
use super::Run;

impl Run {
    /// A `fail` step's (or a `fail_many` item's) failure.
    fn failure(&self, s: &Json) -> Result<Failure, Error> {
        let t = self.token(s.get("lease")).map_err(Error::Storage)?;
        let mut f = Failure::new(t, s.get("reason").and_then(Json::as_str).unwrap_or(""));
        f.retryable = s.get("retryable").and_then(Json::as_bool).unwrap_or(true);
        if let Some(v) = s.get("retry_in_ms") {
            f.retry_in = Some(Duration::from_millis(uint(v).map_err(Error::Storage)?));
        }
        Ok(f)
    }

    pub(crate) fn fail(&self, s: &Json) -> Result<Json, Error> {
        let f = self.failure(s)?;
        self.q().map_err(Error::Storage)?.fail_with(f)?;
        Ok(Json::Null)
    }

    /// `items`, each as `fail`'s arguments: `{"answers": ["ok" | CODE, …]}`.
    pub(crate) fn fail_many(&self, s: &Json) -> Result<Json, Error> {
        let fs = items_of(s, "fail_many")?
            .iter()
            .map(|i| self.failure(i))
            .collect::<Result<Vec<_>, Error>>()?;
        answers_json(self.q().map_err(Error::Storage)?.fail_many(fs)?)
    }

    /// `items`, each `{"lease": …}`: `{"answers": ["ok" | CODE, …]}`.
    pub(crate) fn release_many(&self, s: &Json) -> Result<Json, Error> {
        let ts = items_of(s, "release_many")?
            .iter()
            .map(|i| self.token(i.get("lease")).map_err(Error::Storage))
            .collect::<Result<Vec<_>, Error>>()?;
        answers_json(self.q().map_err(Error::Storage)?.release_many(&ts)?)
    }

    pub(crate) fn snooze(&self, s: &Json) -> Result<Json, Error> {
        let t = self.token(s.get("lease")).map_err(Error::Storage)?;
        let ms = uint(s.get("delay_ms").unwrap_or(&Json::Null)).map_err(Error::Storage)?;
        self.q()
            .map_err(Error::Storage)?
            .snooze(&t, Duration::from_millis(ms))?;
        Ok(Json::Null)
    }

    pub(crate) fn cancel(&self, s: &Json) -> Result<Json, Error> {
        let id = self.job_id(s)?;
        let reason = s.get("reason").and_then(Json::as_str).unwrap_or("");
        let outcome = self.q().map_err(Error::Storage)?.cancel(&id, reason)?;
        Ok(json!({ "outcome": outcome.name() }))
    }

    pub(crate) fn cancel_many(&self, s: &Json) -> Result<Json, Error> {
        let text = |k: &str| s.get(k).and_then(Json::as_str);
        let f = CancelFilter {
            kind: text("kind").map(str::parse).transpose()?,
            scope: text("scope").map(str::parse).transpose()?,
            state: text("state").map(str::parse).transpose()?,
            reason: text("reason").unwrap_or("").to_string(),
            tag: text("tag").map(str::to_string),
        };
        let r = self.q().map_err(Error::Storage)?.cancel_many(&f)?;
        Ok(json!({"cancelled": r.cancelled, "requested": r.requested}))
    }

    /// `state` (text), `older_than_ms` (default 0): the cutoff is now
    /// minus that.
    pub(crate) fn purge(&self, s: &Json) -> Result<Json, Error> {
        let state = s.get("state").and_then(Json::as_str).unwrap_or("");
        let state = state.parse()?;
        let ago = s.get("older_than_ms").and_then(Json::as_u64).unwrap_or(0);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        let r = self
            .q()
            .map_err(Error::Storage)?
            .purge(state, now.saturating_sub(ago))?;
        Ok(json!({ "purged": r.purged }))
    }

    pub(crate) fn delete(&self, s: &Json) -> Result<Json, Error> {
        let id = self.job_id(s)?;
        self.q().map_err(Error::Storage)?.delete(&id)?;
        Ok(Json::Null)
    }

    pub(crate) fn promote(&self, s: &Json) -> Result<Json, Error> {
        let id = self.job_id(s)?;
        self.q().map_err(Error::Storage)?.promote(&id)?;
        Ok(Json::Null)
    }

    /// `run_at_ms` (absolute) or `run_at_in_ms` (now + ms).
    pub(crate) fn reschedule(&self, s: &Json) -> Result<Json, Error> {
        let id = self.job_id(s)?;
        let at = match (s.get("run_at_ms"), s.get("run_at_in_ms")) {
            (Some(v), None) => uint(v).map_err(Error::Storage)?,
            (None, Some(v)) => super::args::now_ms() + uint(v).map_err(Error::Storage)?,
            _ => {
                return Err(Error::Storage(
                    "reschedule takes run_at_ms or run_at_in_ms".into(),
                ))
            }
        };
        self.q().map_err(Error::Storage)?.reschedule(&id, at)?;
        Ok(Json::Null)
    }

    /// `priority`: past 255 the front end's `INVALID_ARGUMENT` (the core
    /// takes a byte).
    pub(crate) fn set_priority(&self, s: &Json) -> Result<Json, Error> {
        let id = self.job_id(s)?;
        let p = uint(s.get("priority").unwrap_or(&Json::Null)).map_err(Error::Storage)?;
        let p = u8::try_from(p)
            .map_err(|_| Error::InvalidArgument(format!("priority must be 0 to 255, got {p}")))?;
        self.q().map_err(Error::Storage)?.set_priority(&id, p)?;
        Ok(Json::Null)
    }

    /// `kind` or `scope` names what to pause or resume.
    pub(crate) fn pause(&self, s: &Json, on: bool) -> Result<Json, Error> {
        let t = match (
            s.get("kind").and_then(Json::as_str),
            s.get("scope").and_then(Json::as_str),
        ) {
            (Some(k), None) => PauseTarget::Kind(k.parse()?),
            (None, Some(sc)) => PauseTarget::Scope(sc.parse()?),
            _ => return Err(Error::Storage("pause names a kind or a scope".into())),
        };
        let q = self.q().map_err(Error::Storage)?;
        let changed = if on { q.pause(&t)? } else { q.resume(&t)? };
        Ok(json!({ "changed": changed }))
    }

    pub(crate) fn paused(&self) -> Result<Json, Error> {
        let p = self.q().map_err(Error::Storage)?.paused()?;
        let kinds: Vec<String> = p.kinds.iter().map(|k| k.to_string()).collect();
        let scopes: Vec<String> = p.scopes.iter().map(|s| s.to_string()).collect();
        Ok(json!({ "kinds": kinds, "scopes": scopes }))
    }
}

/// A batch step's `items`.
pub(crate) fn items_of<'a>(s: &'a Json, op: &str) -> Result<&'a Vec<Json>, Error> {
    s.get("items")
        .and_then(Json::as_array)
        .ok_or_else(|| Error::Storage(format!("{op} needs items")))
}

/// Per-item answers as `{"answers": ["ok" | CODE, …]}`.
pub(crate) fn answers_json(answers: Vec<Result<(), Error>>) -> Result<Json, Error> {
    let answers: Vec<&str> = answers
        .iter()
        .map(|a| a.as_ref().map_or_else(|e| e.kind().code(), |()| "ok"))
        .collect();
    Ok(json!({ "answers": answers }))
}
