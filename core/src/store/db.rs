//! Opening the store with RocksDB: column family options, the format
//! check, the one-process lock.

use std::path::{Path, PathBuf};

use rocksdb::{BlockBasedOptions, ColumnFamily, ColumnFamilyDescriptor, Options, DB};

use super::format;
use super::{
    counters_filter, counters_merge, ALL_CFS, CF_COUNTERS, CF_IDS, CF_JOBS, CF_KINDS, CF_META,
    COUNTERS_FILTER_NAME, COUNTERS_MERGE_NAME, PID_FILE,
};
use crate::error::{Error, Result};

/// The counters family's write buffer (the others keep RocksDB's 64 MiB).
pub(crate) const COUNTERS_WRITE_BUFFER: usize = 8 << 20;

/// The memtable insert hint's prefix length per family (RocksDB's
/// `memtable_insert_with_hint_prefix_extractor`, a fixed prefix): the
/// memtable keeps, per prefix, where its last insert went and starts the
/// next insert of that prefix there instead of at the skip list's top.
/// A move's rows land next to the last ones of their prefix (a state's
/// rows of one scope and priority by time, ids and kind rows by UUIDv7),
/// so most inserts are found in a step: a lifecycle costs 104,300
/// instructions instead of 120,300 (callgrind, `lifecycle_calls`). Hints
/// are used only by a write that is not concurrent, which the store's
/// writes never are (`allow_concurrent_memtable_write` is off). In
/// `meta`, 13 bytes are `tag/`, the tag's length and its first 8 bytes:
/// a new job's tag rows each go after the last row of their tag (with
/// 5, tags of one length shared a hint and jumped between tags: 2 %
/// slower than none). Each prefix seen costs the memtable one splice
/// (~200 bytes of its arena), so many distinct prefixes fill it sooner.
fn insert_hint_prefix(name: &str) -> Option<usize> {
    match name {
        // scope 16, state 1, priority 1.
        CF_JOBS => Some(18),
        // scope 16.
        CF_KINDS => Some(16),
        // One hint: the ids are UUIDv7, in time order.
        CF_IDS => Some(0),
        // `tag/` 4, the tag's length 1, 8 bytes of it.
        CF_META => Some(13),
        _ => None,
    }
}

/// Default options with the family's insert hint; RocksDB's C API has no
/// setter for it, only its options-string parser (the base options are
/// RocksDB's defaults, so nothing set on the Rust side is lost).
fn base_options(name: &str) -> Options {
    let Some(n) = insert_hint_prefix(name) else {
        return Options::default();
    };
    // The string is fixed and parsed in a test; were it refused, the
    // family would work without the hint.
    Options::default()
        .get_options_from_string(format!(
            "memtable_insert_with_hint_prefix_extractor=rocksdb.FixedPrefix.{n}"
        ))
        .unwrap_or_default()
}

fn cf_options(name: &str) -> Options {
    let mut o = base_options(name);
    let mut bb = BlockBasedOptions::default();
    bb.set_bloom_filter(10.0, false);
    bb.set_cache_index_and_filter_blocks(true);
    o.set_block_based_table_factory(&bb);
    match name {
        CF_JOBS | CF_KINDS => {
            // The queue trap: heads are deleted constantly. Files whose windows
            // are dense with tombstones get compacted early.
            o.add_compact_on_deletion_collector_factory(10_000, 5_000, 0.5);
        }
        CF_COUNTERS => {
            o.set_merge_operator_associative(COUNTERS_MERGE_NAME, counters_merge);
            // Every move appends one or two merge operands here, and the
            // family is read only at open and by `check`: a vector memtable
            // appends where the skip list searched (11.6 % of a lifecycle's
            // instructions, callgrind). It needs `allow_concurrent_memtable_write`
            // off for the whole DB (`db_options`).
            o.set_memtable_factory(rocksdb::MemtableFactory::Vector);
            o.set_compaction_filter(COUNTERS_FILTER_NAME, counters_filter);
            // Its rows are few and small (one per kind and per scope with
            // jobs), but with one operand per scope per batch a store with
            // a scope per tenant fills a 64 MiB buffer with operands of
            // rows that end at zero (66 MiB after 1,000,000 lifecycles
            // with a new scope each: most of what such a process held
            // beyond one with a single scope; issue 50). 8 MiB bounds that
            // and flushes it sooner, where the compaction filter drops the
            // zero rows.
            o.set_write_buffer_size(COUNTERS_WRITE_BUFFER);
        }
        _ => {}
    }
    o
}

