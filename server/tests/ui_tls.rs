//! The HTTP listener with `ServeOptions::tls`: the page, the API and
//! `/metrics` over TLS with the gRPC certificate; the session cookie is
//! `Secure`; plain HTTP gets no answer.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use telha_jobs_server::{ServeOptions, TlsPem};
use tokio_rustls::rustls;

fn https(addr: std::net::SocketAddr, ca: &[u8], req: &str) -> String {
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(ca) {
        roots.add(c.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = ServerName::try_from("localhost").unwrap();
    let mut conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let mut sock = TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut tls = rustls::Stream::new(&mut conn, &mut sock);
    tls.write_all(req.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = tls.read_to_end(&mut out); // the server may close without close_notify
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn the_page_and_api_serve_tls_with_the_grpc_certificate() {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let (cert_pem, key_pem) = (cert.cert.pem(), cert.signing_key.serialize_pem());
    let s = common::served_with(
        common::config(),
        ServeOptions {
            ui: true,
            metrics_listen: Some("127.0.0.1:0".into()),
            token: Some("tok".into()),
            tls: Some(TlsPem {
                cert_pem: cert_pem.clone().into_bytes(),
                key_pem: key_pem.into_bytes(),
            }),
            ..ServeOptions::default()
        },
    );
    let h = s.server.as_ref().unwrap();
    let addr = h.metrics_addr().unwrap();
    assert_eq!(h.ui_url().unwrap(), format!("https://{addr}/"));
    let ca = cert_pem.as_bytes();
    let head = |m: &str, p: &str, extra: &str| {
        format!("{m} {p} HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n{extra}\r\n")
    };
    let page = https(addr, ca, &head("GET", "/", ""));
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    let body = r#"{"token":"tok"}"#;
    let login = https(
        addr,
        ca,
        &format!(
            "{}{body}",
            head(
                "POST",
                "/api/v1/login",
                &format!(
                    "content-type: application/json\r\ncontent-length: {}\r\n",
                    body.len()
                )
            )
        ),
    );
    assert!(login.starts_with("HTTP/1.1 200"), "{login}");
    let cookie = login
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("set-cookie:"))
        .unwrap();
    assert!(
        cookie.contains("; Secure") && cookie.contains("HttpOnly"),
        "{cookie}"
    );
    let metrics = https(
        addr,
        ca,
        &head("GET", "/metrics", "authorization: Bearer tok\r\n"),
    );
    assert!(metrics.contains("telha_jobs"), "{metrics}");

    // Plain HTTP on the TLS port: no HTTP answer.
    let mut plain = TcpStream::connect(addr).unwrap();
    plain
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    plain
        .write_all(head("GET", "/api/v1/info", "").as_bytes())
        .unwrap();
    let mut out = Vec::new();
    let _ = plain.read_to_end(&mut out);
    assert!(
        !out.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&out)
    );
}
