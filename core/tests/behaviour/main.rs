//! Behaviour of the public `Queue` API, one guarantee per test. Time comes
//! from a `ManualClock`; nothing here sleeps except the long-poll tests, whose
//! subject is real-time blocking.

#[path = "../common/mod.rs"]
mod common;

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use telha_jobs::store::keys::JobKey;
use telha_jobs::{
    EnqueueOptions, ErrorKind, JobId, KindConfig, LeaseOptions, LeaseToken, ListQuery, ManualClock,
    NewJob, Queue, Scope, State,
};

const HOUR: Duration = Duration::from_secs(3600);
const TTL: Duration = Duration::from_secs(300);

fn scope(n: u8) -> Scope {
    Scope::from_bytes([n; 16])
}

fn kinds(patterns: &[&str]) -> LeaseOptions {
    patterns.iter().fold(LeaseOptions::default(), |o, p| {
        o.kind(p).expect("valid pattern")
    })
}

fn lease_with(s: &TestStore, opts: &LeaseOptions) -> Option<telha_jobs::Job> {
    s.q.lease_next("w", opts).expect("lease_next")
}

mod backoff;
mod bad_input;
mod control;
mod debounce;
mod events;
mod fanin;
mod filters;
mod find;
mod jitter;
mod order;
mod payloads;
mod poison;
mod resettle;
mod retry;
mod schedules;
mod scope_counts;
mod scope_pages;
mod settle;
mod settle_many;
mod steer;
mod store;
mod tags;
mod timings;
mod unique;
mod waits;
