use super::*;

fn ev(seq: u64) -> JobEvent {
    JobEvent {
        seq,
        ts: 0,
        id: JobId::from_bytes([1; 16]),
        kind: "k".into(),
        scope: Scope::SYSTEM,
        event: Event::Enqueued,
        attempt: 0,
        worker_id: None,
        progress: None,
        missed: 0,
    }
}

#[test]
fn a_full_buffer_drops_and_the_next_event_counts_the_gap() {
    let (sub, sink) = Subscription::channel(SubscribeOptions {
        buffer: 2,
        ..Default::default()
    })
    .unwrap();
    for s in 1..=5 {
        assert!(sink.push(ev(s)));
    }
    assert_eq!(sub.recv(Some(Duration::ZERO)).unwrap().unwrap().seq, 1);
    assert_eq!(sub.try_recv().unwrap().unwrap().seq, 2);
    assert_eq!(sub.try_recv().unwrap(), None);
    sink.push(ev(6));
    let six = sub.try_recv().unwrap().unwrap();
    assert_eq!((six.seq, six.missed), (6, 3));
    sink.end(None);
    assert!(matches!(sub.recv(None), Err(Error::Closed)));
    assert!(!sink.push(ev(7)));
}

#[test]
fn a_lost_feed_ends_with_storage_after_the_buffer() {
    let (sub, sink) = Subscription::channel(SubscribeOptions::default()).unwrap();
    sink.push(ev(1));
    sink.end(Some("connection reset".into()));
    let got: Vec<_> = (&sub).collect();
    assert_eq!(got.len(), 2);
    assert!(matches!(&got[1], Err(Error::Storage(m)) if m.contains("reset")));
    assert!((&sub).next().is_none());
}

#[test]
fn a_dropped_subscription_refuses_events() {
    let (sub, sink) = Subscription::channel(SubscribeOptions::default()).unwrap();
    drop(sub);
    assert!(sink.is_gone());
    assert!(!sink.push(ev(1)));
}

#[test]
fn buffer_bounds_are_checked() {
    for b in [0, MAX_EVENT_BUFFER + 1] {
        let o = SubscribeOptions {
            buffer: b,
            ..Default::default()
        };
        assert!(matches!(
            Subscription::channel(o),
            Err(Error::InvalidArgument(_))
        ));
    }
}

#[test]
fn a_watch_fires_once_runs_callbacks_and_cancel_ends_a_wait() {
    let (w, sink) = JobWatch::channel(JobId::from_bytes([2; 16]));
    assert!(!w.wait(Some(Duration::from_millis(5))));
    let (tx, rx) = std::sync::mpsc::channel();
    w.on_done(Box::new(move || tx.send(1).unwrap()));
    let s2 = sink.clone();
    let t = std::thread::spawn(move || s2.fire(None));
    assert!(w.wait(None));
    t.join().unwrap();
    assert_eq!(rx.recv().unwrap(), 1);
    sink.fire(None);
    assert!(rx.try_recv().is_err());
    let (w2, _s) = JobWatch::channel(JobId::from_bytes([3; 16]));
    w2.cancel();
    assert!(!w2.wait(None));
}

#[test]
fn a_subscription_as_a_channel_forwards_in_order_and_ends_with_it() {
    let (sub, sink) = Subscription::channel(SubscribeOptions::default()).unwrap();
    let rx = sub.into_channel(2).unwrap();
    for i in 1..=5 {
        assert!(sink.push(ev(i)));
    }
    let got: Vec<u64> = (0..5)
        .map(|_| {
            rx.recv_timeout(Duration::from_secs(5))
                .unwrap()
                .unwrap()
                .seq
        })
        .collect();
    assert_eq!(got, [1, 2, 3, 4, 5]);
    sink.end(Some("connection lost".into()));
    let last = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(last.unwrap_err().kind(), crate::ErrorKind::Storage);
    assert!(
        rx.recv_timeout(Duration::from_secs(5)).is_err(),
        "then it ends"
    );
}

#[test]
fn a_dropped_event_passes_on_the_count_it_carried() {
    // A remote feed's events carry the server's `missed`; dropping one
    // here must not lose that count.
    let (sub, sink) = Subscription::channel(SubscribeOptions {
        buffer: 1,
        ..Default::default()
    })
    .unwrap();
    assert!(sink.push(ev(1)));
    let mut gap = ev(10);
    gap.missed = 8; // the server missed 2..=9
    assert!(sink.push(gap)); // dropped here: full
    assert_eq!(sub.try_recv().unwrap().unwrap().seq, 1);
    let next = ev(11);
    assert!(sink.push(next));
    let got = sub.try_recv().unwrap().unwrap();
    assert_eq!((got.seq, got.missed), (11, 9), "8 there + 1 here");
}
