//! Reading a config: the file, the environment, and their layering.

use super::*;

#[test]
fn defaults_equal_the_named_constants() {
    let c = Config::default();
    assert_eq!(c.lease_ttl, LEASE_TTL_DEFAULT);
    assert_eq!(c.reaper_interval, REAPER_INTERVAL_DEFAULT);
    assert_eq!(c.max_attempts, MAX_ATTEMPTS_DEFAULT);
    assert_eq!(c.backoff.base, BACKOFF_BASE_DEFAULT);
    assert_eq!(c.backoff.factor, BACKOFF_FACTOR_DEFAULT);
    assert_eq!(c.backoff.cap, BACKOFF_CAP_DEFAULT);
    assert_eq!(c.completed_retention, Some(COMPLETED_RETENTION_DEFAULT));
    assert!(!c.sync_writes);
    assert_eq!(c.max_payload_bytes, MAX_PAYLOAD_BYTES_DEFAULT);
    assert_eq!(c.prune_batch, PRUNE_BATCH_DEFAULT);
    assert!(c.kinds.is_empty());
    assert!(c.backoff_base_secs_by_kind.is_empty());
    c.validate().expect("the defaults are valid");
}

#[test]
fn an_empty_file_or_empty_jobs_table_gives_the_defaults() {
    assert_eq!(parse(""), Config::default());
    assert_eq!(parse("[jobs]"), Config::default());
}

#[test]
fn a_full_file_sets_every_key() {
    let c = parse(FULL);
    let want = Config {
        lease_ttl: secs(600),
        reaper_interval: Duration::ZERO,
        max_attempts: 7,
        backoff: Backoff {
            base: secs(5),
            factor: 3.0,
            cap: secs(1800),
        },
        backoff_jitter: 0.5,
        completed_retention: Some(2 * HOUR),
        sync_writes: true,
        max_payload_bytes: 1024,
        prune_batch: 50,
        dead_retention: Some(72 * HOUR),
        cancelled_retention: None,
        timeout: Some(secs(600)),
        max_lease_total: Some(2 * HOUR),
        max_snoozes: 20,
        kinds: BTreeMap::from([(
            "ingest:pdf".to_string(),
            KindConfig {
                lease_ttl: Some(secs(900)),
                max_attempts: Some(3),
                backoff_base: Some(secs(30)),
                backoff_factor: Some(2.0),
                backoff_cap: Some(2 * HOUR),
                backoff_jitter: Some(0.1),
                timeout: Some(None),
                max_lease_total: Some(Some(secs(1800))),
                max_snoozes: Some(2),
            },
        )]),
        backoff_base_secs_by_kind: BTreeMap::from([("clarify:temporal".to_string(), 900)]),
    };
    assert_eq!(c, want);
    c.validate().expect("the full example is valid");
}

#[test]
fn a_partial_file_keeps_the_defaults_for_the_rest() {
    let c = parse("[jobs.backoff]\nfactor = 2\n");
    assert_eq!(
        c,
        Config {
            backoff: Backoff {
                factor: 2.0,
                ..Backoff::default()
            },
            ..Config::default()
        }
    );
}

#[test]
fn durations_accept_humantime_strings_and_numbers_of_seconds() {
    let cases: &[(&str, Duration)] = &[
        ("\"250ms\"", Duration::from_millis(250)),
        ("\"5m\"", secs(300)),
        ("\"1h 30m\"", secs(5400)),
        ("\"1h30m\"", secs(5400)),
        ("\"2 days\"", secs(2 * 86400)),
        ("300", secs(300)),
        ("1.5", Duration::from_millis(1500)),
        ("\"300\"", secs(300)),
        ("\"0.25\"", Duration::from_millis(250)),
        ("0", Duration::ZERO),
    ];
    for (text, want) in cases {
        let c = jobs(&format!("reaper_interval = {text}")).expect(text);
        assert_eq!(c.reaper_interval, *want, "reaper_interval = {text}");
    }
}

