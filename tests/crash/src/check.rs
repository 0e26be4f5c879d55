//! The invariants checked after every kill, against everything the worker
//! processes were told succeeded (the ack logs of all rounds so far).

use std::collections::{BTreeMap, HashMap, HashSet};

use telha_jobs::{JobId, ListQuery, Queue, State, StateCounts};

/// An acknowledged cancel: what the job may be in after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cancel {
    /// `cancel` answered cancelled: the job is cancelled.
    Done,
    /// `cancel` answered requested, or `extend` answered cancelled: the job
    /// is cancelled, or still leased with the request on it.
    Requested,
}

use crate::log::Record;

/// One lease as acknowledged.
#[derive(Debug, Clone)]
struct Lease {
    ack_us: u64,
    deadline_ms: u64,
    round: u32,
    /// Failed attempts before this lease (what a snooze must keep).
    attempts: u32,
}

/// Everything acknowledged so far, per job.
#[derive(Debug, Default)]
pub struct History {
    enqueued: HashSet<JobId>,
    /// generation → the lease acknowledged under it (a second one is a double lease).
    leases: HashMap<JobId, BTreeMap<u64, Lease>>,
    double_acks: Vec<String>,
    /// (id, generation) → earliest settle intent, µs.
    intents: HashMap<(JobId, u64), u64>,
    /// Acknowledged settles: (id, generation, tag, intent µs).
    settles: Vec<(JobId, u64, char, u64)>,
    completed: HashMap<JobId, u64>,
    dead: HashMap<JobId, u64>,
    /// Jobs a cancel or a delete was begun on (acknowledged or not).
    cancel_begun: HashSet<JobId>,
    delete_begun: HashSet<JobId>,
    /// Acknowledged cancels, and settles answered cancelled (generation).
    cancels: HashMap<JobId, Cancel>,
    cancelled_at: HashMap<JobId, u64>,
    deleted: HashSet<JobId>,
    /// Acknowledged snoozes: id → generations.
    snoozes: Vec<(JobId, u64)>,
    /// Pause target → paused after its last operation (`None`: that
    /// operation was begun and not acknowledged, so either).
    pauses: BTreeMap<String, Option<bool>>,
    pub acks: BTreeMap<char, u64>,
    pub torn: usize,
    bad: Vec<String>,
}

impl History {
    /// Fold in one round's records (all threads; any order).
    pub fn add(&mut self, round: u32, records: Vec<Record>, torn: usize) {
        self.torn += torn;
        for r in &records {
            if r.tag == 'S' {
                let id = match r.id.parse::<JobId>() {
                    Ok(id) => id,
                    Err(_) => continue,
                };
                let e = self.intents.entry((id, r.generation)).or_insert(r.t_us);
                *e = (*e).min(r.t_us);
            }
        }
        for r in records {
            if r.tag == 'P' {
                *self.acks.entry('P').or_default() += 1;
                continue;
            }
            // Pause and resume name a target, not a job.
            let pause_op = matches!(r.extra.as_str(), "pause" | "resume");
            if matches!(r.tag, 'H' | 'U') || (r.tag == 'I' && pause_op) {
                let now = match r.tag {
                    'H' => Some(true),
                    'U' => Some(false),
                    _ => None,
                };
                self.pauses.insert(r.id.clone(), now);
                if r.tag != 'I' {
                    *self.acks.entry(r.tag).or_default() += 1;
                }
                continue;
            }
            let id = match r.id.parse::<JobId>() {
                Ok(id) => id,
                Err(_) => {
                    self.bad.push(format!("unparsable id in the log: {r:?}"));
                    continue;
                }
            };
            if !matches!(r.tag, 'S' | 'A' | 'I') {
                *self.acks.entry(r.tag).or_default() += 1;
            }
            let g = r.generation;
            match r.tag {
                'E' => {
                    self.enqueued.insert(id);
                }
                'L' => {
                    let mut extra = r.extra.split(' ');
                    let deadline_ms = extra.next().and_then(|d| d.parse().ok()).unwrap_or(0);
                    let attempts = extra.nth(1).and_then(|a| a.parse().ok()).unwrap_or(0);
                    let lease = Lease {
                        ack_us: r.t_us,
                        deadline_ms,
                        round,
                        attempts,
                    };
                    if let Some(prev) = self.leases.entry(id).or_default().insert(g, lease) {
                        self.double_acks.push(format!(
                            "job {id} generation {g} leased twice (rounds {} and {round})",
                            prev.round
                        ));
                    }
                }
                'I' if r.extra == "cancel" => {
                    self.cancel_begun.insert(id);
                }
                'I' if r.extra == "delete" => {
                    self.delete_begun.insert(id);
                }
                'K' => {
                    let c = if r.extra == "requested" {
                        Cancel::Requested
                    } else {
                        Cancel::Done
                    };
                    let e = self.cancels.entry(id).or_insert(c);
                    if c == Cancel::Done {
                        *e = c;
                    }
                }
                'Y' => {
                    self.cancels.entry(id).or_insert(Cancel::Requested);
                }
                'N' => {
                    self.cancelled_at.insert(id, g);
                }
                'W' => {
                    self.deleted.insert(id);
                }
                'C' | 'F' | 'D' | 'R' | 'Z' => {
                    let intent = self.intents.get(&(id, g)).copied().unwrap_or(r.t_us);
                    self.settles.push((id, g, r.tag, intent));
                    if r.tag == 'C' {
                        self.completed.insert(id, g);
                    }
                    if r.tag == 'D' {
                        self.dead.insert(id, g);
                    }
                    if r.tag == 'Z' {
                        self.snoozes.push((id, g));
                    }
                }
                _ => {}
            }
        }
    }

