//! Who may use the page and its API, and the CSRF check.
//!
//! - No token configured (loopback listeners only): everyone on the machine
//!   may read; a state-changing request needs the server's CSRF token,
//!   which only a same-origin page can read (`GET /api/v1/info` sends no
//!   CORS headers), and a `Host` header naming a loopback address (so a
//!   DNS-rebinding page cannot become same-origin).
//! - A token: a request passes with `authorization: Bearer <token>` (API
//!   clients; not CSRF-able, browsers never add it on their own) or with a
//!   session cookie set by `POST /api/v1/login`. A session's POSTs need the
//!   session's CSRF token in `X-CSRF-Token`.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::auth::{ct_eq, Check};

use super::Req;

/// How long a login lasts.
pub(crate) const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);
/// Sessions kept at most (the oldest go first).
const MAX_SESSIONS: usize = 1024;
pub(crate) const COOKIE: &str = "telha_session";

/// A random hex string (two v4 UUIDs: 244 random bits).
pub(crate) fn random_token() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

struct Session {
    csrf: String,
    until: Instant,
}

/// How a request is allowed in.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Access {
    /// No token configured.
    Open,
    /// A valid bearer header.
    Bearer,
    /// A login session; its CSRF token.
    Session(String),
    /// Not allowed.
    Denied,
}

pub(crate) struct Sessions {
    check: Check,
    required: bool,
    /// The CSRF token when no login is needed.
    open_csrf: String,
    map: Mutex<HashMap<String, Session>>,
}

impl Sessions {
    pub fn new(check: Check, required: bool) -> Self {
        Sessions {
            check,
            required,
            open_csrf: random_token(),
            map: Mutex::new(HashMap::new()),
        }
    }

    pub fn required(&self) -> bool {
        self.required
    }

    fn cookie(req: &Req) -> Option<&str> {
        req.headers
            .get_all("cookie")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|c| c.trim().split_once('='))
            .find(|(k, _)| *k == COOKIE)
            .map(|(_, v)| v.trim())
    }

    pub fn access(&self, req: &Req) -> Access {
        if !self.required {
            return Access::Open;
        }
        if let Some(h) = req.header("authorization") {
            return if self.check.allows(Some(h.as_bytes())) {
                Access::Bearer
            } else {
                Access::Denied
            };
        }
        let Some(id) = Self::cookie(req) else {
            return Access::Denied;
        };
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        match map.get(id) {
            Some(s) if s.until > now => Access::Session(s.csrf.clone()),
            Some(_) => {
                map.remove(id);
                Access::Denied
            }
            None => Access::Denied,
        }
    }

    /// The CSRF token a page of this access sends back; `None` when it
    /// needs none (bearer) or may not act (denied).
    pub fn csrf(&self, a: &Access) -> Option<String> {
        match a {
            Access::Open => Some(self.open_csrf.clone()),
            Access::Session(c) => Some(c.clone()),
            Access::Bearer | Access::Denied => None,
        }
    }

    /// Whether the token is the server's; a new session `(id, csrf)` if so.
    pub fn login(&self, token: &str) -> Option<(String, String)> {
        if !self
            .check
            .allows(Some(format!("Bearer {}", token.trim()).as_bytes()))
        {
            return None;
        }
        let (id, csrf) = (random_token(), random_token());
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        map.retain(|_, s| s.until > now);
        if map.len() >= MAX_SESSIONS {
            if let Some(oldest) = map
                .iter()
                .min_by_key(|(_, s)| s.until)
                .map(|(k, _)| k.clone())
            {
                map.remove(&oldest);
            }
        }
        map.insert(
            id.clone(),
            Session {
                csrf: csrf.clone(),
                until: now + SESSION_TTL,
            },
        );
        Some((id, csrf))
    }

    pub fn logout(&self, req: &Req) {
        if let Some(id) = Self::cookie(req) {
            let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
            map.remove(id);
        }
    }

    /// Whether a state-changing request of this access carries what it
    /// must: nothing more for a bearer; else the CSRF header, and a
    /// same-origin `Origin` when the browser sends one.
    pub fn csrf_ok(&self, a: &Access, req: &Req) -> bool {
        let want = match a {
            Access::Bearer => return true,
            Access::Denied => return false,
            Access::Open => &self.open_csrf,
            Access::Session(c) => c,
        };
        let got = req.header("x-csrf-token").unwrap_or("");
        if !ct_eq(got.as_bytes(), want.as_bytes()) {
            return false;
        }
        match (req.header("origin"), req.header("host")) {
            (Some(o), Some(h)) => {
                o.strip_prefix("http://")
                    .or_else(|| o.strip_prefix("https://"))
                    == Some(h)
            }
            (Some(_), None) => false,
            (None, _) => true,
        }
    }
}

/// Whether a `Host` header names a loopback address (`127.x`, `[::1]`,
/// `localhost`), with or without a port.
pub(crate) fn loopback_host(host: Option<&str>) -> bool {
    let Some(h) = host else {
        return false;
    };
    let name = if let Some(rest) = h.strip_prefix('[') {
        rest.split(']').next().unwrap_or("")
    } else {
        h.rsplit_once(':').map_or(h, |(n, _)| n)
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_only() {
        assert!(loopback_host(Some("127.0.0.1:7451")));
        assert!(loopback_host(Some("localhost")));
        assert!(loopback_host(Some("[::1]:80")));
        assert!(!loopback_host(Some("evil.example:7451")));
        assert!(!loopback_host(Some("10.0.0.5:7451")));
        assert!(!loopback_host(None));
    }
}
