//! The `stats` step: the totals, the per-kind counts, and one page of
//! per-scope counts (`scope_order`, `scope_limit`, `scope_prefix`, `after`
//! naming an earlier page's cursor; `as` names this page's), and with
//! `oldest_ready` the kinds with a due job and its age in whole minutes.

use serde_json::{json, Map, Value as Json};
use telha_jobs::{Error, StatsQuery};

use super::args::uint;
use super::Run;

impl Run {
    pub(crate) fn stats(&mut self, s: &Json) -> Result<Json, Error> {
        let mut q = StatsQuery::default();
        if let Some(o) = s.get("scope_order").and_then(Json::as_str) {
            q.scope_order = o.parse()?;
        }
        if let Some(l) = s.get("scope_limit") {
            q.scope_limit = uint(l).map_err(Error::Storage)? as usize;
        }
        q.scope_prefix = s
            .get("scope_prefix")
            .and_then(Json::as_str)
            .map(str::to_string);
        q.oldest_ready = s
            .get("oldest_ready")
            .and_then(Json::as_bool)
            .unwrap_or(false);
        if let Some(a) = s.get("after").and_then(Json::as_str) {
            let c = self.cursors.get(a).cloned();
            q.scopes_after = Some(c.ok_or_else(|| Error::Storage(format!("no cursor {a:?}")))?);
        }
        let st = self.q().map_err(Error::Storage)?.stats_with(&q)?;
        let counts = |c: &telha_jobs::StateCounts| {
            json!({"pending": c.pending, "leased": c.leased, "failed": c.failed,
                   "completed": c.completed, "dead": c.dead, "cancelled": c.cancelled,
                   "waiting": c.waiting})
        };
        let mut o = counts(&st.total);
        let by: Map<String, Json> = st
            .by_kind
            .iter()
            .map(|(k, c)| (k.clone(), counts(c)))
            .collect();
        o["by_kind"] = Json::Object(by);
        let ranked = st.scopes_ranked();
        let by: Map<String, Json> = ranked
            .iter()
            .map(|(sc, c)| (sc.to_string(), counts(c)))
            .collect();
        o["by_scope"] = Json::Object(by);
        o["scopes"] = json!(ranked
            .iter()
            .map(|(sc, _)| sc.to_string())
            .collect::<Vec<_>>());
        o["has_next"] = json!(st.scopes_next.is_some());
        o["ready_kinds"] = json!(st.oldest_ready_ms.keys().collect::<Vec<_>>());
        let minutes: Map<String, Json> = st
            .oldest_ready_ms
            .iter()
            .map(|(k, ms)| (k.clone(), json!((ms + 30_000) / 60_000)))
            .collect();
        o["oldest_ready_min"] = Json::Object(minutes);
        if let (Some(name), Some(next)) = (s.get("as").and_then(Json::as_str), st.scopes_next) {
            self.cursors.insert(name.to_string(), next);
        }
        Ok(o)
    }
}
