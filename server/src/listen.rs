//! Listen addresses: `host:port` (TCP) or `unix:PATH` (a Unix-domain
//! socket), parsed, checked and bound before the server starts.
//!
//! A Unix socket is created with its final mode already set (bound under a
//! temporary name beside the path, `chmod`ed, then renamed into place), so
//! no client ever sees it with the umask's mode. A socket file already at
//! the path is probed: one that answers (another server is listening) is
//! refused, one that refuses connections (a server that died without
//! cleaning up) is replaced; a path that is not a socket is never touched.
//! The server removes its socket file when it stops (only if the file is
//! still the one it created).

use std::net::{SocketAddr, ToSocketAddrs};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::task::{Context, Poll};

use telha_jobs::{Error, Result};

/// The mode a Unix socket gets unless [`crate::ServeOptions::socket_mode`]
/// says otherwise: the owner only (anyone who can connect can use the
/// queue, token or not).
pub const SOCKET_MODE_DEFAULT: u32 = 0o600;

/// An address a server is listening on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenAddr {
    /// A TCP address (the real port when port 0 was asked for).
    Tcp(SocketAddr),
    /// A Unix-domain socket's path.
    Unix(PathBuf),
}

impl ListenAddr {
    /// The URL a client connects to: `http://host:port` (`https://` with
    /// `tls`) or `unix:PATH` (never TLS).
    pub fn url(&self, tls: bool) -> String {
        match self {
            ListenAddr::Tcp(a) => format!("{}://{a}", if tls { "https" } else { "http" }),
            ListenAddr::Unix(p) => format!("unix:{}", p.display()),
        }
    }
}

impl std::fmt::Display for ListenAddr {
    /// `127.0.0.1:7450` or `unix:/run/telha.sock`: the syntax `listen` takes.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ListenAddr::Tcp(a) => write!(f, "{a}"),
            ListenAddr::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// The path of a `unix:PATH` (or `unix://PATH`) address, `None` for
/// anything else.
pub(crate) fn unix_path(addr: &str) -> Option<&str> {
    addr.strip_prefix("unix://")
        .or_else(|| addr.strip_prefix("unix:"))
}

/// A bound listener, not yet serving.
pub(crate) enum Bound {
    Tcp(std::net::TcpListener),
    Unix(std::os::unix::net::UnixListener, SocketFile),
}

/// The socket file a Unix listener created: removed on drop if it is still
/// that file (same device and inode).
pub(crate) struct SocketFile {
    path: PathBuf,
    id: (u64, u64),
}

impl Drop for SocketFile {
    fn drop(&mut self) {
        if let Ok(m) = std::fs::symlink_metadata(&self.path) {
            if (m.dev(), m.ino()) == self.id {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}

fn resolve(what: &str, addr: &str) -> Result<SocketAddr> {
    addr.to_socket_addrs()
        .map_err(|e| Error::InvalidArgument(format!("{what} address {addr:?}: {e}")))?
        .next()
        .ok_or_else(|| {
            Error::InvalidArgument(format!("{what} address {addr:?} resolves to nothing"))
        })
}

/// Parse and bind `addr` (`host:port` or `unix:PATH`). A non-loopback TCP
/// address needs a token; a Unix socket never does (its file mode decides
/// who connects). Errors: `InvalidArgument` for an unparsable address, a
/// non-loopback one without a token, an empty or relative-to-nothing Unix
/// path, a path that exists and is not a socket, or a Unix `what` that
/// cannot be one (`/metrics`); `Storage` when the address is in use (a live
/// socket at the path included) or cannot be bound.
pub(crate) fn bind(what: &str, addr: &str, token: bool, mode: u32) -> Result<(Bound, ListenAddr)> {
    if let Some(path) = unix_path(addr.trim()) {
        return bind_unix(what, Path::new(path), mode);
    }
    let a = resolve(what, addr)?;
    if !a.ip().is_loopback() && !token {
        return Err(Error::InvalidArgument(format!(
            "refusing to serve {what} on {a} without a token: a non-loopback listener \
             requires one (--token-file or TELHA_TOKEN), or listen on 127.0.0.1 or unix:PATH"
        )));
    }
    let l = std::net::TcpListener::bind(a)
        .map_err(|e| Error::Storage(format!("cannot listen on {a} ({what}): {e}")))?;
    l.set_nonblocking(true)
        .map_err(|e| Error::Storage(format!("listener on {a}: {e}")))?;
    let bound = l
        .local_addr()
        .map_err(|e| Error::Storage(format!("listener address: {e}")))?;
    Ok((Bound::Tcp(l), ListenAddr::Tcp(bound)))
}

fn bind_unix(what: &str, path: &Path, mode: u32) -> Result<(Bound, ListenAddr)> {
    use std::os::unix::net::{UnixListener, UnixStream};
    let shown = path.display();
    if path.as_os_str().is_empty() {
        return Err(Error::InvalidArgument(format!(
            "{what} address unix: needs a path (unix:/run/telha.sock)"
        )));
    }
    if mode > 0o777 {
        return Err(Error::InvalidArgument(format!(
            "socket mode {mode:o} is not a permission mode (0 to 777, octal)"
        )));
    }
    match std::fs::symlink_metadata(path) {
        Ok(m) if !m.file_type().is_socket() => {
            return Err(Error::InvalidArgument(format!(
                "cannot listen on unix:{shown}: the path exists and is not a socket \
                 (it is left alone)"
            )))
        }
        Ok(_) => match UnixStream::connect(path) {
            Ok(_) => {
                return Err(Error::Storage(format!(
                    "cannot listen on unix:{shown}: another server is listening there"
                )))
            }
            // Nobody accepts: a stale socket of a server that is gone.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                std::fs::remove_file(path).map_err(|e| {
                    Error::Storage(format!("cannot replace stale socket unix:{shown}: {e}"))
                })?;
            }
            Err(e) => {
                return Err(Error::Storage(format!(
                    "cannot listen on unix:{shown}: the socket there cannot be probed: {e}"
                )))
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(Error::Storage(format!(
                "cannot listen on unix:{shown}: {e}"
            )))
        }
    }
    // Bind under a temporary name, set the mode, rename into place: the
    // socket is never reachable with another mode.
    let name = path.file_name().ok_or_else(|| {
        Error::InvalidArgument(format!("cannot listen on unix:{shown}: no file name"))
    })?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let _ = std::fs::remove_file(&tmp);
    let fail = |e: std::io::Error| Error::Storage(format!("cannot listen on unix:{shown}: {e}"));
    let l = UnixListener::bind(&tmp).map_err(fail)?;
    let placed = std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode))
        .and_then(|()| std::fs::rename(&tmp, path));
    if let Err(e) = placed {
        let _ = std::fs::remove_file(&tmp);
        return Err(fail(e));
    }
    l.set_nonblocking(true).map_err(fail)?;
    let m = std::fs::symlink_metadata(path).map_err(fail)?;
    let file = SocketFile {
        path: path.to_path_buf(),
        id: (m.dev(), m.ino()),
    };
    Ok((Bound::Unix(l, file), ListenAddr::Unix(path.to_path_buf())))
}

/// Accepted Unix connections, as tonic's `serve_with_incoming` takes them.
pub(crate) struct UnixIncoming {
    pub(crate) listener: tokio::net::UnixListener,
    /// Removes the socket file when the server stops.
    pub(crate) _file: SocketFile,
}

impl tokio_stream::Stream for UnixIncoming {
    type Item = std::io::Result<tokio::net::UnixStream>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.listener
            .poll_accept(cx)
            .map(|r| Some(r.map(|(s, _)| s)))
    }
}
