use super::*;

const HOUR: Duration = Duration::from_secs(3600);

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The message of an `InvalidArgument`; any other error fails the test.
fn invalid_msg(r: Result<impl std::fmt::Debug>) -> String {
    match r {
        Err(Error::InvalidArgument(m)) => m,
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
}

fn parse(toml: &str) -> Config {
    Config::from_toml_str(toml).expect("config parses")
}

fn jobs(body: &str) -> Result<Config> {
    Config::from_toml_str(&format!("[jobs]\n{body}\n"))
}

const FULL: &str = r#"
    [jobs]
    lease_ttl = "600s"
    reaper_interval = "0s"
    max_attempts = 7
    completed_retention = "2h"
    sync_writes = true
    max_payload_bytes = 1024
    prune_batch = 50
    dead_retention = "3d"
    cancelled_retention = false
    timeout = "10m"
    max_lease_total = "2h"
    max_snoozes = 20
    [jobs.backoff]
    base = "5s"
    factor = 3.0
    cap = "30m"
    jitter = 0.5
    [jobs.backoff_base_secs_by_kind]
    "clarify:temporal" = 900
    [jobs.kinds."ingest:pdf"]
    lease_ttl = "15m"
    max_attempts = 3
    backoff_base = "30s"
    backoff_factor = 2.0
    backoff_cap = "2h"
    backoff_jitter = 0.1
    timeout = false
    max_lease_total = "30m"
    max_snoozes = 2
"#;

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

/// Applies `f` to a default config and returns the validation message.
fn rejected(f: impl FnOnce(&mut Config)) -> String {
    let mut c = Config::default();
    f(&mut c);
    invalid_msg(c.validate())
}

#[test]
fn validate_rejects_each_out_of_range_global() {
    let cases: Vec<(&str, String)> = vec![
        (
            "jobs.lease_ttl must be >= 1ms",
            rejected(|c| c.lease_ttl = Duration::from_micros(999)),
        ),
        (
            "jobs.max_attempts must be >= 1",
            rejected(|c| c.max_attempts = 0),
        ),
        (
            "jobs.backoff.factor must be a finite number >= 1.0, got 0.5",
            rejected(|c| c.backoff.factor = 0.5),
        ),
        (
            "jobs.backoff.factor",
            rejected(|c| c.backoff.factor = f64::NAN),
        ),
        (
            "jobs.backoff.factor",
            rejected(|c| c.backoff.factor = f64::INFINITY),
        ),
        (
            "jobs.backoff.jitter must be a number from 0 to 1, got -0.1",
            rejected(|c| c.backoff_jitter = -0.1),
        ),
        (
            "jobs.backoff.jitter must be a number from 0 to 1, got 1.5",
            rejected(|c| c.backoff_jitter = 1.5),
        ),
        (
            "jobs.backoff.jitter must be a number from 0 to 1, got NaN",
            rejected(|c| c.backoff_jitter = f64::NAN),
        ),
        (
            "jobs.backoff.base must be > 0",
            rejected(|c| c.backoff.base = Duration::ZERO),
        ),
        (
            "jobs.backoff.cap must be >= jobs.backoff.base",
            rejected(|c| c.backoff.cap = secs(9)),
        ),
        (
            "jobs.completed_retention must be > 0",
            rejected(|c| c.completed_retention = Some(Duration::ZERO)),
        ),
        (
            "jobs.max_payload_bytes",
            rejected(|c| c.max_payload_bytes = 0),
        ),
        (
            "jobs.max_payload_bytes",
            rejected(|c| c.max_payload_bytes = MAX_PAYLOAD_BYTES_LIMIT + 1),
        ),
        (
            "jobs.prune_batch must be >= 1",
            rejected(|c| c.prune_batch = 0),
        ),
    ];
    for (want, msg) in cases {
        assert!(msg.starts_with(want), "want {want:?}, got {msg:?}");
    }
}

#[test]
fn validate_accepts_the_edges_of_each_range() {
    let mut c = Config {
        lease_ttl: Duration::from_millis(1),
        reaper_interval: Duration::ZERO,
        max_attempts: 1,
        backoff: Backoff {
            base: Duration::from_millis(1),
            factor: 1.0,
            cap: Duration::from_millis(1),
        },
        backoff_jitter: 0.0,
        completed_retention: None,
        max_payload_bytes: MAX_PAYLOAD_BYTES_LIMIT,
        prune_batch: 1,
        ..Config::default()
    };
    c.validate().unwrap();
    c.backoff_jitter = 1.0;
    c.validate().unwrap();
    c.max_payload_bytes = 1;
    c.completed_retention = Some(Duration::from_nanos(1));
    c.validate().unwrap();
}

#[test]
fn validate_rejects_malformed_kind_names_in_either_map() {
    for bad in [
        "",
        "Ingest:pdf",
        "ingest pdf",
        "ingest:*",
        "ingest/pdf",
        "é",
        &"a".repeat(65),
    ] {
        let msg = rejected(|c| {
            c.kinds.insert(bad.to_string(), KindConfig::default());
        });
        assert!(msg.starts_with("jobs.kinds key "), "{bad:?}: {msg}");
        let msg = rejected(|c| {
            c.backoff_base_secs_by_kind.insert(bad.to_string(), 60);
        });
        assert!(
            msg.starts_with("jobs.backoff_base_secs_by_kind key "),
            "{bad:?}: {msg}"
        );
    }
    let mut c = Config::default();
    for good in [
        "embed",
        "ingest:pdf",
        "system:vacuum.v2",
        "a_b-c",
        &"a".repeat(64),
    ] {
        c.kinds.insert(good.to_string(), KindConfig::default());
    }
    c.validate().unwrap();
}

#[test]
fn validate_holds_per_kind_overrides_to_the_global_bounds() {
    fn kind(f: impl FnOnce(&mut KindConfig)) -> impl FnOnce(&mut Config) {
        move |c| f(c.kinds.entry("ingest:pdf".to_string()).or_default())
    }
    let p = "jobs.kinds.\"ingest:pdf\"";
    let cases: Vec<(String, String)> = vec![
        (
            format!("{p}.lease_ttl must be >= 1ms"),
            rejected(kind(|k| k.lease_ttl = Some(Duration::ZERO))),
        ),
        (
            format!("{p}.max_attempts must be >= 1"),
            rejected(kind(|k| k.max_attempts = Some(0))),
        ),
        (
            format!("{p}.backoff_factor must be a finite number >= 1.0"),
            rejected(kind(|k| k.backoff_factor = Some(0.9))),
        ),
        (
            format!("{p}.backoff_factor"),
            rejected(kind(|k| k.backoff_factor = Some(f64::NAN))),
        ),
        (
            format!("{p}.backoff_base must be > 0"),
            rejected(kind(|k| k.backoff_base = Some(Duration::ZERO))),
        ),
        (
            // No per-kind base: the global base (10s) is the floor.
            format!("{p}.backoff_cap must be >= the kind's backoff base (10s)"),
            rejected(kind(|k| k.backoff_cap = Some(secs(5)))),
        ),
        (
            format!("{p}.backoff_cap must be >= the kind's backoff base (1m)"),
            rejected(kind(|k| {
                k.backoff_base = Some(secs(60));
                k.backoff_cap = Some(secs(30));
            })),
        ),
        (
            "jobs.backoff_base_secs_by_kind.\"clarify:temporal\" must be >= 1".to_string(),
            rejected(|c| {
                c.backoff_base_secs_by_kind
                    .insert("clarify:temporal".to_string(), 0);
            }),
        ),
    ];
    for (want, msg) in cases {
        assert!(msg.starts_with(&want), "want {want:?}, got {msg:?}");
    }
}

#[test]
fn a_per_kind_cap_may_sit_below_the_global_base_but_not_the_kinds_own() {
    let mut c = Config::default();
    c.kinds.insert(
        "embed".to_string(),
        KindConfig {
            backoff_base: Some(secs(1)),
            backoff_cap: Some(secs(5)),
            ..KindConfig::default()
        },
    );
    c.validate().unwrap();

    // The secs map supplies the effective base when `kinds` has none.
    let mut c = Config::default();
    c.backoff_base_secs_by_kind.insert("embed".to_string(), 120);
    c.kinds.insert(
        "embed".to_string(),
        KindConfig {
            backoff_cap: Some(secs(60)),
            ..KindConfig::default()
        },
    );
    let msg = invalid_msg(c.validate());
    assert!(msg.contains("(2m)"), "{msg}");
}

#[test]
fn a_per_kind_base_above_the_global_cap_raises_that_kinds_cap() {
    let via_kinds = parse("[jobs.kinds.\"clarify:temporal\"]\nbackoff_base = \"2h\"\n");
    let via_map = parse("[jobs.backoff_base_secs_by_kind]\n\"clarify:temporal\" = 7200\n");
    for c in [&via_kinds, &via_map] {
        c.validate().expect("a base above the global cap is valid");
        let b = c.backoff_for("clarify:temporal");
        assert_eq!((b.base, b.cap, b.factor), (2 * HOUR, 2 * HOUR, 4.0));
        assert_eq!(c.backoff_delay("clarify:temporal", 1), 2 * HOUR);
        assert_eq!(c.backoff_delay("clarify:temporal", 5), 2 * HOUR);
        // Other kinds keep the global schedule.
        assert_eq!(c.backoff_for("embed"), Backoff::default());
    }
}

#[test]
fn a_kinds_backoff_base_wins_over_the_secs_map() {
    let c = parse(
        r#"
        [jobs.backoff_base_secs_by_kind]
        "ingest:pdf" = 7200
        [jobs.kinds."ingest:pdf"]
        backoff_base = "30s"
        "#,
    );
    let b = c.backoff_for("ingest:pdf");
    assert_eq!((b.base, b.cap), (secs(30), HOUR));
}

#[test]
fn max_attempts_prefers_the_job_then_the_kind_then_the_global() {
    let c = parse("[jobs]\nmax_attempts = 5\n[jobs.kinds.embed]\nmax_attempts = 3\n");
    assert_eq!(c.max_attempts_for("embed", Some(9)), 9);
    assert_eq!(c.max_attempts_for("embed", None), 3);
    assert_eq!(c.max_attempts_for("ingest:pdf", Some(9)), 9);
    assert_eq!(c.max_attempts_for("ingest:pdf", None), 5);
}

#[test]
fn lease_ttl_prefers_the_kind_then_the_global() {
    let c = parse(FULL);
    assert_eq!(c.lease_ttl_for("ingest:pdf"), secs(900));
    assert_eq!(c.lease_ttl_for("embed"), secs(600));
}

#[test]
fn the_readme_example_file_parses_and_applies_the_per_kind_base_rule() {
    let c = Config::from_toml_str(
        r#"
        [jobs]
        lease_ttl = "10m"
        max_attempts = 8
        [jobs.backoff]
        base = "5s"
        [jobs.kinds."ingest:pdf"]
        lease_ttl = "30m"
        backoff_base = "2h"
        "#,
    )
    .unwrap();
    c.validate().unwrap();
    assert_eq!(c.lease_ttl_for("embed"), Duration::from_secs(600));
    assert_eq!(c.lease_ttl_for("ingest:pdf"), Duration::from_secs(1800));
    let b = c.backoff_for("ingest:pdf");
    assert_eq!(
        (b.base, b.cap),
        (Duration::from_secs(7200), Duration::from_secs(7200))
    );
    assert_eq!(c.backoff_for("embed").base, Duration::from_secs(5));
}
