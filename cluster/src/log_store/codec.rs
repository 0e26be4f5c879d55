//! Values in the log DB: a CRC-32C (little-endian) of the body, then the
//! body, MessagePack with named fields (openraft's own serde types, so a
//! field added by a later openraft still decodes).

use openraft::{AnyError, ErrorSubject, ErrorVerb, StorageIOError};
use serde::{de::DeserializeOwned, Serialize};

use crate::crc32c::crc32c;
use crate::types::{Entry, StorageError};

const CRC_LEN: usize = 4;

/// Log entries are keyed by their index, big-endian, so RocksDB's byte
/// order is index order.
pub(crate) fn index_key(index: u64) -> [u8; 8] {
    index.to_be_bytes()
}

pub(crate) fn key_index(key: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(key.try_into().ok()?))
}

/// `value` framed with its checksum.
pub(crate) fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, rmp_serde::encode::Error> {
    let mut out = vec![0u8; CRC_LEN];
    rmp_serde::encode::write_named(&mut out, value)?;
    let crc = crc32c(&out[CRC_LEN..]);
    out[..CRC_LEN].copy_from_slice(&crc.to_le_bytes());
    Ok(out)
}

/// Why a stored value cannot be trusted.
fn check<T: DeserializeOwned>(raw: &[u8]) -> Result<T, String> {
    if raw.len() < CRC_LEN {
        return Err(format!(
            "value of {} bytes is shorter than its checksum",
            raw.len()
        ));
    }
    let (crc, body) = raw.split_at(CRC_LEN);
    let stored = u32::from_le_bytes(crc.try_into().expect("4 bytes"));
    let actual = crc32c(body);
    if stored != actual {
        return Err(format!(
            "checksum mismatch (stored {stored:#010x}, computed {actual:#010x} over {} bytes)",
            body.len()
        ));
    }
    rmp_serde::from_slice(body)
        .map_err(|e| format!("checksum matches but the value does not decode: {e}"))
}

/// The entry stored under `index`, or a storage error naming the index.
pub(crate) fn decode_entry(index: u64, raw: &[u8]) -> Result<Entry, StorageError> {
    let entry: Entry = check(raw).map_err(|why| corrupt_entry(index, why))?;
    if entry.log_id.index != index {
        let why = format!("holds the entry of index {}", entry.log_id.index);
        return Err(corrupt_entry(index, why));
    }
    Ok(entry)
}

pub(crate) fn corrupt_entry(index: u64, why: String) -> StorageError {
    let msg = format!("raft log entry {index} is corrupt: {why}");
    StorageIOError::read_log_at_index(index, AnyError::error(msg)).into()
}

/// A metadata value (vote, committed, last purged) decoded, or a storage
/// error naming the key.
pub(crate) fn decode_meta<T: DeserializeOwned>(
    key: &str,
    subject: ErrorSubject<u64>,
    raw: &[u8],
) -> Result<T, StorageError> {
    check(raw).map_err(|why| {
        let msg = format!("raft log store `{key}` is corrupt: {why}");
        StorageIOError::new(subject, ErrorVerb::Read, AnyError::error(msg)).into()
    })
}
