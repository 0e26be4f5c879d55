//! The page's files, embedded in the binary (no CDN, nothing fetched: the
//! page works on an air-gapped host). `TELHA_UI_ASSETS=DIR` reads them from
//! `DIR` on every request instead, for working on the page without a
//! rebuild.

use hyper::body::Bytes;
use hyper::Response;

use super::reply::{text, with_type, Body};

struct Asset {
    path: &'static str,
    file: &'static str,
    ctype: &'static str,
    body: &'static str,
}

const ASSETS: &[Asset] = &[
    Asset {
        path: "/",
        file: "index.html",
        ctype: "text/html; charset=utf-8",
        body: include_str!("../../ui/index.html"),
    },
    Asset {
        path: "/assets/app.js",
        file: "app.js",
        ctype: "text/javascript; charset=utf-8",
        body: include_str!("../../ui/app.js"),
    },
    Asset {
        path: "/assets/dom.js",
        file: "dom.js",
        ctype: "text/javascript; charset=utf-8",
        body: include_str!("../../ui/dom.js"),
    },
    Asset {
        path: "/assets/scopes.js",
        file: "scopes.js",
        ctype: "text/javascript; charset=utf-8",
        body: include_str!("../../ui/scopes.js"),
    },
    Asset {
        path: "/assets/find.js",
        file: "find.js",
        ctype: "text/javascript; charset=utf-8",
        body: include_str!("../../ui/find.js"),
    },
    Asset {
        path: "/assets/app.css",
        file: "app.css",
        ctype: "text/css; charset=utf-8",
        body: include_str!("../../ui/app.css"),
    },
    Asset {
        path: "/assets/favicon.svg",
        file: "favicon.svg",
        ctype: "image/svg+xml",
        body: include_str!("../../ui/favicon.svg"),
    },
    Asset {
        path: "/api/v1/openapi.json",
        file: "openapi.json",
        ctype: "application/json",
        body: include_str!("../../ui/openapi.json"),
    },
];

/// The asset at `path` (`/index.html` is `/`), or `None`.
pub(crate) fn get(path: &str) -> Option<Response<Body>> {
    let path = if path == "/index.html" { "/" } else { path };
    let a = ASSETS.iter().find(|a| a.path == path)?;
    if let Some(dir) = std::env::var_os("TELHA_UI_ASSETS") {
        let p = std::path::Path::new(&dir).join(a.file);
        return Some(match std::fs::read(&p) {
            Ok(b) => with_type(200, a.ctype, Bytes::from(b)),
            Err(e) => text(500, &format!("TELHA_UI_ASSETS: {}: {e}\n", p.display())),
        });
    }
    Some(with_type(
        200,
        a.ctype,
        Bytes::from_static(a.body.as_bytes()),
    ))
}

/// The embedded bytes of every asset: what the page costs a binary.
pub(crate) fn total_bytes() -> usize {
    ASSETS.iter().map(|a| a.body.len()).sum()
}
