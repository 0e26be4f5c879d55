//! `metrics --json`: the core's Prometheus text as a list of samples, for
//! scripts that would rather not parse the exposition format themselves.

use serde_json::{json, Map, Value as Json};

/// `{"samples": [{"name", "labels": {..}, "value"}], "types": {name: type}}`.
/// Accepts the subset of the text format (0.0.4) the core writes: `# HELP`
/// and `# TYPE` lines, samples with optional labels, no timestamps.
pub fn to_json(text: &str) -> Result<Json, String> {
    let mut samples = Vec::new();
    let mut types = Map::new();
    for (n, line) in text.lines().enumerate() {
        let err = |what: &str| format!("line {}: {what}: {line:?}", n + 1);
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, ty) = rest.split_once(' ').ok_or_else(|| err("bad TYPE"))?;
            types.insert(name.to_string(), Json::from(ty));
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let (head, value) = line.rsplit_once(' ').ok_or_else(|| err("no value"))?;
        let value: f64 = value.parse().map_err(|_| err("bad value"))?;
        let (name, labels) = match head.split_once('{') {
            None => (head, Map::new()),
            Some((name, rest)) => {
                let body = rest
                    .strip_suffix('}')
                    .ok_or_else(|| err("unclosed labels"))?;
                (name, labels(body).ok_or_else(|| err("bad labels"))?)
            }
        };
        samples.push(json!({"name": name, "labels": labels, "value": value}));
    }
    Ok(json!({"samples": samples, "types": types}))
}

/// `a="x",b="y\"z"` with the format's escapes (`\\`, `\"`, `\n`).
fn labels(body: &str) -> Option<Map<String, Json>> {
    let mut out = Map::new();
    let mut chars = body.chars().peekable();
    while chars.peek().is_some() {
        let name: String = chars.by_ref().take_while(|c| *c != '=').collect();
        if chars.next()? != '"' {
            return None;
        }
        let mut value = String::new();
        loop {
            match chars.next()? {
                '"' => break,
                '\\' => match chars.next()? {
                    'n' => value.push('\n'),
                    c => value.push(c),
                },
                c => value.push(c),
            }
        }
        out.insert(name, Json::String(value));
        match chars.next() {
            None => break,
            Some(',') => continue,
            Some(_) => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_and_escaped_labels_become_json() {
        let j = to_json(
            "# HELP a_total x\n# TYPE a_total counter\na_total{k=\"q\\\"x\",s=\"dead\"} 3\nb 0\n",
        )
        .unwrap();
        assert_eq!(j["types"]["a_total"], "counter");
        assert_eq!(j["samples"][0]["labels"]["k"], "q\"x");
        assert_eq!(j["samples"][0]["labels"]["s"], "dead");
        assert_eq!(j["samples"][0]["value"], 3.0);
        assert_eq!(j["samples"][1]["name"], "b");
    }

    #[test]
    fn malformed_lines_are_errors() {
        assert!(to_json("a{k=\"x\" 1\n").is_err());
        assert!(to_json("a one\n").is_err());
    }
}
