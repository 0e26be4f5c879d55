//! Shared by the server's integration tests: an in-process server on a
//! temporary store, and a client of it.

#![allow(dead_code)]

pub mod http;

use std::time::Duration;

use telha_jobs::{Config, LeaseOptions, NewJob, Queue};
use telha_jobs_client::{ConnectOptions, RemoteQueue};
use telha_jobs_server::{serve, ServeOptions, ServerHandle};

pub struct Served {
    pub queue: Queue,
    pub server: Option<ServerHandle>,
    pub url: String,
    pub dir: tempfile::TempDir,
}

impl Served {
    pub fn client(&self) -> RemoteQueue {
        RemoteQueue::connect(&self.url, ConnectOptions::default()).unwrap()
    }
    pub fn client_with(&self, o: ConnectOptions) -> RemoteQueue {
        RemoteQueue::connect(&self.url, o).unwrap()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            s.shutdown(Duration::from_secs(2));
        }
        self.queue.close();
    }
}

pub fn config() -> Config {
    Config {
        max_payload_bytes: 4096,
        reaper_interval: Duration::ZERO,
        ..Config::default()
    }
}

pub fn served_with(config: Config, options: ServeOptions) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let queue = Queue::open(dir.path(), config).unwrap();
    let server = serve(
        queue.clone(),
        ServeOptions {
            listen: "127.0.0.1:0".into(),
            ..options
        },
    )
    .unwrap();
    let url = server.url();
    Served {
        queue,
        server: Some(server),
        url,
        dir,
    }
}

pub fn served() -> Served {
    served_with(config(), ServeOptions::default())
}

/// A served store with the operator page and API on (on a free port),
/// and an HTTP client of it.
pub fn ui(options: ServeOptions) -> (Served, http::Http) {
    let s = served_with(
        config(),
        ServeOptions {
            ui: true,
            metrics_listen: Some("127.0.0.1:0".into()),
            ..options
        },
    );
    let addr = s.server.as_ref().unwrap().metrics_addr().unwrap();
    (s, http::Http::new(addr))
}

/// `h` with the CSRF token of an open (no-token) server set.
pub fn csrf(h: &http::Http) -> http::Http {
    let c = h.get("/api/v1/info").json()["csrf"]
        .as_str()
        .unwrap()
        .to_string();
    h.with("x-csrf-token", &c)
}

/// `n` jobs of `kind` leased and failed for good.
pub fn dead(q: &Queue, kind: &str, n: usize, reason: &str) -> Vec<String> {
    let jobs: Vec<NewJob> = (0..n)
        .map(|i| NewJob::new(kind, format!("{kind}-{i}").into_bytes()))
        .collect();
    q.enqueue_many(jobs).unwrap();
    let mut ids = Vec::new();
    let o = LeaseOptions {
        kinds: vec![kind.parse().unwrap()],
        ..LeaseOptions::default()
    };
    while let Some(j) = q.lease_next("seeder", &o).unwrap() {
        q.fail(&j.token(), reason, false).unwrap();
        ids.push(j.id.to_string());
    }
    assert_eq!(ids.len(), n);
    ids
}
