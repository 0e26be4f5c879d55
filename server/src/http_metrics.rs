//! `GET /metrics` over plain HTTP/1.1: the store's Prometheus text and the
//! server's counters. Deliberately tiny (one request per connection, no
//! keep-alive, requests over 8 KiB refused): Prometheus scrapers need
//! nothing more, and it keeps an HTTP server stack out of the build.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::auth::Check;
use crate::service::Shared;

pub(crate) async fn serve(l: TcpListener, shared: Arc<Shared>, check: Check) {
    loop {
        let Ok((conn, _)) = l.accept().await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let (shared, check) = (shared.clone(), check.clone());
        tokio::spawn(async move {
            let _ =
                tokio::time::timeout(Duration::from_secs(10), answer(conn, shared, check)).await;
        });
    }
}

async fn answer(mut conn: TcpStream, shared: Arc<Shared>, check: Check) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = conn.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.len() > 8192 {
            return reply(
                &mut conn,
                "431 Request Header Fields Too Large",
                "text/plain",
                "",
            )
            .await;
        }
    }
    let head = String::from_utf8_lossy(&buf);
    let mut lines = head.split("\r\n");
    let request = lines.next().unwrap_or("");
    let mut parts = request.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let auth = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("authorization"))
        .map(|(_, v)| v.trim().as_bytes().to_vec());
    if method != "GET" {
        return reply(
            &mut conn,
            "405 Method Not Allowed",
            "text/plain",
            "GET only\n",
        )
        .await;
    }
    if path != "/metrics" {
        return reply(&mut conn, "404 Not Found", "text/plain", "see /metrics\n").await;
    }
    if !check.allows(auth.as_deref()) {
        return reply(
            &mut conn,
            "401 Unauthorized",
            "text/plain",
            "bearer token required\n",
        )
        .await;
    }
    let q = shared.queue.clone();
    let text = tokio::task::spawn_blocking(move || q.metrics()).await;
    match text {
        Ok(Ok(mut t)) => {
            t.push_str(&shared.stats.prometheus());
            reply(
                &mut conn,
                "200 OK",
                "text/plain; version=0.0.4; charset=utf-8",
                &t,
            )
            .await
        }
        Ok(Err(e)) => {
            reply(
                &mut conn,
                "503 Service Unavailable",
                "text/plain",
                &format!("{e}\n"),
            )
            .await
        }
        Err(e) => {
            reply(
                &mut conn,
                "500 Internal Server Error",
                "text/plain",
                &format!("{e}\n"),
            )
            .await
        }
    }
}

async fn reply(conn: &mut TcpStream, status: &str, ctype: &str, body: &str) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    conn.write_all(head.as_bytes()).await?;
    conn.write_all(body.as_bytes()).await?;
    conn.shutdown().await
}
