//! `telha`: the operator command line of telha-jobs.
//!
//! `telha jobs ls | show | retry | purge | stats | metrics | check | enqueue | count |
//! cancel | delete | pause | resume`, `telha schedules ls | show | put | rm |
//! pause | resume | next | run` (on a store, or through a server with
//! `--server`), `telha serve`, and `telha cluster init | status | add |
//! promote | remove | replace | finish` (a cluster node's Admin service,
//! `--url`); see
//! `telha --help` and `docs/operators.md`. Exit codes: 0 ok,
//! 1 not found, 2 usage, 3 store locked by another process, 4 storage or
//! corruption, 5 a store of a newer format.

mod args;
mod args_cluster;
mod args_enqueue;
mod args_schedule;
mod cluster;
mod cluster_args;
mod commands;
mod control;
mod find;
mod limits;
mod prom;
mod render;
mod schedules;
mod serve;
mod serve_cluster;
mod steer;
mod store;
mod watch;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

use crate::args::{Cli, Top};
use crate::commands::Output;
use crate::store::Exit;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // --help and --version are successes; everything else is usage (2).
            let _ = e.print();
            return if e.use_stderr() {
                Exit::Usage.into()
            } else {
                Exit::Ok.into()
            };
        }
    };
    let db = store::store_path(cli.db.as_deref());
    let token = match serve::token(cli.token_file.as_deref()) {
        Ok(t) => t,
        Err(f) => {
            eprintln!("telha: {}", f.message);
            return f.exit.into();
        }
    };
    let (json, timeout) = (cli.json, cli.timeout);
    let command = match cli.command {
        Top::Serve(a) => return serve::run(a, cli.db.as_deref(), token).into(),
        Top::Cluster(a) => return report(cluster::run(a, token, timeout, json)),
        c => c,
    };
    // Repeated --server flags and comma lists make one list (the client
    // checks its items).
    let server = Some(cli.server.join(","))
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("TELHA_SERVER").ok())
        .filter(|s| !s.trim().is_empty());
    let target = match server {
        Some(url) => {
            let timeout = match cli.timeout {
                Some(t) => Some(t),
                None => match std::env::var("TELHA_TIMEOUT") {
                    Ok(v) if !v.trim().is_empty() => match humantime::parse_duration(v.trim()) {
                        Ok(t) => Some(t),
                        Err(e) => {
                            eprintln!("telha: TELHA_TIMEOUT={v:?} is not a duration ({e})");
                            return store::Exit::Usage.into();
                        }
                    },
                    _ => None,
                },
            };
            store::Target::Remote {
                url,
                token,
                timeout,
            }
        }
        None => store::Target::Local(db),
    };
    // The queue is opened and dropped inside `run`, so the store is closed
    // before the process exits.
    let ran = match command {
        Top::Jobs(cmd) => commands::run(cmd, &target, cli.json),
        Top::Schedules(cmd) => schedules::run(cmd, &target, cli.json),
        Top::Serve(_) | Top::Cluster(_) => unreachable!("run above"),
    };
    report(ran)
}

/// Print a command's output (or its failure) and exit with its code.
fn report(ran: Result<Output, store::Failure>) -> ExitCode {
    match ran {
        Ok(out) => {
            let (text, exit) = printed(out);
            let mut stdout = std::io::stdout().lock();
            match stdout
                .write_all(text.as_bytes())
                .and_then(|()| stdout.flush())
            {
                // `telha jobs ls | head` closing the pipe is not an error.
                Ok(()) => exit.into(),
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => exit.into(),
                Err(e) => {
                    eprintln!("telha: cannot write output: {e}");
                    Exit::Storage.into()
                }
            }
        }
        Err(f) => {
            eprintln!("telha: {}", f.message);
            f.exit.into()
        }
    }
}

/// What to print for a command's output, and the exit code after it.
fn printed(out: Output) -> (String, Exit) {
    match out {
        Output::Text(t) => (t, Exit::Ok),
        Output::Json(j) => (format!("{j:#}\n"), Exit::Ok),
        Output::Exit(inner, exit) => (printed(*inner).0, exit),
    }
}
