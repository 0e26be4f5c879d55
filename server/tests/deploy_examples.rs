//! The deployment examples in `deploy/` name only metrics that exist: every
//! metric in a Grafana panel, its template variable and each KEDA trigger
//! query must be a sample of the real `/metrics` text of a running server
//! (and, for `telha_jobs_*`, of the embedded `Queue::metrics()`), with the
//! histograms and gauges populated by real calls. The JSON must parse and
//! the YAML pass a minimal structural check (no YAML dependency).

mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;

use common::http::Http;
use serde_json::Value as Json;
use telha_jobs::{EnqueueOptions, JobStore, LeaseOptions};
use telha_jobs_server::ServeOptions;

fn deploy(file: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../deploy")
        .join(file);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The sample names of a Prometheus text exposition (`name{…} v`, `name v`).
fn samples(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let end = l.find(['{', ' ']).unwrap_or(l.len());
            l[..end].to_string()
        })
        .collect()
}

/// The metric names a PromQL expression reads: its identifiers that start
/// with `telha_` (label names, functions and strings never do here).
fn metrics_in(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for ch in expr.chars().chain(std::iter::once(' ')) {
        if ch == '"' {
            quoted = !quoted;
        }
        if !quoted && (ch.is_ascii_alphanumeric() || ch == '_' || ch == ':') {
            cur.push(ch);
        } else {
            if cur.starts_with("telha_") {
                out.push(cur.clone());
            }
            cur.clear();
        }
    }
    out
}

/// Parentheses, braces and brackets balance, quotes close.
fn balanced(expr: &str) -> Result<(), String> {
    let mut stack = Vec::new();
    let mut quoted = false;
    for ch in expr.chars() {
        match ch {
            '"' => quoted = !quoted,
            _ if quoted => {}
            '(' | '{' | '[' => stack.push(ch),
            ')' | '}' | ']' => {
                let open = stack.pop();
                let want = match ch {
                    ')' => '(',
                    '}' => '{',
                    _ => '[',
                };
                if open != Some(want) {
                    return Err(format!("unbalanced {ch:?} in {expr:?}"));
                }
            }
            _ => {}
        }
    }
    if quoted || !stack.is_empty() {
        return Err(format!("unclosed in {expr:?}"));
    }
    Ok(())
}

/// Every query string of a Grafana dashboard: panels' `targets[].expr`
/// (nested rows included) and the template variables' queries. Errors when
/// the JSON does not parse, has no panels, or a panel has no target.
fn dashboard_queries(text: &str) -> Result<Vec<String>, String> {
    let d: Json = serde_json::from_str(text).map_err(|e| format!("dashboard JSON: {e}"))?;
    let panels = d["panels"].as_array().ok_or("no panels")?;
    if panels.is_empty() {
        return Err("no panels".into());
    }
    let mut out = Vec::new();
    let mut todo: Vec<&Json> = panels.iter().collect();
    while let Some(p) = todo.pop() {
        if let Some(inner) = p["panels"].as_array() {
            todo.extend(inner);
        }
        if p["type"] == "row" {
            continue;
        }
        let targets = p["targets"].as_array().filter(|t| !t.is_empty());
        let targets = targets.ok_or_else(|| format!("panel {} has no targets", p["title"]))?;
        for t in targets {
            let e = t["expr"].as_str();
            out.push(e.ok_or_else(|| format!("panel {}: a target without expr", p["title"]))?);
        }
    }
    for v in d["templating"]["list"].as_array().into_iter().flatten() {
        let q = v["query"]["query"].as_str().or(v["query"].as_str());
        out.extend(q);
    }
    Ok(out.into_iter().map(str::to_string).collect())
}

