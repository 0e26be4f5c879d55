//! The Rust scenario runner (`tests/scenarios/*.json`, format in that
//! directory's README), shared by `core/tests/scenarios.rs` (an embedded
//! `Queue`) and `server/tests/scenarios_remote.rs` (the same cases through a
//! gRPC server and `RemoteQueue`): each passes [`run_all`] the function that
//! opens a store, and that is the only difference between them.
//!
//! Every case file is one case, each printed as it runs, then one
//! `N passed, N failed` line. The run fails when a case fails or when fewer
//! cases ran than there are files.
//!
//! Started with `TELHA_SCENARIO_HOLD=<store>` the test binary is instead the
//! "other process" of the `hold_elsewhere` step: it opens the store, prints
//! [`HOLDER_READY`] and keeps the store until its stdin closes.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

mod args;
mod control;
mod events;
mod fanin;
mod find;
mod flow;
mod schedules;
mod stats;

use args::{check, config_of, ms, put_bytes, strs, uint};
use serde_json::{json, Value as Json};
use telha_jobs::{
    Config, Error, Job, JobId, JobInfo, JobStore, LeaseOptions, LeaseToken, ListQuery, Queue, Scope,
};

const HOLDER_ENV: &str = "TELHA_SCENARIO_HOLD";
const HOLDER_READY: &str = "telha-scenario-holder ready";
/// Fewer case files than this means the directory was not found whole.
const MIN_CASES: usize = 30;

/// Opens (or reopens) the store of a case: an embedded queue, or a client
/// of one.
pub type OpenFn = fn(&Path, &Config) -> Result<Arc<dyn JobStore>, Error>;

static OPEN: std::sync::OnceLock<OpenFn> = std::sync::OnceLock::new();

fn open_store(path: &Path, config: &Config) -> Result<Arc<dyn JobStore>, Error> {
    (OPEN.get().expect("run_all sets the opener"))(path, config)
}

/// Run every case with `open` (or be the holder process), print the
/// summary, and exit non-zero when anything failed. `label` names the run.
pub fn run_all(label: &str, open: OpenFn) {
    OPEN.set(open).ok();
    if let Some(path) = std::env::var_os(HOLDER_ENV) {
        hold(Path::new(&path));
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let (mut passed, mut failed) = (0usize, 0usize);
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        match run_file(f) {
            Ok(()) => {
                passed += 1;
                println!("ok     {name}");
            }
            Err(e) => {
                failed += 1;
                println!("FAILED {name}: {e}");
            }
        }
    }
    let ran = passed + failed;
    println!(
        "{label}: ran {ran} of {} case files in {}",
        files.len(),
        dir.display()
    );
    if files.len() < MIN_CASES {
        println!("expected at least {MIN_CASES} case files");
        failed += 1;
    }
    println!("{passed} passed, {failed} failed");
    if failed > 0 || ran < files.len() {
        std::process::exit(1);
    }
}

/// The holder process: open the store read-write, say so, wait for EOF.
fn hold(path: &Path) {
    let cfg = Config {
        reaper_interval: Duration::ZERO,
        ..Config::default()
    };
    match Queue::open(path, cfg) {
        Ok(q) => {
            println!("{HOLDER_READY}");
            std::io::stdout().flush().ok();
            let mut sink = Vec::new();
            std::io::stdin().read_to_end(&mut sink).ok();
            q.close();
        }
        Err(e) => {
            println!("holder could not open {}: {e}", path.display());
            std::process::exit(1);
        }
    }
}

pub(crate) type R<T> = std::result::Result<T, String>;

fn run_file(path: &Path) -> R<()> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let case: Json = serde_json::from_str(&text).map_err(|e| format!("bad JSON: {e}"))?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut run = Run {
        path: dir.path().join("store"),
        config: config_of(case.get("config"))?,
        store: None,
        ids: Vec::new(),
        leases: HashMap::new(),
        holder: None,
        saved: HashMap::new(),
        subs: HashMap::new(),
        last_seq: HashMap::new(),
        cursors: HashMap::new(),
    };
    run.store = Some(open_store(&run.path, &run.config).map_err(|e| format!("open: {e}"))?);
    let steps = case
        .get("steps")
        .and_then(Json::as_array)
        .ok_or("the case has no steps")?;
    let out = steps.iter().enumerate().try_for_each(|(i, s)| {
        let op = s.get("op").and_then(Json::as_str).unwrap_or("?");
        run.step(s)
            .map_err(|e| format!("step {} ({op}): {e}", i + 1))
    });
    if let Some(s) = run.store.take() {
        s.close();
    }
    run.stop_holder();
    out
}

