//! Integration tests driving the real `telha` binary against stores
//! prepared through the core.
//!
//! One test binary (its modules below) so RocksDB is linked once.

mod backup;
mod bad_input;
mod check;
mod commands;
mod control;
mod fanin;
mod far_future;
mod find;
mod keys;
mod limits;
mod locked;
mod metrics;
mod poison_log;
mod schedules;
mod steer;
mod support;
mod tags;