fn db_options(replica: bool) -> Options {
    let mut o = Options::default();
    if replica {
        // A replica's applies write no WAL (the Raft log is the WAL, see
        // `replica.rs`): after a crash the store is what its last flush
        // holds, and that must be one point of the apply order in every
        // family at once (the counters' merges are not idempotent, so a
        // family ahead of `meta`'s applied id would count twice on the
        // re-apply). Atomic flush flushes every family together.
        o.set_atomic_flush(true);
    }
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    o.increase_parallelism(2);
    o.set_max_background_jobs(2);
    o.set_keep_log_file_num(4);
    // Required by the counters family's vector memtable. The write group's
    // leader then inserts the group's batches itself; measured with the
    // 2- and 4-thread rows of `make bench-core` (no loss).
    o.set_allow_concurrent_memtable_write(false);
    o
}

fn descriptor(n: &str) -> ColumnFamilyDescriptor {
    ColumnFamilyDescriptor::new(n, cf_options(n))
}

/// Whether RocksDB refused an open because the families named are not the
/// ones the store has (a newer build added one; a format-1 store has no
/// `meta` yet, for a read-only open).
fn is_family_mismatch(e: &rocksdb::Error) -> bool {
    let s = e.to_string();
    s.contains("Column families not opened") || s.contains("Column family not found")
}

/// The families the store has, by RocksDB's own listing. Only asked after a
/// mismatch: the listing of a directory RocksDB cannot read leaks a byte in
/// RocksDB's C API, so the common path never calls it.
fn listed(path: &Path) -> Result<Vec<String>> {
    Ok(DB::list_cf(&Options::default(), path)?
        .into_iter()
        .filter(|n| n != "default")
        .collect())
}

/// Open the store read-write. A store held by another process answers
/// `StoreLocked` naming the owner's pid when it is known; one written in a
/// format this build cannot open answers `UnsupportedFormat` before
/// anything in it is touched. A new store gets the format marker; an older
/// one is upgraded in place (what it needs is created, then the marker).
pub fn open(path: &Path) -> Result<DB> {
    open_with(path, false)
}

/// [`open`], for a replica's store when `replica` (atomic flush: see
/// `db_options`).
pub(crate) fn open_with(path: &Path, replica: bool) -> Result<DB> {
    std::fs::create_dir_all(path).map_err(|e| {
        Error::Storage(format!(
            "cannot create store directory {}: {e}",
            path.display()
        ))
    })?;
    let found = format::check(path)?;
    let opened = match DB::open_cf_descriptors(&db_options(replica), path, ALL_CFS.map(descriptor))
    {
        // A newer, compatible build added a family: RocksDB wants every one
        // named. Ours, then theirs.
        Err(e) if is_family_mismatch(&e) => {
            let mut names: Vec<String> = ALL_CFS.iter().map(|s| s.to_string()).collect();
            for n in listed(path)? {
                if !names.contains(&n) {
                    names.push(n);
                }
            }
            DB::open_cf_descriptors(
                &db_options(replica),
                path,
                names.iter().map(|n| descriptor(n)),
            )
        }
        r => r,
    };
    match opened {
        Ok(db) => {
            if found.is_none_or(|f| f.format < format::FORMAT) {
                format::write_current(path)?;
            }
            // Best effort: the pid only improves the message another process
            // gets; the LOCK file is what excludes it.
            let _ = std::fs::write(path.join(PID_FILE), format!("{}\n", std::process::id()));
            Ok(db)
        }
        Err(e) if is_lock_error(&e) => Err(Error::StoreLocked {
            path: path.to_path_buf(),
            owner: owner_of(path),
        }),
        Err(e) => Err(e.into()),
    }
}

