//! Kinds and kind patterns.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};
pub use crate::limits::MAX_KIND_LEN;

/// Check a kind: 1–64 bytes of lowercase ASCII letters, digits and `_ - . :`.
pub fn validate_kind(kind: &str) -> Result<()> {
    if kind.is_empty() || kind.len() > MAX_KIND_LEN {
        return Err(Error::invalid(format!(
            "kind must be 1 to {MAX_KIND_LEN} bytes, got {} ({kind:?})",
            kind.len()
        )));
    }
    if let Some(c) = kind
        .chars()
        .find(|c| !matches!(c, 'a'..='z' | '0'..='9' | '_' | '-' | '.' | ':'))
    {
        return Err(Error::invalid(format!(
            "kind {kind:?} has {c:?}; kinds use lowercase ASCII letters, digits and _ - . :"
        )));
    }
    Ok(())
}

/// The part of a kind before its first `:` (the whole kind when it has none).
pub fn family(kind: &str) -> &str {
    kind.split(':').next().unwrap_or(kind)
}

/// One element of a kind filter: an exact kind, or a family (`ingest:*`).
/// Build it with `str::parse`, which validates the kind syntax
/// (`InvalidArgument` otherwise); the variants themselves are not checked.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum KindPattern {
    /// Matches this kind only.
    Exact(String),
    /// Matches the kind equal to the family and every kind starting `family:`.
    Family(String),
}

impl KindPattern {
    /// Whether a job of `kind` is selected by this pattern.
    pub fn matches(&self, kind: &str) -> bool {
        match self {
            KindPattern::Exact(k) => k == kind,
            KindPattern::Family(f) => family(kind) == f,
        }
    }
}

impl FromStr for KindPattern {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        if let Some(f) = s.strip_suffix(":*") {
            validate_kind(f)?;
            if f.contains(':') {
                return Err(Error::invalid(format!(
                    "kind pattern {s:?}: a family is the part before the first ':'"
                )));
            }
            Ok(KindPattern::Family(f.to_string()))
        } else {
            validate_kind(s)?;
            Ok(KindPattern::Exact(s.to_string()))
        }
    }
}

impl fmt::Display for KindPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KindPattern::Exact(k) => f.write_str(k),
            KindPattern::Family(fam) => write!(f, "{fam}:*"),
        }
    }
}
