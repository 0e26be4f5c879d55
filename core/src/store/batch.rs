//! Reading the bytes of a RocksDB `WriteBatch` (`WriteBatch::data()`), so a
//! replica can refuse malformed ones before RocksDB sees them.
//!
//! RocksDB trusts these bytes. `WriteBatch::from_data` copies them as they
//! are; the batch's record count is read from bytes 8..12 with no length
//! check (`WriteBatchInternal::Count`: an out-of-bounds read for fewer than
//! 12 bytes); and `DB::write` appends the batch to the WAL before the
//! memtable inserter parses it, so a batch that fails to parse half-way has
//! its bytes in the WAL and part of it in the memtable (RocksDB then sets a
//! background error and refuses every later write). So every batch is
//! walked here first, record by record, with RocksDB's own framing
//! (`db/write_batch.cc`, `ReadRecordFromWriteBatch`):
//!
//! ```text
//! header:  sequence (fixed64 LE, overwritten by the write) · count (fixed32 LE)
//! record:  tag (1 byte) · [column family id (varint32), for the CF tags]
//!          · key (varint32 length + bytes) · [value (varint32 length + bytes)]
//! ```
//!
//! Only the record types the engine writes pass: put, delete and merge,
//! in the default family (tags 0x1, 0x0, 0x2) or a named one (0x5, 0x4,
//! 0x6). Each counts one in the header, which must agree. What is checked
//! is the framing, not the contents: a key or value is any bytes (the
//! replicated log's checksums guard the contents).

use crate::error::{Error, Result};

/// The header's length: sequence (8 bytes) + count (4 bytes).
pub(crate) const HEADER: usize = 12;

/// What a record does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Put,
    Delete,
    Merge,
}

/// One record of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Record<'a> {
    pub op: Op,
    /// The column family's numeric id (0: `default`).
    pub cf: u32,
    pub key: &'a [u8],
}

fn corrupt(what: &str, at: usize) -> Error {
    Error::Corruption(format!("malformed write batch: {what} at byte {at}"))
}

/// A cursor over the batch's bytes; every read is bounds-checked.
struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.data.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    /// RocksDB's varint32 (LEB128, at most 5 bytes). Stricter than RocksDB
    /// in one point: bits past the 32nd are refused, where RocksDB drops
    /// them (its own encoder never sets them).
    fn varint32(&mut self) -> Option<u32> {
        let mut v: u32 = 0;
        for shift in [0u32, 7, 14, 21, 28] {
            let b = self.byte()?;
            if shift == 28 && b > 0x0F {
                return None;
            }
            v |= u32::from(b & 0x7F) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    fn slice(&mut self) -> Option<&'a [u8]> {
        let n = self.varint32()? as usize;
        let end = self.at.checked_add(n)?;
        let s = self.data.get(self.at..end)?;
        self.at = end;
        Some(s)
    }
}

/// Walk every record of the batch `data`, handing each to `f` (which may
/// refuse it); answers the record count. `Corruption` for bytes that are
/// not a batch the engine could have written: shorter than the header, a
/// record cut short, an unknown or unwritten record type, a count that
/// disagrees with the records.
pub(crate) fn records<'a>(
    data: &'a [u8],
    mut f: impl FnMut(Record<'a>) -> Result<()>,
) -> Result<u32> {
    if data.len() < HEADER {
        return Err(corrupt(
            &format!("{} bytes, shorter than the 12-byte header", data.len()),
            0,
        ));
    }
    let mut count = [0u8; 4];
    count.copy_from_slice(&data[8..HEADER]);
    let declared = u32::from_le_bytes(count);
    let mut r = Reader { data, at: HEADER };
    let mut found: u32 = 0;
    while r.at < data.len() {
        let start = r.at;
        let tag = r.byte().ok_or_else(|| corrupt("no tag", start))?;
        let (op, named) = match tag {
            0x0 => (Op::Delete, false),
            0x1 => (Op::Put, false),
            0x2 => (Op::Merge, false),
            0x4 => (Op::Delete, true),
            0x5 => (Op::Put, true),
            0x6 => (Op::Merge, true),
            t => {
                return Err(corrupt(
                    &format!("record type 0x{t:02x} (not a put, delete or merge)"),
                    start,
                ))
            }
        };
        let cf = if named {
            r.varint32()
                .ok_or_else(|| corrupt("bad column family id", start))?
        } else {
            0
        };
        let key = r.slice().ok_or_else(|| corrupt("key cut short", start))?;
        if op != Op::Delete {
            r.slice().ok_or_else(|| corrupt("value cut short", start))?;
        }
        found = found
            .checked_add(1)
            .ok_or_else(|| corrupt("too many records", start))?;
        f(Record { op, cf, key })?;
    }
    if found != declared {
        return Err(corrupt(
            &format!("the header counts {declared} records, the batch holds {found}"),
            8,
        ));
    }
    Ok(found)
}

