//! Tests of the key table (`keys.rs`): every key settable, typed and
//! range-checked, and settable through every front door (TOML, env, text).

use super::*;

/// A value of `k`'s type that differs from the default.
fn sample(k: &Key) -> Value {
    match k.ty {
        KeyType::Duration { .. } | KeyType::Retention => {
            Value::Duration(Duration::from_millis(4321))
        }
        KeyType::Count { min, .. } => Value::Count(min + 6),
        KeyType::Factor => Value::Float(1.75),
        KeyType::Fraction => Value::Float(0.35),
        KeyType::Flag => Value::Flag(true),
    }
}

#[test]
fn every_key_sets_reads_back_and_parses_its_default() {
    for k in KEYS {
        let mut c = Config::default();
        let def = text::parse(k.ty, k.default).expect(k.name);
        assert_eq!(c.get(k.name).unwrap(), def, "{}: default", k.name);
        c.set(k.name, sample(k)).unwrap();
        assert_eq!(c.get(k.name).unwrap(), sample(k), "{}", k.name);
        if k.per_kind {
            c.set_for_kind("embed", k.name, sample(k)).unwrap();
            assert_eq!(c.kinds["embed"].get(k.name), Some(sample(k)), "{}", k.name);
        } else {
            assert!(c.set_for_kind("embed", k.name, sample(k)).is_err());
        }
    }
}

#[test]
fn wrong_types_huge_durations_and_unknown_keys_are_invalid() {
    let mut c = Config::default();
    assert!(c.set("lease_ttl", Value::Flag(true)).is_err());
    assert!(c.set("lease_ttl", Value::Duration(Duration::MAX)).is_err());
    assert!(c.set("max_attempts", Value::Count(0)).is_err());
    assert!(c.set("max_attempts", Value::Count(1 << 40)).is_err());
    assert!(c.set("backoff_factor", Value::Float(f64::NAN)).is_err());
    let e = c.set("lease_tll", Value::Count(1)).unwrap_err();
    assert!(e.to_string().contains("lease_ttl"), "{e}");
    assert!(c.set_text("lease_ttl", "18446744073709552").is_err());
    assert_eq!(c, Config::default(), "nothing was changed");
}

/// The key's sample value as the file's text (`4321ms`, `7`, `1.75`, `true`).
fn sample_text(k: &Key) -> String {
    match k.ty {
        KeyType::Duration { .. } | KeyType::Retention => "4321ms".into(),
        KeyType::Count { min, .. } => (min + 6).to_string(),
        KeyType::Factor => "1.75".into(),
        KeyType::Fraction => "0.35".into(),
        KeyType::Flag => "true".into(),
    }
}

fn toml_value(k: &Key) -> String {
    match k.ty {
        KeyType::Duration { .. } | KeyType::Retention => "\"4321ms\"".into(),
        _ => sample_text(k),
    }
}

/// Driven from the table: a key added to it without a way in through
/// the file, the environment or text fails here.
#[test]
fn every_key_is_settable_from_toml_env_and_text_globally_and_per_kind() {
    for k in KEYS {
        let want = text::parse(k.ty, &sample_text(k)).unwrap();
        // TOML, at its path under [jobs].
        let (table, leaf) = match k.toml.split_once('.') {
            Some((t, leaf)) => (format!("[jobs.{t}]"), leaf.to_string()),
            None => ("[jobs]".to_string(), k.toml.to_string()),
        };
        let c = Config::from_toml_str(&format!("{table}\n{leaf} = {}\n", toml_value(k)))
            .unwrap_or_else(|e| panic!("{}: {e}", k.name));
        assert_eq!(c.get(k.name).unwrap(), want, "toml {}", k.name);
        // The environment.
        let var = k
            .env
            .unwrap_or_else(|| panic!("{} has no variable", k.name));
        let mut c = Config::default();
        c.apply_env_from([(var.to_string(), sample_text(k))])
            .unwrap();
        assert_eq!(c.get(k.name).unwrap(), want, "env {var}");
        // Text (the C setters).
        let mut c = Config::default();
        c.set_text(k.name, &sample_text(k)).unwrap();
        assert_eq!(c.get(k.name).unwrap(), want, "text {}", k.name);
        if k.per_kind {
            let c = Config::from_toml_str(&format!(
                "[jobs.kinds.\"ingest:pdf\"]\n{} = {}\n",
                k.name,
                toml_value(k)
            ))
            .unwrap();
            assert_eq!(
                c.kinds["ingest:pdf"].get(k.name),
                Some(want),
                "kind toml {}",
                k.name
            );
            let mut c = Config::default();
            c.set_text_for_kind("ingest:pdf", k.name, &sample_text(k))
                .unwrap();
            assert_eq!(
                c.kinds["ingest:pdf"].get(k.name),
                Some(want),
                "kind text {}",
                k.name
            );
        }
    }
}
