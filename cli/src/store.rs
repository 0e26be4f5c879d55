//! Opening the store, and the one table from core errors to exit codes.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use telha_jobs::{Config, ErrorKind, JobStore, Queue};
use telha_jobs_client::{ConnectOptions, RemoteQueue};

/// The documented exit codes (`docs/operators.md`, "Exit codes").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Exit {
    Ok = 0,
    NotFound = 1,
    Usage = 2,
    StoreLocked = 3,
    Storage = 4,
    /// The store was written by a newer version (its format marker).
    UnsupportedFormat = 5,
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> Self {
        ExitCode::from(e as u8)
    }
}

/// A failed command: what to print on stderr and the exit code.
#[derive(Debug)]
pub struct Failure {
    pub exit: Exit,
    pub message: String,
}

impl Failure {
    pub fn usage(message: impl Into<String>) -> Self {
        Failure {
            exit: Exit::Usage,
            message: message.into(),
        }
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Failure {
            exit: Exit::NotFound,
            message: message.into(),
        }
    }
    pub fn storage(message: impl Into<String>) -> Self {
        Failure {
            exit: Exit::Storage,
            message: message.into(),
        }
    }
}

/// Exit codes by error kind. `WrongState` (cancel of a finished job,
/// delete of a leased one) is the caller's mistake: usage. `Aborted`,
/// `Closed` and `Cancelled` (answers to a lease holder) cannot come from a
/// short-lived single-handle process; should one appear it is reported as
/// an internal storage-side failure rather than as the user's mistake.
/// `Unavailable` (a server that cannot be reached, is closing, or did not
/// answer within `--timeout`) keeps the exit code transport failures had.
pub fn exit_for(kind: ErrorKind) -> Exit {
    match kind {
        ErrorKind::InvalidArgument | ErrorKind::WrongState => Exit::Usage,
        ErrorKind::NotFound => Exit::NotFound,
        ErrorKind::StoreLocked => Exit::StoreLocked,
        ErrorKind::UnsupportedFormat => Exit::UnsupportedFormat,
        ErrorKind::Storage
        | ErrorKind::Corruption
        | ErrorKind::Aborted
        | ErrorKind::Closed
        | ErrorKind::Cancelled
        | ErrorKind::Unavailable => Exit::Storage,
        _ => Exit::Storage,
    }
}

impl From<telha_jobs::Error> for Failure {
    fn from(e: telha_jobs::Error) -> Self {
        Failure {
            exit: exit_for(e.kind()),
            message: e.to_string(),
        }
    }
}

/// The store directory: `--db`, else `$TELHA_DB`, else `./telha-data`.
pub fn store_path(db: Option<&Path>) -> PathBuf {
    db.map(Path::to_path_buf)
        .unwrap_or_else(telha_jobs::default_store_path)
}

/// Where the jobs are: a store directory this process opens, or a server
/// (`--server URL` / `TELHA_SERVER`) that owns the store.
#[derive(Debug, Clone)]
pub enum Target {
    Local(PathBuf),
    Remote {
        url: String,
        token: Option<String>,
        /// `--timeout` / `TELHA_TIMEOUT`.
        timeout: Option<Duration>,
    },
}

/// A client of the server; every command then runs through it (the
/// server's host holds the store, so nothing is opened here).
fn connect(
    url: &str,
    token: &Option<String>,
    timeout: Option<Duration>,
) -> Result<Box<dyn JobStore>, Failure> {
    Ok(Box::new(connect_remote(url, token, timeout)?))
}

/// The client itself, for what only a server answers beyond `JobStore`
/// (`schedules next`).
pub fn connect_remote(
    url: &str,
    token: &Option<String>,
    timeout: Option<Duration>,
) -> Result<RemoteQueue, Failure> {
    let options = match timeout {
        Some(t) => ConnectOptions::default().with_timeout(t),
        // A bulk purge or retry of a big store may take longer than the
        // default per-call deadline: no deadline per call unless asked. A
        // server that stops answering is still dropped by HTTP/2
        // keep-alive (10 s of silence, then 10 s for the ping's answer),
        // and `connect` itself holds its 10 s.
        None => ConnectOptions {
            request_timeout: None,
            ..ConnectOptions::default()
        },
    };
    let q = RemoteQueue::connect(
        url,
        ConnectOptions {
            token: token.clone(),
            ..options
        },
    )?;
    Ok(q)
}

