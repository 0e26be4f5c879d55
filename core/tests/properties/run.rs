//! The runner: applies each operation to the store and to the model and
//! asserts that the two agree.

use super::*;

pub(super) struct Run {
    s: TestStore,
    m: Model,
}

impl Run {
    pub(super) fn new() -> Run {
        let cfg = config();
        Run {
            s: TestStore::with_config(cfg.clone()),
            m: Model {
                cfg,
                jobs: BTreeMap::new(),
                live: BTreeMap::new(),
                stale: Vec::new(),
                idem: HashMap::new(),
                created: 0,
                pruned: 0,
            },
        }
    }

    fn new_job(&self, e: &Enq) -> NewJob {
        let mut o = EnqueueOptions::default().priority(PRIORITIES[e.prio]);
        if e.scope == 1 {
            o = o.scope(scope_of(1));
        }
        if let Some(d) = e.delay_ms {
            o = o.delay(Duration::from_millis(d));
        }
        if let Some(k) = e.key {
            o = o.idempotency_key(format!("key-{k}"));
        }
        if let Some(n) = e.max_attempts {
            o = o.max_attempts(n);
        }
        NewJob::new(KINDS[e.kind], vec![e.kind as u8]).with(o)
    }

    fn enqueue(&mut self, batch: &[Enq], many: bool) {
        let now = self.s.now();
        let jobs: Vec<NewJob> = batch.iter().map(|e| self.new_job(e)).collect();
        let out = if many {
            self.s.q.enqueue_many(jobs).unwrap()
        } else {
            vec![self
                .s
                .q
                .enqueue(&jobs[0].kind, &jobs[0].payload, jobs[0].options.clone())
                .unwrap()]
        };
        assert_eq!(out.len(), batch.len());
        for (e, got) in batch.iter().zip(out) {
            let scope = scope_of(e.scope);
            let existing = e
                .key
                .and_then(|k| self.m.idem.get(&(scope, k)).copied())
                .filter(|id| self.m.jobs[id].state != M::Pruned);
            if let Some(id) = existing {
                assert_eq!(
                    (got.id, got.created),
                    (id, false),
                    "a live idempotency key answers its job"
                );
                continue;
            }
            assert!(got.created, "{e:?} should have created a job");
            assert!(!self.m.jobs.contains_key(&got.id), "a reused id");
            if let Some(k) = e.key {
                self.m.idem.insert((scope, k), got.id);
            }
            let ready_at = now + e.delay_ms.unwrap_or(0);
            let kind = KINDS[e.kind];
            self.m.jobs.insert(
                got.id,
                MJob {
                    kind,
                    scope,
                    priority: PRIORITIES[e.prio],
                    state: M::Pending,
                    ts: ready_at,
                    ready_at,
                    attempts: 0,
                    max_attempts: self.m.cfg.max_attempts_for(kind, e.max_attempts),
                    generation: 0,
                    worker: None,
                    ended: None,
                },
            );
            self.m.created += 1;
        }
    }

    fn lease(&mut self, filter: usize, scope: Option<usize>, worker: usize, max: usize) {
        let now = self.s.now();
        let kinds = kind_filter(filter);
        let scopes: Vec<Scope> = scope.map(scope_of).into_iter().collect();
        let opts = LeaseOptions {
            scopes: scopes.clone(),
            kinds: kinds.clone(),
            wait: None,
            ..LeaseOptions::default()
        };
        let w = WORKERS[worker];
        let got: Vec<Job> = if max == 1 {
            self.s.q.lease_next(w, &opts).unwrap().into_iter().collect()
        } else {
            self.s.q.lease_many(w, max, &opts).unwrap()
        };
        assert!(got.len() <= max);
        let eligible = |m: &Model, j: &MJob| {
            m.ready(j, now)
                && kind_matches(&kinds, j.kind)
                && (scopes.is_empty() || scopes.contains(&j.scope))
        };
        for job in &got {
            assert!(
                !self.m.live.contains_key(&job.id),
                "job {} leased while its lease {:?} is live",
                job.id,
                self.m.live[&job.id]
            );
            let mj = self.m.jobs.get(&job.id).expect("a leased job was enqueued");
            assert!(
                eligible(&self.m, mj),
                "leased {} ({mj:?}) which is not ready or does not match {opts:?} at {now}",
                job.id
            );
            // The most urgent ready, matching job of its scope.
            let best = self
                .m
                .jobs
                .iter()
                .filter(|&(_, o)| o.scope == mj.scope && eligible(&self.m, o))
                .map(|(id, o)| (o.priority, o.ts, *id))
                .min()
                .unwrap();
            assert_eq!(
                best,
                (mj.priority, mj.ts, job.id),
                "not the head of its scope"
            );
            assert_eq!(job.generation, mj.generation + 1);
            assert_eq!(job.attempts, mj.attempts);
            assert_eq!(job.max_attempts, mj.max_attempts);
            assert_eq!((job.kind.as_str(), job.scope), (mj.kind, mj.scope));
            assert_eq!(job.priority, mj.priority);
            assert_eq!(job.deadline, now + self.m.ttl_ms(mj.kind));
            assert_eq!(job.worker_id, w);

            let mj = self.m.jobs.get_mut(&job.id).unwrap();
            mj.state = M::Leased;
            mj.ts = job.deadline;
            mj.generation = job.generation;
            mj.worker = Some(w);
            mj.ended = None;
            self.m.live.insert(job.id, job.token());
        }
        if got.len() < max {
            let left: Vec<(&JobId, &MJob)> = self
                .m
                .jobs
                .iter()
                .filter(|&(_, j)| eligible(&self.m, j))
                .collect();
            assert!(
                left.is_empty(),
                "leased {} of {max} with {opts:?} at {now}, but these were ready: {left:?}",
                got.len()
            );
        }
    }

