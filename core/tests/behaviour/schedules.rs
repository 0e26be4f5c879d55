//! Schedules on the manual clock: exactly one job per slot over a day,
//! daylight saving, each catch-up policy, clock steps, reopen, bad input.

use super::*;
use telha_jobs::{CatchUp, Schedule, ScheduleInfo};

/// 2026-03-01T00:00:00Z: a midnight, so minute and hour slots line up.
const MIDNIGHT: u64 = 1_772_323_200_000;

fn store_at(ms: u64) -> TestStore {
    let s = TestStore::new();
    s.set_now(ms);
    s
}

/// Every job the schedule `name` enqueued, by slot (asserting no slot twice).
fn slots_of(s: &TestStore, name: &str) -> Vec<u64> {
    let mut out = Vec::new();
    let mut after = None;
    loop {
        let page =
            s.q.list(&ListQuery {
                schedule: Some(name.to_string()),
                limit: 10_000,
                after,
                ..ListQuery::default()
            })
            .expect("list");
        for j in &page.jobs {
            let r = j.schedule.as_ref().expect("a scheduled job says so");
            assert_eq!(r.name, name);
            assert_eq!(
                j.idempotency_key.as_deref(),
                Some(telha_jobs::schedule::idempotency_key(name, r.slot).as_str())
            );
            out.push(r.slot);
        }
        match page.next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    out.sort_unstable();
    let before = out.len();
    out.dedup();
    assert_eq!(out.len(), before, "a slot was enqueued twice");
    out
}

fn put(s: &TestStore, sched: Schedule) -> ScheduleInfo {
    s.q.schedule_put(&sched).expect("schedule_put")
}

#[test]
fn a_minute_schedule_over_a_simulated_day_yields_exactly_1440_jobs() {
    let s = store_at(MIDNIGHT);
    let info = put(&s, Schedule::new("tick", "* * * * *", "tick"));
    assert_eq!(info.next_slot, Some(MIDNIGHT + 60_000));
    assert_eq!(info.cursor, MIDNIGHT);
    let mut enqueued = 0;
    // Uneven steps: some passes see no slot, some one.
    let mut t = MIDNIGHT;
    while t < MIDNIGHT + 24 * 3_600_000 {
        t += 23_000;
        s.set_now(t.min(MIDNIGHT + 24 * 3_600_000));
        enqueued += s.q.run_schedules().expect("run").enqueued;
    }
    assert_eq!(enqueued, 1440);
    let slots = slots_of(&s, "tick");
    assert_eq!(slots.len(), 1440);
    for (i, slot) in slots.iter().enumerate() {
        assert_eq!(*slot, MIDNIGHT + (i as u64 + 1) * 60_000);
    }
    let info = s.q.schedule_get("tick").unwrap();
    assert_eq!((info.enqueued, info.skipped), (1440, 0));
    assert_eq!(info.last_slot, Some(MIDNIGHT + 24 * 3_600_000));
    // The jobs are ordinary jobs: leasable, with their slot on the lease.
    let j = s.must_lease("w");
    assert_eq!(j.schedule.as_ref().unwrap().name, "tick");
}

fn daily_0230_berlin_over(s: &TestStore, from: u64, days: u64) -> Vec<u64> {
    put(
        s,
        Schedule {
            timezone: Some("Europe/Berlin".into()),
            ..Schedule::new("nightly", "30 2 * * *", "compact")
        },
    );
    // Every ten minutes for `days` days: each slot is run on time.
    let mut t = from;
    while t < from + days * 86_400_000 {
        t += 600_000;
        s.set_now(t);
        s.q.run_schedules().expect("run");
    }
    slots_of(s, "nightly")
}

#[test]
fn a_daily_0230_job_runs_once_on_spring_forward_and_fall_back_days() {
    // 2026-03-28 12:00Z .. 2026-03-31 12:00Z: 29 March has no 02:30 in
    // Berlin (02:00 CET → 03:00 CEST): it runs once, at 03:00.
    let spring = 1_774_699_200_000;
    let s = store_at(spring);
    let slots = daily_0230_berlin_over(&s, spring, 3);
    assert_eq!(
        slots,
        vec![
            1_774_746_000_000, // 29th 03:00 CEST = 01:00Z
            1_774_830_600_000, // 30th 02:30 CEST = 00:30Z
            1_774_917_000_000, // 31st 02:30 CEST
        ],
        "slots {slots:?}"
    );
    // 2026-10-24 12:00Z .. 2026-10-27 12:00Z: 25 October has 02:30 twice
    // (03:00 CEST → 02:00 CET): it runs once, on the first.
    let fall = 1_792_843_200_000;
    let s = store_at(fall);
    let slots = daily_0230_berlin_over(&s, fall, 3);
    assert_eq!(
        slots,
        vec![
            1_792_888_200_000, // 25th 02:30 CEST = 00:30Z
            1_792_978_200_000, // 26th 02:30 CET = 01:30Z
            1_793_064_600_000, // 27th
        ],
        "slots {slots:?}"
    );
}

/// An hourly schedule with `policy`, run at midnight, then a downtime of 3
/// hours and 10 minutes.
fn after_downtime(policy: CatchUp, max: Option<u32>) -> (TestStore, Vec<u64>, ScheduleInfo) {
    let s = store_at(MIDNIGHT);
    put(
        &s,
        Schedule {
            catch_up: policy,
            max_catch_up: max,
            ..Schedule::new("hourly", "0 * * * *", "sync")
        },
    );
    s.set_now(MIDNIGHT + 3 * 3_600_000 + 10 * 60_000);
    s.q.run_schedules().unwrap();
    let slots = slots_of(&s, "hourly");
    let info = s.q.schedule_get("hourly").unwrap();
    (s, slots, info)
}

#[test]
fn each_catch_up_policy_after_three_hours_of_downtime() {
    const H: u64 = 3_600_000;
    // skip: the three missed slots are not run (the latest is 10 min late).
    let (s, slots, info) = after_downtime(CatchUp::Skip, None);
    assert!(slots.is_empty(), "{slots:?}");
    assert_eq!((info.enqueued, info.skipped), (0, 3));
    assert_eq!(info.next_slot, Some(MIDNIGHT + 4 * H));
    s.set_now(MIDNIGHT + 4 * H + 1000);
    s.q.run_schedules().unwrap();
    assert_eq!(slots_of(&s, "hourly"), vec![MIDNIGHT + 4 * H]);

    // one: one job for all three, the latest slot's, saying it stands for two more.
    let (s, slots, info) = after_downtime(CatchUp::One, None);
    assert_eq!(slots, vec![MIDNIGHT + 3 * H]);
    assert_eq!((info.enqueued, info.skipped), (1, 2));
    let job = s.q.get(&info.last_job.unwrap()).unwrap().unwrap();
    assert_eq!(job.schedule.unwrap().missed, 2);
    assert_eq!(CatchUp::default(), CatchUp::One);

    // all: every missed slot, up to the maximum (the latest ones).
    let (_s, slots, info) = after_downtime(CatchUp::All, None);
    assert_eq!(
        slots,
        vec![MIDNIGHT + H, MIDNIGHT + 2 * H, MIDNIGHT + 3 * H]
    );
    assert_eq!((info.enqueued, info.skipped), (3, 0));
    let (_s, slots, info) = after_downtime(CatchUp::All, Some(2));
    assert_eq!(slots, vec![MIDNIGHT + 2 * H, MIDNIGHT + 3 * H]);
    assert_eq!((info.enqueued, info.skipped), (2, 1));
}

#[test]
fn a_clock_stepped_back_then_forward_never_enqueues_a_slot_twice() {
    let s = store_at(MIDNIGHT);
    put(&s, Schedule::new("tick", "every 1m", "tick"));
    for m in 1..=10 {
        s.set_now(MIDNIGHT + m * 60_000);
        s.q.run_schedules().unwrap();
    }
    // An hour back: nothing is due again while the clock catches up.
    for m in (-50i64..=10).map(|m| MIDNIGHT as i64 + m * 60_000) {
        s.set_now(m as u64);
        assert_eq!(s.q.run_schedules().unwrap().enqueued, 0);
    }
    // Forward again: the next slots, once each.
    for m in 11..=20 {
        s.set_now(MIDNIGHT + m * 60_000);
        s.q.run_schedules().unwrap();
    }
    // Then forward by 30 minutes at once: the catch-up policy (one job).
    s.set_now(MIDNIGHT + 50 * 60_000);
    s.q.run_schedules().unwrap();
    let slots = slots_of(&s, "tick");
    let mut want: Vec<u64> = (1..=20).map(|m| MIDNIGHT + m * 60_000).collect();
    want.push(MIDNIGHT + 50 * 60_000);
    assert_eq!(slots, want);
    assert_eq!(s.q.schedule_get("tick").unwrap().skipped, 29);
}

#[test]
fn schedules_and_their_progress_survive_a_reopen() {
    let mut s = store_at(MIDNIGHT);
    put(
        &s,
        Schedule {
            payload: b"p".to_vec(),
            scope: Some(scope(3)),
            priority: Some(7),
            max_attempts: Some(2),
            ..Schedule::new("tick", "every 1m", "tick")
        },
    );
    s.set_now(MIDNIGHT + 5 * 60_000);
    s.q.run_schedules().unwrap();
    let before = s.q.schedule_get("tick").unwrap();
    s.reopen();
    assert_eq!(s.q.schedule_get("tick").unwrap(), before);
    // The same slot is not enqueued again after the reopen.
    assert_eq!(s.q.run_schedules().unwrap().enqueued, 0);
    s.set_now(MIDNIGHT + 6 * 60_000);
    assert_eq!(s.q.run_schedules().unwrap().enqueued, 1);
    let j =
        s.q.lease_next("w", &LeaseOptions::default())
            .unwrap()
            .unwrap();
    assert_eq!(
        (j.scope, j.priority, j.max_attempts, j.payload.as_slice()),
        (scope(3), 7, 2, &b"p"[..])
    );
}

#[test]
fn an_update_keeps_the_cursor_unless_the_spec_changes() {
    let s = store_at(MIDNIGHT);
    put(&s, Schedule::new("t", "every 1m", "a"));
    s.set_now(MIDNIGHT + 3 * 60_000);
    s.q.run_schedules().unwrap();
    // Same spec, another kind: the cursor and the counts stay.
    let i = put(&s, Schedule::new("t", "every 1m", "b"));
    assert_eq!((i.cursor, i.enqueued), (MIDNIGHT + 3 * 60_000, 1));
    assert_eq!(i.last_slot, Some(MIDNIGHT + 3 * 60_000));
    // Another spec: starts from now, last slot forgotten.
    s.set_now(MIDNIGHT + 200_000);
    let i = put(&s, Schedule::new("t", "every 2m", "b"));
    assert_eq!((i.cursor, i.last_slot), (MIDNIGHT + 200_000, None));
    assert_eq!(i.next_slot, Some(MIDNIGHT + 240_000));
    assert_eq!(s.q.schedule_list().unwrap().len(), 1);
}

#[test]
fn pause_resume_and_delete() {
    let s = store_at(MIDNIGHT);
    put(&s, Schedule::new("t", "every 1m", "a"));
    assert!(s.q.schedule_pause("t").unwrap().schedule.paused);
    s.set_now(MIDNIGHT + 10 * 60_000);
    assert_eq!(s.q.run_schedules().unwrap().enqueued, 0);
    // Resumed: the paused slots are not caught up; the next one runs.
    let i = s.q.schedule_resume("t").unwrap();
    assert!(!i.schedule.paused);
    assert_eq!(i.next_slot, Some(MIDNIGHT + 11 * 60_000));
    assert_eq!(s.q.run_schedules().unwrap().enqueued, 0);
    s.set_now(MIDNIGHT + 11 * 60_000);
    assert_eq!(s.q.run_schedules().unwrap().enqueued, 1);
    s.q.schedule_delete("t").unwrap();
    for e in [
        s.q.schedule_get("t").unwrap_err(),
        s.q.schedule_delete("t").unwrap_err(),
        s.q.schedule_pause("t").unwrap_err(),
    ] {
        assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    }
    // Its job stays.
    assert_eq!(slots_of(&s, "t"), vec![MIDNIGHT + 11 * 60_000]);
}

#[test]
fn bad_schedules_are_refused_at_put_never_at_fire_time() {
    let s = store_at(MIDNIGHT);
    let ok = Schedule::new("n", "0 3 * * *", "k");
    let cases: Vec<(&str, Schedule)> = vec![
        (
            "bad cron",
            Schedule {
                spec: "0 25 * * *".into(),
                ..ok.clone()
            },
        ),
        (
            "empty spec",
            Schedule {
                spec: " ".into(),
                ..ok.clone()
            },
        ),
        (
            "unknown zone",
            Schedule {
                timezone: Some("Nowhere/Land".into()),
                ..ok.clone()
            },
        ),
        (
            "zero interval",
            Schedule {
                spec: "every 0s".into(),
                ..ok.clone()
            },
        ),
        (
            "long name",
            Schedule {
                name: "n".repeat(201),
                ..ok.clone()
            },
        ),
        (
            "empty name",
            Schedule {
                name: String::new(),
                ..ok.clone()
            },
        ),
        (
            "bad kind",
            Schedule {
                kind: "Not A Kind!".into(),
                ..ok.clone()
            },
        ),
        (
            "zero attempts",
            Schedule {
                max_attempts: Some(0),
                ..ok.clone()
            },
        ),
        (
            "zero catch-up",
            Schedule {
                max_catch_up: Some(0),
                ..ok.clone()
            },
        ),
        (
            "zero expiry",
            Schedule {
                expires_in: Some(Duration::ZERO),
                ..ok.clone()
            },
        ),
        (
            "never fires",
            Schedule {
                spec: "0 0 30 2 *".into(),
                ..ok.clone()
            },
        ),
        (
            "system kind",
            Schedule {
                kind: "system:x".into(),
                scope: Some(scope(1)),
                ..ok.clone()
            },
        ),
    ];
    for (what, sched) in cases {
        let Err(e) = s.q.schedule_put(&sched) else {
            panic!("{what}: accepted")
        };
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{what}: {e}");
    }
    // A payload over this store's limit.
    let small = TestStore::with_config(telha_jobs::Config {
        max_payload_bytes: 1024,
        ..test_config()
    });
    let big = Schedule {
        payload: vec![0; 2048],
        ..ok.clone()
    };
    let Err(e) = small.q.schedule_put(&big) else {
        panic!("an oversized payload was accepted")
    };
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(s.q.schedule_list().unwrap().is_empty());
    assert_eq!(
        s.q.schedule_get("").unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
}

#[test]
fn a_scheduled_job_expires_relative_to_its_slot() {
    let s = store_at(MIDNIGHT);
    put(
        &s,
        Schedule {
            expires_in: Some(Duration::from_secs(90 * 60)),
            catch_up: CatchUp::All,
            ..Schedule::new("h", "0 * * * *", "k")
        },
    );
    // At 04:20 (jobs expire 90 minutes after their slot): the slots of 1
    // and 2 o'clock expired before they could be enqueued; 3 and 4
    // o'clock's have not.
    s.set_now(MIDNIGHT + 4 * 3_600_000 + 20 * 60_000);
    let r = s.q.run_schedules().unwrap();
    assert_eq!((r.enqueued, r.skipped), (2, 2), "{r:?}");
}

#[test]
fn the_scheduler_thread_fires_on_the_real_clock() {
    let d = tempfile::tempdir().unwrap();
    let cfg = telha_jobs::Config {
        reaper_interval: Duration::from_secs(30),
        ..telha_jobs::Config::default()
    };
    let q = Queue::open(d.path(), cfg).unwrap();
    q.schedule_put(&Schedule::new("fast", "every 1s", "tick"))
        .unwrap();
    let start = Instant::now();
    while q.schedule_get("fast").unwrap().enqueued < 2 {
        assert!(start.elapsed() < Duration::from_secs(10), "no slot fired");
        std::thread::sleep(Duration::from_millis(50));
    }
    let info = q.schedule_get("fast").unwrap();
    assert!(info.last_fired_at.unwrap() - info.last_slot.unwrap() < 1000);
    assert!(q
        .metrics()
        .unwrap()
        .contains("telha_jobs_schedule_enqueued_total{schedule=\"fast\"}"));
    q.close();
}

#[test]
fn a_schedules_jobs_carry_its_tags_and_metadata_through_a_reopen() {
    let mut s = store_at(MIDNIGHT);
    let info = put(
        &s,
        Schedule::new("tagged", "0 * * * *", "report")
            .tag("nightly")
            .tag("team-a")
            .tag("nightly")
            .meta("owner", "ops"),
    );
    assert_eq!(
        info.schedule.tags,
        ["nightly", "team-a"],
        "duplicates removed"
    );
    assert_eq!(info.schedule.metadata["owner"], "ops");
    s.set_now(MIDNIGHT + 3_600_000);
    assert_eq!(s.q.run_schedules().unwrap().enqueued, 1);
    s.reopen();
    let got = s.q.schedule_get("tagged").unwrap();
    assert_eq!(got.schedule.tags, ["nightly", "team-a"]);
    assert_eq!(got.schedule.metadata["owner"], "ops");
    s.set_now(MIDNIGHT + 2 * 3_600_000);
    assert_eq!(s.q.run_schedules().unwrap().enqueued, 1);
    // Both slots' jobs are listed under each tag, and carry the metadata.
    for tag in ["nightly", "team-a"] {
        let page =
            s.q.list(&ListQuery {
                tag: Some(tag.into()),
                ..ListQuery::default()
            })
            .unwrap();
        let slots: Vec<u64> = page
            .jobs
            .iter()
            .map(|j| j.schedule.as_ref().unwrap().slot)
            .collect();
        assert_eq!(slots, [MIDNIGHT + 3_600_000, MIDNIGHT + 2 * 3_600_000]);
        assert_eq!(s.q.count_tag(tag, None).unwrap().pending, 2);
    }
    let j = s.must_lease("w");
    assert_eq!(j.tags, ["nightly", "team-a"]);
    assert_eq!(j.metadata["owner"], "ops");
    // An update without tags: the next slot's job carries none.
    put(&s, Schedule::new("tagged", "0 * * * *", "report"));
    s.set_now(MIDNIGHT + 3 * 3_600_000);
    assert_eq!(s.q.run_schedules().unwrap().enqueued, 1);
    assert_eq!(s.q.count_tag("nightly", None).unwrap().total(), 2);
    assert_consistent(&s.q);
}

#[test]
fn bad_template_tags_and_metadata_are_refused_at_put_and_write_nothing() {
    let s = store_at(MIDNIGHT);
    let ok = || Schedule::new("t", "0 * * * *", "k");
    let seventeen: Vec<String> = (0..17).map(|i| format!("t{i}")).collect();
    let cases: Vec<(Schedule, &str)> = vec![
        (
            Schedule {
                tags: seventeen,
                ..ok()
            },
            "at most 16 tags",
        ),
        (ok().tag("x".repeat(65)), "1 to 64 bytes"),
        (ok().tag("a\u{1}b"), "control character"),
        (ok().meta("k", "v".repeat(5 * 1024)), "limit of 4096 bytes"),
        (ok().meta("a\nb", "v"), "metadata key"),
    ];
    for (sched, needle) in cases {
        let e = expect_err(s.q.schedule_put(&sched), ErrorKind::InvalidArgument);
        assert!(e.to_string().contains(needle), "{needle}: {e}");
    }
    assert!(s.q.schedule_list().unwrap().is_empty());
    s.set_now(MIDNIGHT + 3_600_000);
    assert_eq!(s.q.run_schedules().unwrap().enqueued, 0);
}