/// A minimal check of a YAML document of maps, lists and scalars: spaces
/// only, two-space steps, every line `key: value`, `key:` (opening a
/// deeper block) or `- …`. Returns the (key, value) pairs in order.
fn yaml_pairs(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut pairs = Vec::new();
    let mut opened = true; // the document's first line may start a block
    let mut depth = 0usize;
    for (n, raw) in text.lines().enumerate() {
        let n = n + 1;
        if raw.contains('\t') {
            return Err(format!("line {n}: a tab"));
        }
        let line = match raw.find(" #") {
            Some(i) => &raw[..i],
            None => raw,
        }
        .trim_end();
        if line.trim_start().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        if indent % 2 != 0 {
            return Err(format!("line {n}: odd indentation"));
        }
        if indent > depth && !opened {
            return Err(format!("line {n}: deeper than its block"));
        }
        let mut body = line.trim_start();
        let mut level = indent;
        if let Some(item) = body.strip_prefix("- ") {
            body = item;
            level += 2;
        }
        let (key, value) = body
            .split_once(':')
            .ok_or_else(|| format!("line {n}: not `key: value` nor a list item"))?;
        let key_ok = !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.-/".contains(c));
        if !key_ok {
            return Err(format!("line {n}: key {key:?}"));
        }
        let value = value.trim();
        if !value.is_empty() && !body[key.len() + 1..].starts_with(' ') {
            return Err(format!("line {n}: no space after the colon"));
        }
        if value.starts_with('"') && (value.len() < 2 || !value.ends_with('"')) {
            return Err(format!("line {n}: an unclosed quote"));
        }
        opened = value.is_empty();
        depth = level;
        pairs.push((key.to_string(), value.to_string()));
    }
    Ok(pairs)
}

/// What the KEDA example must be: a `keda.sh/v1alpha1` `ScaledObject` whose
/// triggers are all `prometheus` with a query and a quoted threshold.
/// Returns the queries.
fn keda_queries(text: &str) -> Result<Vec<String>, String> {
    let pairs = yaml_pairs(text)?;
    let get = |k: &str| -> Vec<String> {
        pairs
            .iter()
            .filter(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
            .collect()
    };
    if get("apiVersion") != ["keda.sh/v1alpha1"] {
        return Err("apiVersion is not keda.sh/v1alpha1".into());
    }
    if get("kind") != ["ScaledObject"] {
        return Err("kind is not ScaledObject".into());
    }
    let types = get("type");
    let queries = get("query");
    let thresholds = get("threshold");
    if types.is_empty() || types.iter().any(|t| *t != "prometheus") {
        return Err(format!("trigger types {types:?}"));
    }
    if queries.len() != types.len() || thresholds.len() != types.len() {
        return Err("a trigger without its query or threshold".into());
    }
    if let Some(t) = thresholds.iter().find(|t| !t.starts_with('"')) {
        return Err(format!("threshold {t} is not a string (KEDA wants \"30\")"));
    }
    Ok(queries)
}

/// Each query's metrics that `have` lacks (empty: all there), after the
/// query's own checks.
fn missing(queries: &[String], have: &BTreeSet<String>) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for q in queries {
        balanced(q)?;
        let names = metrics_in(q);
        if names.is_empty() {
            return Err(format!("{q:?} names no telha metric"));
        }
        out.extend(names.into_iter().filter(|m| !have.contains(m)));
    }
    Ok(out)
}

