//! The acknowledgement log: what the worker was told succeeded.
//!
//! One file per worker thread and round, one text line per record, each
//! written with a single `write(2)` right after the call returned (and, for
//! settles, an intent line right before it). A SIGKILL cannot take back a
//! completed `write(2)`: the bytes are in the page cache, which belongs to
//! the kernel, not the process. A line cut short (there should be none) is
//! counted and ignored.
//!
//! `<tag> <t_us> <job id> <generation> [<extra>]`, `t_us` the wall clock in
//! µs since the epoch (the core's `SystemClock` is the same clock, in ms):
//!
//! | tag | meaning                                              | extra            |
//! |-----|------------------------------------------------------|------------------|
//! | `E` | enqueue acknowledged (single or batch; generation 0) | `new` / `dup`    |
//! | `L` | lease acknowledged                                   | deadline ms, worker, attempts |
//! | `X` | extend acknowledged                                  | new deadline ms  |
//! | `S` | about to settle (written before the call)            | complete/fail/.. |
//! | `I` | about to cancel/delete a job (id) or pause/resume a target (its label) | cancel/delete/pause/resume |
//! | `C` | complete acknowledged                                |                  |
//! | `F` | retryable fail acknowledged                          |                  |
//! | `D` | non-retryable fail acknowledged (the job is dead)    |                  |
//! | `R` | release acknowledged                                 |                  |
//! | `Z` | snooze acknowledged (pending again, no attempt spent) |                 |
//! | `K` | cancel acknowledged (generation 0)                   | cancelled/requested |
//! | `W` | delete acknowledged (generation 0)                   |                  |
//! | `H` | pause acknowledged (id = the target's label)         | changed/same     |
//! | `U` | resume acknowledged (id = the target's label)        | changed/same     |
//! | `Y` | extend answered CANCELLED (a cancel request)         |                  |
//! | `N` | a settle answered CANCELLED (recorded cancelled)     | complete/fail/.. |
//! | `A` | a settle or extend answered ABORTED (lease lost)     |                  |
//! | `P` | reap acknowledged (id `-`, generation = expired)     |                  |

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// Microseconds since the epoch.
pub fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

/// An append-only log file; every [`AckLog::write`] is one `write(2)`.
pub struct AckLog {
    file: File,
    buf: String,
}

impl AckLog {
    pub fn create(path: &Path) -> std::io::Result<AckLog> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(AckLog {
            file,
            buf: String::new(),
        })
    }

    /// Queue one record; [`AckLog::flush`] writes everything queued in one call.
    pub fn push(&mut self, tag: char, t_us: u64, id: &str, generation: u64, extra: &str) {
        use std::fmt::Write as _;
        let _ = writeln!(self.buf, "{tag} {t_us} {id} {generation} {extra}");
    }

    /// One `write(2)` of the queued records. A failing write ends the
    /// worker: a record the harness cannot see would make its checks lie.
    pub fn flush(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        if let Err(e) = self.file.write_all(self.buf.as_bytes()) {
            eprintln!("crash worker: cannot write the ack log: {e}");
            std::process::exit(3);
        }
        self.buf.clear();
    }

    /// `push` then `flush`.
    pub fn write(&mut self, tag: char, t_us: u64, id: &str, generation: u64, extra: &str) {
        self.push(tag, t_us, id, generation, extra);
        self.flush();
    }
}

/// One parsed log line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub tag: char,
    pub t_us: u64,
    pub id: String,
    pub generation: u64,
    pub extra: String,
}

/// Parse a log file: its records and how many torn lines were skipped.
pub fn parse(text: &str) -> (Vec<Record>, usize) {
    let mut out = Vec::new();
    let mut torn = 0;
    let complete = match text.rfind('\n') {
        Some(i) => &text[..=i],
        None => "",
    };
    if complete.len() < text.len() {
        torn += 1;
    }
    for line in complete.lines() {
        let mut f = line.splitn(5, ' ');
        let rec = (|| {
            let tag = f.next()?.chars().next()?;
            let t_us = f.next()?.parse().ok()?;
            let id = f.next()?.to_string();
            let generation = f.next()?.parse().ok()?;
            let extra = f.next().unwrap_or("").to_string();
            Some(Record {
                tag,
                t_us,
                id,
                generation,
                extra,
            })
        })();
        match rec {
            Some(r) => out.push(r),
            None => torn += 1,
        }
    }
    (out, torn)
}

/// A record tag's name in the `run` mode's summary.
pub fn tag_name(tag: char) -> &'static str {
    match tag {
        'E' => "enqueue",
        'L' => "lease",
        'X' => "extend",
        'C' => "complete",
        'F' => "fail",
        'D' => "fail-dead",
        'R' => "release",
        'Z' => "snooze",
        'K' => "cancel",
        'W' => "delete",
        'H' => "pause",
        'U' => "resume",
        'Y' => "extend-cancelled",
        'N' => "settle-cancelled",
        'P' => "reap",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_last_line_is_skipped_and_counted() {
        let (r, torn) = parse("E 1 a 0 new\nL 2 a 1 99\nC 3 a");
        assert_eq!(torn, 1);
        assert_eq!(r.len(), 2);
        assert_eq!(r[1].tag, 'L');
        assert_eq!(r[1].extra, "99");
    }
}
