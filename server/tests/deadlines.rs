//! Issue 48: every client call ends by its deadline whatever the peer does.
//! A listener that accepts and never answers, and a server behind a proxy
//! that stops forwarding (what a paused or partitioned server looks like:
//! the connection stays up, the bytes sit in the kernel's buffers). The
//! upper bounds checked are the contract under test (deadline plus
//! `SLACK`, generous for a loaded 2-core machine).

mod common;

use std::io::{ErrorKind as IoKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use telha_jobs::{EnqueueOptions, Error, ErrorKind, JobStore, LeaseOptions, SubscribeOptions};
use telha_jobs_client::{ConnectOptions, RemoteQueue};

const TIMEOUT: Duration = Duration::from_secs(1);
const SLACK: Duration = Duration::from_secs(1);

fn options() -> ConnectOptions {
    ConnectOptions::default().with_timeout(TIMEOUT)
}

/// `f` fails with `Storage` within `limit` + [`SLACK`]; its error.
fn fails_within<T: std::fmt::Debug>(
    what: &str,
    limit: Duration,
    f: impl FnOnce() -> telha_jobs::Result<T>,
) -> Error {
    let start = Instant::now();
    let e = f().expect_err(what);
    let took = start.elapsed();
    println!("{what}: {e} after {took:?}");
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{what}: {e}");
    assert!(
        took <= limit + SLACK,
        "{what}: {took:?} for a {limit:?} deadline: {e}"
    );
    e
}

/// A TCP proxy to `upstream` that can stop forwarding (both ways, every
/// connection, new ones too) and start again.
struct Proxy {
    url: String,
    frozen: Arc<AtomicBool>,
    done: Arc<AtomicBool>,
}

impl Proxy {
    fn new(upstream: std::net::SocketAddr) -> Proxy {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", l.local_addr().unwrap());
        let frozen = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicBool::new(false));
        let (f, d) = (frozen.clone(), done.clone());
        l.set_nonblocking(true).unwrap();
        std::thread::spawn(move || {
            while !d.load(Ordering::SeqCst) {
                match l.accept() {
                    Ok((down, _)) => {
                        down.set_nonblocking(false).unwrap();
                        let up = TcpStream::connect(upstream).unwrap();
                        for (from, to) in [
                            (down.try_clone().unwrap(), up.try_clone().unwrap()),
                            (up, down),
                        ] {
                            let (f, d) = (f.clone(), d.clone());
                            std::thread::spawn(move || pump(from, to, &f, &d));
                        }
                    }
                    Err(e) if e.kind() == IoKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(5))
                    }
                    Err(_) => return,
                }
            }
        });
        Proxy { url, frozen, done }
    }

    fn freeze(&self, on: bool) {
        self.frozen.store(on, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.done.store(true, Ordering::SeqCst);
    }
}

