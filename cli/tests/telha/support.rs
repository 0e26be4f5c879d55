//! Running the binary, and a seeded store with a known population.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use telha_jobs::{
    Clock, Config, EnqueueOptions, JobId, LeaseOptions, ManualClock, Queue, Scope, State,
    SystemClock,
};

/// What one run of `telha` did.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Asserts exit 0 and returns stdout.
    #[track_caller]
    pub fn ok(&self) -> &str {
        assert_eq!(self.code, 0, "telha failed: {self:#?}");
        &self.stdout
    }
    /// Asserts exit 0 and parses stdout as one JSON document.
    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(self.ok())
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:#?}"))
    }
    /// Asserts the exit code and that stderr mentions `needle`.
    #[track_caller]
    pub fn fails(&self, code: i32, needle: &str) {
        assert_eq!(self.code, code, "wrong exit code: {self:#?}");
        assert!(
            self.stderr.contains(needle),
            "stderr lacks {needle:?}: {self:#?}"
        );
        assert!(
            self.stdout.is_empty(),
            "a failure printed on stdout: {self:#?}"
        );
    }
}

/// The binary with a clean environment: no store or config variables leak
/// in from the machine running the tests.
pub fn telha_cmd() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_telha"));
    c.env_remove("TELHA_DB").env_remove("TELHA_JOBS_CONFIG");
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("TELHA_JOBS_") {
            c.env_remove(k);
        }
    }
    c.stdin(Stdio::null());
    c
}

pub fn run_cmd(mut c: Command) -> Run {
    let out = c.output().expect("run telha");
    Run {
        code: out.status.code().expect("telha exited by a signal"),
        stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(out.stderr).expect("stderr is UTF-8"),
    }
}

/// `telha --db <db> <args…>`.
pub fn telha(db: &Path, args: &[&str]) -> Run {
    let mut c = telha_cmd();
    c.arg("--db").arg(db).args(args);
    run_cmd(c)
}

pub fn config() -> Config {
    Config {
        reaper_interval: Duration::ZERO,
        ..Config::default()
    }
}

pub const SCOPE_A: &str = "0b7e6a52-3c1e-4f57-9d5e-2a9a4f0c1a01";
pub const SCOPE_B: &str = "5d1f0c2e-8a4b-4b6e-b1c3-7e2f9a6d4b02";

pub fn scope(s: &str) -> Scope {
    s.parse().unwrap()
}

/// A temp store with a known population, closed again before the tests
/// run the binary (write commands need the store to themselves).
///
/// - dead: 3 `ingest:pdf` and 2 `embed` in scope A, 1 `ingest:html` in B
/// - failed: 1 `embed` in A; completed: 2 `embed` in A; leased: 1 `cascade`
/// - pending: 2 `embed` in A, 1 `ingest:pdf` in B, 1 `system:vacuum` (system scope)
pub struct Seeded {
    pub _dir: tempfile::TempDir,
    pub path: PathBuf,
    pub dead_pdf_a: Vec<JobId>,
    pub dead_embed_a: Vec<JobId>,
    pub dead_html_b: Vec<JobId>,
    pub failed: JobId,
    pub pending: Vec<JobId>,
    pub total: usize,
}

impl Seeded {
    pub fn dead(&self) -> Vec<JobId> {
        let mut v = [&self.dead_pdf_a[..], &self.dead_embed_a, &self.dead_html_b].concat();
        v.sort();
        v
    }
}

/// The payload the dead `ingest:pdf` jobs carry (the convention: version
/// byte + msgpack), as JSON.
pub const PDF_PAYLOAD: &str = r#"{"doc":"s3://bucket/a.pdf","pages":12,"tags":["x",null]}"#;

fn json_payload(text: &str) -> Vec<u8> {
    use telha_jobs::payload::Value;
    fn conv(v: &serde_json::Value) -> Value {
        match v {
            serde_json::Value::Null => Value::Nil,
            serde_json::Value::Bool(b) => Value::Boolean(*b),
            serde_json::Value::Number(n) => Value::from(n.as_i64().unwrap()),
            serde_json::Value::String(s) => Value::from(s.as_str()),
            serde_json::Value::Array(a) => Value::Array(a.iter().map(conv).collect()),
            serde_json::Value::Object(o) => Value::Map(
                o.iter()
                    .map(|(k, v)| (Value::from(k.as_str()), conv(v)))
                    .collect(),
            ),
        }
    }
    telha_jobs::payload::encode(&conv(&serde_json::from_str(text).unwrap())).unwrap()
}

