//! `telha serve`: own the store, serve it over gRPC until SIGTERM/SIGINT.

use std::io::Write;
use std::path::Path;

use telha_jobs::{Config, Queue};
use telha_jobs_server::{serve, ServeOptions, TlsPem, LISTEN_DEFAULT};

use crate::args::ServeArgs;
use crate::store::{Exit, Failure};

/// The token: `--token-file` (trimmed), else `$TELHA_TOKEN`; an empty one
/// is a usage error rather than "no token".
pub fn token(file: Option<&Path>) -> Result<Option<String>, Failure> {
    let t = match file {
        Some(f) => Some(
            std::fs::read_to_string(f)
                .map_err(|e| Failure::usage(format!("--token-file {}: {e}", f.display())))?,
        ),
        None => std::env::var("TELHA_TOKEN").ok(),
    };
    match t.map(|t| t.trim().to_string()) {
        Some(t) if t.is_empty() => Err(Failure::usage(
            "the token is empty (--token-file or TELHA_TOKEN)",
        )),
        t => Ok(t),
    }
}

fn read(what: &str, p: &Path) -> Result<Vec<u8>, Failure> {
    std::fs::read(p).map_err(|e| Failure::usage(format!("{what} {}: {e}", p.display())))
}

/// `telha serve`; `db_flag` is `--db` as given (refused with `--cluster`).
pub fn run(mut a: ServeArgs, db_flag: Option<&Path>, token: Option<String>) -> Exit {
    let served = if a.cluster.cluster {
        crate::cluster_args::setup(&a.cluster, db_flag.is_some()).and_then(|c| {
            let listen = listen_addresses(std::mem::take(&mut a.listen))?;
            crate::serve_cluster::serve_until_signal(a, c, listen, token)
        })
    } else {
        serve_until_signal(a, &crate::store::store_path(db_flag), token)
    };
    match served {
        Ok(()) => Exit::Ok,
        Err(f) => {
            eprintln!("telha: {}", f.message);
            f.exit
        }
    }
}

fn serve_until_signal(a: ServeArgs, db: &Path, token: Option<String>) -> Result<(), Failure> {
    let tls = match (&a.tls_cert, &a.tls_key) {
        (Some(c), Some(k)) => Some(TlsPem {
            cert_pem: read("--tls-cert", c)?,
            key_pem: read("--tls-key", k)?,
        }),
        _ => None,
    };
    let config = Config::load(None).map_err(|e| Failure::usage(format!("configuration: {e}")))?;
    // A locked store fails here: exit 3, the holder's pid in the message.
    let q = Queue::open(db, config)?;
    let mut listen = listen_addresses(a.listen)?.into_iter();
    let handle = serve(
        q.clone(),
        ServeOptions {
            listen: listen.next().unwrap_or_else(|| LISTEN_DEFAULT.into()),
            also_listen: listen.collect(),
            socket_mode: a.socket_mode,
            token,
            tls,
            metrics_listen: a.metrics_listen,
            ui: a.ui,
            ui_read_only: a.ui_read_only,
            allow_remote_backup: a.allow_remote_backup,
            ..ServeOptions::default()
        },
    )
    .inspect_err(|_| q.close())?;
    {
        let mut out = std::io::stdout().lock();
        let tls = handle.tls();
        for (i, at) in handle.addresses().iter().enumerate() {
            let also = if i == 0 { "" } else { "also " };
            let _ = writeln!(out, "{also}listening on {}", at.url(tls));
        }
        if let Some(m) = handle.metrics_addr() {
            let scheme = if tls { "https" } else { "http" };
            let _ = writeln!(out, "metrics on {scheme}://{m}/metrics");
        }
        if let Some(u) = handle.ui_url() {
            let _ = writeln!(out, "ui on {u}");
        }
        let _ = out.flush();
    }
    eprintln!(
        "telha: serving {} (pid {})",
        db.display(),
        std::process::id()
    );
    wait_for_signal()?;
    eprintln!("telha: shutting down");
    handle.shutdown(a.grace);
    q.close();
    Ok(())
}

/// `--listen` (repeated), else `$TELHA_LISTEN` (comma-separated), else
/// the default address.
fn listen_addresses(given: Vec<String>) -> Result<Vec<String>, Failure> {
    if !given.is_empty() {
        return Ok(given);
    }
    let Ok(env) = std::env::var("TELHA_LISTEN") else {
        return Ok(vec![LISTEN_DEFAULT.into()]);
    };
    let list: Vec<String> = env
        .split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(String::from)
        .collect();
    if list.is_empty() {
        return Err(Failure::usage(
            "TELHA_LISTEN is set but names no address (host:port or unix:PATH, comma-separated)",
        ));
    }
    Ok(list)
}

pub(crate) fn wait_for_signal() -> Result<(), Failure> {
    use tokio::signal::unix::{signal, SignalKind};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::storage(format!("signal runtime: {e}")))?;
    rt.block_on(async {
        let mut term = signal(SignalKind::terminate())
            .map_err(|e| Failure::storage(format!("SIGTERM handler: {e}")))?;
        let mut int = signal(SignalKind::interrupt())
            .map_err(|e| Failure::storage(format!("SIGINT handler: {e}")))?;
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        Ok(())
    })
}