struct Run {
    path: PathBuf,
    config: Config,
    store: Option<Arc<dyn JobStore>>,
    /// Job names in the order they were bound: an id answers with its
    /// first name.
    ids: Vec<(String, JobId)>,
    leases: HashMap<String, LeaseToken>,
    holder: Option<(Child, ChildStdin)>,
    /// Store files as they were before `write_store_file`.
    saved: HashMap<String, Vec<u8>>,
    /// Subscriptions by name (`subscribe … as`), and the last `seq` each
    /// delivered.
    subs: HashMap<String, telha_jobs::Subscription>,
    last_seq: HashMap<String, u64>,
    /// `stats` page cursors by name (`stats … as`).
    cursors: HashMap<String, String>,
}

impl Run {
    pub(crate) fn q(&self) -> R<&Arc<dyn JobStore>> {
        self.store
            .as_ref()
            .ok_or_else(|| "no open store (a reopen failed)".to_string())
    }

    fn step(&mut self, s: &Json) -> R<()> {
        let op = s.get("op").and_then(Json::as_str).ok_or("no op")?;
        let expect = s.get("expect");
        let observed: Result<Json, Error> = match op {
            "enqueue" => self.enqueue(s),
            "enqueue_many" => self.enqueue_many(s),
            "enqueue_group" => self.enqueue_group(s),
            "results_of_children" => self.results_of_children(s),
            "lease" => self.lease(s),
            "extend" => self.extend(s),
            "complete" => self.complete(s),
            "complete_many" => self.complete_many(s),
            "set_limit" => self.set_limit(s),
            "remove_limit" => self.remove_limit(s),
            "limits" => self.limits(),
            "fail" => self.fail(s),
            "fail_many" => self.fail_many(s),
            "release_many" => self.release_many(s),
            "snooze" => self.snooze(s),
            "cancel" => self.cancel(s),
            "cancel_many" => self.cancel_many(s),
            "purge" => self.purge(s),
            "delete" => self.delete(s),
            "promote" => self.promote(s),
            "reschedule" => self.reschedule(s),
            "set_priority" => self.set_priority(s),
            "pause" => self.pause(s, true),
            "resume" => self.pause(s, false),
            "paused" => self.paused(),
            "schedule_put" => self.schedule_put(s),
            "schedule_get" | "schedule_list" | "schedule_delete" | "schedule_pause"
            | "schedule_resume" | "run_schedules" => self.schedule_op(op, s),
            "schedule_next" => self.schedule_next(s),
            "release" => {
                let t = self.token(s.get("lease"))?;
                self.q()?.release(&t).map(|()| Json::Null)
            }
            "retry" => match self.job_id(s) {
                Ok(id) => self.q()?.retry(&id).map(|()| Json::Null),
                Err(e) => Err(e),
            },
            "get" => match self.job_id(s) {
                Ok(id) => self
                    .q()?
                    .get(&id)
                    .map(|i| i.map_or(Json::Null, |i| self.info_json(&i))),
                Err(e) => Err(e),
            },
            "list" => self.list(s),
            "count_tag" => self.count_tag(s),
            "find" => self.find(s),
            "wait" => self.wait(s),
            "subscribe" => self.subscribe(s),
            "events" => self.events(s),
            "reap" => self.q()?.reap().map(|r| {
                json!({"expired": r.expired, "dead": r.dead, "pruned": r.pruned,
                                "expired_unstarted": r.expired_unstarted})
            }),
            "stats" => self.stats(s),
            "sleep_ms" => {
                std::thread::sleep(ms(s.get("ms").unwrap_or(&Json::Null))?);
                Ok(Json::Null)
            }
            "close" => {
                self.q()?.close();
                Ok(Json::Null)
            }
            "reopen" => match open_store(&self.path, &self.config) {
                Ok(q) => {
                    self.store = Some(q);
                    Ok(Json::Null)
                }
                Err(e) => Err(e),
            },
            "backup" => {
                let dir = self.sibling(s)?;
                self.q()?.backup(&dir).map(|_| Json::Null)
            }
            "open_backup" => {
                // The case's store is now the backup (a later reopen too).
                self.path = self.sibling(s)?;
                open_store(&self.path, &self.config).map(|q| {
                    self.store = Some(q);
                    Json::Null
                })
            }
            "open_at_file" => {
                // A store path that is a regular file: the open's I/O error.
                let f = self.path.with_file_name("not-a-directory");
                std::fs::write(&f, b"a file, not a store").map_err(|e| e.to_string())?;
                open_store(&f, &self.config).map(|q| {
                    q.close();
                    Json::Null
                })
            }
            "write_store_file" => {
                let (f, name) = self.store_file(s)?;
                let old = std::fs::read(&f).map_err(|e| format!("{}: {e}", f.display()))?;
                self.saved.entry(name).or_insert(old);
                let text = s.get("text").and_then(Json::as_str).unwrap_or("");
                std::fs::write(&f, text).map_err(|e| e.to_string())?;
                Ok(Json::Null)
            }
            "restore_store_file" => {
                let (f, name) = self.store_file(s)?;
                let old = self.saved.remove(&name).ok_or("nothing saved to restore")?;
                std::fs::write(&f, old).map_err(|e| e.to_string())?;
                Ok(Json::Null)
            }
            "hold_elsewhere" => {
                self.start_holder()?;
                Ok(Json::Null)
            }
            "release_elsewhere" => {
                self.stop_holder();
                Ok(Json::Null)
            }
            other => return Err(format!("unknown op {other:?}")),
        };
        check(expect, observed)
    }

