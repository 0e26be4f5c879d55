//! The checks of the steering and window crash test (`steer.rs`): the
//! owner's logs of every round so far against the reopened store.
//!
//! Every operation on a key or a job comes from one thread, so a job's or
//! a key's lines in log order are its history. An intent without an
//! answer is the last line of its thread in that round (the kill came
//! during the call): it may or may not have been written.

use std::collections::{BTreeMap, HashMap};

use telha_jobs::{JobInfo, ListQuery, Queue, State, UniqueStates};

use crate::log;
use crate::steer::{key_index, key_window};

/// One enqueue of a key: its intent, and its answer if it came.
#[derive(Debug, Clone)]
struct KeyEv {
    b_ms: u64,
    priority: u8,
    run_at: Option<u64>,
    /// (job id, created, answered at ms)
    answer: Option<(String, bool, u64)>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Promote,
    Reschedule(u64),
    Priority(u8),
    /// Lease, complete, fail, release: the run time is the engine's to pick.
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Outcome {
    Ok(u64),
    Refused,
    Unknown,
}

#[derive(Debug, Default)]
struct JobHist {
    /// The acknowledged enqueue that created it: (priority, run time range).
    created: Option<(u8, (u64, u64))>,
    ops: Vec<(Op, Outcome)>,
    acked_leases: u64,
}

/// Everything the owners' logs said, over every round so far.
#[derive(Default)]
pub struct History {
    keys: BTreeMap<String, Vec<KeyEv>>,
    jobs: HashMap<String, JobHist>,
    counts: BTreeMap<&'static str, u64>,
    torn: usize,
}

fn ms(us: u64) -> u64 {
    us / 1000
}

impl History {
    /// Add one thread's log of one round.
    pub fn add_thread_log(&mut self, _round: u32, _thread: usize, text: &str) {
        let (records, torn) = log::parse(text);
        self.torn += torn;
        let mut pending_q: Option<(String, KeyEv)> = None;
        let mut pending_i: Option<(String, Op)> = None;
        for r in records {
            match r.tag {
                'Q' => {
                    self.flush_q(pending_q.take());
                    let mut f = r.extra.split(' ');
                    let priority = f.next().and_then(|p| p.parse().ok()).unwrap_or(0);
                    let run_at = f.next().and_then(|p| p.parse().ok());
                    let ev = KeyEv {
                        b_ms: ms(r.t_us),
                        priority,
                        run_at,
                        answer: None,
                    };
                    pending_q = Some((r.id, ev));
                }
                'E' => {
                    if let Some((key, mut ev)) = pending_q.take() {
                        let created = r.extra == "new";
                        *self.count(if created { "new" } else { "repeat" }) += 1;
                        if created {
                            let at = ev.run_at.map_or((ev.b_ms, ms(r.t_us)), |t| (t, t));
                            self.jobs.entry(r.id.clone()).or_default().created =
                                Some((ev.priority, at));
                        }
                        ev.answer = Some((r.id, created, ms(r.t_us)));
                        self.keys.entry(key).or_default().push(ev);
                    }
                }
                'I' => {
                    self.flush_i(pending_i.take());
                    let op = match r.extra.split_once(' ') {
                        None if r.extra == "promote" => Op::Promote,
                        Some(("reschedule", t)) => Op::Reschedule(t.parse().unwrap_or(0)),
                        Some(("priority", p)) => Op::Priority(p.parse().unwrap_or(0)),
                        _ => Op::Other,
                    };
                    pending_i = Some((r.id, op));
                }
                'O' | 'J' => {
                    if let Some((id, op)) = pending_i.take() {
                        let out = if r.tag == 'O' {
                            Outcome::Ok(ms(r.t_us))
                        } else {
                            Outcome::Refused
                        };
                        *self.count(match (op, out) {
                            (Op::Promote, Outcome::Ok(_)) => "promote",
                            (Op::Reschedule(_), Outcome::Ok(_)) => "reschedule",
                            (Op::Priority(_), Outcome::Ok(_)) => "priority",
                            (Op::Other, Outcome::Ok(_)) => "settle",
                            _ => "refused",
                        }) += 1;
                        self.jobs.entry(id).or_default().ops.push((op, out));
                    }
                }
                'L' => {
                    *self.count("lease") += 1;
                    let j = self.jobs.entry(r.id).or_default();
                    j.acked_leases += 1;
                    j.ops.push((Op::Other, Outcome::Ok(ms(r.t_us))));
                }
                _ => {}
            }
        }
        self.flush_q(pending_q);
        self.flush_i(pending_i);
    }

    fn count(&mut self, name: &'static str) -> &mut u64 {
        self.counts.entry(name).or_default()
    }

    fn flush_q(&mut self, q: Option<(String, KeyEv)>) {
        if let Some((key, ev)) = q {
            *self.count("enqueue unanswered") += 1;
            self.keys.entry(key).or_default().push(ev);
        }
    }

