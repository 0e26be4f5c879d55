//! Three `telha serve --cluster` processes on loopback ports, each
//! started, killed and stopped by pid by the test itself.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use telha_jobs_proto::v1 as pb;
use telha_jobs_proto::v1::jobs_client::JobsClient;
use tonic::Code;

/// `telha` with no TELHA_* variable of the caller's environment.
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

/// `n` loopback ports free a moment ago.
pub fn free_ports(n: usize) -> Vec<u16> {
    let ls: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    ls.iter().map(|l| l.local_addr().unwrap().port()).collect()
}

/// The cluster: its members' URLs and data directories, and the running
/// processes.
pub struct Cluster {
    pub urls: BTreeMap<u64, String>,
    pub dirs: BTreeMap<u64, PathBuf>,
    pub nodes: BTreeMap<u64, Proc>,
    rt: tokio::runtime::Runtime,
}

pub struct Proc {
    pub child: Child,
    stderr: mpsc::Receiver<String>,
}

impl Cluster {
    /// Three members under `root`, every one started with `--bootstrap`.
    pub fn start(root: &Path) -> Cluster {
        let ports = free_ports(3);
        let urls: BTreeMap<u64, String> = (1..=3u64)
            .map(|id| (id, format!("http://127.0.0.1:{}", ports[id as usize - 1])))
            .collect();
        let dirs = (1..=3u64)
            .map(|id| (id, root.join(format!("node{id}"))))
            .collect();
        let mut c = Cluster {
            urls,
            dirs,
            nodes: BTreeMap::new(),
            rt: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap(),
        };
        for id in 1..=3 {
            c.spawn(id, &["--bootstrap"]);
        }
        c
    }

    pub fn peers(&self) -> String {
        self.urls
            .iter()
            .map(|(i, u)| format!("{i}={u}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The arguments of node `id`'s `telha serve`.
    pub fn args(&self, id: u64, peers: &str) -> Vec<String> {
        let listen = self.urls[&id].trim_start_matches("http://").to_string();
        [
            "serve",
            "--cluster",
            "--node-id",
            &id.to_string(),
            "--peers",
            peers,
            "--data-dir",
            self.dirs[&id].to_str().unwrap(),
            "--listen",
            &listen,
            "--grace",
            "1s",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }

    /// Start node `id` (its `listening on` line within 20 s).
    pub fn spawn(&mut self, id: u64, extra: &[&str]) {
        let mut cmd = telha();
        cmd.args(self.args(id, &self.peers())).args(extra);
        let p = spawn_and_wait(cmd).unwrap_or_else(|e| panic!("node {id}: {e}"));
        self.nodes.insert(id, p);
    }

    /// SIGKILL node `id` and reap it.
    pub fn kill9(&mut self, id: u64) {
        let mut p = self.nodes.remove(&id).expect("running");
        p.child.kill().unwrap();
        p.child.wait().unwrap();
    }

    /// SIGTERM node `id`; its exit status (within 20 s) and stderr.
    pub fn terminate(&mut self, id: u64) -> (ExitStatus, String) {
        let mut p = self.nodes.remove(&id).expect("running");
        let st = Command::new("sh")
            .args(["-c", &format!("kill -TERM {}", p.child.id())])
            .status()
            .unwrap();
        assert!(st.success());
        let end = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(st) = p.child.try_wait().unwrap() {
                std::thread::sleep(Duration::from_millis(100));
                return (st, p.stderr.try_iter().collect::<Vec<_>>().join("\n"));
            }
            assert!(Instant::now() < end, "node {id} ignored SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A `Get` of a job no one has, straight to node `id` (no client
    /// retries): OK on the leader, the status elsewhere.
    pub fn probe(&self, id: u64) -> Result<(), tonic::Status> {
        let url = self.urls[&id].clone();
        // Bounded: a node that takes the call and never answers is a
        // failure with a message, not a hung test.
        let call = async move {
            let mut c = JobsClient::connect(url)
                .await
                .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
            let id = uuid_bytes();
            c.get(pb::GetRequest { id }).await.map(drop)
        };
        self.rt.block_on(async move {
            tokio::time::timeout(Duration::from_secs(5), call)
                .await
                .unwrap_or_else(|_| {
                    Err(tonic::Status::deadline_exceeded(format!(
                        "node {id}: no answer to Get within 5 s"
                    )))
                })
        })
    }

    /// The running node that answers as leader, within `within`.
    pub fn leader(&self, within: Duration) -> u64 {
        let end = Instant::now() + within;
        loop {
            for &id in self.nodes.keys() {
                if self.probe(id).is_ok() {
                    return id;
                }
            }
            assert!(
                Instant::now() < end,
                "no leader within {within:?}: {:?}",
                self.nodes
                    .keys()
                    .map(|&id| (id, self.probe(id).err().map(|s| s.message().to_string())))
                    .collect::<Vec<_>>()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for p in self.nodes.values_mut() {
            if p.child.try_wait().ok().flatten().is_none() {
                let _ = p.child.kill();
                let _ = p.child.wait();
            }
        }
    }
}

/// A job id no one has (UUID bytes).
fn uuid_bytes() -> Vec<u8> {
    let mut b = vec![0u8; 16];
    b[6] = 0x70;
    b[8] = 0x80;
    b[15] = 1;
    b
}

/// `cmd` started, its `listening on` line awaited (20 s), or why not.
pub fn spawn_and_wait(mut cmd: Command) -> Result<Proc, String> {
    let mut child = cmd
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
    let end = Instant::now() + Duration::from_secs(20);
    while Instant::now() < end {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(l) if l.starts_with("listening on ") => return Ok(Proc { child, stderr: erx }),
            Ok(_) => {}
            Err(_) => {
                if let Ok(Some(st)) = child.try_wait() {
                    std::thread::sleep(Duration::from_millis(100));
                    let errs: Vec<String> = erx.try_iter().collect();
                    return Err(format!("exited {st}: {}", errs.join("\n")));
                }
            }
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    Err("no `listening on` line within 20 s".into())
}

/// The code and `telha-leader-*` metadata of a status.
pub fn hint(s: &tonic::Status) -> (Code, Option<String>, Option<String>) {
    let get = |k: &str| {
        s.metadata()
            .get(k)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    (s.code(), get("telha-leader-id"), get("telha-leader-url"))
}