    /// The directory beside the store named by the step's `dir` (a plain
    /// name): where `backup` writes and `open_backup` opens.
    fn sibling(&self, s: &Json) -> R<PathBuf> {
        let name = s.get("dir").and_then(Json::as_str).unwrap_or("");
        if name.is_empty() || name.contains('/') || name == "store" {
            return Err(format!("bad backup dir name {name:?}"));
        }
        Ok(self.path.with_file_name(name))
    }

    /// The store's file named by the step's `file` (a plain name).
    fn store_file(&self, s: &Json) -> R<(PathBuf, String)> {
        let name = s.get("file").and_then(Json::as_str).unwrap_or("");
        if name.is_empty() || name.contains('/') {
            return Err(format!("bad store file name {name:?}"));
        }
        Ok((self.path.join(name), name.to_string()))
    }

    fn enqueue(&mut self, s: &Json) -> Result<Json, Error> {
        let j = self.new_job(s)?;
        let e = self
            .q()
            .map_err(Error::Storage)?
            .enqueue(&j.kind, &j.payload, j.options)?;
        self.bind(s, e.id);
        Ok(json!({"same_as": self.name_of(&e.id)}))
    }

    fn enqueue_many(&mut self, s: &Json) -> Result<Json, Error> {
        let items = s
            .get("jobs")
            .and_then(Json::as_array)
            .cloned()
            .unwrap_or_default();
        let jobs = items
            .iter()
            .map(|j| self.new_job(j))
            .collect::<Result<Vec<_>, Error>>()?;
        let done = self.q().map_err(Error::Storage)?.enqueue_many(jobs)?;
        for (j, e) in items.iter().zip(&done) {
            self.bind(j, e.id);
        }
        Ok(Json::Null)
    }

    fn lease(&mut self, s: &Json) -> Result<Json, Error> {
        let mut o = LeaseOptions::default();
        for k in strs(s.get("kinds")) {
            o = o.kind(&k)?;
        }
        for sc in strs(s.get("scopes")) {
            o = o.scope(sc.parse::<Scope>()?);
        }
        let worker = s.get("worker").and_then(Json::as_str).unwrap_or("w1");
        let job = self.q().map_err(Error::Storage)?.lease_next(worker, &o)?;
        Ok(match job {
            None => Json::Null,
            Some(j) => {
                if let Some(name) = s.get("as").and_then(Json::as_str) {
                    self.leases.insert(name.to_string(), j.token());
                }
                self.job_json(&j)
            }
        })
    }

    fn list(&self, s: &Json) -> Result<Json, Error> {
        let q = ListQuery {
            state: s
                .get("state")
                .and_then(Json::as_str)
                .map(str::parse)
                .transpose()?,
            scope: s
                .get("scope")
                .and_then(Json::as_str)
                .map(str::parse)
                .transpose()?,
            kind: s
                .get("kind")
                .and_then(Json::as_str)
                .map(str::parse)
                .transpose()?,
            schedule: s.get("schedule").and_then(Json::as_str).map(str::to_string),
            parent: match s.get("parent") {
                Some(_) => Some(self.job_id(&json!({ "job": s["parent"] }))?),
                None => None,
            },
            tag: s.get("tag").and_then(Json::as_str).map(str::to_string),
            ..ListQuery::default()
        };
        let page = self.q().map_err(Error::Storage)?.list(&q)?;
        let jobs: Vec<Json> = page
            .jobs
            .iter()
            .map(|j| json!(self.name_of(&j.id)))
            .collect();
        Ok(json!({ "jobs": jobs, "count": page.jobs.len() }))
    }

    fn count_tag(&self, s: &Json) -> Result<Json, Error> {
        let tag = s.get("tag").and_then(Json::as_str).unwrap_or_default();
        let scope = s
            .get("scope")
            .and_then(Json::as_str)
            .map(str::parse)
            .transpose()?;
        let c = self.q().map_err(Error::Storage)?.count_tag(tag, scope)?;
        let mut o = json!({ "total": c.total() });
        for st in telha_jobs::State::ALL {
            o[st.as_str()] = json!(c.get(st));
        }
        Ok(o)
    }

