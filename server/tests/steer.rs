//! Promote, reschedule and set_priority through `RemoteQueue` against an
//! in-process server: the embedded queue sees each move; the errors keep
//! their kinds on the wire; a priority past 255 on the raw wire is
//! INVALID_ARGUMENT with nothing written.

mod common;

use std::time::Duration;

use telha_jobs::{EnqueueOptions, ErrorKind, JobId, JobStore, LeaseOptions, State};
use telha_jobs_proto::v1 as pb;
use telha_jobs_proto::v1::jobs_client::JobsClient;

#[test]
fn steering_round_trips_and_errors_keep_their_kinds() {
    let s = common::served();
    let c = s.client();
    let hour = EnqueueOptions::default().delay(Duration::from_secs(3600));
    let a = c.enqueue("embed", b"a", hour.clone()).unwrap().id;
    let b = c.enqueue("embed", b"b", hour).unwrap().id;

    c.set_priority(&b, 0).unwrap();
    c.promote(&b).unwrap();
    let info = s.queue.get(&b).unwrap().unwrap();
    assert_eq!((info.state, info.priority), (State::Pending, 0));
    assert!(info.events.iter().any(|e| e.transition == "promoted"));
    // A repeat (as a retried call) writes nothing and answers Ok.
    c.promote(&b).unwrap();
    let again = s.queue.get(&b).unwrap().unwrap();
    assert_eq!(again.events.len(), info.events.len());

    let soon = info.state_ts - 1;
    c.reschedule(&a, soon).unwrap();
    assert_eq!(s.queue.get(&a).unwrap().unwrap().state_ts, soon);
    let first = c
        .lease_next("w", &LeaseOptions::default())
        .unwrap()
        .unwrap();
    assert_eq!(first.id, b, "priority 0 first");

    let err = |r: telha_jobs::Result<()>| r.unwrap_err().kind();
    assert_eq!(err(c.promote(&b)), ErrorKind::WrongState);
    assert_eq!(err(c.set_priority(&b, 1)), ErrorKind::WrongState);
    let none = JobId::from_bytes([7; 16]);
    assert_eq!(err(c.promote(&none)), ErrorKind::NotFound);
    assert_eq!(
        err(c.reschedule(&a, telha_jobs::limits::MAX_INSTANT_MS + 1)),
        ErrorKind::InvalidArgument
    );

    let before = s.queue.get(&a).unwrap().unwrap();
    let code = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let mut raw = JobsClient::connect(s.url.clone()).await.unwrap();
            raw.set_priority(pb::SetPriorityRequest {
                id: a.as_bytes().to_vec(),
                priority: 256,
            })
            .await
            .unwrap_err()
        });
    assert_eq!(code.code(), tonic::Code::InvalidArgument, "{code:?}");
    assert!(code.message().contains("0 to 255"), "{code:?}");
    assert_eq!(s.queue.get(&a).unwrap().unwrap(), before, "nothing written");
    assert_consistent(&s.queue);
}

fn assert_consistent(q: &telha_jobs::Queue) {
    let r = q.check().unwrap();
    assert!(r.problems.is_empty(), "{:?}", r.problems);
}
