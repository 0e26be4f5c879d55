//! Schedules over gRPC: every schedule RPC through `RemoteQueue` against an
//! in-process server on a manual clock, answers compared with the embedded
//! queue's; typed errors arrive as the same kinds; malformed wire input is
//! INVALID_ARGUMENT, never a crash.

mod common;

use std::sync::Arc;
use std::time::Duration;

use telha_jobs::schedule::next_times;
use telha_jobs::{
    CatchUp, Encoding, ErrorKind, JobStore, LeaseOptions, ListQuery, ManualClock, Queue, Schedule,
    ScheduleRef, Scope,
};
use telha_jobs_client::{ConnectOptions, RemoteQueue};
use telha_jobs_proto::v1 as pb;
use telha_jobs_proto::v1::jobs_client::JobsClient;
use telha_jobs_server::{serve, ServeOptions};
use tonic::Code;

/// A minute boundary, so an every-1m schedule's slots are T0 + k minutes.
const T0: u64 = 1_800_000_000_000;
const MIN: Duration = Duration::from_secs(60);

fn served_at(start: u64, token: Option<&str>) -> (common::Served, Arc<ManualClock>) {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(start));
    let queue = Queue::open_with_clock(dir.path(), common::config(), clock.clone()).unwrap();
    let server = serve(
        queue.clone(),
        ServeOptions {
            listen: "127.0.0.1:0".into(),
            token: token.map(str::to_string),
            ..ServeOptions::default()
        },
    )
    .unwrap();
    let url = server.url();
    let s = common::Served {
        queue,
        server: Some(server),
        url,
        dir,
    };
    (s, clock)
}

fn full(name: &str) -> Schedule {
    Schedule {
        timezone: Some("Europe/Lisbon".into()),
        payload: vec![0x01, 0x91, 0x01],
        encoding: Encoding::Value,
        scope: Some(Scope::from_bytes([4; 16])),
        priority: Some(9),
        max_attempts: Some(3),
        expires_in: Some(Duration::from_secs(600)),
        catch_up: CatchUp::All,
        max_catch_up: Some(7),
        ..Schedule::new(name, "0 3 * * *", "report")
            .tag("nightly")
            .tag("team-a")
            .meta("owner", "ops")
    }
}

#[test]
fn schedules_round_trip_through_remote_queue_as_the_embedded_queue_answers() {
    let (s, _clock) = served_at(T0, None);
    let c = s.client();

    let put = c.schedule_put(&full("nightly")).unwrap();
    assert_eq!(
        put.schedule,
        full("nightly"),
        "every field crosses the wire"
    );
    assert_eq!(put, s.queue.schedule_get("nightly").unwrap());
    assert!(put.next_slot.is_some());
    assert_eq!(c.schedule_get("nightly").unwrap(), put);

    // Replace keeps the name's progress; the list is by name.
    c.schedule_put(&Schedule::new("b-every", "every 5m", "tick"))
        .unwrap();
    c.schedule_put(&Schedule::new("a-every", "every 1m", "tick"))
        .unwrap();
    let names: Vec<String> = c
        .schedule_list()
        .unwrap()
        .into_iter()
        .map(|i| i.schedule.name)
        .collect();
    assert_eq!(names, ["a-every", "b-every", "nightly"]);
    assert_eq!(c.schedule_list().unwrap(), s.queue.schedule_list().unwrap());

    let paused = c.schedule_pause("nightly").unwrap();
    assert!(paused.schedule.paused);
    assert_eq!(paused, s.queue.schedule_get("nightly").unwrap());
    let resumed = c.schedule_resume("nightly").unwrap();
    assert!(!resumed.schedule.paused);
    assert!(resumed.next_slot.is_some());

    c.schedule_delete("b-every").unwrap();
    let e = c.schedule_get("b-every").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert_eq!(c.schedule_list().unwrap().len(), 2);

    let stats = s.server.as_ref().unwrap().stats();
    assert_eq!(stats.rpcs("SchedulePut", "OK"), 3);
    assert_eq!(stats.rpcs("ScheduleGet", "NOT_FOUND"), 1);
}

