//! The store's format marker: the file `telha.format` in the store
//! directory, written when the store is created (or upgraded) and read
//! before RocksDB opens it, so a store this build cannot serve is refused
//! before a single byte of it changes.
//!
//! ```text
//! # telha-jobs store format (docs/ARCHITECTURE.md, "Record format")
//! format = 3
//! compatible_from = 2
//! ```
//!
//! `format` is the layout the store holds; `compatible_from` the oldest
//! format a build must support to open it. A build opens a store when it
//! supports `format` (upgrading older ones in place), or when its own
//! format is at least `compatible_from`: a newer build that only adds
//! fields older builds may ignore (extension tags in records) leaves
//! `compatible_from` alone, one that adds what an older build would
//! mishandle (a state, a key layout, a column family with a merge operator)
//! raises it. Anything else is refused with `UnsupportedFormat`.
//!
//! Formats: 1 — the original layout, with no marker file (a store with
//! RocksDB's `CURRENT` but no marker is format 1); 2 — records may carry
//! the extension map, payloads over 1 KiB live in the `payloads` column
//! family (a record says so with an extension tag that a format-1 build
//! would not know to follow), and the `meta` column family exists; 3 —
//! fan-in: a job may be `waiting` on others (a state byte and `meta`
//! `fanp/`/`fanc/` rows a format-2 build would mishandle). Format 3 raises
//! `compatible_from` to [`WAITING_COMPAT`] lazily, when the first batch that
//! makes a job wait is written (before it): a store that never held a
//! waiting job stays openable by a format-2 build (a rollback), one that
//! did is refused by it. A replica's store is raised when it opens (its
//! applies are another node's batches, which it does not read).

use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};

/// The marker's file name in the store directory.
pub const FORMAT_FILE: &str = "telha.format";

/// The marker left where a store was moved away from (telha-jobs-cluster
/// seeding a node from it): its text says where the store went. A
/// directory holding it is refused as a store ([`check`]).
pub const MOVED_FILE: &str = "telha.moved";

/// The format this build writes.
pub const FORMAT: u32 = 3;

/// The `compatible_from` this build writes: the oldest build format that
/// can open what this build writes.
pub const COMPATIBLE_FROM: u32 = 2;

/// The `compatible_from` of a store that holds (or held) a `waiting` job:
/// format 3's fan-in state, which a format-2 build would mishandle.
pub const WAITING_COMPAT: u32 = 3;

/// The oldest format this build opens (and upgrades to [`FORMAT`]).
pub const OLDEST_SUPPORTED: u32 = 1;

/// What a store's marker says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreFormat {
    /// The layout the store holds.
    pub format: u32,
    /// The oldest format a build must support to open it.
    pub compatible_from: u32,
}

impl StoreFormat {
    /// What this build writes.
    pub const CURRENT: StoreFormat = StoreFormat {
        format: FORMAT,
        compatible_from: COMPATIBLE_FROM,
    };

    /// A store without a marker: format 1.
    pub const LEGACY: StoreFormat = StoreFormat {
        format: 1,
        compatible_from: 1,
    };

    /// Whether this build can open a store of this format.
    pub fn supported(&self) -> bool {
        (OLDEST_SUPPORTED..=FORMAT).contains(&self.format) || self.compatible_from <= FORMAT
    }
}

/// The marker of the store at `path`: `Ok(None)` when there is none (a new
/// store, or a format-1 one), `Corruption` when it cannot be read.
pub fn read(path: &Path) -> Result<Option<StoreFormat>> {
    let file = path.join(FORMAT_FILE);
    let text = match std::fs::read(&file) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(Error::Storage(format!(
                "cannot read {}: {e}",
                file.display()
            )))
        }
    };
    parse(&text).map(Some).map_err(|why| {
        Error::Corruption(format!(
            "store format marker {} does not parse: {why}",
            file.display()
        ))
    })
}

/// Parse the bytes of a marker file (what [`read`] does after reading it):
/// `Corruption` naming what is wrong when they do not parse. Public for the
/// fuzz targets and tools that read a marker from elsewhere.
pub fn parse_marker(b: &[u8]) -> Result<StoreFormat> {
    parse(b).map_err(|why| Error::Corruption(format!("store format marker does not parse: {why}")))
}

fn parse(b: &[u8]) -> std::result::Result<StoreFormat, String> {
    let text = std::str::from_utf8(b).map_err(|_| "not UTF-8".to_string())?;
    let (mut format, mut compat) = (None, None);
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (k, v) = line
            .split_once('=')
            .ok_or_else(|| format!("line {line:?} is not key = value"))?;
        let n: u32 = v
            .trim()
            .parse()
            .map_err(|_| format!("{} = {:?} is not a number", k.trim(), v.trim()))?;
        match k.trim() {
            "format" => format = Some(n),
            "compatible_from" => compat = Some(n),
            _ => {} // a later build may say more
        }
    }
    let format = format.ok_or("no format line")?;
    let compatible_from = compat.unwrap_or(format);
    if format == 0 || compatible_from > format {
        return Err(format!(
            "format {format} with compatible_from {compatible_from}"
        ));
    }
    Ok(StoreFormat {
        format,
        compatible_from,
    })
}