/// Flush every family's memtable (all the store at `path` has, this
/// build's and any a newer one added) to synced files and wait: with a
/// replica's atomic flush, one point of the write order in all of them.
pub(crate) fn flush_all(db: &DB, path: &Path) -> Result<()> {
    let names = DB::list_cf(&Options::default(), path)?;
    let cfs = names
        .iter()
        .map(|n| cf(db, n))
        .collect::<Result<Vec<_>>>()?;
    let mut fo = rocksdb::FlushOptions::default();
    fo.set_wait(true);
    db.flush_cfs_opt(&cfs, &fo)?;
    Ok(())
}

/// Open the store read-only: works while another process owns it, and sees
/// what that process had written (RocksDB replays the WAL). Opens the
/// column families the store has (a format-1 store has no `meta`).
pub fn open_read_only(path: &Path) -> Result<DB> {
    if !path.join("CURRENT").exists() {
        return Err(Error::NotFound(format!("no store at {}", path.display())));
    }
    format::check(path)?;
    let mut o = Options::default();
    // The WAL replays into the families' memtables: the vector one needs it.
    o.set_allow_concurrent_memtable_write(false);
    match DB::open_cf_descriptors_read_only(&o, path, ALL_CFS.map(descriptor), false) {
        // Not the families we name: a format-1 store (no `meta`), or a newer
        // build's. Open what it has.
        Err(e) if is_family_mismatch(&e) => {
            let names = listed(path)?;
            DB::open_cf_descriptors_read_only(&o, path, names.iter().map(|n| descriptor(n)), false)
                .map_err(Error::from)
        }
        r => r.map_err(Error::from),
    }
}

fn is_lock_error(e: &rocksdb::Error) -> bool {
    let s = e.to_string();
    s.contains("lock") && (s.contains("LOCK") || s.contains("Resource temporarily unavailable"))
}

fn owner_of(path: &Path) -> String {
    match std::fs::read_to_string(path.join(PID_FILE)) {
        Ok(s) if s.trim().parse::<u32>().is_ok() => format!("pid {}", s.trim()),
        _ => "another process".to_string(),
    }
}

/// Remove the store's [`PID_FILE`], ignoring errors. The engine calls it as
/// it closes, before RocksDB releases the lock.
pub fn remove_pid_file(path: &Path) {
    let _ = std::fs::remove_file(path.join(PID_FILE));
}

/// A handle to a column family, checked once at open.
pub fn cf<'a>(db: &'a DB, name: &str) -> Result<&'a ColumnFamily> {
    db.cf_handle(name)
        .ok_or_else(|| Error::Corruption(format!("column family {name} is missing")))
}

/// The canonical path used as the process-wide registry key.
pub fn canonical(path: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(path).map_err(|e| {
        Error::Storage(format!(
            "cannot create store directory {}: {e}",
            path.display()
        ))
    })?;
    path.canonicalize()
        .map_err(|e| Error::Storage(format!("cannot resolve {}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_insert_hints_reach_rocksdb() {
        let d = tempfile::tempdir().unwrap();
        drop(open(d.path()).unwrap());
        // RocksDB writes the options each family runs with to OPTIONS-*.
        let file = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("OPTIONS-")
            })
            .max()
            .expect("an OPTIONS file");
        let text = std::fs::read_to_string(file).unwrap();
        for name in ALL_CFS {
            let section = format!("[CFOptions \"{name}\"]");
            let at = text.find(&section).expect("the family's section");
            let rest = &text[at + section.len()..];
            let body = &rest[..rest.find("\n[").unwrap_or(rest.len())];
            let line = body
                .lines()
                .find(|l| {
                    l.trim_start()
                        .starts_with("memtable_insert_with_hint_prefix_extractor=")
                })
                .expect("the option's line");
            let want = match insert_hint_prefix(name) {
                Some(n) => format!("rocksdb.FixedPrefix.{n}"),
                None => "nullptr".to_string(),
            };
            assert!(line.trim_end().ends_with(&want), "{name}: {line}");
        }
    }
}
