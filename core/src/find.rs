//! What `find` takes and returns (issue 42): one text answered as a job
//! id, an idempotency key and a tag, each exactly and each from its own
//! index (O(page), never a scan). No full-text engine: a text matches
//! only what it equals.

use crate::error::{Error, Result};
use crate::ids::Scope;
use crate::job::{JobInfo, ListPage};
use crate::limits::MAX_IDEMPOTENCY_KEY_LEN;

/// The longest text `find` takes, in bytes: the longest idempotency key,
/// the longest thing it can match.
pub const MAX_FIND_TEXT_LEN: usize = MAX_IDEMPOTENCY_KEY_LEN;

/// The tag page's default size.
pub const DEFAULT_FIND_LIMIT: usize = 50;

/// A `find` query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindQuery {
    /// What to look for: 1 to [`MAX_FIND_TEXT_LEN`] bytes of UTF-8 with
    /// no control character (an idempotency key holding one cannot be
    /// found). Not trimmed.
    pub text: String,
    /// Only this scope. An idempotency key is per scope, so the key is
    /// looked up in this scope, or in [`Scope::SYSTEM`] (the default scope
    /// of an enqueue) when `None`; a job id and a tag match in every scope
    /// when `None`.
    pub scope: Option<Scope>,
    /// The most jobs on the tag's page: 1 to
    /// [`crate::limits::MAX_LIST_LIMIT`] (default [`DEFAULT_FIND_LIMIT`]).
    pub limit: usize,
}

impl FindQuery {
    /// A query for `text` in every scope (the key in the system scope),
    /// with the default page size.
    pub fn new(text: impl Into<String>) -> Self {
        FindQuery {
            text: text.into(),
            scope: None,
            limit: DEFAULT_FIND_LIMIT,
        }
    }
}

/// What `find` found: every kind the text matched, side by side (a text
/// can be a tag and an idempotency key at once).
#[derive(Debug, Clone, PartialEq)]
pub struct FindResult {
    /// The job whose id the text is (in the query's scope, when given).
    pub by_id: Option<JobInfo>,
    /// The job the text is the idempotency key of, in the query's scope
    /// (the system scope when none was given).
    pub by_key: Option<JobInfo>,
    /// The first page of the jobs carrying the text as a tag, in
    /// tag-index order (scope, then enqueue order), as `list` with
    /// [`ListQuery::tag`](crate::ListQuery::tag) answers it: pass
    /// `by_tag.next` as `after` to `list` with `tag` = the text (and the
    /// same scope) for the rest. Empty when the text is longer than a tag
    /// can be.
    pub by_tag: ListPage,
}

impl FindResult {
    /// The kinds that matched, in this order: `"id"`, `"key"`, `"tag"`
    /// (a tag matches when its page holds a job).
    pub fn matched(&self) -> Vec<&'static str> {
        let mut m = Vec::new();
        if self.by_id.is_some() {
            m.push("id");
        }
        if self.by_key.is_some() {
            m.push("key");
        }
        if !self.by_tag.jobs.is_empty() {
            m.push("tag");
        }
        m
    }

    /// True when nothing matched.
    pub fn is_empty(&self) -> bool {
        self.matched().is_empty()
    }
}

/// Check a `find` text: 1 to [`MAX_FIND_TEXT_LEN`] bytes, no control
/// character. `InvalidArgument` naming the limit.
pub fn validate_text(t: &str) -> Result<()> {
    if t.is_empty() || t.len() > MAX_FIND_TEXT_LEN {
        return Err(Error::invalid(format!(
            "find text must be 1 to {MAX_FIND_TEXT_LEN} bytes, got {} bytes",
            t.len()
        )));
    }
    if let Some(c) = t.chars().find(|c| c.is_control()) {
        return Err(Error::invalid(format!(
            "find text holds the control character U+{:04X}; control characters are not allowed",
            c as u32
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_checked() {
        let e = validate_text("").unwrap_err().to_string();
        assert!(e.contains("1 to 512 bytes, got 0"), "{e}");
        let e = validate_text(&"x".repeat(513)).unwrap_err().to_string();
        assert!(e.contains("1 to 512 bytes, got 513"), "{e}");
        assert!(validate_text(&"x".repeat(512)).is_ok());
        let e = validate_text("a\u{7}b").unwrap_err().to_string();
        assert!(e.contains("control character U+0007"), "{e}");
        assert!(validate_text("order 4711 / müller").is_ok());
    }
}
