//! The bearer token check, on every RPC and on `/metrics`.

use std::sync::Arc;

use tonic::{Request, Status};

/// Compares `authorization: Bearer <token>` with the configured token in
/// constant time (over the token's length). No token configured: every
/// call passes.
#[derive(Clone)]
pub(crate) struct Check {
    token: Option<Arc<[u8]>>,
}

/// Equal in time independent of where the first difference is (the length
/// is not secret: it leaks through timing of the parse anyway).
pub(crate) fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Check {
    pub(crate) fn new(token: Option<&str>) -> Self {
        Check {
            token: token.map(|t| Arc::from(t.trim().as_bytes())),
        }
    }

    /// Whether an `authorization` header value grants access.
    pub(crate) fn allows(&self, header: Option<&[u8]>) -> bool {
        let Some(want) = &self.token else {
            return true;
        };
        let Some(h) = header else {
            return false;
        };
        let got = h.strip_prefix(b"Bearer ").unwrap_or(b"");
        ct_eq(got, want)
    }

    pub(crate) fn grpc(&self, req: Request<()>) -> Result<Request<()>, Status> {
        let header = req.metadata().get("authorization").map(|v| v.as_bytes());
        if self.allows(header) {
            Ok(req)
        } else if header.is_none() {
            Err(Status::unauthenticated(
                "this server requires `authorization: Bearer <token>`",
            ))
        } else {
            Err(Status::unauthenticated("wrong bearer token"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_bearer_token_passes() {
        let c = Check::new(Some("s3cret"));
        assert!(c.allows(Some(b"Bearer s3cret")));
        assert!(!c.allows(Some(b"Bearer s3creT")));
        assert!(!c.allows(Some(b"Bearer s3cret2")));
        assert!(!c.allows(Some(b"s3cret")));
        assert!(!c.allows(None));
        assert!(Check::new(None).allows(None));
    }
}
