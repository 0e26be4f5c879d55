//! `telha serve` as a child process: started, waited for (the
//! `listening on` line), killed or stopped by pid, by the test itself.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use telha_jobs_client::{ConnectOptions, RemoteQueue};

pub struct Served {
    pub child: Child,
    pub url: String,
    pub addr: String,
    pub metrics: Option<String>,
    /// The `ui on URL` line's URL (with `--ui`).
    pub ui: Option<String>,
    stderr: mpsc::Receiver<String>,
}

/// `telha serve --db DB ARGS...` with a clean environment plus `env`,
/// waiting (20 s at most) for its `listening on` line.
pub fn serve(db: &Path, args: &[&str], env: &[(&str, &str)]) -> Served {
    try_serve(db, args, env).unwrap_or_else(|e| panic!("telha serve did not start: {e}"))
}

pub fn telha() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_telha"));
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().to_string();
        if k.starts_with("TELHA_") {
            c.env_remove(k);
        }
    }
    c.stdin(Stdio::null());
    c
}

pub fn try_serve(db: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<Served, String> {
    let mut c = telha();
    c.arg("--db").arg(db).arg("serve").args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let (tx, rx) = mpsc::channel();
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    let (etx, erx) = mpsc::channel();
    let err = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for l in BufReader::new(err).lines().map_while(Result::ok) {
            let _ = etx.send(l);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut url = None;
    let mut metrics = None;
    let mut ui = None;
    let wants_ui = args.contains(&"--ui");
    let wants_http =
        wants_ui || args.contains(&"--metrics-listen") || args.contains(&"--http-listen");
    while Instant::now() < deadline {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(l) => {
                if let Some(u) = l.strip_prefix("listening on ") {
                    url = Some(u.to_string());
                    if !wants_http {
                        break;
                    }
                } else if let Some(m) = l.strip_prefix("metrics on ") {
                    metrics = Some(m.to_string());
                    if !wants_ui {
                        break;
                    }
                } else if let Some(u) = l.strip_prefix("ui on ") {
                    ui = Some(u.to_string());
                    break;
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Ok(Some(st)) = child.try_wait() {
                    let errs: Vec<String> = erx.try_iter().collect();
                    return Err(format!("exited {st}: {}", errs.join("\n")));
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let st = child.wait().map_err(|e| e.to_string())?;
                std::thread::sleep(Duration::from_millis(100));
                let errs: Vec<String> = erx.try_iter().collect();
                return Err(format!("exited {st}: {}", errs.join("\n")));
            }
        }
    }
    let Some(url) = url else {
        let _ = child.kill();
        return Err("no `listening on` line within 20 s".into());
    };
    let addr = url.split("://").nth(1).unwrap_or_default().to_string();
    Ok(Served {
        child,
        url,
        addr,
        metrics,
        ui,
        stderr: erx,
    })
}

impl Served {
    pub fn client(&self) -> RemoteQueue {
        RemoteQueue::connect(&self.url, ConnectOptions::default()).unwrap()
    }
    /// SIGKILL, and reap the process.
    pub fn kill9(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
    /// SIGTERM; the exit status within 20 s.
    pub fn terminate(&mut self) -> ExitStatus {
        // The shell's builtin kill: /bin/kill (procps) is not on every image.
        let st = Command::new("sh")
            .args(["-c", &format!("kill -TERM {}", self.child.id())])
            .status()
            .unwrap();
        assert!(st.success());
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st;
            }
            assert!(Instant::now() < deadline, "telha serve ignored SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    pub fn stderr(&self) -> String {
        self.stderr.try_iter().collect::<Vec<_>>().join("\n")
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Short leases and a fast reaper, for the crash tests.
pub const FAST_LEASES: &[(&str, &str)] = &[
    ("TELHA_JOBS_LEASE_TTL", "1s"),
    ("TELHA_JOBS_REAPER_INTERVAL", "200ms"),
    ("TELHA_JOBS_BACKOFF_BASE", "10ms"),
    ("TELHA_JOBS_BACKOFF_CAP", "10ms"),
];
