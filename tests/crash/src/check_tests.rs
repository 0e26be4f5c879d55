//! The checker's own tests: a true history passes, each violation is caught.

use super::*;
use telha_jobs::{Config, EnqueueOptions, LeaseOptions, PauseTarget};

fn rec(tag: char, t_us: u64, id: &JobId, generation: u64, extra: &str) -> Record {
    Record {
        tag,
        t_us,
        id: id.to_string(),
        generation,
        extra: extra.to_string(),
    }
}

fn failed(out: &[Outcome], name_part: &str) -> bool {
    out.iter()
        .any(|o| o.name.contains(name_part) && !o.failures.is_empty())
}

#[test]
fn a_true_history_passes_and_each_violation_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let q = Queue::open(dir.path(), Config::default()).unwrap();
    let a = q
        .enqueue("embed", b"a", EnqueueOptions::default())
        .unwrap()
        .id;
    let job = q
        .lease_next("w", &LeaseOptions::default())
        .unwrap()
        .unwrap();
    q.complete(&job.token(), None).unwrap();

    let mut h = History::default();
    let t = crate::log::now_us();
    let deadline = job.deadline.to_string();
    h.add(
        1,
        vec![
            rec('E', t, &a, 0, "new"),
            rec('L', t + 1, &a, 1, &deadline),
            rec('S', t + 2, &a, 1, "complete"),
            rec('C', t + 3, &a, 1, ""),
        ],
        0,
    );
    let out = run(&q, &h);
    assert!(
        out.iter().all(|o| o.failures.is_empty()),
        "{:?}",
        out.iter()
            .flat_map(|o| o.failures.clone())
            .collect::<Vec<_>>()
    );

    // An enqueue the store never saw.
    let ghost: JobId = "01900000-0000-7000-8000-000000000001".parse().unwrap();
    let mut h2 = History::default();
    h2.add(1, vec![rec('E', t, &ghost, 0, "new")], 0);
    assert!(failed(&run(&q, &h2), "enqueue lost"));

    // A second lease acknowledged before the first one's deadline, with
    // no settle of the first begun before it.
    let mut h3 = History::default();
    h3.add(
        1,
        vec![
            rec('L', t, &a, 1, &(t / 1000 + 60_000).to_string()),
            rec('L', t + 5, &a, 2, "0"),
        ],
        0,
    );
    assert!(failed(&run(&q, &h3), "leased twice"));

    // The same generation acknowledged twice.
    let mut h4 = History::default();
    h4.add(1, vec![rec('L', t, &a, 1, "0")], 0);
    h4.add(2, vec![rec('L', t + 9, &a, 1, "0")], 0);
    assert!(failed(&run(&q, &h4), "leased twice"));

    // A completion the store does not show (here: under another generation).
    let mut h5 = History::default();
    h5.add(1, vec![rec('C', t, &a, 7, "")], 0);
    assert!(failed(&run(&q, &h5), "completion"));
}

#[test]
fn job_control_violations_are_caught() {
    let dir = tempfile::tempdir().unwrap();
    let q = Queue::open(dir.path(), Config::default()).unwrap();
    let enq = |q: &Queue| {
        q.enqueue("embed", b"x", EnqueueOptions::default())
            .unwrap()
            .id
    };
    let lease = |q: &Queue| {
        q.lease_next("w", &LeaseOptions::default())
            .unwrap()
            .unwrap()
    };
    let t = crate::log::now_us();
    // A leased job with a cancel request, a snoozed one, a cancelled one,
    // a deleted one, and the kind paused.
    let (p, p2) = (enq(&q), enq(&q));
    let held = lease(&q);
    assert_eq!(held.id, p, "the oldest job is leased first");
    q.cancel(&p, "stop").unwrap();
    let snoozer = lease(&q);
    assert_eq!(snoozer.id, p2);
    q.snooze(&snoozer.token(), std::time::Duration::from_secs(60))
        .unwrap();
    let c = enq(&q);
    q.cancel(&c, "stop").unwrap();
    let gone = enq(&q);
    q.delete(&gone).unwrap();
    let embed = PauseTarget::Kind("embed".parse().unwrap());
    q.pause(&embed).unwrap();

    let (g1, g2) = (held.generation, snoozer.generation);
    let label = "kind:embed".to_string();
    let pause = |tag, t_us, extra: &str| Record {
        tag,
        t_us,
        id: label.clone(),
        generation: 0,
        extra: extra.to_string(),
    };
    let truth = vec![
        rec('E', t, &p, 0, "new"),
        rec('E', t, &p2, 0, "new"),
        rec('E', t, &c, 0, "new"),
        rec('E', t, &gone, 0, "new"),
        rec('L', t + 1, &p, g1, "0 w 0"),
        rec('I', t + 2, &p, 0, "cancel"),
        rec('K', t + 3, &p, 0, "requested"),
        rec('L', t + 4, &p2, g2, "0 w 0"),
        rec('S', t + 5, &p2, g2, "snooze"),
        rec('Z', t + 6, &p2, g2, ""),
        rec('I', t + 7, &c, 0, "cancel"),
        rec('K', t + 8, &c, 0, "cancelled"),
        rec('I', t + 9, &gone, 0, "delete"),
        rec('W', t + 10, &gone, 0, ""),
        pause('I', t + 11, "pause"),
        pause('H', t + 12, "changed"),
    ];
    let with = |extra: Vec<Record>| {
        let mut h = History::default();
        h.add(1, truth.iter().cloned().chain(extra).collect(), 0);
        run(&q, &h)
    };
    let out = with(vec![]);
    assert!(
        out.iter().all(|o| o.failures.is_empty()),
        "{:?}",
        out.iter()
            .flat_map(|o| o.failures.clone())
            .collect::<Vec<_>>()
    );
    // A cancel acknowledged as done on a job that is pending (snoozed).
    assert!(failed(
        &with(vec![rec('K', t + 20, &p2, 0, "cancelled")]),
        "cancel holds"
    ));
    // A settle answered cancelled for a job that is still leased.
    assert!(failed(
        &with(vec![rec('N', t + 20, &p, g1, "complete")]),
        "cancel holds"
    ));
    // A delete acknowledged for a job that is still there.
    assert!(failed(
        &with(vec![rec('W', t + 20, &c, 0, "")]),
        "delete's job is gone"
    ));
    // A snooze that changed the attempts (the lease said 1 before it).
    let mut h = History::default();
    let mut v = truth.clone();
    v[7] = rec('L', t + 4, &p2, g2, "0 w 1");
    h.add(1, v, 0);
    assert!(failed(&run(&q, &h), "snoozed job is pending"));
    // A resume acknowledged after the pause, but embed is still paused.
    assert!(failed(
        &with(vec![pause('U', t + 20, "changed")]),
        "pause or resume survives"
    ));
    // A resume begun and not acknowledged: either answer is right.
    assert!(!failed(
        &with(vec![pause('I', t + 20, "resume")]),
        "pause or resume survives"
    ));
}
