//! The endpoint list: `http://a:7450,http://b:7450` parsed, validated and
//! turned into one lazily connected channel per server, plus the servers a
//! `telha-leader` hint names (up to [`MAX_LEARNED`] of them).
//!
//! Calls go to the current endpoint; a transport failure moves to the next
//! one in list order, a hint to the server it names. Channels connect on
//! first use and reconnect by themselves after a lost connection, so an
//! endpoint that was down is tried again when its turn comes.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use telha_jobs::{Error, Result};
use telha_jobs_proto::v1::jobs_client::JobsClient;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint};

use crate::{Auth, Client, ConnectOptions, MESSAGE_LIMIT};

/// The most servers one list may name (a cluster has 3 or 5).
pub const MAX_ENDPOINTS: usize = 64;
/// How many servers outside the list a client follows hints to.
pub(crate) const MAX_LEARNED: usize = 16;

fn invalid(msg: String) -> Error {
    Error::InvalidArgument(msg)
}

/// The URLs of `list` (comma-separated), each trimmed and without a
/// trailing `/`, in order. `InvalidArgument` naming the item for an empty
/// item, a malformed URL or bad scheme, a repeated URL, or more than
/// [`MAX_ENDPOINTS`] items.
pub(crate) fn parse_list(list: &str, options: &ConnectOptions) -> Result<Vec<String>> {
    if list.trim().is_empty() {
        return Err(invalid("no server URL given".into()));
    }
    let items: Vec<&str> = list.split(',').collect();
    if items.len() > MAX_ENDPOINTS {
        return Err(invalid(format!(
            "{} server URLs given, at most {MAX_ENDPOINTS}: item {} ({:?}) is one too many",
            items.len(),
            MAX_ENDPOINTS + 1,
            items[MAX_ENDPOINTS].trim()
        )));
    }
    let mut urls: Vec<String> = Vec::with_capacity(items.len());
    for (i, raw) in items.iter().enumerate() {
        let url = normalize(raw);
        if url.is_empty() {
            return Err(invalid(format!(
                "server URL list {:?}: item {} is empty",
                short(list),
                i + 1
            )));
        }
        if let Some(j) = urls.iter().position(|u| *u == url) {
            return Err(invalid(format!(
                "server URL list: item {} ({url:?}) repeats item {}",
                i + 1,
                j + 1
            )));
        }
        endpoint_for(&url, options)?;
        urls.push(url);
    }
    Ok(urls)
}

fn normalize(raw: &str) -> String {
    raw.trim().trim_end_matches('/').to_string()
}

/// The list as a message shows it (a 1,000-item list is not repeated).
fn short(list: &str) -> String {
    if list.len() <= 200 {
        return list.to_string();
    }
    let mut end = 200;
    while !list.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &list[..end])
}

/// The tonic endpoint of one server URL with the options' timeouts,
/// keep-alive and TLS: `InvalidArgument` for a malformed URL, a scheme
/// other than http/https/unix, a `unix:` URL without a path or with TLS
/// settings, or TLS settings that do not load.
pub(crate) fn endpoint_for(url: &str, options: &ConnectOptions) -> Result<Endpoint> {
    let mut endpoint = Endpoint::from_shared(url.to_string())
        .map_err(|e| invalid(format!("server URL {url:?}: {e}")))?;
    let unix = url.starts_with("unix:");
    let scheme = if unix {
        let path = url.trim_start_matches("unix:").trim_start_matches("//");
        if path.is_empty() {
            return Err(invalid(format!(
                "server URL {url:?}: unix: needs a socket path (unix:/run/telha.sock)"
            )));
        }
        if options.ca_cert_pem.is_some() || options.tls_domain.is_some() {
            return Err(invalid(format!(
                "server URL {url:?}: a Unix socket is served without TLS; \
                 ca_cert / tls_domain apply to https:// only"
            )));
        }
        "unix".to_string()
    } else {
        endpoint.uri().scheme_str().unwrap_or("").to_string()
    };
    if scheme != "http" && scheme != "https" && scheme != "unix" {
        return Err(invalid(format!(
            "server URL {url:?}: the scheme must be http://, https:// or unix:"
        )));
    }
    if !unix && endpoint.uri().host().is_none() {
        return Err(invalid(format!("server URL {url:?} has no host")));
    }
    endpoint = endpoint
        .connect_timeout(options.connect_timeout)
        .tcp_nodelay(true)
        .http2_keep_alive_interval(options.keep_alive_interval)
        .keep_alive_timeout(options.keep_alive_timeout)
        .keep_alive_while_idle(true);
    if scheme == "https" {
        let mut tls = ClientTlsConfig::new();
        tls = match &options.ca_cert_pem {
            Some(pem) => tls.ca_certificate(Certificate::from_pem(pem)),
            None => tls.with_webpki_roots(),
        };
        if let Some(d) = &options.tls_domain {
            tls = tls.domain_name(d.clone());
        }
        endpoint = endpoint
            .tls_config(tls)
            .map_err(|e| invalid(format!("TLS settings for {url}: {e}")))?;
    }
    Ok(endpoint)
}

