//! The in-process cluster (`telha_jobs_cluster::harness`) and the pollers
//! the tests share.

#![allow(dead_code)] // each test file uses its own part

pub mod workers;

pub use telha_jobs_cluster::harness::*;