#[cfg(all(test, feature = "rocksdb"))]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        let mut b = rocksdb::WriteBatch::default();
        b.put(b"k1", b"v1");
        b.delete(b"k2");
        b.merge(b"k3", vec![7u8; 300]); // a two-byte varint length
        b.data().to_vec()
    }

    #[test]
    fn a_rocksdb_batch_reads_back_record_by_record() {
        let mut seen = Vec::new();
        let n = records(&sample(), |r| {
            seen.push((r.op, r.cf, r.key.to_vec()));
            Ok(())
        })
        .unwrap();
        assert_eq!(n, 3);
        assert_eq!(
            seen,
            vec![
                (Op::Put, 0, b"k1".to_vec()),
                (Op::Delete, 0, b"k2".to_vec()),
                (Op::Merge, 0, b"k3".to_vec()),
            ]
        );
        let empty = rocksdb::WriteBatch::default();
        assert_eq!(records(empty.data(), |_| Ok(())).unwrap(), 0);
    }

    fn refused(data: &[u8]) -> bool {
        matches!(records(data, |_| Ok(())), Err(Error::Corruption(_)))
    }

    #[test]
    fn every_cut_of_a_batch_is_refused() {
        let b = sample();
        for n in 0..b.len() {
            assert!(refused(&b[..n]), "cut at {n}");
        }
    }

    #[test]
    fn a_wrong_count_an_unwritten_type_and_an_oversized_varint_are_refused() {
        let mut b = sample();
        b[8] = 2;
        assert!(refused(&b));
        let mut b = sample();
        b[HEADER] = 0x7; // single delete: the engine never writes one
        assert!(refused(&b));
        // A CF put whose id varint runs past 32 bits.
        let mut b = rocksdb::WriteBatch::default().data().to_vec();
        b[8] = 1;
        b.extend_from_slice(&[0x5, 0xFF, 0xFF, 0xFF, 0xFF, 0x1F, 0, 0]);
        assert!(refused(&b));
    }

    /// What RocksDB's own reader (`WriteBatch::iterate_cf`) finds.
    #[derive(Default)]
    struct Rocks(Vec<(Op, u32, Vec<u8>)>);

    impl rocksdb::WriteBatchIteratorCf for Rocks {
        fn put_cf(&mut self, cf: u32, key: &[u8], _: &[u8]) {
            self.0.push((Op::Put, cf, key.to_vec()));
        }
        fn delete_cf(&mut self, cf: u32, key: &[u8]) {
            self.0.push((Op::Delete, cf, key.to_vec()));
        }
        fn merge_cf(&mut self, cf: u32, key: &[u8], _: &[u8]) {
            self.0.push((Op::Merge, cf, key.to_vec()));
        }
    }

    /// Whether `records` refuses `g`, and, when it accepts it, whether
    /// RocksDB reads the same records from it.
    fn agrees_with_rocksdb(g: &[u8]) -> Option<bool> {
        let mut ours = Vec::new();
        records(g, |r| {
            ours.push((r.op, r.cf, r.key.to_vec()));
            Ok(())
        })
        .ok()?;
        let mut theirs = Rocks::default();
        rocksdb::WriteBatch::from_data(g).iterate_cf(&mut theirs);
        Some(ours == theirs.0)
    }

    #[test]
    fn garbage_is_refused_and_what_passes_reads_the_same_in_rocksdb() {
        // Deterministic garbage (xorshift) of every length up to 64 bytes,
        // and every single-byte change of a valid batch.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut accepted = 0;
        for len in 0..64 {
            for _ in 0..200 {
                let g: Vec<u8> = (0..len)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        x as u8
                    })
                    .collect();
                if let Some(same) = agrees_with_rocksdb(&g) {
                    assert!(same, "{g:?}");
                    accepted += 1;
                }
            }
        }
        assert!(accepted < 64 * 200 / 100, "random bytes are rarely a batch");
        let b = sample();
        let mut changed = 0;
        for i in HEADER..b.len() {
            for v in [0u8, 0x01, 0x7F, 0x80, 0xFF] {
                let mut g = b.clone();
                g[i] = v;
                if let Some(same) = agrees_with_rocksdb(&g) {
                    assert!(same, "byte {i} = {v}");
                    changed += 1;
                }
            }
        }
        assert!(
            changed > 0,
            "some changes (in keys and values) stay batches"
        );
    }
}