/// For the read commands: [`open_read_local`], or the server.
pub fn open_read(t: &Target) -> Result<Box<dyn JobStore>, Failure> {
    match t {
        Target::Local(p) => Ok(Box::new(open_read_local(p)?)),
        Target::Remote {
            url,
            token,
            timeout,
        } => connect(url, token, *timeout),
    }
}

/// For the write commands: [`open_write_local`], or the server (which
/// holds the store, so `must_exist` is the server's business).
pub fn open_write(t: &Target, must_exist: bool) -> Result<Box<dyn JobStore>, Failure> {
    match t {
        Target::Local(p) => Ok(Box::new(open_write_local(p, must_exist)?)),
        Target::Remote {
            url,
            token,
            timeout,
        } => connect(url, token, *timeout),
    }
}

/// For ls / show / stats / metrics: RocksDB's read-only open, which works
/// beside the owning process and creates nothing. The configuration
/// (`Config::load(None)`, as a service loads it) only shapes derived values
/// such as a job's effective `max_attempts`; a configuration that does not
/// load is reported and the defaults are used, so inspecting a store never
/// fails on it.
pub fn open_read_local(path: &Path) -> Result<Queue, Failure> {
    let config = Config::load(None).unwrap_or_else(|e| {
        eprintln!(
            "telha: warning: configuration ignored ({e}); max attempts shown are the defaults"
        );
        Config::default()
    });
    Queue::open_read_only_with_config(path, config).map_err(|e| match e.kind() {
        ErrorKind::NotFound => Failure::not_found(format!(
            "no store at {} (give --db PATH or set TELHA_DB)",
            path.display()
        )),
        _ => e.into(),
    })
}

/// Whether `path` holds a store (RocksDB's CURRENT file is written at
/// creation), so retry and purge do not create an empty one by mistake.
pub fn exists(path: &Path) -> bool {
    path.join("CURRENT").is_file()
}

/// For retry / purge / enqueue: a read-write open with the service's
/// configuration (`Config::load(None)`: `$TELHA_JOBS_CONFIG`, then the
/// `TELHA_JOBS_*` environment) and no background reaper, so a one-shot
/// command changes only what it was asked to. When `must_exist`, a missing
/// store is `NotFound` instead of being created.
///
/// A store held by another process fails at once (RocksDB's LOCK is not
/// waited on) with the owner's pid in the message.
pub fn open_write_local(path: &Path, must_exist: bool) -> Result<Queue, Failure> {
    if must_exist && !exists(path) {
        return Err(Failure::not_found(format!(
            "no store at {} (give --db PATH or set TELHA_DB)",
            path.display()
        )));
    }
    let config = Config::load(None).map_err(|e| Failure::usage(format!("configuration: {e}")))?;
    let config = Config {
        reaper_interval: Duration::ZERO,
        ..config
    };
    Queue::open(path, config).map_err(|e| {
        let mut f = Failure::from(e);
        if f.exit == Exit::StoreLocked {
            f.message.push_str(
                "\n       reads (ls, show, stats, metrics) work beside it; to change jobs, \
                 stop that process or make the change through its own queue handle",
            );
        }
        f
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_kind_has_a_documented_exit_code() {
        let codes: Vec<u8> = ErrorKind::ALL.iter().map(|k| exit_for(*k) as u8).collect();
        // InvalidArgument, NotFound, Aborted, StoreLocked, Storage, Corruption,
        // Closed, UnsupportedFormat, Cancelled, WrongState, Unavailable
        assert_eq!(codes, [2, 1, 4, 3, 4, 4, 4, 5, 4, 2, 4]);
    }
}