    fn pick_live(&self, pick: &Index) -> Option<LeaseToken> {
        (!self.m.live.is_empty()).then(|| {
            *self
                .m
                .live
                .values()
                .nth(pick.index(self.m.live.len()))
                .unwrap()
        })
    }

    fn pick_stale(&self, pick: &Index) -> Option<LeaseToken> {
        (!self.m.stale.is_empty()).then(|| self.m.stale[pick.index(self.m.stale.len())])
    }

    /// Submits a stale token with the settle `op`: a repeat of the settle
    /// that ended its lease answers Ok, any other is refused; both change
    /// nothing.
    fn stale_submit<T: std::fmt::Debug>(
        &self,
        pick: &Index,
        op: Ended,
        f: impl FnOnce(&LeaseToken) -> telha_jobs::Result<T>,
    ) {
        let Some(t) = self.pick_stale(pick) else {
            return;
        };
        let before = self.s.q.get(&t.id).unwrap();
        match self.m.repeat_answer(&t, op) {
            None => {
                f(&t).unwrap_or_else(|e| panic!("a repeated {op:?} of {t}: {e}"));
            }
            Some(kind) => {
                expect_err(f(&t), kind);
            }
        }
        assert_eq!(
            self.s.q.get(&t.id).unwrap(),
            before,
            "a stale submit changed the job"
        );
    }

    pub(super) fn step(&mut self, op: &Op) {
        let now = self.s.now();
        match op {
            Op::Enqueue(e) => self.enqueue(std::slice::from_ref(e), false),
            Op::EnqueueMany(b) => self.enqueue(b, true),
            Op::Lease {
                filter,
                scope,
                worker,
                max,
            } => self.lease(*filter, *scope, *worker, *max),
            Op::Complete { live: true, pick } => {
                let Some(t) = self.pick_live(pick) else {
                    return;
                };
                self.s.q.complete(&t, Some(b"result")).unwrap();
                self.m.end_lease(t.id);
                let j = self.m.jobs.get_mut(&t.id).unwrap();
                j.state = M::Completed;
                j.ts = now;
                j.ended = Some(Ended::Complete);
            }
            Op::Complete { live: false, pick } => {
                self.stale_submit(pick, Ended::Complete, |t| self.s.q.complete(t, None))
            }
            Op::Fail {
                live: true,
                pick,
                retryable,
            } => {
                let Some(t) = self.pick_live(pick) else {
                    return;
                };
                self.s.q.fail(&t, "boom", *retryable).unwrap();
                self.m.end_lease(t.id);
                self.m.failed_attempt(t.id, now, *retryable, false);
                self.m.jobs.get_mut(&t.id).unwrap().ended = Some(Ended::Fail);
            }
            Op::Fail {
                live: false,
                pick,
                retryable,
            } => self.stale_submit(pick, Ended::Fail, |t| self.s.q.fail(t, "late", *retryable)),
            Op::Release { live: true, pick } => {
                let Some(t) = self.pick_live(pick) else {
                    return;
                };
                self.s.q.release(&t).unwrap();
                self.m.end_lease(t.id);
                let j = self.m.jobs.get_mut(&t.id).unwrap();
                j.state = M::Pending;
                j.ts = j.ready_at.min(now);
                j.ended = Some(Ended::Release);
            }
            Op::Release { live: false, pick } => {
                self.stale_submit(pick, Ended::Release, |t| self.s.q.release(t))
            }
            Op::Extend { picks, worker } => self.extend(picks, WORKERS[*worker]),
            Op::Retry { pick, unknown } => self.retry(pick, *unknown),
            Op::Advance(ms) => self.s.advance(Duration::from_millis(*ms)),
            Op::Reap => self.reap(),
            Op::Reopen => self.s.reopen(),
            Op::Get(pick) => {
                if !self.m.jobs.is_empty() {
                    let id = *self
                        .m
                        .jobs
                        .keys()
                        .nth(pick.index(self.m.jobs.len()))
                        .unwrap();
                    self.assert_job(&id);
                }
            }
        }
    }

