//! The RocksDB store: column families, their options, the counters merge
//! operator, and opening with the one-process lock.

pub mod codec;
pub mod keys;

use std::path::{Path, PathBuf};

use rocksdb::{BlockBasedOptions, ColumnFamily, ColumnFamilyDescriptor, Options, DB};

use crate::error::{Error, Result};

/// The job rows, keyed by [`keys::JobKey`]; values are [`codec`] records.
pub const CF_JOBS: &str = "jobs";
/// Job id → the job's current jobs key.
pub const CF_IDS: &str = "ids";
/// The per-kind index of pending and failed rows (value: the state byte).
pub const CF_KINDS: &str = "kinds";
/// Scope + idempotency key → job id.
pub const CF_IDEM: &str = "idem";
/// Kind → job counts per state, maintained by [`counters_merge`].
pub const CF_COUNTERS: &str = "counters";
/// Every column family; a raw RocksDB open of the store must name them all.
pub const ALL_CFS: [&str; 5] = [CF_JOBS, CF_IDS, CF_KINDS, CF_IDEM, CF_COUNTERS];

/// The file in the store directory naming the owning process.
pub const PID_FILE: &str = "telha.pid";

/// The registered name of [`counters_merge`].
pub const COUNTERS_MERGE_NAME: &str = "telha_counters_add_v1";

/// Counters: one i64 per state (index `State::index()`), little-endian.
pub const COUNTERS_LEN: usize = 40;

/// The counters value (or merge operand) for five per-state counts.
pub fn encode_counters(c: &[i64; 5]) -> [u8; COUNTERS_LEN] {
    let mut b = [0u8; COUNTERS_LEN];
    for (i, v) in c.iter().enumerate() {
        b[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
    }
    b
}

/// The five per-state counts of a counters value; `None` unless it is
/// exactly [`COUNTERS_LEN`] bytes.
pub fn decode_counters(b: &[u8]) -> Option<[i64; 5]> {
    if b.len() != COUNTERS_LEN {
        return None;
    }
    let mut c = [0i64; 5];
    for (i, v) in c.iter_mut().enumerate() {
        *v = i64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().ok()?);
    }
    Some(c)
}

/// Element-wise add of counter vectors: the merge operator of the counters
/// CF (tools that open the store with raw RocksDB must register it too). A
/// malformed operand is ignored rather than failing the read (a failed merge
/// would make the whole key unreadable).
pub fn counters_merge(
    _key: &[u8],
    existing: Option<&[u8]>,
    operands: &rocksdb::MergeOperands,
) -> Option<Vec<u8>> {
    let mut acc = existing.and_then(decode_counters).unwrap_or([0; 5]);
    for op in operands {
        if let Some(d) = decode_counters(op) {
            for (a, x) in acc.iter_mut().zip(d) {
                *a = a.wrapping_add(x);
            }
        }
    }
    Some(encode_counters(&acc).to_vec())
}

fn cf_options(name: &str) -> Options {
    let mut o = Options::default();
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
        }
        _ => {}
    }
    o
}

fn db_options() -> Options {
    let mut o = Options::default();
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    o.increase_parallelism(2);
    o.set_max_background_jobs(2);
    o.set_keep_log_file_num(4);
    o
}

/// Open the store read-write. A store held by another process answers
/// `StoreLocked` naming the owner's pid when it is known.
pub fn open(path: &Path) -> Result<DB> {
    std::fs::create_dir_all(path).map_err(|e| {
        Error::Storage(format!(
            "cannot create store directory {}: {e}",
            path.display()
        ))
    })?;
    let cfs = ALL_CFS
        .iter()
        .map(|n| ColumnFamilyDescriptor::new(*n, cf_options(n)));
    match DB::open_cf_descriptors(&db_options(), path, cfs) {
        Ok(db) => {
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

/// Open the store read-only: works while another process owns it, and sees
/// what that process had written (RocksDB replays the WAL).
pub fn open_read_only(path: &Path) -> Result<DB> {
    if !path.join("CURRENT").exists() {
        return Err(Error::NotFound(format!("no store at {}", path.display())));
    }
    let cfs = ALL_CFS
        .iter()
        .map(|n| ColumnFamilyDescriptor::new(*n, cf_options(n)));
    DB::open_cf_descriptors_read_only(&Options::default(), path, cfs, false).map_err(Error::from)
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
