//! `telha jobs metrics` is valid Prometheus text exposition (0.0.4),
//! checked by a parser written here, and the dead-letter gauge counts the
//! dead jobs.

use std::collections::{BTreeMap, BTreeSet};

use telha_jobs::State;

use crate::support::*;

#[derive(Debug, PartialEq)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

fn is_metric_name(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some('a'..='z' | 'A'..='Z' | '_' | ':'))
        && c.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn is_label_name(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some('a'..='z' | 'A'..='Z' | '_'))
        && c.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with("__")
}

/// `name="value",…` with the format's escapes; `Err` on anything else.
fn parse_labels(body: &str) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    let mut rest = body;
    while !rest.is_empty() {
        let (name, after) = rest.split_once("=\"").ok_or("label without =\"")?;
        if !is_label_name(name) {
            return Err(format!("bad label name {name:?}"));
        }
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next().ok_or("unterminated label value")? {
                (i, '"') => break i,
                (_, '\\') => match chars.next().ok_or("dangling escape")?.1 {
                    'n' => value.push('\n'),
                    c @ ('\\' | '"') => value.push(c),
                    c => return Err(format!("bad escape \\{c}")),
                },
                (_, c) => value.push(c),
            }
        };
        if out.insert(name.to_string(), value).is_some() {
            return Err(format!("label {name} twice"));
        }
        rest = &after[end + 1..];
        if let Some(r) = rest.strip_prefix(',') {
            rest = r;
        } else if !rest.is_empty() {
            return Err(format!("junk after a label: {rest:?}"));
        }
    }
    Ok(out)
}

fn parse_value(s: &str) -> Result<f64, String> {
    match s {
        "+Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        _ => s.parse().map_err(|_| format!("bad value {s:?}")),
    }
}

/// Checks the text format: HELP/TYPE lines well formed, at most one of
/// each per family and before its samples, samples grouped by family, the
/// family's type known, names and labels legal, no series twice, counters
/// never negative. Returns the samples.
fn parse_exposition(text: &str) -> Result<Vec<Sample>, String> {
    if !text.ends_with('\n') {
        return Err("the text must end with a newline".into());
    }
    let mut types: BTreeMap<String, String> = BTreeMap::new();
    let mut helps: BTreeSet<String> = BTreeSet::new();
    let mut finished: BTreeSet<String> = BTreeSet::new();
    let mut current: Option<String> = None;
    let mut series = BTreeSet::new();
    let mut samples = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let at = |e: String| format!("line {}: {e}: {line:?}", n + 1);
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            let mut parts = comment.trim_start().splitn(3, ' ');
            let (word, name, rest) = (parts.next(), parts.next(), parts.next());
            match (word, name) {
                (Some("HELP"), Some(name)) => {
                    if !is_metric_name(name) || !helps.insert(name.to_string()) {
                        return Err(at("bad or repeated HELP".into()));
                    }
                    if rest.is_none_or(str::is_empty) {
                        return Err(at("empty HELP".into()));
                    }
                }
                (Some("TYPE"), Some(name)) => {
                    let ty = rest.ok_or_else(|| at("TYPE without a type".into()))?;
                    if !["counter", "gauge", "histogram", "summary", "untyped"].contains(&ty) {
                        return Err(at(format!("unknown type {ty:?}")));
                    }
                    if types.insert(name.to_string(), ty.to_string()).is_some()
                        || finished.contains(name)
                        || current.as_deref() == Some(name)
                    {
                        return Err(at("TYPE repeated or after the samples".into()));
                    }
                }
                _ => {} // other comments are allowed
            }
            continue;
        }
        let (head, value) = line.rsplit_once(' ').ok_or_else(|| at("no value".into()))?;
        let value = parse_value(value).map_err(at)?;
        let (name, labels) = match head.split_once('{') {
            None => (head, BTreeMap::new()),
            Some((name, rest)) => {
                let body = rest
                    .strip_suffix('}')
                    .ok_or_else(|| at("unclosed {".into()))?;
                (name, parse_labels(body).map_err(at)?)
            }
        };
        if !is_metric_name(name) {
            return Err(at(format!("bad metric name {name:?}")));
        }
        if current.as_deref() != Some(name) {
            if finished.contains(name) {
                return Err(at("a family's samples are split".into()));
            }
            if let Some(prev) = current.replace(name.to_string()) {
                finished.insert(prev);
            }
        }
        let ty = types
            .get(name)
            .ok_or_else(|| at("sample before its TYPE".into()))?;
        if ty == "counter" && (value.is_nan() || value < 0.0) {
            return Err(at("a counter below zero".into()));
        }
        if !series.insert((name.to_string(), format!("{labels:?}"))) {
            return Err(at("the same series twice".into()));
        }
        samples.push(Sample {
            name: name.to_string(),
            labels,
            value,
        });
    }
    Ok(samples)
}

