//! Tags and metadata of a job (issue 42): what they may hold, and the
//! checks every front end relies on (they pass them through to the core,
//! which answers `InvalidArgument` naming the limit before anything is
//! written).
//!
//! - **Tags**: at most [`MAX_TAGS`] strings, each 1 to [`MAX_TAG_LEN`]
//!   bytes of UTF-8 with no control character. Duplicates are removed
//!   (the first of each is kept, in the given order), so a caller that
//!   tags a job twice with one tag is not refused. Indexed (see
//!   `docs/ARCHITECTURE.md`, "Tag index").
//! - **Metadata**: a string → string map of at most
//!   [`MAX_METADATA_BYTES`] bytes, measured as the sum of its keys' and
//!   values' lengths plus 2 per entry; keys are 1 to [`MAX_TAG_LEN`] bytes
//!   with no control character, values any UTF-8. Never indexed.

use std::collections::BTreeMap;

use crate::error::{Error, Result};

/// The most tags one job carries (after duplicates are removed).
pub const MAX_TAGS: usize = 16;
/// The longest tag (and metadata key), in bytes.
pub const MAX_TAG_LEN: usize = 64;
/// The largest metadata map: keys' and values' bytes plus 2 per entry.
pub const MAX_METADATA_BYTES: usize = 4096;

/// Check one tag: 1 to [`MAX_TAG_LEN`] bytes, no control character.
pub fn validate_tag(t: &str) -> Result<()> {
    check_word("tag", t)
}

fn check_word(what: &str, t: &str) -> Result<()> {
    if t.is_empty() || t.len() > MAX_TAG_LEN {
        return Err(Error::invalid(format!(
            "{what} must be 1 to {MAX_TAG_LEN} bytes, got {} bytes: {:?}",
            t.len(),
            short(t)
        )));
    }
    // Printable ASCII (the usual tag) has no control character: only
    // other text is walked by char.
    if t.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return Ok(());
    }
    if let Some(c) = t.chars().find(|c| c.is_control()) {
        return Err(Error::invalid(format!(
            "{what} {:?} holds the control character U+{:04X}; control characters are not allowed",
            short(t),
            c as u32
        )));
    }
    Ok(())
}

fn short(t: &str) -> String {
    let mut s = t.to_string();
    crate::store::codec::truncate_utf8(&mut s, 80);
    s
}

/// Check `tags` without copying them: each one, and at most
/// [`MAX_TAGS`] distinct ones (duplicates are dropped later, the first
/// kept). Returns how many are distinct. `InvalidArgument` otherwise.
pub fn check_tags<S: AsRef<str>>(tags: &[S]) -> Result<usize> {
    let mut distinct = 0;
    for (i, t) in tags.iter().enumerate() {
        let t = t.as_ref();
        validate_tag(t)?;
        if !tags[..i].iter().any(|o| o.as_ref() == t) {
            distinct += 1;
        }
    }
    if distinct > MAX_TAGS {
        return Err(Error::invalid(format!(
            "a job carries at most {MAX_TAGS} tags, got {distinct}"
        )));
    }
    Ok(distinct)
}

/// Check `tags` and return them with duplicates removed (first kept).
/// `InvalidArgument` for a bad tag or more than [`MAX_TAGS`] distinct ones.
pub fn normalize_tags(tags: &[String]) -> Result<Vec<String>> {
    check_tags(tags)?;
    let mut out: Vec<String> = Vec::with_capacity(tags.len().min(MAX_TAGS));
    for t in tags {
        if !out.contains(t) {
            out.push(t.clone());
        }
    }
    Ok(out)
}

/// The size [`MAX_METADATA_BYTES`] bounds.
pub fn metadata_size(m: &BTreeMap<String, String>) -> usize {
    m.iter().map(|(k, v)| k.len() + v.len() + 2).sum()
}

/// Check a metadata map: keys 1 to [`MAX_TAG_LEN`] bytes without control
/// characters, the whole at most [`MAX_METADATA_BYTES`].
pub fn validate_metadata(m: &BTreeMap<String, String>) -> Result<()> {
    for k in m.keys() {
        check_word("metadata key", k)?;
    }
    let n = metadata_size(m);
    if n > MAX_METADATA_BYTES {
        return Err(Error::invalid(format!(
            "metadata of {n} bytes is over the limit of {MAX_METADATA_BYTES} bytes (keys and values plus 2 per entry)"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(t: &[&str]) -> Vec<String> {
        t.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn tags_are_checked_and_deduplicated() {
        assert_eq!(
            normalize_tags(&v(&["a", "b", "a"])).unwrap(),
            v(&["a", "b"])
        );
        let many: Vec<String> = (0..17).map(|i| format!("t{i}")).collect();
        let e = normalize_tags(&many).unwrap_err().to_string();
        assert!(e.contains("at most 16 tags"), "{e}");
        // 17 given, 16 distinct: accepted.
        let mut dup: Vec<String> = (0..16).map(|i| format!("t{i}")).collect();
        dup.push("t0".into());
        assert_eq!(normalize_tags(&dup).unwrap().len(), 16);
        let e = normalize_tags(&["x".repeat(65)]).unwrap_err().to_string();
        assert!(e.contains("1 to 64 bytes"), "{e}");
        assert!(normalize_tags(&["x".repeat(64)]).is_ok());
        assert!(normalize_tags(&v(&[""])).is_err());
        let e = normalize_tags(&v(&["a\nb"])).unwrap_err().to_string();
        assert!(e.contains("control character U+000A"), "{e}");
        for bad in ["a\u{7f}", "\u{85}x", "x\u{9f}"] {
            let e = validate_tag(bad).unwrap_err().to_string();
            assert!(e.contains("control character"), "{bad:?}: {e}");
        }
        assert!(validate_tag("a~ b").is_ok() && validate_tag("\u{a0}").is_ok());
        assert!(normalize_tags(&v(&["ordre-4711", "müller", "客户"])).is_ok());
        assert_eq!(check_tags(&["a", "b", "a"]).unwrap(), 2);
        assert!(check_tags(&dup).is_ok() && check_tags(&many).is_err());
    }

    #[test]
    fn metadata_is_bounded() {
        let mut m = BTreeMap::new();
        m.insert("k".to_string(), "v".repeat(4093));
        assert_eq!(metadata_size(&m), 4096);
        assert!(validate_metadata(&m).is_ok());
        m.insert("k".to_string(), "v".repeat(5 * 1024));
        let e = validate_metadata(&m).unwrap_err().to_string();
        assert!(e.contains("limit of 4096 bytes"), "{e}");
        let mut m = BTreeMap::new();
        m.insert(String::new(), "v".to_string());
        assert!(validate_metadata(&m).is_err());
    }
}