/// Enqueue `jobs` (kind, scope, payload) with `max_attempts`, lease exactly
/// them (nothing else is ready), and hand each lease to `settle`.
fn through_a_lease(
    q: &Queue,
    jobs: &[(&str, Scope, Vec<u8>)],
    max_attempts: u32,
    settle: impl Fn(&Queue, &telha_jobs::Job),
) -> Vec<JobId> {
    let mut ids = Vec::new();
    for (kind, s, payload) in jobs {
        let opts = EnqueueOptions::default()
            .scope(*s)
            .max_attempts(max_attempts);
        ids.push(q.enqueue(kind, payload, opts).unwrap().id);
    }
    let leased = q
        .lease_many("seed-worker", jobs.len(), &LeaseOptions::default())
        .unwrap();
    let mut got: Vec<JobId> = leased.iter().map(|j| j.id).collect();
    got.sort();
    let mut want = ids.clone();
    want.sort();
    assert_eq!(got, want, "the seed leased other jobs than it enqueued");
    for j in &leased {
        settle(q, j);
    }
    ids
}

pub fn seeded() -> Seeded {
    seeded_at(&SystemClock)
}

/// `seeded()`, with every transition stamped by `clock`'s time.
pub fn seeded_at(clock: &dyn Clock) -> Seeded {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store");
    let q = Queue::open_with_clock(&path, config(), Arc::new(ManualClock::new(clock.now_ms())))
        .unwrap();
    let (a, b) = (scope(SCOPE_A), scope(SCOPE_B));
    let kill = |q: &Queue, j: &telha_jobs::Job| {
        q.fail(&j.token(), "cannot parse PDF header", false)
            .unwrap()
    };
    let pdf = json_payload(PDF_PAYLOAD);
    let dead_pdf_a = through_a_lease(&q, &vec![("ingest:pdf", a, pdf); 3], 5, kill);
    let dead_embed_a = through_a_lease(&q, &vec![("embed", a, b"doc-7".to_vec()); 2], 5, kill);
    let dead_html_b = through_a_lease(&q, &[("ingest:html", b, vec![0xff, 0x00])], 5, kill);
    let failed = through_a_lease(&q, &[("embed", a, vec![])], 3, |q, j| {
        q.fail(&j.token(), "model busy", true).unwrap()
    })[0];
    through_a_lease(&q, &vec![("embed", a, vec![]); 2], 5, |q, j| {
        q.complete(&j.token(), Some(b"ok")).unwrap()
    });
    through_a_lease(&q, &[("cascade", a, vec![])], 5, |_, _| {});
    let mut pending = Vec::new();
    for (kind, s) in [
        ("embed", a),
        ("embed", a),
        ("ingest:pdf", b),
        ("system:vacuum", Scope::SYSTEM),
    ] {
        let opts = EnqueueOptions::default().scope(s);
        pending.push(q.enqueue(kind, b"", opts).unwrap().id);
    }
    let stats = q.stats().unwrap();
    assert_eq!(
        (
            stats.total.dead,
            stats.total.failed,
            stats.total.completed,
            stats.total.leased,
            stats.total.pending
        ),
        (6, 1, 2, 1, 4)
    );
    q.close();
    drop(q);
    Seeded {
        _dir: dir,
        path,
        dead_pdf_a,
        dead_embed_a,
        dead_html_b,
        failed,
        pending,
        total: 14,
    }
}

/// Reopen the store through the core (read-only) to check what the binary did.
pub fn core_view(path: &Path) -> Queue {
    Queue::open_read_only(path).unwrap()
}

/// Ids of the jobs in `state`, sorted, through the core.
pub fn ids_in(path: &Path, state: State) -> Vec<JobId> {
    let q = core_view(path);
    let page = q
        .list(&telha_jobs::ListQuery {
            state: Some(state),
            limit: 10_000,
            ..Default::default()
        })
        .unwrap();
    assert!(page.next.is_none());
    let mut v: Vec<JobId> = page.jobs.iter().map(|j| j.id).collect();
    v.sort();
    v
}

/// The ids in a `--json` list of jobs, sorted.
pub fn json_ids(jobs: &serde_json::Value) -> Vec<JobId> {
    let mut v: Vec<JobId> = jobs
        .as_array()
        .expect("a JSON array of jobs")
        .iter()
        .map(|j| j["id"].as_str().unwrap().parse().unwrap())
        .collect();
    v.sort();
    v
}