#[test]
fn the_dashboard_and_the_keda_example_name_metrics_the_server_exports() {
    let s = common::served_with(
        common::config(),
        ServeOptions {
            metrics_listen: Some("127.0.0.1:0".into()),
            ..ServeOptions::default()
        },
    );
    let c = s.client();
    // One job through to completed (the histograms), one waiting (the
    // backlog and oldest-ready gauges), over gRPC (the server's counters).
    c.enqueue("embed", b"a", EnqueueOptions::default()).unwrap();
    c.enqueue("embed", b"b", EnqueueOptions::default()).unwrap();
    let j = c
        .lease_next("w", &LeaseOptions::default())
        .unwrap()
        .unwrap();
    c.complete(&j.token(), None).unwrap();
    let h = Http::new(s.server.as_ref().unwrap().metrics_addr().unwrap());
    let scraped = h.get("/metrics");
    assert_eq!(scraped.status, 200);
    let served = samples(&String::from_utf8(scraped.body).unwrap());
    let embedded = samples(&s.queue.metrics().unwrap());
    assert!(
        served.contains("telha_jobs_wait_seconds_bucket"),
        "{served:?}"
    );

    let dash = dashboard_queries(&deploy("grafana/telha-jobs-dashboard.json")).unwrap();
    let keda = keda_queries(&deploy("keda/scaledobject.yaml")).unwrap();
    assert!(dash.len() >= 10 && keda.len() == 2, "{dash:?} {keda:?}");
    for (what, queries) in [("dashboard", &dash), ("KEDA", &keda)] {
        let lost = missing(queries, &served).unwrap();
        assert!(lost.is_empty(), "{what} names {lost:?}, not in /metrics");
        let jobs: Vec<String> = queries
            .iter()
            .filter(|q| !q.contains("telha_server_"))
            .cloned()
            .collect();
        let lost = missing(&jobs, &embedded).unwrap();
        assert!(
            lost.is_empty(),
            "{what} names {lost:?}, not in Queue::metrics()"
        );
    }
    assert!(keda
        .iter()
        .any(|q| q.contains("telha_jobs_oldest_ready_seconds")));
}

#[test]
fn the_checks_catch_an_unknown_metric_and_malformed_files() {
    let have: BTreeSet<String> = ["telha_jobs_backlog".to_string()].into();
    let q = |s: &str| vec![s.to_string()];
    assert_eq!(
        missing(&q("sum(telha_jobs_backlog)"), &have).unwrap(),
        Vec::<String>::new()
    );
    assert_eq!(
        missing(&q("max(telha_jobs_oldest_ready_second{kind=\"a\"})"), &have).unwrap(),
        vec!["telha_jobs_oldest_ready_second"]
    );
    assert!(missing(&q("sum(telha_jobs_backlog"), &have).is_err());
    assert!(missing(&q("sum(up)"), &have).is_err());
    assert!(dashboard_queries("{\"panels\": [").is_err());
    assert!(dashboard_queries(r#"{"panels": [{"title": "x", "targets": []}]}"#).is_err());
    let yaml = "apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nspec:\n  triggers:\n    - type: prometheus\n      metadata:\n        query: sum(telha_jobs_backlog)\n        threshold: \"5\"\n";
    assert_eq!(keda_queries(yaml).unwrap(), vec!["sum(telha_jobs_backlog)"]);
    assert!(keda_queries(&yaml.replace("  triggers", "\ttriggers")).is_err());
    assert!(keda_queries(&yaml.replace("\"5\"", "5")).is_err());
    assert!(keda_queries(&yaml.replace("kind: ScaledObject", "kind: Deployment")).is_err());
    assert!(keda_queries(&yaml.replace("spec:\n", "spec: x\n")).is_err());
    assert!(keda_queries(&yaml.replace("query:", "query")).is_err());
}

/// `make check-promtool` (not in `make test`: it needs Prometheus' own
/// `promtool` on the PATH): its linter over a real server's `/metrics`.
#[test]
#[ignore = "needs promtool: make check-promtool"]
fn promtool_accepts_the_metrics_text() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let s = common::served_with(
        common::config(),
        ServeOptions {
            metrics_listen: Some("127.0.0.1:0".into()),
            ..ServeOptions::default()
        },
    );
    let c = s.client();
    c.enqueue("embed", b"a", EnqueueOptions::default()).unwrap();
    c.enqueue("embed", b"b", EnqueueOptions::default()).unwrap();
    let j = c
        .lease_next("w", &LeaseOptions::default())
        .unwrap()
        .unwrap();
    c.fail(&j.token(), "once", true).unwrap();
    let h = Http::new(s.server.as_ref().unwrap().metrics_addr().unwrap());
    let text = h.get("/metrics").body;
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool on the PATH (make check-promtool installs it)");
    child.stdin.take().unwrap().write_all(&text).unwrap();
    let out = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!(
        "promtool check metrics over {} lines: {}",
        text.split(|b| *b == b'\n').count(),
        if said.trim().is_empty() {
            "clean"
        } else {
            said.trim()
        }
    );
    assert!(out.status.success(), "{said}");
}