    fn bind(&mut self, s: &Json, id: JobId) {
        if let Some(name) = s.get("as").and_then(Json::as_str) {
            match self.ids.iter_mut().find(|(k, _)| k == name) {
                Some(entry) => entry.1 = id,
                None => self.ids.push((name.to_string(), id)),
            }
        }
    }

    /// A job's case name (`as`), else its id text.
    pub(crate) fn name_of(&self, id: &JobId) -> String {
        self.ids
            .iter()
            .find(|(_, v)| v == id)
            .map(|(k, _)| k.clone())
            .unwrap_or_else(|| id.to_string())
    }

    /// `job` (a case name) or `job_id` (literal text, parsed as the API does).
    pub(crate) fn job_id(&self, s: &Json) -> Result<JobId, Error> {
        if let Some(name) = s.get("job").and_then(Json::as_str) {
            return self
                .ids
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, id)| *id)
                .ok_or_else(|| Error::Storage(format!("the case names no job {name:?}")));
        }
        s.get("job_id").and_then(Json::as_str).unwrap_or("").parse()
    }

    /// A lease: a name bound by `lease … as`, or `{job | job_id, generation}`.
    pub(crate) fn token(&self, l: Option<&Json>) -> R<LeaseToken> {
        match l {
            Some(Json::String(name)) => self
                .leases
                .get(name)
                .copied()
                .ok_or_else(|| format!("the case names no lease {name:?}")),
            Some(o @ Json::Object(_)) => Ok(LeaseToken {
                id: self.job_id(o).map_err(|e| e.to_string())?,
                generation: uint(o.get("generation").unwrap_or(&Json::Null))?,
            }),
            other => Err(format!("bad lease reference {other:?}")),
        }
    }

    fn job_json(&self, j: &Job) -> Json {
        let mut o = json!({
            "job": self.name_of(&j.id), "kind": j.kind, "scope": j.scope.to_string(),
            "attempts": j.attempts, "max_attempts": j.max_attempts,
            "generation": j.generation, "priority": j.priority, "worker_id": j.worker_id,
            "timeout_ms": j.timeout_ms,
            "schedule": j.schedule.as_ref().map(|r| r.name.clone()),
            "schedule_missed": j.schedule.as_ref().map(|r| r.missed),
            "parent": j.parent.map(|p| self.name_of(&p)),
            "tags": j.tags, "metadata": j.metadata, "key": j.key,
        });
        put_bytes(&mut o, "payload", Some(&j.payload));
        o
    }

    pub(crate) fn info_json(&self, i: &JobInfo) -> Json {
        let mut o = json!({
            "job": self.name_of(&i.id), "kind": i.kind, "scope": i.scope.to_string(),
            "state": i.state.as_str(), "priority": i.priority, "attempts": i.attempts,
            "max_attempts": i.max_attempts, "generation": i.generation,
            "worker_id": i.worker_id, "last_error": i.last_error,
            "idempotency_key": i.idempotency_key,
            "events": i.events.iter().map(|e| e.transition.clone()).collect::<Vec<_>>(),
            "cancel_requested": i.cancel_requested, "snoozes": i.snoozes,
            "paused": i.paused, "expires": i.expires_at.is_some(),
            "schedule": i.schedule.as_ref().map(|r| r.name.clone()),
            "schedule_missed": i.schedule.as_ref().map(|r| r.missed),
            "parent": i.parent.map(|p| self.name_of(&p)),
            "tags": i.tags, "metadata": i.metadata, "key": i.key,
            "fan_in": fanin::fan_in_json(i.fan_in.as_ref()),
        });
        put_bytes(&mut o, "payload", Some(&i.payload));
        put_bytes(&mut o, "result", i.result.as_deref());
        put_bytes(&mut o, "progress", i.progress.as_deref());
        o
    }

    fn start_holder(&mut self) -> R<()> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut child = Command::new(exe)
            .env(HOLDER_ENV, &self.path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start the holder process: {e}"))?;
        let stdin = child.stdin.take().ok_or("holder stdin")?;
        let mut line = String::new();
        BufReader::new(child.stdout.take().ok_or("holder stdout")?)
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        if line.trim() != HOLDER_READY {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("the holder process did not start: {line:?}"));
        }
        self.holder = Some((child, stdin));
        Ok(())
    }

    /// Close the holder's stdin (it closes the store and exits), then reap it.
    fn stop_holder(&mut self) {
        if let Some((mut child, stdin)) = self.holder.take() {
            drop(stdin);
            let _ = child.wait();
        }
    }
}
