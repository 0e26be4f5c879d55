//! TLS for the HTTP listener, with the certificate and key the gRPC
//! listeners serve (`ServeOptions::tls`): rustls with the ring provider,
//! the one tonic uses, offering HTTP/1.1 over ALPN.

use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use telha_jobs::{Error, Result};
use tokio_rustls::rustls;
pub(crate) use tokio_rustls::TlsAcceptor;

use crate::TlsPem;

pub(crate) fn acceptor(pem: &TlsPem) -> Result<TlsAcceptor> {
    let bad = |what: &str, e: &dyn std::fmt::Display| {
        Error::InvalidArgument(format!("TLS {what} for the HTTP listener: {e}"))
    };
    let certs = CertificateDer::pem_slice_iter(&pem.cert_pem)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| bad("certificate", &e))?;
    if certs.is_empty() {
        return Err(bad("certificate", &"no CERTIFICATE block in the PEM"));
    }
    let key = PrivateKeyDer::from_pem_slice(&pem.key_pem).map_err(|e| bad("key", &e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad("versions", &e))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| bad("certificate and key", &e))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}