#[test]
fn the_parser_rejects_what_the_format_forbids() {
    let ok = "# HELP a_total x\n# TYPE a_total counter\na_total{k=\"v\\\"\"} 1\n";
    assert_eq!(parse_exposition(ok).unwrap()[0].labels["k"], "v\"");
    for bad in [
        "a 1\n",                                                    // no TYPE
        "# TYPE a gauge\na 1",                                      // no final newline
        "# TYPE a gauge\na{k=\"v} 1\n",                             // unterminated label
        "# TYPE a gauge\na{k=v} 1\n",                               // unquoted label
        "# TYPE a gauge\na one\n",                                  // bad value
        "# TYPE a gauge\na 1\na 2\n",                               // series twice
        "# TYPE a gauge\n# TYPE b gauge\na 1\nb 1\na{x=\"1\"} 1\n", // split family
        "# TYPE a counter\na -1\n",                                 // negative counter
        "# TYPE 1a gauge\n1a 1\n",                                  // bad name
        "# TYPE a meter\na 1\n",                                    // unknown type
    ] {
        assert!(parse_exposition(bad).is_err(), "accepted {bad:?}");
    }
}

#[test]
fn metrics_are_valid_exposition_and_the_dead_letter_gauge_counts_dead_jobs() {
    let s = seeded();
    let text = telha(&s.path, &["jobs", "metrics"]).ok().to_string();
    let samples = parse_exposition(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));

    let dead_listed = telha(&s.path, &["--json", "jobs", "ls", "--state", "dead"]).json();
    let dead_listed = dead_listed["jobs"].as_array().unwrap().len();
    let gauge = |samples: &[Sample]| {
        let g: Vec<&Sample> = samples
            .iter()
            .filter(|x| x.name == "telha_jobs_dead_letter_jobs")
            .collect();
        assert_eq!(g.len(), 1, "one dead-letter gauge");
        assert!(text.contains("# TYPE telha_jobs_dead_letter_jobs gauge"));
        g[0].value
    };
    assert_eq!(gauge(&samples), 6.0);
    assert_eq!(dead_listed, 6);
    assert_eq!(s.dead().len(), 6);

    // Per kind, the jobs gauge agrees with the dead-letter total.
    let dead_by_kind: f64 = samples
        .iter()
        .filter(|x| x.name == "telha_jobs_jobs" && x.labels["state"] == "dead")
        .map(|x| x.value)
        .sum();
    assert_eq!(dead_by_kind, 6.0);
    let pdf_dead = samples.iter().find(|x| {
        x.name == "telha_jobs_jobs"
            && x.labels["kind"] == "ingest:pdf"
            && x.labels["state"] == "dead"
    });
    assert_eq!(pdf_dead.map(|x| x.value), Some(3.0));
    // The seeded store holds one leased job; the read-only view rebuilds it.
    let in_flight = samples
        .iter()
        .find(|x| x.name == "telha_jobs_leases_in_flight");
    assert_eq!(in_flight.map(|x| x.value), Some(1.0));

    // After retrying two, the gauge follows.
    telha(
        &s.path,
        &[
            "jobs", "retry", "--state", "dead", "--kind", "embed", "--yes",
        ],
    )
    .ok();
    let text = telha(&s.path, &["jobs", "metrics"]).ok().to_string();
    let samples = parse_exposition(&text).unwrap();
    assert_eq!(
        samples
            .iter()
            .find(|x| x.name == "telha_jobs_dead_letter_jobs")
            .unwrap()
            .value,
        ids_in(&s.path, State::Dead).len() as f64
    );
    assert_eq!(ids_in(&s.path, State::Dead).len(), 4);

    // --json carries the same samples.
    let j = telha(&s.path, &["--json", "jobs", "metrics"]).json();
    let from_json = j["samples"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "telha_jobs_dead_letter_jobs")
        .unwrap()["value"]
        .as_f64();
    assert_eq!(from_json, Some(4.0));
    assert_eq!(j["types"]["telha_jobs_dead_letter_jobs"], "gauge");
}