    fn extend(&mut self, picks: &[(bool, Index)], worker: &'static str) {
        let now = self.s.now();
        let mut tokens: Vec<LeaseToken> = Vec::new();
        for (live, pick) in picks {
            let t = if *live {
                self.pick_live(pick)
            } else {
                self.pick_stale(pick)
            };
            // One token per job: a batch naming one job twice is a separate test.
            if let Some(t) = t.filter(|t| tokens.iter().all(|x| x.id != t.id)) {
                tokens.push(t);
            }
        }
        if tokens.is_empty() {
            return;
        }
        let answers = self.s.q.extend(&tokens, worker).unwrap();
        assert_eq!(answers.len(), tokens.len());
        for (t, a) in tokens.iter().zip(answers) {
            if self.m.live.get(&t.id) == Some(t) {
                let j = self.m.jobs.get_mut(&t.id).unwrap();
                if j.worker == Some(worker) {
                    let want =
                        (now + self.m.cfg.lease_ttl_for(j.kind).as_millis() as u64).max(j.ts);
                    assert_eq!(a.unwrap(), want, "extend of {t}");
                    j.ts = want;
                } else {
                    expect_err(a, ErrorKind::Aborted);
                }
            } else {
                expect_err(a, self.m.stale_error(t));
            }
        }
    }

    fn retry(&mut self, pick: &Index, unknown: bool) {
        let now = self.s.now();
        if unknown || self.m.jobs.is_empty() {
            expect_err(
                self.s.q.retry(&JobId::from_bytes([0xEE; 16])),
                ErrorKind::NotFound,
            );
            return;
        }
        let id = *self
            .m
            .jobs
            .keys()
            .nth(pick.index(self.m.jobs.len()))
            .unwrap();
        let r = self.s.q.retry(&id);
        let j = self.m.jobs.get_mut(&id).unwrap();
        match j.state {
            M::Dead | M::Failed => {
                r.unwrap();
                j.state = M::Pending;
                j.attempts = 0;
                j.ts = now;
                j.ready_at = now;
                j.worker = None;
                j.ended = None;
            }
            M::Pending | M::Leased | M::Completed => {
                expect_err(r, ErrorKind::InvalidArgument);
            }
            M::Pruned => {
                expect_err(r, ErrorKind::NotFound);
            }
        }
    }

    fn reap(&mut self) {
        let now = self.s.now();
        let report = self.s.q.reap().unwrap();
        let due: Vec<JobId> = self
            .m
            .live
            .keys()
            .filter(|id| self.m.jobs[*id].ts <= now)
            .copied()
            .collect();
        let (mut expired, mut dead) = (0, 0);
        for id in due {
            self.m.end_lease(id);
            self.m.failed_attempt(id, now, true, true);
            self.m.jobs.get_mut(&id).unwrap().ended = None;
            if self.m.jobs[&id].state == M::Dead {
                dead += 1;
            } else {
                expired += 1;
            }
        }
        let cutoff = now.saturating_sub(RETENTION_MS);
        let mut pruned = 0;
        for j in self.m.jobs.values_mut() {
            if j.state == M::Completed && j.ts <= cutoff {
                j.state = M::Pruned;
                pruned += 1;
            }
        }
        self.m.pruned += pruned;
        assert_eq!(
            (report.expired, report.dead, report.pruned),
            (expired, dead, pruned),
            "reap at {now}"
        );
        assert!(report.corrupt.is_empty(), "{:?}", report.corrupt);
    }

    fn assert_job(&self, id: &JobId) {
        let m = &self.m.jobs[id];
        let got = self.s.q.get(id).unwrap();
        let Some(info) = got else {
            assert_eq!(
                m.state,
                M::Pruned,
                "job {id} is gone but the model has {m:?}"
            );
            return;
        };
        assert_eq!(
            Some(info.state),
            m.state.state(),
            "state of {id}: model {m:?}"
        );
        assert_eq!(info.state_ts, m.ts, "state ts of {id}: model {m:?}");
        assert_eq!(info.attempts, m.attempts, "attempts of {id}");
        assert_eq!(info.max_attempts, m.max_attempts, "max_attempts of {id}");
        assert_eq!(info.generation, m.generation, "generation of {id}");
        assert_eq!(
            (info.kind.as_str(), info.scope, info.priority),
            (m.kind, m.scope, m.priority)
        );
        if m.state == M::Leased {
            assert_eq!(info.worker_id.as_deref(), m.worker);
            assert_eq!(info.lease_deadline, Some(m.ts));
        }
    }

    pub(super) fn finish(&self) {
        assert_consistent(&self.s.q);
        for id in self.m.jobs.keys() {
            self.assert_job(id);
        }
        let stats = self.s.q.stats().unwrap();
        assert_eq!(
            stats.total.total() as usize,
            self.m.created - self.m.pruned,
            "stats count every enqueued job that was not pruned"
        );
        let pruned = self
            .m
            .jobs
            .values()
            .filter(|j| j.state == M::Pruned)
            .count();
        assert_eq!(pruned, self.m.pruned);
        for s in State::ALL {
            let want = self
                .m
                .jobs
                .values()
                .filter(|j| j.state.state() == Some(s))
                .count() as u64;
            assert_eq!(stats.total.get(s), want, "{s} jobs");
        }
        assert_eq!(stats.total.leased as usize, self.m.live.len());
    }
}
