//! Every command on a seeded store, human and `--json` output.

use std::sync::Arc;

use telha_jobs::{Clock, JobId, ManualClock, Queue, State, SystemClock};

use crate::support::*;

#[test]
fn ls_json_lists_every_job_and_filters_by_state_kind_and_scope() {
    let s = seeded();
    let all = telha(&s.path, &["--json", "jobs", "ls", "--limit", "100"]).json();
    assert_eq!(all["jobs"].as_array().unwrap().len(), s.total);
    assert_eq!(all["next"], serde_json::Value::Null);

    let dead = telha(&s.path, &["jobs", "ls", "--state", "dead", "--json"]).json();
    assert_eq!(json_ids(&dead["jobs"]), s.dead());
    assert!(dead["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .all(|j| j["state"] == "dead" && j["last_error"] == "cannot parse PDF header"));

    let ingest = telha(
        &s.path,
        &[
            "jobs", "ls", "--state", "dead", "--kind", "ingest:*", "--json",
        ],
    )
    .json();
    let mut want = [&s.dead_pdf_a[..], &s.dead_html_b].concat();
    want.sort();
    assert_eq!(json_ids(&ingest["jobs"]), want);

    let in_b = telha(&s.path, &["jobs", "ls", "--scope", SCOPE_B, "--json"]).json();
    let jobs = in_b["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2); // the dead ingest:html and a pending ingest:pdf
    assert!(jobs.iter().all(|j| j["scope"] == SCOPE_B));
}

#[test]
fn ls_prints_a_table_and_pages_with_limit_and_after() {
    let s = seeded();
    let table = telha(&s.path, &["jobs", "ls", "--state", "pending"])
        .ok()
        .to_string();
    let mut lines = table.lines();
    assert!(lines.next().unwrap().starts_with("ID "), "{table}");
    for id in &s.pending {
        assert!(table.contains(&id.to_string()), "{table}");
    }
    assert_eq!(lines.count(), s.pending.len(), "{table}");

    // Follow the cursor: every job exactly once.
    let (mut seen, mut after) = (Vec::new(), None::<String>);
    loop {
        let mut args = vec!["--json", "jobs", "ls", "--limit", "3"];
        if let Some(a) = &after {
            args.extend(["--after", a.as_str()]);
        }
        let page = telha(&s.path, &args).json();
        let n = page["jobs"].as_array().unwrap().len();
        assert!(n <= 3);
        seen.extend(json_ids(&page["jobs"]));
        match page["next"].as_str() {
            Some(n) => after = Some(n.to_string()),
            None => break,
        }
    }
    let before = seen.len();
    seen.sort();
    seen.dedup();
    assert_eq!((before, seen.len()), (s.total, s.total));

    let limited = telha(&s.path, &["jobs", "ls", "--limit", "2"])
        .ok()
        .to_string();
    assert!(
        limited
            .lines()
            .last()
            .unwrap()
            .starts_with("more: add --after "),
        "{limited}"
    );
}

#[test]
fn show_prints_the_job_and_its_whole_event_log() {
    let s = seeded();
    let id = s.dead_pdf_a[0].to_string();
    let text = telha(&s.path, &["jobs", "show", &id]).ok().to_string();
    for want in [
        id.as_str(),
        "ingest:pdf",
        "dead",
        "cannot parse PDF header",
        "s3://bucket/a.pdf",
        "events (4):",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }

    let j = telha(&s.path, &["jobs", "show", &id, "--json"]).json();
    assert_eq!(j["id"], id.as_str());
    assert_eq!(j["state"], "dead");
    assert_eq!(j["scope"], SCOPE_A);
    assert_eq!(j["attempts"], 1);
    let transitions: Vec<&str> = j["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["transition"].as_str().unwrap())
        .collect();
    assert_eq!(transitions, ["enqueued", "leased", "failed", "dead"]);
    assert_eq!(j["payload"]["encoding"], "msgpack");
    let want: serde_json::Value = serde_json::from_str(PDF_PAYLOAD).unwrap();
    assert_eq!(j["payload"]["value"], want);

    // Bytes outside the payload convention are shown as they are.
    let html = s.dead_html_b[0].to_string();
    let j = telha(&s.path, &["--json", "jobs", "show", &html]).json();
    assert_eq!(
        j["payload"],
        serde_json::json!({"encoding": "hex", "value": "ff00"})
    );

    let missing = JobId::from_bytes([7; 16]).to_string();
    telha(&s.path, &["jobs", "show", &missing]).fails(1, &format!("no job {missing}"));
}

#[test]
fn retry_moves_one_dead_job_to_pending_with_attempts_reset() {
    let s = seeded();
    let id = s.dead_embed_a[0];
    let out = telha(&s.path, &["jobs", "retry", &id.to_string()])
        .ok()
        .to_string();
    assert!(out.contains("dead -> pending"), "{out}");
    let j = core_view(&s.path).get(&id).unwrap().unwrap();
    assert_eq!((j.state, j.attempts), (State::Pending, 0));
    assert_eq!(j.events.last().unwrap().transition, "retried");

    // A failed job can be retried too, in JSON.
    let f = telha(&s.path, &["--json", "jobs", "retry", &s.failed.to_string()]).json();
    assert_eq!(
        f,
        serde_json::json!({"id": s.failed.to_string(), "from": "failed", "to": "pending"})
    );

    // Now pending: not retryable, and nothing changes.
    telha(&s.path, &["jobs", "retry", &id.to_string()]).fails(2, "only dead or failed");
    let missing = JobId::from_bytes([9; 16]).to_string();
    telha(&s.path, &["jobs", "retry", &missing]).fails(1, "no job");
    assert_eq!(ids_in(&s.path, State::Dead).len(), 5);
}

#[test]
fn bulk_retry_without_yes_changes_nothing_and_with_yes_moves_exactly_the_matching_jobs() {
    let s = seeded();
    let dry = telha(
        &s.path,
        &["jobs", "retry", "--state", "dead", "--kind", "ingest:*"],
    );
    assert!(
        dry.ok()
            .contains("4 dead job(s) of kind ingest:* would move"),
        "{dry:?}"
    );
    assert_eq!(
        ids_in(&s.path, State::Dead),
        s.dead(),
        "a dry run changed the store"
    );

    let dry = telha(
        &s.path,
        &[
            "--json", "jobs", "retry", "--state", "dead", "--scope", SCOPE_A,
        ],
    )
    .json();
    assert_eq!(
        dry,
        serde_json::json!({"matched": 5, "retried": 0, "dry_run": true})
    );

    let out = telha(
        &s.path,
        &[
            "jobs", "retry", "--state", "dead", "--kind", "ingest:*", "--scope", SCOPE_A, "--yes",
        ],
    );
    assert!(out.ok().contains("retried 3 dead job(s)"), "{out:?}");
    let mut left = [&s.dead_embed_a[..], &s.dead_html_b].concat();
    left.sort();
    assert_eq!(ids_in(&s.path, State::Dead), left);
    let pending = ids_in(&s.path, State::Pending);
    assert!(s.dead_pdf_a.iter().all(|id| pending.contains(id)));
    assert_eq!(pending.len(), s.pending.len() + 3);

    let all = telha(
        &s.path,
        &["--json", "jobs", "retry", "--state", "dead", "-y"],
    )
    .json();
    assert_eq!(
        all,
        serde_json::json!({"matched": 3, "retried": 3, "dry_run": false})
    );
    assert!(ids_in(&s.path, State::Dead).is_empty());
    // The failed job is not dead: untouched by a dead-state bulk retry.
    assert_eq!(ids_in(&s.path, State::Failed), vec![s.failed]);
}

#[test]
fn purge_deletes_only_jobs_older_than_the_duration() {
    // Half the jobs got to their state ten days ago, half now.
    let ten_days_ago = SystemClock.now_ms() - 10 * 24 * 3600 * 1000;
    let old = seeded_at(&ManualClock::new(ten_days_ago));
    let q =
        Queue::open_with_clock(&old.path, config(), Arc::new(ManualClock::starting_now())).unwrap();
    for _ in 0..2 {
        q.enqueue("fresh", b"", Default::default()).unwrap();
    }
    let leased = q
        .lease_many(
            "w",
            2,
            &telha_jobs::LeaseOptions::default().kind("fresh").unwrap(),
        )
        .unwrap();
    assert_eq!(leased.len(), 2);
    q.fail(&leased[0].token(), "new failure", false).unwrap();
    q.complete(&leased[1].token(), None).unwrap();
    q.close();
    drop(q);

    let out = telha(
        &old.path,
        &["jobs", "purge", "--state", "dead", "--older-than", "7d"],
    );
    assert!(
        out.ok()
            .starts_with("purged 6 dead job(s) older than 7days"),
        "{out:?}"
    );
    assert_eq!(ids_in(&old.path, State::Dead), vec![leased[0].id]);

    let j = telha(
        &old.path,
        &[
            "--json",
            "jobs",
            "purge",
            "--state",
            "completed",
            "--older-than",
            "12h",
        ],
    )
    .json();
    assert_eq!(
        (j["purged"].as_u64(), j["state"].as_str()),
        (Some(2), Some("completed"))
    );
    assert_eq!(ids_in(&old.path, State::Completed), vec![leased[1].id]);
    assert!(core_view(&old.path)
        .get(&old.dead_pdf_a[0])
        .unwrap()
        .is_none());

    // Nothing is that old now.
    let j = telha(
        &old.path,
        &[
            "--json",
            "jobs",
            "purge",
            "--state",
            "dead",
            "--older-than",
            "1h",
        ],
    )
    .json();
    assert_eq!(j["purged"], 0);
    // Indexes and counters still agree with the rows.
    let report = core_view(&old.path).check().unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert_eq!(report.jobs, 14 + 2 - 6 - 2);
}

#[test]
fn stats_counts_per_state_and_kind_as_the_core_does() {
    let s = seeded();
    let j = telha(&s.path, &["jobs", "stats", "--json"]).json();
    let core = core_view(&s.path).stats().unwrap();
    assert_eq!(j["total"]["dead"], core.total.dead);
    assert_eq!(j["total"]["total"], s.total as u64);
    for (kind, c) in &core.by_kind {
        for st in State::ALL {
            assert_eq!(j["by_kind"][kind][st.as_str()], c.get(st), "{kind} {st}");
        }
    }
    assert_eq!(j["by_kind"]["ingest:pdf"]["dead"], 3);
    let text = telha(&s.path, &["jobs", "stats"]).ok().to_string();
    assert!(text.starts_with("KIND "), "{text}");
    let total = text
        .lines()
        .find(|l| l.starts_with("(all kinds)"))
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>();
    assert_eq!(
        total[..10],
        ["(all", "kinds)", "4", "1", "1", "2", "6", "0", "0", "14"],
        "{text}"
    );
    // Then the backlog (pending + failed) and the oldest due job's age
    // (real time here: only its presence is checked).
    assert_eq!(total[10], "5", "{text}");
    assert_ne!(total[11], "-", "{text}");
    for (kind, c) in &core.by_kind {
        let backlog = c.pending + c.failed;
        if backlog == 0 {
            assert!(j["ready"].get(kind).is_none(), "{kind}");
        } else {
            assert_eq!(j["ready"][kind]["backlog"], backlog, "{kind}");
            assert!(j["ready"][kind]["oldest_ready_ms"].is_u64(), "{kind}");
        }
    }
    // Per scope as well: in the JSON, and a table of its own in the text.
    assert!(core.by_scope.len() > 1, "the seed uses several scopes");
    for (scope, c) in &core.by_scope {
        let sc = scope.to_string();
        for st in State::ALL {
            assert_eq!(j["by_scope"][&sc][st.as_str()], c.get(st), "{sc} {st}");
        }
        let row = text
            .lines()
            .find(|l| l.starts_with(&sc))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(row.ends_with(&c.total().to_string()), "{row}");
    }
    assert!(text.contains("\nSCOPE "), "{text}");
}

#[test]
fn stats_prints_the_top_scopes_and_all_of_them_with_scopes_all() {
    let dir = tempfile::tempdir().unwrap();
    // 30 scopes: scope i holds i + 1 pending jobs, so the top is known.
    let scopes: Vec<telha_jobs::Scope> = (0..30u8)
        .map(|i| telha_jobs::Scope::from_bytes([i + 1; 16]))
        .collect();
    {
        let q = Queue::open(dir.path(), config()).unwrap();
        let jobs = scopes
            .iter()
            .enumerate()
            .flat_map(|(i, sc)| std::iter::repeat_n(*sc, i + 1))
            .map(|sc| telha_jobs::NewJob {
                options: telha_jobs::EnqueueOptions {
                    scope: Some(sc),
                    ..Default::default()
                },
                ..telha_jobs::NewJob::new("embed", vec![])
            })
            .collect();
        q.enqueue_many(jobs).unwrap();
        q.close();
    }
    let text = telha(dir.path(), &["jobs", "stats"]).ok().to_string();
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| scopes.iter().any(|s| l.starts_with(&s.to_string())))
        .collect();
    assert_eq!(rows.len(), 20, "the top 20 by default: {text}");
    assert!(
        rows[0].starts_with(&scopes[29].to_string()),
        "most pending first: {text}"
    );
    assert!(text.contains("--scopes all"), "{text}");
    let all = telha(dir.path(), &["jobs", "stats", "--scopes", "all", "--json"]).json();
    let listed: Vec<&String> = all["by_scope"].as_object().unwrap().keys().collect();
    assert_eq!(listed.len(), 30);
    assert_eq!(*listed[0], scopes[29].to_string());
    assert_eq!(all["scopes_next"], serde_json::Value::Null);
    let by_name = telha(
        dir.path(),
        &[
            "jobs",
            "stats",
            "--scopes",
            "5",
            "--scope-order",
            "name",
            "--json",
        ],
    )
    .json();
    let first: Vec<String> = by_name["by_scope"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    let want: Vec<String> = scopes[..5].iter().map(ToString::to_string).collect();
    assert_eq!(first, want);
    assert!(by_name["scopes_next"].is_string());
    telha(dir.path(), &["jobs", "stats", "--scopes", "many"]).fails(2, "--scopes");
}

#[test]
fn enqueue_writes_a_job_the_core_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("new-store");
    let payload = r#"{"doc":"s3://b/k.pdf","pages":3,"ratio":0.5,"big":18446744073709551615}"#;
    let before = SystemClock.now_ms();
    let j = telha(
        &db,
        &[
            "--json",
            "jobs",
            "enqueue",
            "ingest:pdf",
            "--payload-json",
            payload,
            "--scope",
            SCOPE_B,
            "--priority",
            "7",
            "--delay",
            "1h",
            "--idempotency-key",
            "doc-k",
            "--max-attempts",
            "2",
        ],
    )
    .json();
    assert_eq!(j["created"], true);
    let id: JobId = j["id"].as_str().unwrap().parse().unwrap();

    let again = telha(
        &db,
        &[
            "jobs",
            "enqueue",
            "ingest:pdf",
            "--scope",
            SCOPE_B,
            "--idempotency-key",
            "doc-k",
        ],
    );
    assert!(again.ok().starts_with(&format!("exists {id}")), "{again:?}");

    let info = core_view(&db).get(&id).unwrap().unwrap();
    assert_eq!(info.kind, "ingest:pdf");
    assert_eq!(info.scope, scope(SCOPE_B));
    assert_eq!(
        (info.priority, info.max_attempts, info.state),
        (7, 2, State::Pending)
    );
    assert!(
        info.state_ts >= before + 3_600_000,
        "the delay was not applied"
    );
    let v = telha_jobs::payload::decode(&info.payload).expect("the payload convention");
    assert_eq!(v["doc"].as_str(), Some("s3://b/k.pdf"));
    assert_eq!(v["pages"].as_i64(), Some(3));
    assert_eq!(v["ratio"].as_f64(), Some(0.5));
    assert_eq!(v["big"].as_u64(), Some(u64::MAX));

    let plain = telha(&db, &["jobs", "enqueue", "embed"]);
    assert!(plain.ok().starts_with("enqueued "), "{plain:?}");
    assert_eq!(core_view(&db).stats().unwrap().total.pending, 2);
}

#[test]
fn the_store_is_db_else_telha_db_else_telha_data_in_the_working_directory() {
    let s = seeded();
    let other = tempfile::tempdir().unwrap();

    // TELHA_DB when there is no --db.
    let mut c = telha_cmd();
    c.env("TELHA_DB", &s.path).args(["--json", "jobs", "stats"]);
    assert_eq!(run_cmd(c).json()["total"]["total"], s.total as u64);

    // --db wins over TELHA_DB.
    let mut c = telha_cmd();
    c.env("TELHA_DB", other.path().join("nothing-here"))
        .arg("--db")
        .arg(&s.path)
        .args(["jobs", "stats", "--json"]);
    assert_eq!(run_cmd(c).json()["total"]["total"], s.total as u64);

    // Neither: ./telha-data.
    let mut c = telha_cmd();
    c.current_dir(other.path())
        .args(["jobs", "enqueue", "embed"]);
    run_cmd(c).ok();
    assert!(other.path().join("telha-data").join("CURRENT").is_file());
    let mut c = telha_cmd();
    c.current_dir(other.path()).args(["jobs", "ls", "--json"]);
    assert_eq!(run_cmd(c).json()["jobs"].as_array().unwrap().len(), 1);
}

#[test]
fn reads_show_max_attempts_under_the_services_config() {
    let s = seeded();
    let max = |env: Option<&str>| {
        let mut c = telha_cmd();
        if let Some(v) = env {
            c.env("TELHA_JOBS_MAX_ATTEMPTS", v);
        }
        c.arg("--db")
            .arg(&s.path)
            .args(["--json", "jobs", "ls", "--state", "pending"]);
        let r = run_cmd(c);
        let jobs = r.json()["jobs"].clone();
        let v: Vec<u64> = jobs
            .as_array()
            .unwrap()
            .iter()
            .map(|j| j["max_attempts"].as_u64().unwrap())
            .collect();
        (v, r.stderr)
    };
    assert_eq!(max(None).0, [5, 5, 5, 5]);
    assert_eq!(max(Some("3")).0, [3, 3, 3, 3]);
    // A configuration that does not load is reported, not fatal, for reads.
    let (v, stderr) = max(Some("many"));
    assert_eq!(v, [5, 5, 5, 5]);
    assert!(stderr.contains("TELHA_JOBS_MAX_ATTEMPTS"), "{stderr}");
    // Per-job ceilings win over the config (the seeded dead jobs say 5).
    let mut c = telha_cmd();
    c.env("TELHA_JOBS_MAX_ATTEMPTS", "3")
        .arg("--db")
        .arg(&s.path)
        .args(["--json", "jobs", "show", &s.dead_pdf_a[0].to_string()]);
    assert_eq!(run_cmd(c).json()["max_attempts"], 5);
}

/// Runs `telha --db <db> <args>` on a pseudo-terminal (util-linux `script`,
/// Debian-essential; `make deps` installs it if missing), typing `answer`
/// into it.
fn on_a_terminal(db: &std::path::Path, args: &str, answer: &str) -> Run {
    use std::io::Write;
    let cmd = format!(
        "'{}' --db '{}' {args}",
        env!("CARGO_BIN_EXE_telha"),
        db.display()
    );
    let mut child = std::process::Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .env_remove("TELHA_DB")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("util-linux `script` runs the CLI on a terminal");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(answer.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code().unwrap(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn bulk_retry_on_a_terminal_asks_and_moves_only_on_yes() {
    let s = seeded();
    let args = "jobs retry --state dead --kind embed";
    let no = on_a_terminal(&s.path, args, "n\n");
    assert!(
        no.stdout
            .contains("retry 2 dead job(s) of kind embed? [y/N]"),
        "{no:?}"
    );
    assert!(no.stdout.contains("nothing changed"), "{no:?}");
    assert_eq!(ids_in(&s.path, State::Dead), s.dead());

    let yes = on_a_terminal(&s.path, args, "y\n");
    assert_eq!(yes.code, 0, "{yes:?}");
    assert!(
        yes.stdout.contains("retried 2 dead job(s) of kind embed"),
        "{yes:?}"
    );
    let mut left = [&s.dead_pdf_a[..], &s.dead_html_b].concat();
    left.sort();
    assert_eq!(ids_in(&s.path, State::Dead), left);
}