pub(crate) struct Ep {
    pub(crate) url: String,
    pub(crate) client: Client,
}

/// The servers a client talks to and which one is current.
pub(crate) struct Endpoints {
    eps: Mutex<Vec<Ep>>,
    /// How many of `eps` came from the list (the rest from hints).
    listed: usize,
    current: AtomicUsize,
    options: ConnectOptions,
    auth: Auth,
}

impl Endpoints {
    /// Channels for `urls` (validated by [`parse_list`]); none connects yet.
    pub(crate) fn new(urls: &[String], options: &ConnectOptions, auth: Auth) -> Result<Self> {
        let mut eps = Vec::with_capacity(urls.len());
        for u in urls {
            eps.push(Ep {
                url: u.clone(),
                client: channel(u, options, &auth)?,
            });
        }
        Ok(Endpoints {
            listed: eps.len(),
            eps: Mutex::new(eps),
            current: AtomicUsize::new(0),
            options: options.clone(),
            auth,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Ep>> {
        self.eps.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How many servers the list named.
    pub(crate) fn listed(&self) -> usize {
        self.listed
    }

    /// The current endpoint: its index, URL and client.
    pub(crate) fn current(&self) -> (usize, String, Client) {
        let eps = self.lock();
        let i = self.current.load(Ordering::SeqCst) % eps.len();
        (i, eps[i].url.clone(), eps[i].client.clone())
    }

    /// Every URL of the list, for messages.
    pub(crate) fn urls(&self) -> Vec<String> {
        self.lock()
            .iter()
            .take(self.listed)
            .map(|e| e.url.clone())
            .collect()
    }

    /// Make endpoint `i` current.
    pub(crate) fn set(&self, i: usize) {
        self.current.store(i, Ordering::SeqCst);
    }

    /// After a transport failure on endpoint `i`: the next listed one
    /// (unless another call moved on already). A learned endpoint that
    /// failed hands back to the list's first.
    pub(crate) fn rotate(&self, failed: usize) {
        let next = if failed + 1 >= self.listed {
            0
        } else {
            failed + 1
        };
        let _ = self
            .current
            .compare_exchange(failed, next, Ordering::SeqCst, Ordering::SeqCst);
    }

    /// Follow a `telha-leader` hint: make the server it names current,
    /// adding it when the list does not have it. `false` when the hint is
    /// not a usable URL, or too many servers were learned already.
    pub(crate) fn follow(&self, hint: &str) -> bool {
        let url = normalize(hint);
        let mut eps = self.lock();
        if let Some(i) = eps.iter().position(|e| e.url == url) {
            self.current.store(i, Ordering::SeqCst);
            return true;
        }
        if eps.len() >= self.listed + MAX_LEARNED {
            return false;
        }
        let Ok(client) = channel(&url, &self.options, &self.auth) else {
            return false;
        };
        eps.push(Ep { url, client });
        self.current.store(eps.len() - 1, Ordering::SeqCst);
        true
    }
}

fn channel(url: &str, options: &ConnectOptions, auth: &Auth) -> Result<Client> {
    let channel = endpoint_for(url, options)?.connect_lazy();
    Ok(
        JobsClient::new(InterceptedService::new(channel, auth.clone()))
            .max_decoding_message_size(MESSAGE_LIMIT)
            .max_encoding_message_size(MESSAGE_LIMIT),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(list: &str) -> Result<Vec<String>> {
        parse_list(list, &ConnectOptions::default())
    }

    #[test]
    fn a_list_parses_in_order_trimmed() {
        assert_eq!(
            parse(" http://a:1/ , https://b:2,unix:/run/t.sock").unwrap(),
            ["http://a:1", "https://b:2", "unix:/run/t.sock"]
        );
    }

    #[test]
    fn bad_lists_are_invalid_arguments_naming_the_item() {
        let msg = |l: &str| match parse(l) {
            Err(Error::InvalidArgument(m)) => m,
            other => panic!("{l:?}: {other:?}"),
        };
        assert!(msg("http://a:1,,http://b:2").contains("item 2 is empty"));
        assert!(msg("http://a:1,").contains("item 2 is empty"));
        assert!(msg("").contains("no server URL"));
        assert!(msg("http://a:1,ftp://b:2").contains("\"ftp://b:2\""));
        assert!(msg("http://a:1,http://a:1/").contains("item 2 (\"http://a:1\") repeats item 1"));
        let many: Vec<String> = (0..1000).map(|i| format!("http://h{i}:1")).collect();
        let m = msg(&many.join(","));
        assert!(
            m.contains("1000 server URLs") && m.contains("http://h64:1"),
            "{m}"
        );
        assert!(m.len() < 300, "{m}");
    }
}