/// Copy `from` to `to` while not frozen; frozen, write nothing (so the
/// sender's data waits, as with a stopped process). Bytes read in the
/// instant the freeze began are held until it ends.
fn pump(mut from: TcpStream, mut to: TcpStream, frozen: &AtomicBool, done: &AtomicBool) {
    from.set_read_timeout(Some(Duration::from_millis(10)))
        .unwrap();
    let mut buf = vec![0u8; 64 * 1024];
    let hold = || {
        while frozen.load(Ordering::SeqCst) && !done.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    while !done.load(Ordering::SeqCst) {
        hold();
        match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                hold();
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            Err(e) if matches!(e.kind(), IoKind::WouldBlock | IoKind::TimedOut) => {}
            Err(_) => break,
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Write);
}

#[test]
fn connect_to_a_listener_that_never_answers_times_out_by_its_deadline() {
    // Never accepted: the kernel completes the TCP handshake into the
    // backlog, and nothing ever reads or writes.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let e = fails_within("connect", TIMEOUT, || RemoteQueue::connect(&url, options()));
    assert!(
        e.to_string()
            .contains(&format!("timed out after 1.0 s waiting for {url}")),
        "{e}"
    );
    drop(l);
}

#[test]
fn calls_through_a_silent_connection_end_by_their_deadlines_then_work_again() {
    let s = common::served();
    let addr = s.server.as_ref().unwrap().url();
    let upstream = addr.trim_start_matches("http://").parse().unwrap();
    let proxy = Proxy::new(upstream);
    let c = RemoteQueue::connect(&proxy.url, options()).unwrap();
    c.enqueue("idle", b"x", EnqueueOptions::default()).unwrap();
    proxy.freeze(true);
    let e = fails_within("stats", TIMEOUT, || c.stats());
    assert!(e.to_string().contains("timed out after 1.0 s"), "{e}");
    fails_within("enqueue", TIMEOUT, || {
        c.enqueue("idle", b"y", EnqueueOptions::default())
    });
    let wait = LeaseOptions::default()
        .kind("busy")
        .unwrap()
        .wait(Duration::from_secs(1));
    fails_within(
        "lease_next with a 1 s wait",
        TIMEOUT + Duration::from_secs(1),
        || c.lease_next("w", &wait),
    );
    fails_within("subscribe", TIMEOUT, || {
        c.subscribe(SubscribeOptions::default())
    });
    fails_within("poll_jobs", TIMEOUT, || {
        c.poll_jobs("w", &LeaseOptions::default(), 4)
    });
    fails_within("a new connect", TIMEOUT, || {
        RemoteQueue::connect(&proxy.url, options())
    });
    proxy.freeze(false);
    // The same client again (reconnecting if keep-alive dropped the
    // connection meanwhile).
    let deadline = Instant::now() + Duration::from_secs(10);
    let stats = loop {
        match c.stats() {
            Ok(st) => break st,
            Err(e) if Instant::now() < deadline => println!("after unfreezing: {e}"),
            Err(e) => panic!("still failing after unfreezing: {e}"),
        }
    };
    assert!(stats.total.pending >= 1, "{stats:?}");
}

#[test]
fn open_streams_end_when_the_connection_goes_silent() {
    let s = common::served();
    let addr = s.server.as_ref().unwrap().url();
    let proxy = Proxy::new(addr.trim_start_matches("http://").parse().unwrap());
    let c = RemoteQueue::connect(&proxy.url, options()).unwrap();
    let sub = c.subscribe(SubscribeOptions::default()).unwrap();
    let mut jobs = c
        .poll_jobs("w", &LeaseOptions::default().kind("busy").unwrap(), 4)
        .unwrap();
    c.enqueue("other", b"x", EnqueueOptions::default()).unwrap();
    assert!(sub.recv(Some(Duration::from_secs(10))).unwrap().is_some());
    proxy.freeze(true);
    // Pinged after 1 s of silence, dropped 1 s later.
    let keep_alive = 2 * TIMEOUT;
    let start = Instant::now();
    let e = loop {
        match sub.recv(Some(Duration::from_millis(100))) {
            Ok(None) => assert!(
                start.elapsed() <= keep_alive + SLACK,
                "the event stream still lives"
            ),
            Ok(Some(ev)) => panic!("an event through a frozen proxy: {ev:?}"),
            Err(e) => break e,
        }
    };
    println!("WatchEvents ended after {:?}: {e}", start.elapsed());
    assert_eq!(e.kind(), ErrorKind::Storage, "{e}");
    assert!(start.elapsed() <= keep_alive + SLACK);
    // A lost PollJobs stream is opened again (issue 36), within the
    // request timeout: through the frozen proxy that fails too.
    let e = jobs.next_batch(None).expect_err("the PollJobs stream ends");
    println!("PollJobs ended after {:?}: {e}", start.elapsed());
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(start.elapsed() <= keep_alive + TIMEOUT + SLACK);
    proxy.freeze(false);
}

#[test]
fn with_timeout_sets_every_deadline_and_holds_keep_alive_in_its_range() {
    let o = ConnectOptions::default().with_timeout(Duration::from_secs(2));
    assert_eq!(o.connect_timeout, Duration::from_secs(2));
    assert_eq!(o.request_timeout, Some(Duration::from_secs(2)));
    assert_eq!(o.keep_alive_interval, Duration::from_secs(2));
    assert_eq!(o.keep_alive_timeout, Duration::from_secs(2));
    let short = ConnectOptions::default().with_timeout(Duration::from_millis(100));
    assert_eq!(short.keep_alive_interval, telha_jobs_client::KEEP_ALIVE_MIN);
    let long = ConnectOptions::default().with_timeout(Duration::from_secs(600));
    assert_eq!(
        long.keep_alive_timeout,
        telha_jobs_client::KEEP_ALIVE_TIMEOUT_DEFAULT
    );
    assert_eq!(long.request_timeout, Some(Duration::from_secs(600)));
}