#[test]
fn run_schedules_enqueues_each_slot_once_and_jobs_carry_their_schedule() {
    let (s, clock) = served_at(T0, None);
    let c = s.client();
    c.schedule_put(
        &Schedule::new("tick", "every 1m", "tick")
            .tag("ticks")
            .meta("k", "v"),
    )
    .unwrap();
    c.schedule_put(&Schedule::new("other", "every 1h", "other"))
        .unwrap();
    assert_eq!(c.run_schedules().unwrap().enqueued, 0, "nothing is due yet");

    clock.advance(MIN);
    let r = c.run_schedules().unwrap();
    assert_eq!((r.schedules, r.enqueued, r.skipped, r.failed), (1, 1, 0, 0));
    assert_eq!(c.run_schedules().unwrap().enqueued, 0, "a slot runs once");
    let info = c.schedule_get("tick").unwrap();
    assert_eq!(info.enqueued, 1);
    assert_eq!(info.last_slot, Some(T0 + 60_000));

    // The leased job and its JobInfo name the schedule and the slot.
    let job = c
        .lease_next("w", &LeaseOptions::default())
        .unwrap()
        .unwrap();
    let want = ScheduleRef {
        name: "tick".into(),
        slot: T0 + 60_000,
        missed: 0,
    };
    assert_eq!(job.schedule.as_ref(), Some(&want));
    assert_eq!(Some(job.id), info.last_job);
    // The template's tags and metadata are on the job, and in the index.
    assert_eq!(
        (job.tags.as_slice(), job.metadata["k"].as_str()),
        (&["ticks".to_string()][..], "v")
    );
    assert_eq!(c.count_tag("ticks", None).unwrap().leased, 1);
    let got = c.get(&job.id).unwrap().unwrap();
    assert_eq!(got.schedule.as_ref(), Some(&want));
    assert_eq!(got, s.queue.get(&job.id).unwrap().unwrap());
    assert_eq!(
        got.idempotency_key.as_deref(),
        Some(format!("schedule:tick:{}", T0 + 60_000).as_str())
    );

    // Five minutes of downtime: the default policy runs one job for them.
    clock.advance(5 * MIN);
    let r = c.run_schedules().unwrap();
    assert_eq!(r.enqueued, 1, "{r:?}");
    let info = c.schedule_get("tick").unwrap();
    let late = c.get(&info.last_job.unwrap()).unwrap().unwrap();
    let missed = late.schedule.as_ref().unwrap().missed;
    assert!(missed > 0, "{late:?}");
    assert_eq!(late, s.queue.get(&late.id).unwrap().unwrap());

    // List by schedule.
    let by = |name: &str| ListQuery {
        schedule: Some(name.into()),
        limit: 100,
        ..ListQuery::default()
    };
    let page = c.list(&by("tick")).unwrap();
    assert_eq!(page.jobs.len(), 2);
    assert!(page
        .jobs
        .iter()
        .all(|j| j.schedule.as_ref().unwrap().name == "tick"));
    assert_eq!(page, s.queue.list(&by("tick")).unwrap());
    assert!(c.list(&by("other")).unwrap().jobs.is_empty());
    let e = c.list(&by("")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
}

#[test]
fn bad_schedules_and_unknown_names_arrive_as_the_embedded_queues_errors() {
    let (s, _clock) = served_at(T0, None);
    let c = s.client();
    let bad = [
        Schedule::new("x", "61 * * * *", "k"),
        Schedule::new("x", "not a spec", "k"),
        Schedule {
            timezone: Some("Mars/Olympus".into()),
            ..Schedule::new("x", "0 3 * * *", "k")
        },
        Schedule {
            timezone: Some("UTC".into()),
            ..Schedule::new("x", "every 5m", "k")
        },
        Schedule::new("x", "every 0s", "k"),
        Schedule::new("x", "every 500ms", "k"),
        Schedule::new("", "every 5m", "k"),
        Schedule::new("n".repeat(201), "every 5m", "k"),
        Schedule::new("x", "every 5m", "Bad Kind"),
        Schedule {
            max_attempts: Some(0),
            ..Schedule::new("x", "every 5m", "k")
        },
        Schedule {
            max_catch_up: Some(0),
            ..Schedule::new("x", "every 5m", "k")
        },
        Schedule {
            max_catch_up: Some(10_001),
            ..Schedule::new("x", "every 5m", "k")
        },
        Schedule {
            anchor: Some(5),
            ..Schedule::new("x", "0 3 * * *", "k")
        },
    ];
    for b in &bad {
        let remote = c.schedule_put(b).unwrap_err();
        let local = s.queue.schedule_put(b).unwrap_err();
        assert_eq!(remote.kind(), ErrorKind::InvalidArgument, "{b:?}: {remote}");
        assert_eq!(remote.to_string(), local.to_string(), "{b:?}");
    }
    assert!(c.schedule_list().unwrap().is_empty(), "nothing was stored");

    for name in ["nope", ""] {
        let answers = [
            c.schedule_get(name).map(|_| ()),
            c.schedule_pause(name).map(|_| ()),
            c.schedule_resume(name).map(|_| ()),
            c.schedule_delete(name),
        ];
        let local = s.queue.schedule_get(name).unwrap_err();
        for a in answers {
            let e = a.unwrap_err();
            assert_eq!(e.kind(), local.kind(), "{name:?}: {e}");
        }
    }
    assert_eq!(
        c.schedule_get("nope").unwrap_err().kind(),
        ErrorKind::NotFound
    );
}

#[test]
fn next_times_over_the_wire_are_the_cores() {
    let (s, _clock) = served_at(T0, None);
    let c = s.client();
    let after = 1_774_656_000_000; // 2026-03-28T00:00:00Z, the day before DST
    for (spec, tz, anchor) in [
        ("0 3 * * *", Some("Europe/Lisbon"), None),
        ("*/10 * * * * *", None, None),
        ("@daily", Some("America/New_York"), None),
        ("every 90m", None, Some(after + 1_000)),
    ] {
        let remote = c
            .schedule_next_times(spec, tz, anchor, Some(after), 10)
            .unwrap();
        assert_eq!(remote, next_times(spec, tz, anchor, after, 10).unwrap());
        assert_eq!(remote.len(), 10);
    }
    // Without `after`, the server's now (the real clock: next_times needs no store).
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let t = c
        .schedule_next_times("every 1h", None, None, None, 1)
        .unwrap();
    assert!(t[0] > now && t[0] <= now + 3_600_000, "{t:?}");
    for (spec, tz, n) in [
        ("0 3 * * *", Some("Nowhere/Land"), 5),
        ("every 5m", Some("UTC"), 5),
        ("0 3 * * *", None, 1_001),
    ] {
        let e = c
            .schedule_next_times(spec, tz, None, Some(after), n)
            .unwrap_err();
        let local = next_times(spec, tz, None, after, n).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        assert_eq!(e.to_string(), local.to_string());
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn malformed_schedule_requests_are_invalid_argument_and_the_server_stays_up() {
    let (s, _clock) = served_at(T0, None);
    let good = pb::Schedule {
        name: "x".into(),
        spec: "every 5m".into(),
        kind: "k".into(),
        ..Default::default()
    };
    rt().block_on(async {
        let mut c = JobsClient::connect(s.url.clone()).await.unwrap();
        let put = |sc: Option<pb::Schedule>| pb::SchedulePutRequest { schedule: sc };
        let checks: Vec<(&str, Result<(), tonic::Status>)> = vec![
            (
                "put without a schedule",
                c.schedule_put(put(None)).await.map(|_| ()),
            ),
            (
                "catch_up 99",
                c.schedule_put(put(Some(pb::Schedule {
                    catch_up: 99,
                    ..good.clone()
                })))
                .await
                .map(|_| ()),
            ),
            (
                "catch_up -1",
                c.schedule_put(put(Some(pb::Schedule {
                    catch_up: -1,
                    ..good.clone()
                })))
                .await
                .map(|_| ()),
            ),
            (
                "3-byte scope",
                c.schedule_put(put(Some(pb::Schedule {
                    scope: Some(vec![1, 2, 3]),
                    ..good.clone()
                })))
                .await
                .map(|_| ()),
            ),
            (
                "priority 300",
                c.schedule_put(put(Some(pb::Schedule {
                    priority: Some(300),
                    ..good.clone()
                })))
                .await
                .map(|_| ()),
            ),
            (
                "expires_in u64::MAX",
                c.schedule_put(put(Some(pb::Schedule {
                    expires_in_ms: Some(u64::MAX),
                    ..good.clone()
                })))
                .await
                .map(|_| ()),
            ),
            (
                "anchor u64::MAX",
                c.schedule_put(put(Some(pb::Schedule {
                    anchor_ms: Some(u64::MAX),
                    ..good.clone()
                })))
                .await
                .map(|_| ()),
            ),
            (
                "next_times n u32::MAX",
                c.schedule_next_times(pb::ScheduleNextTimesRequest {
                    spec: "every 5m".into(),
                    n: u32::MAX,
                    ..Default::default()
                })
                .await
                .map(|_| ()),
            ),
            (
                "next_times after u64::MAX",
                c.schedule_next_times(pb::ScheduleNextTimesRequest {
                    spec: "every 5m".into(),
                    after_ms: Some(u64::MAX),
                    n: 1,
                    ..Default::default()
                })
                .await
                .map(|_| ()),
            ),
            (
                "list by an empty schedule name",
                c.list(pb::ListRequest {
                    limit: 10,
                    schedule: Some(String::new()),
                    ..Default::default()
                })
                .await
                .map(|_| ()),
            ),
        ];
        for (what, r) in checks {
            let st = r.expect_err(what);
            assert_eq!(st.code(), Code::InvalidArgument, "{what}: {st:?}");
        }
        // Unspecified catch-up is the default policy; the server is up.
        let r = c
            .schedule_put(put(Some(good.clone())))
            .await
            .unwrap()
            .into_inner();
        let info = r.schedule.unwrap().schedule.unwrap();
        assert_eq!(info.catch_up, pb::CatchUp::One as i32);
        let all = c
            .schedule_list(pb::ScheduleListRequest {})
            .await
            .unwrap()
            .into_inner();
        assert_eq!(all.schedules.len(), 1);
    });
}

#[test]
fn schedule_rpcs_need_the_token_like_every_rpc() {
    let (s, _clock) = served_at(T0, Some("s3cret"));
    let anon = s.client();
    for e in [
        anon.schedule_list().map(|_| ()).unwrap_err(),
        anon.schedule_put(&Schedule::new("x", "every 5m", "k"))
            .map(|_| ())
            .unwrap_err(),
        anon.run_schedules().map(|_| ()).unwrap_err(),
        anon.schedule_next_times("every 5m", None, None, None, 1)
            .map(|_| ())
            .unwrap_err(),
    ] {
        assert!(e.to_string().contains("unauthenticated"), "{e}");
    }
    let ok = RemoteQueue::connect(
        &s.url,
        ConnectOptions {
            token: Some("s3cret".into()),
            ..ConnectOptions::default()
        },
    )
    .unwrap();
    ok.schedule_put(&Schedule::new("x", "every 5m", "k"))
        .unwrap();
    assert_eq!(ok.schedule_list().unwrap().len(), 1);
}
