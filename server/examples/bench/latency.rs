//! One unary RPC, end to end: the latency of a single `enqueue` call (the
//! RPC most services make, one job per request) in process, over loopback
//! TCP and over a Unix socket, measured in the same run; and the rate one
//! client thread and four client threads reach with one call per job.

use std::time::{Duration, Instant};

use telha_jobs::{EnqueueOptions, JobStore};

/// Makes one store handle (a client: its own connection).
pub type Make<'a> = Box<dyn Fn() -> Box<dyn JobStore> + Sync + 'a>;

/// Latencies of `n` single enqueues on `s`, after `n / 10` warm-up calls.
pub fn enqueue_latencies(s: &dyn JobStore, n: usize, payload: &[u8]) -> Vec<Duration> {
    for _ in 0..(n / 10).max(1) {
        s.enqueue("lat", payload, EnqueueOptions::default())
            .expect("enqueue");
    }
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        s.enqueue("lat", payload, EnqueueOptions::default())
            .expect("enqueue");
        out.push(t.elapsed());
    }
    out
}

/// p50, p99 and the mean, in microseconds.
pub fn summary(mut v: Vec<Duration>) -> (f64, f64, f64) {
    v.sort_unstable();
    let at = |q: f64| {
        let i = ((v.len() as f64 - 1.0) * q).round() as usize;
        v[i].as_secs_f64() * 1e6
    };
    let mean = v.iter().map(Duration::as_secs_f64).sum::<f64>() / v.len() as f64 * 1e6;
    (at(0.50), at(0.99), mean)
}

/// Single enqueues per second from `threads` threads, each on its own
/// store handle, `n` calls in all.
pub fn enqueue_rate(
    threads: usize,
    n: usize,
    make: &(dyn Fn() -> Box<dyn JobStore> + Sync),
    payload: &[u8],
) -> f64 {
    let stores: Vec<_> = (0..threads).map(|_| make()).collect();
    let per = n / threads;
    let t = Instant::now();
    std::thread::scope(|sc| {
        for s in &stores {
            sc.spawn(move || {
                for _ in 0..per {
                    s.enqueue("rate", payload, EnqueueOptions::default())
                        .expect("enqueue");
                }
            });
        }
    });
    (per * threads) as f64 / t.elapsed().as_secs_f64()
}

/// The transport's floor on this machine, same run: `n` round trips of a
/// 64-byte message between two threads over a blocking socket pair (no
/// HTTP/2, no runtime), TCP loopback with TCP_NODELAY or a Unix socket.
pub fn echo_latencies(unix: Option<&std::path::Path>, n: usize) -> Vec<Duration> {
    use std::io::{Read, Write};
    fn pingpong<S: Read + Write>(mut s: S, n: usize) -> Vec<Duration> {
        let mut buf = [7u8; 64];
        let mut out = Vec::with_capacity(n);
        for i in 0..n + n / 10 {
            let t = Instant::now();
            s.write_all(&buf).expect("echo write");
            s.read_exact(&mut buf).expect("echo read");
            if i >= n / 10 {
                out.push(t.elapsed());
            }
        }
        out
    }
    fn echo<S: Read + Write>(mut s: S) {
        let mut buf = [0u8; 64];
        while s.read_exact(&mut buf).is_ok() {
            if s.write_all(&buf).is_err() {
                break;
            }
        }
    }
    match unix {
        Some(path) => {
            let _ = std::fs::remove_file(path);
            let l = std::os::unix::net::UnixListener::bind(path).expect("echo bind");
            let srv = std::thread::spawn(move || echo(l.accept().expect("accept").0));
            let c = std::os::unix::net::UnixStream::connect(path).expect("echo connect");
            let v = pingpong(&c, n);
            drop(c);
            let _ = srv.join();
            v
        }
        None => {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("echo bind");
            let at = l.local_addr().expect("echo addr");
            let srv = std::thread::spawn(move || {
                let s = l.accept().expect("accept").0;
                s.set_nodelay(true).expect("nodelay");
                echo(s)
            });
            let c = std::net::TcpStream::connect(at).expect("echo connect");
            c.set_nodelay(true).expect("nodelay");
            let v = pingpong(&c, n);
            drop(c);
            let _ = srv.join();
            v
        }
    }
}

/// Enqueue-to-result (issue 18): a producer on `producer` enqueues one job
/// and `wait`s for it while a worker thread on its own handle (`worker`)
/// leases (a blocking lease) and completes it; `n` jobs one after another,
/// after `n / 10` warm-up ones.
pub fn result_latencies(
    producer: &dyn JobStore,
    worker: Box<dyn JobStore>,
    n: usize,
    payload: &[u8],
) -> Vec<Duration> {
    use std::sync::atomic::{AtomicBool, Ordering};
    use telha_jobs::LeaseOptions;
    let stop = AtomicBool::new(false);
    std::thread::scope(|sc| {
        sc.spawn(|| {
            let o = LeaseOptions::default()
                .kind("result-lat")
                .expect("kind")
                .wait(Duration::from_millis(50));
            while !stop.load(Ordering::Relaxed) {
                if let Some(j) = worker.lease_next("lat-worker", &o).expect("lease") {
                    worker.complete(&j.token(), Some(b"ok")).expect("complete");
                }
            }
        });
        let mut out = Vec::with_capacity(n);
        for i in 0..n + n / 10 {
            let t = Instant::now();
            let id = producer
                .enqueue("result-lat", payload, EnqueueOptions::default())
                .expect("enqueue")
                .id;
            let info = producer.wait(&id, Duration::from_secs(30)).expect("wait");
            assert!(info.state.is_terminal(), "the job finished: {info:?}");
            if i >= n / 10 {
                out.push(t.elapsed());
            }
        }
        stop.store(true, Ordering::Relaxed);
        out
    })
}