#[test]
fn malformed_durations_are_rejected_naming_the_key() {
    for text in [
        "\"soon\"",
        "\"5 parsecs\"",
        "-1",
        "-0.5",
        "\"\"",
        "true",
        "nan",
        "inf",
        "1e300",
    ] {
        let msg = invalid_msg(jobs(&format!("lease_ttl = {text}")));
        assert!(msg.contains("jobs.lease_ttl"), "{text}: {msg}");
    }
}

#[test]
fn completed_retention_false_off_or_none_keeps_jobs_forever() {
    for text in ["false", "\"off\"", "\"none\"", "\"OFF\""] {
        let c = jobs(&format!("completed_retention = {text}")).expect(text);
        assert_eq!(c.completed_retention, None, "{text}");
    }
    let c = jobs("completed_retention = \"7d\"").unwrap();
    assert_eq!(c.completed_retention, Some(secs(7 * 86400)));
    let msg = invalid_msg(jobs("completed_retention = true"));
    assert!(msg.contains("jobs.completed_retention"), "{msg}");
}

#[test]
fn unknown_keys_are_rejected_naming_the_key() {
    let cases = [
        ("[jobs]\nlease_tll = 5", "jobs.lease_tll"),
        ("[jobs.backoff]\nfactr = 2.0", "jobs.backoff.factr"),
        (
            "[jobs.kinds.\"ingest:pdf\"]\nttl = 5",
            "jobs.kinds.\"ingest:pdf\".ttl",
        ),
        ("[job]\nlease_ttl = 5", "job"),
        ("[jobs.retry]\nbase = 5", "jobs.retry"),
    ];
    for (toml, key) in cases {
        let msg = invalid_msg(Config::from_toml_str(toml));
        assert!(
            msg.contains(&format!("unknown config key {key} ")),
            "{toml}: {msg}"
        );
    }
}

#[test]
fn wrongly_typed_values_are_rejected_naming_the_key() {
    let cases = [
        ("max_attempts = \"5\"", "jobs.max_attempts"),
        ("max_attempts = -1", "jobs.max_attempts"),
        ("max_attempts = 4294967296", "jobs.max_attempts"),
        ("max_attempts = 2.5", "jobs.max_attempts"),
        ("sync_writes = \"yes\"", "jobs.sync_writes"),
        ("prune_batch = -5", "jobs.prune_batch"),
        ("max_payload_bytes = \"1MB\"", "jobs.max_payload_bytes"),
        ("backoff = 5", "jobs.backoff"),
        ("backoff.factor = \"fast\"", "jobs.backoff.factor"),
        ("kinds = [1]", "jobs.kinds"),
        ("kinds.embed = 5", "jobs.kinds.embed"),
        (
            "kinds.embed.max_attempts = true",
            "jobs.kinds.embed.max_attempts",
        ),
        (
            "backoff_base_secs_by_kind.\"a:b\" = \"15m\"",
            "jobs.backoff_base_secs_by_kind.\"a:b\"",
        ),
    ];
    for (body, key) in cases {
        let msg = invalid_msg(jobs(body));
        assert!(msg.starts_with(&format!("{key} must be")), "{body}: {msg}");
    }
    let msg = invalid_msg(Config::from_toml_str("jobs = 5"));
    assert!(msg.starts_with("jobs must be a table"), "{msg}");
}

#[test]
fn invalid_toml_syntax_is_an_invalid_argument() {
    let msg = invalid_msg(Config::from_toml_str("[jobs\nlease_ttl ="));
    assert!(msg.contains("not valid TOML"), "{msg}");
}

