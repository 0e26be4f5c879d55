//! Shared by the server's integration tests: an in-process server on a
//! temporary store, and a client of it.

#![allow(dead_code)]

pub mod http;

use std::time::Duration;

use telha_jobs::{Config, Queue};
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