/// Refuse a store this build cannot open, before anything touches it.
/// Returns the store's format: the marker's, or [`StoreFormat::LEGACY`]
/// for an existing store without one, or `None` for a store not created
/// yet.
pub fn check(path: &Path) -> Result<Option<StoreFormat>> {
    match std::fs::read_to_string(path.join(MOVED_FILE)) {
        Ok(text) => {
            return Err(Error::UnsupportedFormat(format!(
                "{} is no longer a store: {}",
                path.display(),
                text.trim()
            )))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(Error::Storage(format!(
                "cannot read {}: {e}",
                path.join(MOVED_FILE).display()
            )))
        }
    }
    let found = match read(path)? {
        Some(f) => Some(f),
        None if path.join("CURRENT").exists() => Some(StoreFormat::LEGACY),
        None => None,
    };
    if let Some(f) = found.filter(|f| !f.supported()) {
        return Err(Error::UnsupportedFormat(format!(
            "store {} holds format {}, which needs a build supporting format {} or later \
             (this build supports formats {OLDEST_SUPPORTED} to {FORMAT}); it was left untouched",
            path.display(),
            f.format,
            f.compatible_from
        )));
    }
    Ok(found)
}

/// Mark the directory `path` (a store moved away, now holding no store) so
/// that opening it as a store is refused, by this build with
/// `UnsupportedFormat` quoting `note` ([`MOVED_FILE`]), and by builds that
/// predate the marker by a format marker none of them supports. Both
/// files written synced, then the directory.
pub fn mark_moved(path: &Path, note: &str) -> Result<()> {
    let io = |what: &str, p: &Path, e: std::io::Error| {
        Error::Storage(format!("cannot {what} {}: {e}", p.display()))
    };
    std::fs::create_dir_all(path).map_err(|e| io("create", path, e))?;
    let never = format!(
        "# telha-jobs: this store was moved away; see {MOVED_FILE}\nformat = {m}\ncompatible_from = {m}\n",
        m = u32::MAX
    );
    for (name, text) in [(MOVED_FILE, format!("{note}\n")), (FORMAT_FILE, never)] {
        let file = path.join(name);
        let mut f = std::fs::File::create(&file).map_err(|e| io("create", &file, e))?;
        f.write_all(text.as_bytes())
            .and_then(|()| f.sync_all())
            .map_err(|e| io("write", &file, e))?;
    }
    std::fs::File::open(path)
        .and_then(|d| d.sync_all())
        .map_err(|e| io("sync", path, e))
}

/// Write the marker for what this build writes: to a temporary file,
/// synced, then renamed over the old one, and the directory synced.
pub fn write_current(path: &Path) -> Result<()> {
    write(path, StoreFormat::CURRENT)
}

/// Write the marker `f` (as [`write_current`]).
pub fn write(path: &Path, f: StoreFormat) -> Result<()> {
    let text = format!(
        "# telha-jobs store format (docs/ARCHITECTURE.md, \"Record format\")\n\
         format = {}\ncompatible_from = {}\n",
        f.format, f.compatible_from
    );
    let tmp = path.join(format!("{FORMAT_FILE}.tmp"));
    let io = |what: &str, e: std::io::Error| {
        Error::Storage(format!("cannot write {} ({what}): {e}", tmp.display()))
    };
    let mut file = std::fs::File::create(&tmp).map_err(|e| io("create", e))?;
    file.write_all(text.as_bytes())
        .map_err(|e| io("write", e))?;
    file.sync_all().map_err(|e| io("sync", e))?;
    std::fs::rename(&tmp, path.join(FORMAT_FILE)).map_err(|e| io("rename", e))?;
    if let Ok(dir) = std::fs::File::open(path) {
        let _ = dir.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_a_store_was_moved_from_is_refused_with_the_note() {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join("s");
        mark_moved(&path, "moved to /elsewhere/store").unwrap();
        let e = check(&path).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::UnsupportedFormat);
        assert!(e.to_string().contains("moved to /elsewhere/store"), "{e}");
        // Builds before the marker read only the format marker: refused too.
        std::fs::remove_file(path.join(MOVED_FILE)).unwrap();
        let e = check(&path).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::UnsupportedFormat);
    }

    #[test]
    fn markers_parse_and_say_what_this_build_opens() {
        let f = parse(b"# c\nformat = 3\ncompatible_from = 2\n").unwrap();
        assert_eq!(f, StoreFormat::CURRENT);
        assert!(f.supported());
        // A newer format that older builds may still open.
        let newer = parse(b"format = 9\ncompatible_from = 2\nfeatures = 3\n").unwrap();
        assert!(newer.supported());
        // A newer format that needs a newer build.
        let future = parse(b"format = 9\ncompatible_from = 9\n").unwrap();
        assert!(!future.supported());
        assert_eq!(parse(b"format = 3\n").unwrap().compatible_from, 3);
        for bad in [
            &b""[..],
            b"format = x",
            b"format 2",
            b"format = 2\ncompatible_from = 5",
            b"\xff",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_future_store_is_refused_and_a_new_one_has_no_format_yet() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(check(dir.path()).unwrap(), None);
        std::fs::write(dir.path().join("CURRENT"), "MANIFEST-000001\n").unwrap();
        assert_eq!(check(dir.path()).unwrap(), Some(StoreFormat::LEGACY));
        write_current(dir.path()).unwrap();
        assert_eq!(check(dir.path()).unwrap(), Some(StoreFormat::CURRENT));
        std::fs::write(
            dir.path().join(FORMAT_FILE),
            "format = 7\ncompatible_from = 5\n",
        )
        .unwrap();
        let e = check(dir.path()).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::UnsupportedFormat);
        assert!(e.to_string().contains("format 7"), "{e}");
        std::fs::write(dir.path().join(FORMAT_FILE), "garbage").unwrap();
        assert_eq!(
            check(dir.path()).unwrap_err().kind(),
            crate::ErrorKind::Corruption
        );
    }
}
