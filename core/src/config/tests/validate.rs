//! The bounds `validate` holds: globals, kind names, per-kind overrides,
//! and which of job, kind and global settings wins.

use super::*;

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