#[test]
fn from_file_reads_the_file_and_names_the_path_in_errors() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.toml");
    std::fs::write(&good, FULL).unwrap();
    assert_eq!(Config::from_file(&good).unwrap(), parse(FULL));

    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[jobs]\nmax_atempts = 3\n").unwrap();
    let msg = invalid_msg(Config::from_file(&bad));
    assert!(msg.contains(&bad.display().to_string()), "{msg}");
    assert!(msg.contains("jobs.max_atempts"), "{msg}");

    let missing = dir.path().join("missing.toml");
    let msg = invalid_msg(Config::from_file(&missing));
    assert!(msg.contains(&missing.display().to_string()), "{msg}");
}

#[test]
fn env_overrides_the_file() {
    let mut c = parse(FULL);
    c.apply_env_from(vars(&[
        ("TELHA_JOBS_LEASE_TTL", "45s"),
        ("TELHA_JOBS_REAPER_INTERVAL", "10"),
        ("TELHA_JOBS_MAX_ATTEMPTS", "9"),
        ("TELHA_JOBS_BACKOFF_BASE", "2s"),
        ("TELHA_JOBS_BACKOFF_FACTOR", "1.5"),
        ("TELHA_JOBS_BACKOFF_CAP", "10m"),
        ("TELHA_JOBS_BACKOFF_JITTER", "0.3"),
        ("TELHA_JOBS_COMPLETED_RETENTION", "off"),
        ("TELHA_JOBS_SYNC_WRITES", "no"),
        ("TELHA_JOBS_MAX_PAYLOAD_BYTES", "4096"),
        ("TELHA_JOBS_PRUNE_BATCH", "7"),
        ("TELHA_JOBS_DEAD_RETENTION", "off"),
        ("TELHA_JOBS_CANCELLED_RETENTION", "1h"),
        ("TELHA_JOBS_TIMEOUT", "none"),
        ("TELHA_JOBS_MAX_LEASE_TOTAL", "90s"),
        ("TELHA_JOBS_MAX_SNOOZES", "0"),
    ]))
    .unwrap();
    let file = parse(FULL);
    assert_eq!(
        c,
        Config {
            lease_ttl: secs(45),
            reaper_interval: secs(10),
            max_attempts: 9,
            backoff: Backoff {
                base: secs(2),
                factor: 1.5,
                cap: secs(600),
            },
            backoff_jitter: 0.3,
            completed_retention: None,
            sync_writes: false,
            max_payload_bytes: 4096,
            prune_batch: 7,
            dead_retention: None,
            cancelled_retention: Some(HOUR),
            timeout: None,
            max_lease_total: Some(secs(90)),
            max_snoozes: 0,
            // Per-kind settings come only from the file or code.
            kinds: file.kinds.clone(),
            backoff_base_secs_by_kind: file.backoff_base_secs_by_kind.clone(),
        }
    );
}

#[test]
fn env_ignores_unrelated_variables_and_the_config_path() {
    let mut c = Config::default();
    c.apply_env_from(vars(&[
        ("PATH", "/usr/bin"),
        ("TELHA_JOBS_CONFIG", "/nonexistent.toml"),
        ("TELHA_JOBS_SOMETHING_NEWER", "garbage"),
        ("telha_jobs_lease_ttl", "garbage"),
    ]))
    .unwrap();
    assert_eq!(c, Config::default());
}

#[test]
fn env_sync_writes_accepts_every_documented_spelling() {
    for (text, want) in [
        ("1", true),
        ("true", true),
        ("yes", true),
        ("on", true),
        ("TRUE", true),
        ("0", false),
        ("false", false),
        ("no", false),
        ("off", false),
        ("Off", false),
    ] {
        let mut c = Config {
            sync_writes: !want,
            ..Config::default()
        };
        c.apply_env_from(vars(&[("TELHA_JOBS_SYNC_WRITES", text)]))
            .unwrap();
        assert_eq!(c.sync_writes, want, "{text}");
    }
}

