//! RocksDB's own memory, for [`Queue::metrics`](crate::Queue::metrics):
//! what the memtables and the table readers (index and filter blocks not in
//! the block cache) hold per column family, and the block cache's use. The
//! engine's own structures have their gauges beside (`metrics.rs`); these
//! say how much of a process's resident memory is RocksDB's (issue 50).

use std::fmt::Write;

use rocksdb::DB;

use crate::store as st;

/// `telha_jobs_rocksdb_memory_bytes{cf, part}` and
/// `telha_jobs_rocksdb_block_cache_bytes{part}`. Each property read takes
/// RocksDB's DB mutex for a moment.
pub(crate) fn render(o: &mut String, db: &DB) {
    let _ = writeln!(
        o,
        "# HELP telha_jobs_rocksdb_memory_bytes RocksDB memory per column family: \
         memtables (active and immutable) and table readers (index and filter blocks outside the block cache)."
    );
    let _ = writeln!(o, "# TYPE telha_jobs_rocksdb_memory_bytes gauge");
    for name in st::ALL_CFS {
        let Some(cf) = db.cf_handle(name) else {
            continue;
        };
        let prop = |p: &std::ffi::CStr| db.property_int_value_cf(cf, p).ok().flatten().unwrap_or(0);
        for (part, p) in [
            ("memtables", c"rocksdb.cur-size-all-mem-tables"),
            ("table_readers", c"rocksdb.estimate-table-readers-mem"),
        ] {
            let _ = writeln!(
                o,
                "telha_jobs_rocksdb_memory_bytes{{cf=\"{name}\",part=\"{part}\"}} {}",
                prop(p)
            );
        }
    }
    let prop = |p: &std::ffi::CStr| db.property_int_value(p).ok().flatten().unwrap_or(0);
    let _ = writeln!(
        o,
        "# HELP telha_jobs_rocksdb_block_cache_bytes The block cache shared by the column families: in use, and pinned."
    );
    let _ = writeln!(o, "# TYPE telha_jobs_rocksdb_block_cache_bytes gauge");
    for (part, p) in [
        ("usage", c"rocksdb.block-cache-usage"),
        ("pinned", c"rocksdb.block-cache-pinned-usage"),
    ] {
        let _ = writeln!(
            o,
            "telha_jobs_rocksdb_block_cache_bytes{{part=\"{part}\"}} {}",
            prop(p)
        );
    }
}
