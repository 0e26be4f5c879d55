//! The store's format marker parser (`store::format::parse_marker`, what
//! `format::read` / `check` run on `telha.format` before RocksDB opens the
//! store) on arbitrary bytes: a `StoreFormat` or `Corruption`, never a
//! panic; what it accepts is a sane pair (format >= 1, compatible_from <=
//! format) that reads back the same when written in the marker's syntax.

use telha_jobs::store::format;
use telha_jobs::ErrorKind;

/// The target's whole check on one input: panics on a finding.
pub fn check(data: &[u8]) {
    match format::parse_marker(data) {
        Ok(f) => {
            assert!(f.format >= 1, "{f:?}");
            assert!(f.compatible_from <= f.format, "{f:?}");
            let _ = f.supported();
            let text = format!(
                "format = {}\ncompatible_from = {}\n",
                f.format, f.compatible_from
            );
            assert_eq!(format::parse_marker(text.as_bytes()).expect("re-read"), f);
        }
        Err(e) => assert_eq!(e.kind(), ErrorKind::Corruption, "{e}"),
    }
}