#[test]
fn bad_env_values_are_rejected_naming_the_variable_and_change_nothing() {
    let cases = [
        ("TELHA_JOBS_LEASE_TTL", "forever"),
        ("TELHA_JOBS_REAPER_INTERVAL", "-3"),
        ("TELHA_JOBS_MAX_ATTEMPTS", "five"),
        ("TELHA_JOBS_MAX_ATTEMPTS", "-1"),
        ("TELHA_JOBS_BACKOFF_BASE", ""),
        ("TELHA_JOBS_BACKOFF_FACTOR", "fast"),
        ("TELHA_JOBS_BACKOFF_CAP", "1 fortnight"),
        ("TELHA_JOBS_COMPLETED_RETENTION", "never"),
        ("TELHA_JOBS_SYNC_WRITES", "maybe"),
        ("TELHA_JOBS_MAX_PAYLOAD_BYTES", "16MiB"),
        ("TELHA_JOBS_PRUNE_BATCH", "1.5"),
    ];
    for (name, value) in cases {
        let mut c = Config::default();
        let r = c.apply_env_from(vars(&[("TELHA_JOBS_LEASE_TTL", "1s"), (name, value)]));
        let msg = invalid_msg(r);
        assert!(
            msg.starts_with(&format!("{name} must be")),
            "{name}={value}: {msg}"
        );
        assert_eq!(c, Config::default(), "{name}={value} left a partial change");
    }
}

#[test]
fn load_layers_env_over_the_file_over_the_defaults_then_validates() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jobs.toml");
    std::fs::write(&path, "[jobs]\nlease_ttl = \"10m\"\nmax_attempts = 2\n").unwrap();

    let c = load_with(Some(&path), None, vars(&[("TELHA_JOBS_MAX_ATTEMPTS", "4")])).unwrap();
    assert_eq!(c.lease_ttl, secs(600));
    assert_eq!(c.max_attempts, 4);
    assert_eq!(c.reaper_interval, REAPER_INTERVAL_DEFAULT);

    // The env can rescue a file value that is out of range...
    std::fs::write(&path, "[jobs]\nmax_attempts = 0\n").unwrap();
    let c = load_with(Some(&path), None, vars(&[("TELHA_JOBS_MAX_ATTEMPTS", "1")])).unwrap();
    assert_eq!(c.max_attempts, 1);
    // ...and without it, load refuses the file.
    let msg = invalid_msg(load_with(Some(&path), None, vec![]));
    assert!(msg.contains("jobs.max_attempts"), "{msg}");
    let msg = invalid_msg(load_with(
        None,
        None,
        vars(&[("TELHA_JOBS_MAX_ATTEMPTS", "0")]),
    ));
    assert!(msg.contains("jobs.max_attempts"), "{msg}");
}

#[test]
fn load_reads_telha_jobs_config_only_when_given_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let from_arg = dir.path().join("arg.toml");
    let from_env = dir.path().join("env.toml");
    std::fs::write(&from_arg, "[jobs]\nmax_attempts = 2\n").unwrap();
    std::fs::write(&from_env, "[jobs]\nmax_attempts = 3\n").unwrap();

    let c = load_with(None, Some(from_env.clone()), vec![]).unwrap();
    assert_eq!(c.max_attempts, 3);
    let c = load_with(Some(&from_arg), Some(from_env.clone()), vec![]).unwrap();
    assert_eq!(c.max_attempts, 2);
    assert_eq!(load_with(None, None, vec![]).unwrap(), Config::default());

    let missing = dir.path().join("missing.toml");
    let msg = invalid_msg(load_with(None, Some(missing.clone()), vec![]));
    assert!(msg.starts_with("TELHA_JOBS_CONFIG: "), "{msg}");
    assert!(msg.contains(&missing.display().to_string()), "{msg}");
    let msg = invalid_msg(load_with(None, Some(PathBuf::new()), vec![]));
    assert!(msg.contains("TELHA_JOBS_CONFIG"), "{msg}");
}
