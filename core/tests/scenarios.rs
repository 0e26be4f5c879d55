//! The conformance scenarios (`tests/scenarios/*.json`, format in that
//! directory's README) run against the Rust core, an embedded [`Queue`],
//! through [`JobStore`]. The runner is `scenario_runner/`; the server crate
//! runs the same cases through gRPC (`server/tests/scenarios_remote.rs`).

mod scenario_runner;

use std::path::Path;
use std::sync::Arc;

use telha_jobs::{Config, Error, JobStore, Queue};

/// An embedded queue at `path`.
fn open_store(path: &Path, config: &Config) -> Result<Arc<dyn JobStore>, Error> {
    Ok(Arc::new(Queue::open(path, config.clone())?))
}

fn main() {
    scenario_runner::run_all("rust scenarios", open_store);
}