    pub fn jobs(&self) -> usize {
        self.enqueued.len()
    }

    pub fn total_acks(&self) -> u64 {
        self.acks.values().sum()
    }
}

/// What a full scan of the reopened store found, per job.
struct Row {
    state: State,
    generation: u64,
    attempts: u32,
    snoozes: u32,
    cancel_requested: bool,
}

/// One named check and its failures (empty: passed).
pub struct Outcome {
    pub name: &'static str,
    pub failures: Vec<String>,
}

/// Run every invariant on the reopened store `q` against `h`.
pub fn run(q: &Queue, h: &History) -> Vec<Outcome> {
    let mut out = Vec::new();
    let mut push = |name, failures: Vec<String>| out.push(Outcome { name, failures });

    // 1. The engine's own full consistency scan: every row decodes, the id
    //    index, the kind index, the idempotency index, the on-disk and
    //    in-memory counters and the in-memory leases agree with the rows.
    match q.check() {
        Ok(r) => push(
            "check(): rows, id/kind/idempotency indexes, counters agree",
            r.problems,
        ),
        Err(e) => push(
            "check(): rows, id/kind/idempotency indexes, counters agree",
            vec![e.to_string()],
        ),
    }

    // 2. An independent full scan through `list`: every job once, in one
    //    state, and the per-state counts equal `stats()`.
    let mut rows: HashMap<JobId, Row> = HashMap::new();
    let mut scan_fail = Vec::new();
    let mut counts: BTreeMap<String, [u64; State::COUNT]> = BTreeMap::new();
    let mut query = ListQuery {
        limit: 10_000,
        ..ListQuery::default()
    };
    loop {
        let page = match q.list(&query) {
            Ok(p) => p,
            Err(e) => {
                scan_fail.push(format!("list: {e}"));
                break;
            }
        };
        for c in &page.corrupt {
            scan_fail.push(format!("corrupt row: {c:?}"));
        }
        for j in page.jobs {
            let c = counts.entry(j.kind.clone()).or_default();
            c[state_index(j.state)] += 1;
            if let Some(prev) = rows.insert(
                j.id,
                Row {
                    state: j.state,
                    generation: j.generation,
                    attempts: j.attempts,
                    snoozes: j.snoozes,
                    cancel_requested: j.cancel_requested.is_some(),
                },
            ) {
                scan_fail.push(format!(
                    "job {} listed twice: {} and {}",
                    j.id, prev.state, j.state
                ));
            }
        }
        match page.next {
            Some(n) => query.after = Some(n),
            None => break,
        }
    }
    match q.stats() {
        Ok(s) => {
            let mut total = [0u64; State::COUNT];
            for (kind, c) in &counts {
                for (t, x) in total.iter_mut().zip(c) {
                    *t += x;
                }
                let want = s.by_kind.get(kind).copied().unwrap_or_default();
                if to_array(want) != *c {
                    scan_fail.push(format!(
                        "stats() for {kind} {want:?} but the scan counts {c:?}"
                    ));
                }
            }
            if to_array(s.total) != total {
                scan_fail.push(format!(
                    "stats() total {:?} but the scan counts {total:?}",
                    s.total
                ));
            }
        }
        Err(e) => scan_fail.push(format!("stats: {e}")),
    }
    push(
        "full scan: each job once, in one state; counts = stats()",
        scan_fail,
    );

    // 3. No acknowledged enqueue is missing.
    let missing: Vec<String> = h
        .enqueued
        .iter()
        .filter(|id| !rows.contains_key(id) && !h.delete_begun.contains(id))
        .map(|id| format!("acknowledged enqueue of {id} is missing"))
        .collect();
    push("no acknowledged enqueue lost", missing);

    // 4. No acknowledged completion (or dead-lettering) is undone: the job is
    //    still in that state, under the generation that settled it.
    let mut undone = Vec::new();
    for (map, want) in [(&h.completed, State::Completed), (&h.dead, State::Dead)] {
        for (id, g) in map {
            match rows.get(id) {
                Some(r) if r.state == want && r.generation == *g => {}
                None if h.delete_begun.contains(id) => {}
                Some(r) => undone.push(format!(
                    "job {id}: acknowledged {want} at generation {g}, now {} at generation {}",
                    r.state, r.generation
                )),
                None => undone.push(format!("job {id}: acknowledged {want}, now missing")),
            }
        }
    }
    push(
        "no acknowledged completion or dead-lettering undone",
        undone,
    );

    // 5. No acknowledged lease is forgotten: generations never go back.
    let mut lost = Vec::new();
    for (id, ls) in &h.leases {
        if let (Some((&g, _)), Some(r)) = (ls.iter().next_back(), rows.get(id)) {
            if r.generation < g {
                lost.push(format!(
                    "job {id}: generation {} on disk, but generation {g} was acknowledged",
                    r.generation
                ));
            }
        }
    }
    push(
        "no acknowledged lease forgotten (generations only grow)",
        lost,
    );

    // 6. No job leased twice at once. Per job, acknowledged generations are
    //    distinct; a later lease acknowledged before the earlier one's
    //    deadline needs that earlier lease to have been settled first (a
    //    settle call begun before); and a settle acknowledged as successful
    //    must have begun before any later lease was granted.
    let mut double = h.double_acks.clone();
    for (id, ls) in &h.leases {
        let v: Vec<(&u64, &Lease)> = ls.iter().collect();
        for w in v.windows(2) {
            let ((g0, a), (g1, b)) = (w[0], w[1]);
            let before_deadline = b.ack_us < a.deadline_ms.saturating_mul(1000);
            let settled_first = h.intents.get(&(*id, *g0)).is_some_and(|&t| t <= b.ack_us);
            if before_deadline && !settled_first {
                double.push(format!(
                    "job {id}: generation {g1} leased at {} µs while generation {g0} \
                     (deadline {} ms) was neither expired nor settled",
                    b.ack_us, a.deadline_ms
                ));
            }
        }
    }
    for (id, g, tag, intent) in &h.settles {
        if let Some(ls) = h.leases.get(id) {
            if let Some((g1, l)) = ls.range(g + 1..).next() {
                if l.ack_us < *intent {
                    double.push(format!(
                        "job {id}: a settle ({tag}) of generation {g} begun at {intent} µs succeeded \
                         after generation {g1} was leased at {} µs",
                        l.ack_us
                    ));
                }
            }
        }
    }
    push(
        "no job leased twice at once (fencing by generation)",
        double,
    );

    // 7. An acknowledged cancel holds: the job is cancelled (or, for a
    //    request, still leased with the request on it); a settle or extend
    //    answered cancelled left it cancelled. Unless a delete was begun.
    let mut cancels = Vec::new();
    for (id, c) in &h.cancels {
        match (rows.get(id), c) {
            (Some(r), _) if r.state == State::Cancelled => {}
            (Some(r), Cancel::Requested) if r.state == State::Leased && r.cancel_requested => {}
            (None, _) if h.delete_begun.contains(id) => {}
            (Some(r), _) => cancels.push(format!(
                "job {id}: cancel acknowledged ({c:?}), now {} at generation {} (request on it: {})",
                r.state, r.generation, r.cancel_requested
            )),
            (None, _) => cancels.push(format!("job {id}: cancel acknowledged ({c:?}), now missing")),
        }
    }
    for (id, g) in &h.cancelled_at {
        match rows.get(id) {
            Some(r) if r.state == State::Cancelled && r.generation == *g => {}
            None if h.delete_begun.contains(id) => {}
            Some(r) => cancels.push(format!(
                "job {id}: settle at generation {g} answered cancelled, now {} at generation {}",
                r.state, r.generation
            )),
            None => cancels.push(format!("job {id}: settle answered cancelled, now missing")),
        }
    }
    push(
        "an acknowledged cancel holds (cancelled, or leased with the request)",
        cancels,
    );

    // 8. An acknowledged delete's job is gone.
    let back: Vec<String> = h
        .deleted
        .iter()
        .filter_map(|id| {
            rows.get(id)
                .map(|r| format!("job {id}: delete acknowledged, but it is {}", r.state))
        })
        .collect();
    push("an acknowledged delete's job is gone", back);

    // 9. A snoozed job no later lease was acknowledged for is pending under
    //    the snoozing generation with its attempts unchanged (or leased
    //    again, unacknowledged: a higher generation; or cancelled/deleted
    //    when that was begun).
    let mut snoozed = Vec::new();
    for (id, g) in &h.snoozes {
        let leases = h.leases.get(id);
        if leases.is_some_and(|ls| ls.range(g + 1..).next().is_some()) {
            continue;
        }
        let attempts = leases.and_then(|ls| ls.get(g)).map(|l| l.attempts);
        match rows.get(id) {
            None if h.delete_begun.contains(id) => {}
            None => snoozed.push(format!("job {id}: snoozed at generation {g}, now missing")),
            Some(r) if r.generation > *g => {}
            Some(r) if r.state == State::Cancelled && h.cancel_begun.contains(id) => {}
            Some(r)
                if r.state == State::Pending
                    && r.generation == *g
                    && r.snoozes > 0
                    && attempts.is_none_or(|a| a == r.attempts) => {}
            Some(r) => snoozed.push(format!(
                "job {id}: snoozed at generation {g} (attempts {attempts:?}), now {} at generation {} \
                 with {} attempts, {} snoozes",
                r.state, r.generation, r.attempts, r.snoozes
            )),
        }
    }
    push(
        "a snoozed job is pending with its attempts unchanged",
        snoozed,
    );

    // 10. What the last acknowledged pause or resume of each target left
    //     is what the reopened store says.
    let mut pauses = Vec::new();
    match q.paused() {
        Ok(p) => {
            let now: HashSet<String> = p
                .kinds
                .iter()
                .map(|k| format!("kind:{k}"))
                .chain(p.scopes.iter().map(|s| format!("scope:{s}")))
                .collect();
            for (label, want) in &h.pauses {
                if let Some(want) = want {
                    if now.contains(label) != *want {
                        pauses.push(format!(
                            "{label}: last acknowledged {}, but paused() says {:?}",
                            if *want { "pause" } else { "resume" },
                            now
                        ));
                    }
                }
            }
        }
        Err(e) => pauses.push(format!("paused: {e}")),
    }
    push("an acknowledged pause or resume survives the kill", pauses);

    if !h.bad.is_empty() {
        push("the ack logs parse", h.bad.clone());
    }
    out
}

/// `s`'s place in [`State::ALL`] (every state, cancelled included).
fn state_index(s: State) -> usize {
    State::ALL
        .iter()
        .position(|&x| x == s)
        .expect("State::ALL holds every state")
}

fn to_array(c: StateCounts) -> [u64; State::COUNT] {
    State::ALL.map(|s| c.get(s))
}

#[cfg(test)]
#[path = "check_tests.rs"]
mod tests;
