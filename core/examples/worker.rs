//! The README's Rust example (kept in step with it by a test in
//! core/tests/worker.rs): a Worker over an embedded queue. Run it with
//! `cargo run --release -p telha-jobs --example worker` (it uses
//! ./telha-data).

use telha_jobs::worker::CancelToken;

/// Stands in for the user's code.
fn parse(doc: &[u8], cancel: &CancelToken) -> std::io::Result<Vec<u8>> {
    if cancel.is_cancelled() {
        return Err(std::io::Error::other("cancelled"));
    }
    Ok(format!("parsed {}", String::from_utf8_lossy(doc)).into_bytes())
}

// Not reformatted: the lines between the markers are the README's, verbatim.
#[rustfmt::skip]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    // README begin
    use std::{sync::Arc, time::Duration};
    use telha_jobs::{Config, EnqueueOptions, HandlerError, JobStore, Outcome, Queue, Worker};

    let q: Arc<dyn JobStore> = Arc::new(Queue::open("./telha-data", Config::default())?);
    let id = q.enqueue("ingest:pdf", b"s3://bucket/a.pdf", EnqueueOptions::default().priority(10))?.id;
    let worker = Worker::builder(q.clone(), |ctx| -> Result<Outcome, HandlerError> {
        let pages = parse(ctx.payload(), &ctx.cancel_token())?; // `?`: failed, retried with backoff
        ctx.progress(b"parsed".to_vec())?;                      // rides on the next heartbeat
        Ok(Outcome::result(pages))                               // or Snooze, Retry, Fail
    })
    .kinds(["ingest:*"])
    .concurrency(4)
    .build()?
    .start()?;                                 // heartbeats, timeouts, cancels handled for you
    let done = q.wait(&id, Duration::from_secs(30))?;
    worker.stop(Duration::from_secs(30));      // drain; release what is left, no attempt spent
    // README end
    println!(
        "{} {:?}: {}",
        done.id,
        done.state,
        String::from_utf8_lossy(done.result.as_deref().unwrap_or_default())
    );
    Ok(())
}