    fn flush_i(&mut self, i: Option<(String, Op)>) {
        if let Some((id, op)) = i {
            *self.count("unanswered") += 1;
            self.jobs
                .entry(id)
                .or_default()
                .ops
                .push((op, Outcome::Unknown));
        }
    }

    /// The operations acknowledged so far, by name.
    pub fn summary(&self) -> String {
        let c: Vec<String> = self
            .counts
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        format!("{} ({} torn lines)", c.join(", "), self.torn)
    }
}

/// Every job in the store.
fn all_jobs(q: &Queue) -> Result<HashMap<String, JobInfo>, String> {
    let mut out = HashMap::new();
    let mut after = None;
    loop {
        let page = q
            .list(&ListQuery {
                limit: 10_000,
                after: after.take(),
                ..ListQuery::default()
            })
            .map_err(|e| e.to_string())?;
        for j in page.jobs {
            out.insert(j.id.to_string(), j);
        }
        match page.next {
            Some(n) => after = Some(n),
            None => return Ok(out),
        }
    }
}

type Verdict = (String, Result<(), String>);

fn verdict(name: &str, failures: Vec<String>) -> Verdict {
    let r = if failures.is_empty() {
        Ok(())
    } else {
        let n = failures.len();
        let first: Vec<String> = failures.into_iter().take(5).collect();
        Err(format!("{n} problem(s): {}", first.join("; ")))
    };
    (name.to_string(), r)
}

fn finished(j: &JobInfo) -> bool {
    j.state.is_terminal()
}

/// The checks after one kill, each with its name.
pub fn verify(q: &Queue, h: &History) -> Vec<Verdict> {
    let store = match all_jobs(q) {
        Ok(s) => s,
        Err(e) => return vec![("the store lists".into(), Err(e))],
    };
    let mut by_key: BTreeMap<&str, Vec<&JobInfo>> = BTreeMap::new();
    for j in store.values() {
        match j.idempotency_key.as_deref() {
            Some(k) => by_key.entry(k).or_default().push(j),
            None => by_key.entry("").or_default().push(j),
        }
    }
    for v in by_key.values_mut() {
        v.sort_by_key(|j| (j.created_at, j.id));
    }
    vec![
        windows(h, &store, &by_key),
        repeats(h, &store, &by_key),
        one_job_per_window(&by_key),
        steering(h, &store),
    ]
}

/// Every acknowledged enqueue's job exists under its key; every job of a
/// key was answered to an acknowledged enqueue or comes from one cut short.
fn windows(
    h: &History,
    store: &HashMap<String, JobInfo>,
    by_key: &BTreeMap<&str, Vec<&JobInfo>>,
) -> Verdict {
    let mut f = Vec::new();
    if let Some(none) = by_key.get("") {
        f.push(format!("{} jobs without a key", none.len()));
    }
    for (key, evs) in &h.keys {
        let mut acked = std::collections::HashSet::new();
        for ev in evs {
            let Some((id, created, _)) = &ev.answer else {
                continue;
            };
            match store.get(id) {
                None => f.push(format!("{key}: acknowledged job {id} is missing")),
                Some(j) if j.idempotency_key.as_deref() != Some(key) => {
                    f.push(format!("{key}: job {id} has key {:?}", j.idempotency_key))
                }
                Some(_) => {}
            }
            if *created {
                acked.insert(id.as_str());
            }
        }
        // Each job no acknowledged enqueue created pairs, in order, with an
        // enqueue cut short before it (at most one per round and thread).
        let mut cut: Vec<u64> = evs
            .iter()
            .filter(|e| e.answer.is_none())
            .map(|e| e.b_ms)
            .collect();
        cut.sort_unstable();
        let unacked: Vec<&&JobInfo> = by_key
            .get(key.as_str())
            .map(|js| {
                js.iter()
                    .filter(|j| !acked.contains(j.id.to_string().as_str()))
                    .collect()
            })
            .unwrap_or_default();
        let paired =
            unacked.len() <= cut.len() && unacked.iter().zip(&cut).all(|(j, b)| *b <= j.created_at);
        if !paired {
            let at: Vec<u64> = unacked.iter().map(|j| j.created_at).collect();
            f.push(format!(
                "{key}: job(s) created at {at:?} by no acknowledged enqueue, enqueues cut short at {cut:?}"
            ));
        }
    }
    verdict(
        "every acknowledged enqueue's job exists; no job nobody enqueued",
        f,
    )
}

/// A repeat answered `created: false` got the key's newest job, inside
/// its window (and, for `active`, while that job was unfinished).
fn repeats(
    h: &History,
    store: &HashMap<String, JobInfo>,
    by_key: &BTreeMap<&str, Vec<&JobInfo>>,
) -> Verdict {
    let mut f = Vec::new();
    for (key, evs) in &h.keys {
        let Some(i) = key_index(key) else {
            f.push(format!("a key of no index: {key}"));
            continue;
        };
        let (d, states) = key_window(i);
        let jobs = by_key.get(key.as_str()).cloned().unwrap_or_default();
        // Each job's place in the key's (created_at, id) order.
        let place: HashMap<String, usize> = jobs
            .iter()
            .enumerate()
            .map(|(n, j)| (j.id.to_string(), n))
            .collect();
        for ev in evs {
            let Some((id, false, _)) = &ev.answer else {
                continue;
            };
            let Some(x) = store.get(id) else {
                continue; // reported by `windows`
            };
            if ev.b_ms >= x.created_at + d {
                f.push(format!(
                    "{key}: a repeat at {} answered {id} whose window ended at {}",
                    ev.b_ms,
                    x.created_at + d
                ));
            }
            let next = place.get(id).and_then(|n| jobs.get(n + 1));
            if let Some(y) = next.filter(|y| y.created_at < ev.b_ms) {
                f.push(format!(
                    "{key}: a repeat at {} answered {id}, not the newer {} (created {})",
                    ev.b_ms, y.id, y.created_at
                ));
            }
            if states == UniqueStates::Active && finished(x) && x.state_ts < ev.b_ms {
                f.push(format!(
                    "{key}: a repeat at {} answered {id}, {} at {} (an active window)",
                    ev.b_ms, x.state, x.state_ts
                ));
            }
        }
    }
    verdict("a repeat inside a window answered the window's job", f)
}

/// Two jobs of one key: the second was made after the first's window
/// ended (or, `active`, after the first finished).
fn one_job_per_window(by_key: &BTreeMap<&str, Vec<&JobInfo>>) -> Verdict {
    let mut f = Vec::new();
    for (key, jobs) in by_key {
        let Some(i) = key_index(key) else {
            continue;
        };
        let (d, states) = key_window(i);
        for w in jobs.windows(2) {
            let (a, b) = (w[0], w[1]);
            let ended = b.created_at >= a.created_at + d;
            let done = states == UniqueStates::Active && finished(a) && a.state_ts <= b.created_at;
            if !ended && !done {
                f.push(format!(
                    "{key}: job {} created at {} inside the window of {} (created {}, {} at {})",
                    b.id, b.created_at, a.id, a.created_at, a.state, a.state_ts
                ));
            }
        }
    }
    verdict("no second job for a key while its window holds", f)
}

/// The run times a job may have: `None` is any (the engine picked it).
type Runs = Option<Vec<(u64, u64)>>;

/// Every acknowledged promote, reschedule and priority change is in the
/// job's record unless a later operation (acknowledged or cut short)
/// superseded it.
fn steering(h: &History, store: &HashMap<String, JobInfo>) -> Verdict {
    let mut f = Vec::new();
    let (mut runs_checked, mut prios_checked) = (0u64, 0u64);
    for (id, jh) in &h.jobs {
        let Some(j) = store.get(id) else {
            if jh.created.is_none() && !jh.ops.is_empty() {
                f.push(format!("job {id} the owner leased or steered is missing"));
            }
            continue;
        };
        let mut prios: Option<Vec<u8>> = jh.created.map(|c| vec![c.0]);
        let mut runs: Runs = jh.created.map(|c| vec![c.1]);
        let mut steered = false;
        let mut run_steered = false;
        for (op, out) in &jh.ops {
            match (op, out) {
                (_, Outcome::Refused) => {}
                (Op::Priority(p), Outcome::Ok(_)) => {
                    prios = Some(vec![*p]);
                    steered = true;
                }
                (Op::Priority(p), Outcome::Unknown) => {
                    if let Some(v) = prios.as_mut() {
                        v.push(*p)
                    }
                }
                (Op::Promote, Outcome::Ok(a)) => {
                    runs = Some(vec![(0, *a)]);
                    run_steered = true;
                }
                (Op::Reschedule(t), Outcome::Ok(_)) => {
                    runs = Some(vec![(*t, *t)]);
                    run_steered = true;
                }
                _ => runs = None,
            }
        }
        // A lease whose answer the kill cut off: the engine moved the job.
        if j.generation > jh.acked_leases {
            runs = None;
        }
        if let Some(p) = &prios {
            if steered {
                prios_checked += 1;
            }
            if !p.contains(&j.priority) {
                f.push(format!(
                    "job {id}: priority {} not one of {p:?}",
                    j.priority
                ));
            }
        }
        if let Some(r) = &runs {
            if !matches!(j.state, State::Pending | State::Failed) {
                f.push(format!(
                    "job {id} is {} though nothing leased it (runs {r:?})",
                    j.state
                ));
            } else if !r.iter().any(|(lo, hi)| (*lo..=*hi).contains(&j.state_ts)) {
                f.push(format!(
                    "job {id}: run time {} not in {r:?} (ops {:?})",
                    j.state_ts, jh.ops
                ));
            } else if run_steered {
                runs_checked += 1;
            }
        }
    }
    let name = format!(
        "every acknowledged promote/reschedule/priority is in the record \
         ({runs_checked} steered run times, {prios_checked} priorities checked exactly)"
    );
    verdict(&name, f)
}

#[cfg(test)]
#[path = "steer_check_tests.rs"]
mod tests;
